//! What to request and how to reach it: the flags of a load test's request, also `belier
//! probe`'s and `belier capacity`'s, and the part of them a plan run takes too.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse_duration;

/// What to request and how to reach it: shared by load tests and `belier probe`.
#[derive(Clone, Debug, Args)]
pub struct RequestArgs {
    /// Target URL, e.g. http://127.0.0.1:8080/path?query
    #[arg(value_name = "URL")]
    pub url: Option<String>,

    /// HTTP method.
    #[arg(
        short = 'm',
        long = "method",
        value_name = "METHOD",
        default_value = "GET"
    )]
    pub method: String,

    /// What every request of a run carries, whatever made the run (`belier run` takes
    /// them too).
    #[command(flatten)]
    pub every: EveryRequestArgs,

    /// Request body.
    #[arg(
        short = 'd',
        long = "body",
        value_name = "STRING",
        conflicts_with = "body_file"
    )]
    pub body: Option<String>,

    /// Request body read from a file.
    #[arg(short = 'D', long = "body-file", value_name = "PATH")]
    pub body_file: Option<PathBuf>,

    /// Read each response body as a stream of messages and time them: `sse` (Server-Sent
    /// Events, each ended by a blank line), `chunks` (each read that brings body bytes), `llm`
    /// (an OpenAI-compatible streaming API's chunks with content, its tokens). The report
    /// gives their count, the time to the first from when the request was due (as latency
    /// is), and the gaps between them. Without it bodies are read whole, whatever their type.
    #[arg(long = "stream", value_name = "MODE", value_enum)]
    pub stream: Option<StreamArg>,

    /// With `--stream sse`, each connection is an `EventSource`: once its stream ends (the
    /// server closed it, or it failed), its next request is a reconnection, sent after the
    /// stream's last `retry:` (else DELAY; 3s when not given) with `Last-Event-ID` when the
    /// stream set an id. A response other than a 200 `text/event-stream` (a 204) stops it: the
    /// connection's next request is a new stream, at once. The closed loop over HTTP/1.1 only.
    /// The report counts reconnections, those with an id, their wait and the stops.
    #[arg(
        long = "sse-reconnect",
        value_name = "DELAY",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = DEFAULT_SSE_RECONNECT,
        value_parser = parse_duration
    )]
    pub sse_reconnect: Option<Duration>,

    /// One-line preset for an OpenAI-compatible streaming API (`/v1/chat/completions`,
    /// `/v1/completions`): `--stream llm`, POST (unless -m names another method than GET),
    /// `Content-Type: application/json` and `Accept: text/event-stream` (unless -H names
    /// them). The body (-d or -D, required) is the API's JSON with `"stream": true`. The report
    /// gives time to first token, inter-token latency, output tokens and tokens/s.
    #[arg(long = "llm", conflicts_with = "stream")]
    pub llm: bool,

    /// Per-request timeout, connect included.
    #[arg(long = "timeout", value_name = "D", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// https: trust the CA certificates in this PEM file instead of the system's; a server
    /// certificate found in it byte for byte (the usual self-signed one) is accepted as pinned.
    #[arg(long = "cacert", value_name = "FILE", help_heading = "TLS")]
    pub cacert: Option<PathBuf>,

    /// https: client certificate chain (PEM), with --key.
    #[arg(
        long = "cert",
        value_name = "FILE",
        requires = "key",
        help_heading = "TLS"
    )]
    pub cert: Option<PathBuf>,

    /// https: client private key (PEM), with --cert.
    #[arg(
        long = "key",
        value_name = "FILE",
        requires = "cert",
        help_heading = "TLS"
    )]
    pub key: Option<PathBuf>,

    /// https: the TLS server name (SNI, and the certificate's expected name) when it is not
    /// the URL's host.
    #[arg(long = "sni", value_name = "NAME", help_heading = "TLS")]
    pub sni: Option<String>,

    /// Connect to ADDR for the URL's HOST and PORT instead of resolving it (curl's --resolve),
    /// e.g. api.test:443:127.0.0.1 or api.test:443:[::1]; the Host header and TLS name stay
    /// the URL's. Several addresses, comma-separated, are shared out by --dns-policy.
    #[arg(
        long = "resolve",
        value_name = "HOST:PORT:ADDR[,ADDR...]",
        conflicts_with = "connect_to"
    )]
    pub resolve: Vec<String>,

    /// Send http:// requests through this HTTP proxy (absolute-form request targets; its
    /// user:pass@ as Proxy-Authorization). Hosts in NO_PROXY are reached directly.
    #[arg(
        long = "proxy",
        value_name = "URL",
        conflicts_with_all = ["connect_to", "resolve"]
    )]
    pub proxy: Option<String>,

    /// Connect to this Unix domain socket instead of over TCP (curl's --unix-socket); the URL
    /// still gives the Host header, the path and the scheme (https: TLS over the socket).
    #[arg(
        long = "unix-socket",
        value_name = "PATH",
        conflicts_with_all = ["connect_to", "resolve", "proxy"]
    )]
    pub unix_socket: Option<PathBuf>,

    /// Bind connections to these source addresses, taken in turn (repeatable): ADDR, a CIDR
    /// block (127.0.1.0/28) or FIRST-LAST. Each source has ~28,000 ports per destination, and a
    /// load balancer that hashes on the client address sees several clients.
    #[arg(
        long = "local-address",
        value_name = "ADDR|CIDR|FIRST-LAST",
        conflicts_with = "unix_socket"
    )]
    pub local_address: Vec<String>,
}

/// `--dns-policy`: which of a host's addresses each new connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DnsPolicyArg {
    /// The first address, for every connection.
    First,
    /// Each new connection the next address, in turn.
    RoundRobin,
    /// Each new connection an address drawn at random.
    Random,
}

impl From<DnsPolicyArg> for belier_engine::DnsPolicy {
    fn from(p: DnsPolicyArg) -> Self {
        match p {
            DnsPolicyArg::First => belier_engine::DnsPolicy::First,
            DnsPolicyArg::RoundRobin => belier_engine::DnsPolicy::RoundRobin,
            DnsPolicyArg::Random => belier_engine::DnsPolicy::Random,
        }
    }
}

/// `--sse-reconnect`'s delay when it names none: Chromium's `EventSource` default (Firefox
/// waits 5s), until a stream's `retry:` says otherwise.
const DEFAULT_SSE_RECONNECT: &str = "3s";

/// How `--stream` cuts response bodies into messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamArg {
    /// Server-Sent Events: an event ends at a blank line; comments are none.
    Sse,
    /// Each read that brings body bytes.
    Chunks,
    /// OpenAI-compatible streaming: chunks with content are tokens; `usage` counts them.
    Llm,
}

impl From<StreamArg> for belier_engine::BodyStream {
    fn from(s: StreamArg) -> Self {
        match s {
            StreamArg::Sse => belier_engine::BodyStream::Sse,
            StreamArg::Chunks => belier_engine::BodyStream::Chunks,
            StreamArg::Llm => belier_engine::BodyStream::Llm,
        }
    }
}

/// The request flags a plan run takes as well (`belier run PLAN -H … -k`), there overriding
/// what the plan says: declared once, here, and flattened into both.
#[derive(Clone, Debug, Args)]
pub struct EveryRequestArgs {
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
    pub headers: Vec<String>,

    /// https: do not verify the server's certificate (self-signed test servers). The
    /// handshake still runs in full, so its cost is measured.
    #[arg(long = "insecure", short = 'k', help_heading = "TLS")]
    pub insecure: bool,

    /// https: let connections resume earlier TLS sessions (tickets, session ids); without it
    /// every connection pays a full handshake. Resumed handshakes are counted in the report.
    #[arg(long = "tls-resume", help_heading = "TLS")]
    pub tls_resume: bool,

    /// Connect to this address instead of resolving the URL's host; the Host header and the
    /// TLS name stay the URL's (curl's --connect-to), e.g. 127.0.0.1:8443.
    #[arg(long = "connect-to", value_name = "ADDR")]
    pub connect_to: Option<std::net::SocketAddr>,

    /// Which of a host's addresses (every A and AAAA record, or --resolve's) each new
    /// connection uses: first, round-robin (each the next in turn: spreads the connections
    /// evenly) or random.
    #[arg(long = "dns-policy", value_name = "POLICY", default_value = "first")]
    pub dns_policy: DnsPolicyArg,

    /// Ask this DNS server (e.g. 127.0.0.1:5353) for hosts' addresses instead of the system's
    /// resolver (/etc/hosts, /etc/resolv.conf), like vegeta's -resolvers. --resolve's
    /// addresses go first.
    #[arg(
        long = "dns-server",
        value_name = "ADDR:PORT",
        conflicts_with = "connect_to"
    )]
    pub dns_server: Option<std::net::SocketAddr>,

    /// Look hosts up again this often while the run goes (e.g. 1s, 30s): connections opened
    /// after a changed answer go to the new addresses, and the changes are counted. Without
    /// it, hosts are looked up once, at the start. --resolve's addresses are not looked up.
    #[arg(
        long = "dns-ttl",
        value_name = "D",
        value_parser = parse_duration,
        conflicts_with = "connect_to"
    )]
    pub dns_ttl: Option<Duration>,

    /// Ask for a compressed answer (Accept-Encoding: gzip, br, deflate, zstd) and decode it:
    /// the report gives wire bytes and decoded bytes; a body that fails to decode is an error
    /// of its own (curl's --compressed).
    #[arg(long = "compressed")]
    pub compressed: bool,

    /// Read the server's own account of its time from each response's `Server-Timing` header
    /// (`app;dur=12.3, db;dur=4`): the report gives each metric's percentiles, the server's
    /// time (its `total` metric, else its largest) and the time outside the server (latency
    /// minus the server's time). Responses without the header, or with one that gives no
    /// duration, are counted.
    #[arg(long = "server-timing", help_heading = "Server timing")]
    pub server_timing: bool,

    /// Read the server's time from this header of one figure instead, e.g. X-Response-Time
    /// (`12.3ms`, `800us`, `0.2s`; a bare number is milliseconds), as --server-timing reads
    /// `Server-Timing`.
    #[arg(
        long = "server-time-header",
        value_name = "NAME",
        conflicts_with = "server_timing",
        help_heading = "Server timing"
    )]
    pub server_time_header: Option<String>,

    /// Trace this share of requests (`10%` or `0.1`): each one sampled carries a new W3C
    /// `traceparent` (a new trace id, the request's span id, the sampled flag), which the
    /// slowest requests' exemplars and the spans (--traces-out) keep; the others carry
    /// none. A plan's iteration is sampled whole: one trace, a span per request. A
    /// `tracestate` header given with -H goes along as it is; a request with its own
    /// `traceparent` is sent with that one.
    #[arg(
        long = "trace-sample",
        value_name = "SHARE",
        value_parser = super::values::parse_sample_share,
        help_heading = "Tracing"
    )]
    pub trace_sample: Option<f64>,
}
