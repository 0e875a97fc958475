use std::time::Duration;

/// Default number of concurrent connections.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Default per-request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default run length when neither a request count nor a duration is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// How long requests still in flight get to finish once a run stops (deadline or stop request).
pub const DEFAULT_GRACE: Duration = Duration::from_secs(1);
/// Interval of the recorded series.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// The request every connection sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestSpec {
    /// Method, e.g. `GET`.
    pub method: String,
    /// Host name (or address literal) to resolve and connect to.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Origin-form request target: path and query, starting with `/`.
    pub path_and_query: String,
    /// Extra header lines, in order. A `Host` or `User-Agent` given here replaces belier's own.
    pub headers: Vec<(String, String)>,
    /// Request body; `Content-Length` is added when it is not empty.
    pub body: Vec<u8>,
}

/// When a run stops: whichever of the bounds comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopWhen {
    /// Total requests to issue across all connections.
    pub requests: Option<u64>,
    /// Wall-clock length of the run.
    pub duration: Option<Duration>,
}

/// Everything the engine needs to run a closed-loop test.
#[derive(Clone, Debug)]
pub struct Config {
    /// The request to send.
    pub request: RequestSpec,
    /// Concurrent connections, each sending its next request when the previous one finished.
    pub connections: usize,
    /// Worker threads; connections are spread evenly across them.
    pub threads: usize,
    /// When to stop.
    pub stop: StopWhen,
    /// Reuse connections (HTTP/1.1 keep-alive); otherwise one connection per request.
    pub keepalive: bool,
    /// Per-request timeout, connect included.
    pub timeout: Duration,
    /// Time requests still in flight get to finish once the run stops.
    pub grace: Duration,
    /// Interval at which workers hand over what they recorded.
    pub interval: Duration,
}

impl Config {
    /// A configuration with the documented defaults for `request`.
    pub fn new(request: RequestSpec) -> Self {
        Config {
            request,
            connections: DEFAULT_CONNECTIONS,
            threads: 1,
            stop: StopWhen {
                requests: None,
                duration: Some(DEFAULT_DURATION),
            },
            keepalive: true,
            timeout: DEFAULT_TIMEOUT,
            grace: DEFAULT_GRACE,
            interval: DEFAULT_INTERVAL,
        }
    }
}
