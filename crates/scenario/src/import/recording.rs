//! Timed exchanges (a HAR file's entries, the recorder's traffic) → a [`Draft`]: the requests
//! in order, a pause wherever a person (not the browser) waited, and correlation.

use std::time::Duration;

use super::correlate::{self, Correlation, Exchange};
use super::draft::{Draft, DraftStep};

/// Shortest recorded gap kept as a pause: below it the time is the browser's own work between
/// requests, not a person thinking.
pub const MIN_PAUSE: Duration = Duration::from_millis(100);

/// An exchange and when it happened.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// When the request started, from any fixed instant (the first request, the recording's
    /// start).
    pub start: Duration,
    /// How long until the response was complete.
    pub took: Duration,
    /// The request and its response.
    pub exchange: Exchange,
}

/// The plan of `recorded` (in the order they started) sent to `origin`, and the tokens it
/// carries from one response to later requests.
pub fn plan(origin: String, scenario: &str, recorded: Vec<Recorded>) -> (Draft, Vec<Correlation>) {
    let mut gaps = Vec::with_capacity(recorded.len());
    let mut previous_end: Option<Duration> = None;
    let mut exchanges = Vec::with_capacity(recorded.len());
    for r in recorded {
        // Requests the browser had in flight together overlap: only a wait after every earlier
        // response was complete is a pause.
        gaps.push(
            previous_end
                .and_then(|end| r.start.checked_sub(end))
                .filter(|g| *g >= MIN_PAUSE),
        );
        let end = r.start.saturating_add(r.took);
        previous_end = Some(previous_end.map_or(end, |p| p.max(end)));
        exchanges.push(r.exchange);
    }
    let correlations = correlate::correlate(&mut exchanges);
    let mut steps = Vec::with_capacity(exchanges.len() * 2);
    for (exchange, gap) in exchanges.into_iter().zip(gaps) {
        if let Some(gap) = gap {
            steps.push(DraftStep::Pause(Duration::from_millis(
                gap.as_millis() as u64
            )));
        }
        steps.push(DraftStep::Request(exchange.request));
    }
    let mut draft = Draft {
        origin,
        scenario: scenario.to_string(),
        headers: Vec::new(),
        insecure: false,
        follow: 0,
        compressed: false,
        steps,
    };
    draft.hoist_common_headers();
    (draft, correlations)
}
