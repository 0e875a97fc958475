//! Timed exchanges (a HAR file's entries, the recorder's traffic) → a [`Draft`]: the requests
//! in order, a pause wherever a person (not the browser) waited, and correlation.

use std::time::Duration;

use super::correlate::{self, Correlation, Exchange, Response};
#[cfg(doc)]
use super::draft::DraftRequest;
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

/// The plan of `recorded` (in the order they started), and the tokens it carries from one
/// response to later requests.
///
/// Each request names its origin ([`DraftRequest::origin`]). The plan's target is the origin
/// of the first HTML document recorded (the page a person opened; its scripts' calls to APIs
/// and CDNs are the other hosts), or of the first request when no document was; requests to
/// any other origin become steps with an absolute `url:`.
pub fn plan(scenario: &str, recorded: Vec<Recorded>) -> (Draft, Vec<Correlation>) {
    let origin = recorded
        .iter()
        .find(|r| is_document(&r.exchange.response))
        .or(recorded.first())
        .and_then(|r| r.exchange.request.origin.clone())
        .unwrap_or_default();
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
        let mut request = exchange.request;
        if request.origin.as_deref() == Some(origin.as_str()) {
            request.origin = None;
        }
        steps.push(DraftStep::Request(request));
    }
    let mut draft = Draft {
        origin,
        scenario: scenario.to_string(),
        headers: Vec::new(),
        insecure: false,
        cacert: None,
        unix_socket: None,
        follow: 0,
        compressed: false,
        steps,
    };
    draft.hoist_common_headers();
    (draft, correlations)
}

/// Whether a response is an HTML page (`Content-Type: text/html`).
fn is_document(response: &Response) -> bool {
    response.headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("content-type")
            && value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("text/html")
    })
}
