//! Argument vectors made of belier's real flags with values near valid ones, for the property
//! tests that feed the command line: in process (`src/parsers_never_panic.rs`, parsing and
//! validating only) and through the binary (`tests/suite/flags_never_panic.rs`). Needs a sibling
//! module `near_miss`.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use crate::near_miss::near_miss;

/// What a flag takes.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Nothing: a switch.
    Switch,
    Duration,
    Count,
    Rate,
    Header,
    Stages,
    Share,
    Slo,
    FailIf,
    Method,
    Text,
    Url,
    Addr,
    /// A file name, relative: the binary runs in a temporary directory.
    File,
    /// A comma-separated list of numbers.
    List,
    /// One of these words (or a near miss).
    Choice(&'static [&'static str]),
}

use Kind::*;

pub const SUBCOMMANDS: &[&str] = &[
    "target", "demo", "report", "compare", "probe", "run", "check", "capacity", "import", "record",
    "help",
];

/// Flags of a request (load tests, `probe`, `capacity`).
pub const REQUEST: &[(&str, Kind)] = &[
    ("-m", Method),
    ("--method", Method),
    ("-H", Header),
    ("--header", Header),
    ("-d", Text),
    ("--body", Text),
    ("-D", File),
    ("--body-file", File),
    ("-k", Switch),
    ("--insecure", Switch),
    ("--cacert", File),
    ("--tls-resume", Switch),
    ("--cert", File),
    ("--key", File),
    ("--sni", Text),
    ("--dns-policy", Choice(&["first", "round-robin", "random"])),
];

/// Flags that bound a load test (fixed when the binary runs, fuzzed in process).
pub const BOUNDS: &[(&str, Kind)] = &[
    ("-n", Count),
    ("--requests", Count),
    ("-z", Duration),
    ("--duration", Duration),
    ("--timeout", Duration),
    ("--connect-to", Addr),
];

/// Flags of a load test besides [`REQUEST`] and [`BOUNDS`].
pub const LOAD: &[(&str, Kind)] = &[
    ("-c", Count),
    ("--connections", Count),
    ("--rate", Rate),
    ("--stages", Stages),
    ("--ramp-up", Duration),
    ("--arrivals", Choice(&["even", "poisson"])),
    ("--seed", Count),
    ("--max-connections", Count),
    ("--max-in-flight", Count),
    ("--timer-slack", Duration),
    ("-t", Count),
    ("--threads", Count),
    ("--no-keepalive", Switch),
    ("--no-resend", Switch),
    ("--http2", Switch),
    ("--max-streams", Count),
    ("--raw", File),
    ("--output", Choice(&["text", "json"])),
    ("--out", File),
    ("--save", File),
    ("--name", Text),
    ("--interval", Duration),
    ("--html", File),
    ("--junit", File),
];

/// Flags of the live views and exports: parsed and validated in process only, as the binary
/// would take the terminal or listen on a port with them.
pub const LIVE: &[(&str, Kind)] = &[
    ("--tui", Switch),
    ("--metrics-listen", Addr),
    ("--metrics-token", Text),
    ("--metrics-linger", Duration),
    ("--metrics-out", Text),
    // Bare: with an address it must be `--web=ADDR` (require_equals).
    ("--web", Switch),
    ("--web-token", Text),
    ("--web-linger", Duration),
];

/// Flags of `belier capacity` besides [`REQUEST`]; never `--prometheus`, so that a
/// `prom:` SLO stops the binary before its first step.
pub const CAPACITY: &[(&str, Kind)] = &[
    (
        "--dimension",
        Choice(&["rate", "connections", "connection-rate"]),
    ),
    ("--slo", Slo),
    ("--start-rate", Rate),
    ("--growth", Rate),
    ("--precision", Share),
    ("--max-rate", Rate),
    ("--warmup", Duration),
    ("--window", Duration),
    ("--confirm", Count),
    ("--confirm-window", Duration),
    ("--max-time", Duration),
    ("--overload", List),
    ("--no-overload", Switch),
    ("--overload-window", Duration),
    ("--drain", Duration),
    ("--arrivals", Choice(&["even", "poisson"])),
    ("--seed", Count),
    ("--max-connections", Count),
    ("--max-in-flight", Count),
    ("-t", Count),
    ("--no-resend", Switch),
    ("--http2", Switch),
    ("--max-streams", Count),
    ("--output", Choice(&["text", "json", "html"])),
    ("--html", File),
    ("--out", File),
    ("--save", File),
];

/// Flags of `belier report`.
pub const REPORT: &[(&str, Kind)] = &[
    (
        "--type",
        Choice(&["text", "json", "csv", "markdown", "hdr", "html"]),
    ),
    ("--from", Duration),
    ("--to", Duration),
    ("--out", File),
];

/// Flags of `belier compare`.
pub const COMPARE: &[(&str, Kind)] = &[
    ("--fail-if", FailIf),
    ("--output", Choice(&["text", "json"])),
    ("--from", Duration),
    ("--to", Duration),
];

/// Flags of `belier run` (parsed in process only: the binary never runs a plan).
pub const RUN: &[(&str, Kind)] = &[
    ("-z", Duration),
    ("-i", Count),
    ("--iterations", Count),
    ("-u", Count),
    ("--vus", Count),
    ("--rate", Rate),
    ("-H", Header),
    ("--var", Text),
    ("-k", Switch),
    ("--connect-to", Addr),
    ("--no-resend", Switch),
    ("--tls-resume", Switch),
    ("-t", Count),
    ("--output", Choice(&["text", "json"])),
    ("--save", File),
    ("--interval", Duration),
];

/// Files the `File` flags name (the binary's directory holds some of them).
pub const FILES: &[&str] = &[
    "out.txt",
    "body.bin",
    "ca.pem",
    "results.jsonl",
    "none/x",
    "-",
    "",
];

const DURATIONS: &[&str] = &[
    "30s", "2m", "1h30m", "250ms", "1.5", "0", "0s", "1us", "100ms", "10ms", "876000h",
];
const COUNTS: &[&str] = &["1", "2", "10", "50", "100", "1000000", "1000001"];
const RATES: &[&str] = &["100", "0.5", "2", "1e7", "1.25"];
const HEADERS: &[&str] = &["X-A: b", "Accept: */*", "Host: h", "Cookie: a=1; b=2"];
const STAGES: &[&str] = &["30s:500,1m:500,10s:0", "1s:1", "100ms:0,100ms:5"];
const SHARES: &[&str] = &["5%", "0.05", "1%", "0.5"];
const SLOS: &[&str] = &[
    "p99<50ms",
    "p99.9 < 200ms",
    "errors<0.1%",
    "mean<=1s",
    "prom:up<1",
];
const FAIL_IF: &[&str] = &["p99>+10%,rate<-5%,errors>0.5%", "p99>250ms", "rate<900/s"];
const METHODS: &[&str] = &["GET", "POST", "PATCH", "M-SEARCH"];
const URLS: &[&str] = &[
    "http://127.0.0.1:9/",
    "http://127.0.0.1:9/a/b?q=1&r=%20",
    "https://127.0.0.1:9/",
    "http://[::1]:9/",
    "http://localhost:9",
];
const ADDRS: &[&str] = &["127.0.0.1:9", "[::1]:9", "127.0.0.1:65535"];
const LISTS: &[&str] = &["1.25,1.5,2", "2", "1.1,1.2"];

/// A plain value of `kind`, near a valid one, or noise.
pub fn value(kind: Kind) -> BoxedStrategy<String> {
    value_of(kind, true)
}

/// A plain value of `kind`, valid where the flag stands alone.
pub fn plain_value(kind: Kind) -> BoxedStrategy<String> {
    value_of(kind, false)
}

/// A value of `kind`: when not `wild`, only the plain ones (so that a run goes ahead).
fn value_of(kind: Kind, wild: bool) -> BoxedStrategy<String> {
    let seeds: &'static [&'static str] = match kind {
        Switch => return Just(String::new()).boxed(),
        File => return prop::sample::select(FILES).prop_map(str::to_string).boxed(),
        Choice(words) => words,
        Duration => DURATIONS,
        Count => COUNTS,
        Rate => RATES,
        Header => HEADERS,
        Stages => STAGES,
        Share => SHARES,
        Slo => SLOS,
        FailIf => FAIL_IF,
        Method => METHODS,
        Url => URLS,
        Addr => ADDRS,
        List => LISTS,
        Text => &["x", "a name", "é"],
    };
    if !wild {
        return prop::sample::select(seeds).prop_map(str::to_string).boxed();
    }
    prop_oneof![
        8 => prop::sample::select(seeds).prop_map(str::to_string),
        3 => near_miss(seeds),
        1 => "\\PC{0,12}",
    ]
    // A bare subcommand name would turn a load test's URL into a subcommand.
    .prop_filter("a subcommand", |v| !SUBCOMMANDS.contains(&v.trim()))
    .boxed()
}

/// Up to `most` flags of `table`, each with a value of its kind.
pub fn flags(table: &'static [(&'static str, Kind)], most: usize) -> BoxedStrategy<Vec<String>> {
    flags_of(table, most, true)
}

/// Up to `most` flags of `table` with plain values: mostly a run that goes ahead.
pub fn plain_flags(
    table: &'static [(&'static str, Kind)],
    most: usize,
) -> BoxedStrategy<Vec<String>> {
    flags_of(table, most, false)
}

fn flags_of(
    table: &'static [(&'static str, Kind)],
    most: usize,
    wild: bool,
) -> BoxedStrategy<Vec<String>> {
    let one = prop::sample::select(table).prop_flat_map(move |(flag, kind)| {
        value_of(kind, wild).prop_map(move |v| match kind {
            Switch => vec![flag.to_string()],
            // `--flag=value` too: clap reads both, and a value may start with `-`.
            _ if v.starts_with('-') => vec![format!("{flag}={v}")],
            _ => vec![flag.to_string(), v],
        })
    });
    prop::collection::vec(one, 0..=most)
        .prop_map(|pairs| pairs.concat())
        .boxed()
}

/// A URL near a valid one on 127.0.0.1 (the binary also connects to 127.0.0.1:9 whatever
/// the URL says).
pub fn url() -> BoxedStrategy<String> {
    value(Url)
}

/// A flag of any table with a value of another kind: what clap must refuse.
pub fn misplaced() -> BoxedStrategy<Vec<String>> {
    let every: Vec<&'static str> = [REQUEST, BOUNDS, LOAD, CAPACITY, REPORT, COMPARE, RUN]
        .iter()
        .flat_map(|t| t.iter().map(|(f, _)| *f))
        .collect();
    let kinds = vec![Duration, Count, Header, Text, Url, Slo];
    (prop::sample::select(every), prop::sample::select(kinds))
        .prop_flat_map(|(flag, kind)| value(kind).prop_map(move |v| vec![flag.to_string(), v]))
        .boxed()
}
