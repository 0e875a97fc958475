//! A scripted user's parallel group (a plan's `parallel:` step), as a browser fetches a
//! page's resources: which of the user's connections each request goes on, the lanes that
//! carry them at once, and the group's own sample, from its start to its slowest request's
//! end.

use std::pin::Pin;
use std::time::Instant;

use belier_stats::{Outcome, Sample};
use futures_util::future::join_all;
use tokio::time::Sleep;

use crate::link::Link;
use crate::local::Local;
use crate::plan::Plan;
use crate::sending::{exchange, Ended, Lane as Borrowed};
use crate::user::{Outgoing, Verdict};

/// Where a group's requests go.
pub(crate) struct Placed {
    /// The lanes, as (host, connection number to that host); connection 0 is the one the
    /// user's single requests use.
    pub lanes: Vec<(usize, usize)>,
    /// Each request's lane, an index into `lanes`.
    pub lane_of: Vec<usize>,
}

/// Places `requests` on connections: the k-th request to a host goes on that host's
/// connection k mod `per_host`, so a host's requests beyond `per_host` wait in line for a
/// connection, as a browser's do.
pub(crate) fn place(requests: &[Outgoing], per_host: usize) -> Placed {
    let mut lanes: Vec<(usize, usize)> = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    let mut lane_of = Vec::with_capacity(requests.len());
    for request in requests {
        let origin = request.origin;
        if seen.len() <= origin {
            seen.resize(origin + 1, 0);
        }
        let lane = (origin, seen[origin] % per_host.max(1));
        seen[origin] += 1;
        let index = match lanes.iter().position(|l| *l == lane) {
            Some(i) => i,
            None => {
                lanes.push(lane);
                lanes.len() - 1
            }
        };
        lane_of.push(index);
    }
    Placed { lanes, lane_of }
}

/// One connection of a group with what a request in flight on it needs.
pub(crate) struct Lane {
    link: Link,
    counted: bool,
    request: Vec<u8>,
    head: Vec<u8>,
    body: Vec<u8>,
    timer: Pin<Box<Sleep>>,
}

impl Lane {
    /// A lane on `taken`, a link and whether its connection is counted open.
    pub(crate) fn new(plan: &Plan, (link, counted): (Link, bool)) -> Lane {
        Lane {
            link,
            counted,
            request: Vec::new(),
            head: Vec::new(),
            body: Vec::new(),
            timer: Box::pin(tokio::time::sleep(plan.timeout)),
        }
    }

    /// The link and its `counted`, to give back to the user.
    pub(crate) fn into_link(self) -> (Link, bool) {
        (self.link, self.counted)
    }
}

/// How a request of a group ended, with its response head and kept body.
pub(crate) type Finished = (Ended, Vec<u8>, Vec<u8>);

/// How each request of a group ended, in the requests' order.
pub(crate) type Results = Vec<Finished>;

/// Runs the lanes at once, each sending its requests one after another; every request was
/// due at `started`, the group's start, so one that waited for its connection counts the wait.
pub(crate) async fn run(
    local: &Local,
    plan: &Plan,
    lanes: &mut [Lane],
    placed: &Placed,
    requests: &[Outgoing],
    started: Instant,
    trace_id: Option<belier_stats::TraceId>,
) -> Results {
    let runs = lanes.iter_mut().enumerate().map(|(l, lane)| async move {
        let mut out = Vec::new();
        for (i, outgoing) in requests.iter().enumerate() {
            if placed.lane_of[i] != l {
                continue;
            }
            let mut borrowed = Borrowed {
                link: &mut lane.link,
                counted: &mut lane.counted,
                request: &mut lane.request,
                head: &mut lane.head,
                body: &mut lane.body,
                timer: lane.timer.as_mut(),
            };
            let ended = exchange(local, plan, &mut borrowed, outgoing, started, trace_id).await;
            out.push((
                i,
                (
                    ended,
                    std::mem::take(&mut lane.head),
                    std::mem::take(&mut lane.body),
                ),
            ));
        }
        out
    });
    let mut all: Vec<(usize, Finished)> = join_all(runs).await.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, e)| e).collect()
}

/// The group's sample: from its start to its slowest request's end, with the bytes of all.
/// Its outcome is its first failed request's (by `verdicts`), else its slowest request's.
pub(crate) fn group_sample(started: Instant, ended: &Results, verdicts: &[Verdict]) -> Sample {
    let slowest = ended
        .iter()
        .map(|(e, _, _)| &e.sample)
        .max_by_key(|s| s.done);
    let outcome = ended
        .iter()
        .zip(verdicts)
        .find(|(_, v)| v.failed)
        .map(|((e, _, _), _)| e.sample.outcome)
        .or(slowest.map(|s| s.outcome))
        .unwrap_or(Outcome::Response { status: 200 });
    let done = slowest.map_or(started, |s| s.done);
    Sample {
        intended: started,
        dispatched: started,
        ready: None,
        connected: None,
        handshaken: None,
        sent: started,
        first_byte: ended
            .iter()
            .filter_map(|(e, _, _)| e.sample.first_byte)
            .min(),
        done,
        outcome,
        bytes_in: ended.iter().map(|(e, _, _)| e.sample.bytes_in).sum(),
        bytes_out: ended.iter().map(|(e, _, _)| e.sample.bytes_out).sum(),
        // A group is no request of its own: its requests carry their traces.
        trace: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to(origin: usize) -> Outgoing {
        Outgoing {
            step: 0,
            origin,
            method: "GET".into(),
            path_and_query: "/".into(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_body: false,
            timeout: None,
            stream: None,
        }
    }

    #[test]
    fn requests_spread_over_each_hosts_connections_then_wait_in_line() {
        let requests: Vec<_> = [0, 0, 0, 1, 0].into_iter().map(to).collect();
        let placed = place(&requests, 2);
        assert_eq!(placed.lanes, vec![(0, 0), (0, 1), (1, 0)]);
        assert_eq!(placed.lane_of, vec![0, 1, 0, 2, 1]);
        let placed = place(&requests, 6);
        assert_eq!(placed.lanes, vec![(0, 0), (0, 1), (0, 2), (1, 0), (0, 3)]);
    }
}
