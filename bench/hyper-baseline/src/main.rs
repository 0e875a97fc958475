//! hyper-baseline: belier's closed loop, with hyper's HTTP/1.1 client doing the HTTP.
//!
//! belier's engine writes requests and parses responses itself (tokio `TcpStream` + httparse).
//! The project only hand-writes what a benchmark shows a crate to be the bottleneck for, so this
//! binary runs the loop of belier's worker (`crates/engine/src/worker.rs`) unchanged except for
//! the HTTP layer, and `bench/run --tools belier,wrk,hyper` puts the two side by side:
//!
//! - one thread: a current-thread runtime and a `LocalSet`, one local task per connection;
//! - per request: a timeout timer re-armed (not re-created), `Instant::now()` taken where belier
//!   takes it (intended, sent, first byte, done), the whole body read and dropped;
//! - after any failure the connection is dropped and the next request opens a new one;
//! - at the deadline no new request starts, and those in flight get a short grace period.
//!
//! It records less than belier (sums and counters, no histogram), which if anything favours
//! hyper. The output is the subset of belier's JSON summary that `bench/run` reads.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{HeaderValue, HOST};
use hyper::{Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::{JoinSet, LocalSet};

const DEFAULT_CONNECTIONS: usize = 50;
const DEFAULT_DURATION: Duration = Duration::from_secs(5);
/// belier's defaults (`crates/engine/src/config.rs`): the per-request timeout, connect included,
/// and how long requests in flight at the deadline get to finish.
const TIMEOUT: Duration = Duration::from_secs(30);
const GRACE: Duration = Duration::from_secs(1);

const USAGE: &str = "usage: hyper-baseline [-c CONNECTIONS] [-z SECONDS] http://127.0.0.1:PORT/";

/// What to load, validated.
struct Args {
    connections: usize,
    duration: Duration,
    target: Target,
}

/// Where requests go; shared read-only by the connection tasks.
struct Target {
    addr: SocketAddr,
    /// The URL's authority, sent as `Host` (hyper's connection-level client does not add it).
    host: HeaderValue,
    /// Path and query, the request target of an HTTP/1.1 origin-form request.
    path: Uri,
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        // An empty message is `--help`.
        Err(msg) if msg.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("hyper-baseline: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hyper-baseline: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (tally, elapsed) = LocalSet::new().block_on(&runtime, run(args));

    let (requests, succeeded) = (tally.requests.get(), tally.succeeded.get());
    let mean = |sum_us: u64, n: u64| (n > 0).then(|| sum_us as f64 / n as f64);
    let summary = serde_json::json!({ "summary": {
        "requests": requests,
        "succeeded": succeeded,
        "errors": requests - succeeded,
        "duration_s": elapsed.as_secs_f64(),
        "latency_us_mean": mean(tally.latency_us_sum.get(), requests),
        "first_byte_us_mean": mean(tally.first_byte_us_sum.get(), tally.first_bytes.get()),
    }});
    println!("{summary}");
    if let Some(example) = tally.first_error.borrow().as_deref() {
        eprintln!("hyper-baseline: first error: {example}");
    }
    ExitCode::SUCCESS
}

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut connections = DEFAULT_CONNECTIONS;
    let mut duration = DEFAULT_DURATION;
    let mut url = None;
    while let Some(arg) = argv.next() {
        let mut value = |flag: &str| argv.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "-c" => {
                connections = value("-c")?
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or("-c takes a number of connections, at least 1")?;
            }
            "-z" => {
                let text = value("-z")?;
                duration = text
                    .strip_suffix('s')
                    .unwrap_or(&text)
                    .parse::<f64>()
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok())
                    .filter(|d| !d.is_zero())
                    .ok_or(format!("-z takes seconds greater than 0, not {text:?}"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            _ if url.is_some() => return Err("only one URL".into()),
            _ => url = Some(arg),
        }
    }
    let target = parse_target(&url.ok_or("no URL")?)?;
    Ok(Args {
        connections,
        duration,
        target,
    })
}

/// Accepts `http://` URLs whose host is a loopback address or `localhost`: this is a benchmark
/// tool and must never load anything else.
fn parse_target(url: &str) -> Result<Target, String> {
    let uri: Uri = url.parse().map_err(|e| format!("bad URL {url:?}: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("only http:// URLs, not {url:?}"));
    }
    let authority = uri.authority().ok_or(format!("no host in {url:?}"))?;
    let ip = match authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
    {
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        host => host
            .parse::<IpAddr>()
            .map_err(|_| format!("host {host:?} is neither an IP address nor localhost"))?,
    };
    if !ip.is_loopback() {
        return Err(format!(
            "refusing non-loopback host {ip}: this benchmark only loads loopback"
        ));
    }
    let host = HeaderValue::from_str(authority.as_str()).map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    Ok(Target {
        addr: SocketAddr::new(ip, authority.port_u16().unwrap_or(80)),
        host,
        path: path
            .parse()
            .map_err(|e| format!("bad path {path:?}: {e}"))?,
    })
}

/// The run's counters, shared by the connection tasks of the one thread: `Cell`s, so recording
/// costs no atomic operation, as with belier's per-worker recorder.
#[derive(Default)]
struct Tally {
    requests: Cell<u64>,
    /// 2xx and 3xx responses, as belier counts `succeeded`.
    succeeded: Cell<u64>,
    /// Sum of intended → done, belier's latency.
    latency_us_sum: Cell<u64>,
    first_byte_us_sum: Cell<u64>,
    first_bytes: Cell<u64>,
    /// Only the first error is formatted, so failures cost no allocation after it.
    first_error: RefCell<Option<String>>,
}

impl Tally {
    fn record(&self, result: &Result<StatusCode, Failure>, marks: &Marks, done: Instant) {
        let add = |cell: &Cell<u64>, n: u64| cell.set(cell.get() + n);
        add(&self.requests, 1);
        add(&self.latency_us_sum, micros(done - marks.intended));
        if let (Some(sent), Some(first_byte)) = (marks.sent, marks.first_byte) {
            add(&self.first_byte_us_sum, micros(first_byte - sent));
            add(&self.first_bytes, 1);
        }
        match result {
            Ok(status) if status.is_success() || status.is_redirection() => add(&self.succeeded, 1),
            Ok(_) => {}
            Err(failure) => {
                let mut first = self.first_error.borrow_mut();
                if first.is_none() {
                    *first = Some(failure.to_string());
                }
            }
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The instants belier's `Sample` holds, taken at the same points.
struct Marks {
    intended: Instant,
    sent: Option<Instant>,
    first_byte: Option<Instant>,
}

enum Failure {
    Connect(std::io::Error),
    Http(hyper::Error),
    Timeout,
}

impl From<hyper::Error> for Failure {
    fn from(e: hyper::Error) -> Self {
        Failure::Http(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Connect(e) => write!(f, "connect: {e}"),
            Failure::Http(e) => write!(f, "http: {e}"),
            Failure::Timeout => write!(f, "no complete response within {TIMEOUT:?}"),
        }
    }
}

/// Runs the connections until the deadline; returns the counters and the run's wall time.
async fn run(args: Args) -> (Rc<Tally>, Duration) {
    let start = Instant::now();
    let deadline = start + args.duration;
    let tally = Rc::new(Tally::default());
    let target = Rc::new(args.target);
    let mut connections = JoinSet::new();
    for _ in 0..args.connections {
        connections.spawn_local(connection(Rc::clone(&tally), Rc::clone(&target), deadline));
    }
    // Each task starts no request after the deadline; those in flight get GRACE, as in belier.
    let all_done = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout_at((deadline + GRACE).into(), all_done).await;
    connections.abort_all();
    (tally, start.elapsed())
}

/// One connection's closed loop: send, wait for the whole response, record, repeat.
async fn connection(tally: Rc<Tally>, target: Rc<Target>, deadline: Instant) {
    let mut sender = None;
    // One timer per connection, re-armed per request, as belier does.
    let timer = tokio::time::sleep(TIMEOUT);
    tokio::pin!(timer);
    loop {
        let mut marks = Marks {
            intended: Instant::now(),
            sent: None,
            first_byte: None,
        };
        if marks.intended >= deadline {
            return;
        }
        timer.as_mut().reset((marks.intended + TIMEOUT).into());
        let result = tokio::select! {
            biased;
            r = attempt(&mut sender, &target, &mut marks) => r,
            _ = &mut timer => Err(Failure::Timeout),
        };
        let done = Instant::now();
        tally.record(&result, &marks, done);
        if result.is_err() {
            // Whatever failed, the connection's state is unknown: start afresh, as belier does.
            sender = None;
        }
    }
}

async fn attempt(
    slot: &mut Option<SendRequest<Empty<Bytes>>>,
    target: &Target,
    marks: &mut Marks,
) -> Result<StatusCode, Failure> {
    let sender = match slot {
        Some(sender) => sender,
        None => slot.insert(open(target).await?),
    };
    // hyper refuses a request while the connection is still finishing the previous exchange;
    // hyper-util's pooled client waits for readiness the same way.
    sender.ready().await?;
    // hyper's API takes a `Request` by value, so its head is built for every request (belier
    // writes bytes it built once per worker): that cost is part of what is measured.
    let request = Request::builder()
        .uri(target.path.clone())
        .header(HOST, target.host.clone())
        .body(Empty::new())
        .expect("a path and a header value that were validated up front");
    marks.sent = Some(Instant::now());
    let response = sender.send_request(request).await?;
    marks.first_byte = Some(Instant::now());
    let status = response.status();
    // Read the body to its end and drop it (belier never keeps one either), frame by frame
    // rather than `collect()`, which would buffer it.
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        frame?;
    }
    Ok(status)
}

/// Connects and hands the connection to hyper, whose connection future does the socket reads
/// and writes in a task of its own: each exchange is two tasks waking each other, where belier
/// reads and writes in the connection's one task.
async fn open(target: &Target) -> Result<SendRequest<Empty<Bytes>>, Failure> {
    let stream = TcpStream::connect(target.addr)
        .await
        .map_err(Failure::Connect)?;
    // Requests are written in one piece; Nagle would only delay them.
    stream.set_nodelay(true).map_err(Failure::Connect)?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
    // It ends when `sender` is dropped or the peer closes; its error then reaches `sender`.
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(sender)
}
