//! Validated configuration: raw flags in, an engine configuration out, or an error that names
//! the flag and the value at fault.

use std::time::Duration;

use belier_engine::request::{rules, InvalidRequest};
use belier_engine::{
    Config, Load, Profile, RequestSpec, ServerTimingHeader, Spacing, Stage, StopWhen, TlsOptions,
    DEFAULT_MAX_CONNECTIONS,
};

use belier_plan::files;

use crate::args::{parse_duration, ArrivalsArg, LoadArgs, OutputArgs, RequestArgs};
use crate::limits::{check_range, MAX_CONNECTIONS, MAX_RATE};

mod decided;
mod draft;
mod input_error;

pub use decided::{Output, Settings, TargetsRun};
pub use draft::{Draft, Http2, Origin};
pub use input_error::InputError;

/// Most worker threads belier accepts.
const MAX_THREADS: usize = 1024;
/// Most requests belier accepts in one run.
const MAX_REQUESTS: u64 = 1_000_000_000_000;

/// Validates the report and results flags, and sets the engine's interval from them.
pub fn output(o: OutputArgs, engine: &mut Config) -> Result<Output, InputError> {
    if o.interval < MIN_INTERVAL {
        return Err(InputError::new(
            "--interval <D>",
            humantime::format_duration(o.interval),
            "must be at least 100ms",
        ));
    }
    engine.interval = o.interval;
    let name = run_name(o.name.as_deref(), o.save.as_deref())?;
    let keep = crate::history::keep(&o.keep, o.name.as_deref())?;
    let save = match (&keep, o.save) {
        (Some(keep), None) => Some(crate::history::results_path(keep)?),
        (Some(_), Some(save)) if save.as_os_str() == "-" => {
            return Err(InputError::new(
                "--save <FILE>",
                "-",
                "a run kept with --history is read back from its results file: give a file",
            ))
        }
        (_, save) => save,
    };
    Ok(Output {
        format: o.output,
        out: o.out,
        name,
        save,
        keep,
        html: o.html,
        junit: o.junit,
        tui: o.tui,
        metrics: crate::metrics::listen(
            o.metrics_listen,
            o.metrics_token.or_else(crate::metrics::token_from_env),
            o.metrics_linger,
        )?,
        metrics_out: crate::outputs::specs(&o.metrics_out)?,
        traces_out: o.traces_out,
        web: crate::web::listen(o.web, o.web_token, o.web_linger)?.map(crate::web::Web::Serve),
    })
}

/// The worker threads asked for (`-t`), or one per core.
pub fn threads(given: Option<usize>, cores: usize) -> Result<usize, InputError> {
    let threads = given.unwrap_or(cores.max(1));
    check_range("--threads <N>", threads as u64, 1, MAX_THREADS as u64)?;
    Ok(threads)
}

/// Largest open-loop timer slack accepted.
const MAX_TIMER_SLACK: Duration = Duration::from_millis(10);

/// Smallest interval accepted: shorter ones would cost more than they tell.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The header `--compressed` sends: every coding the engine decodes.
pub const ACCEPT_ENCODING: (&str, &str) = ("Accept-Encoding", belier_engine::ACCEPT_ENCODING);

/// The headers `--llm` adds unless -H names them: a JSON body, a stream of events back.
fn llm_headers(headers: &mut Vec<(String, String)>) {
    for (name, value) in [
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
    ] {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            headers.push((name.into(), value.into()));
        }
    }
}

/// Why a file a flag names cannot be read, for [`InputError`]: "cannot read it: …", or what
/// the file is when it is not one belier reads ("it is a named pipe (FIFO), …").
pub(crate) fn read_error(e: &files::FileError) -> String {
    match e {
        files::FileError::Io(e) => format!("cannot read it: {e}"),
        other => other.to_string(),
    }
}

/// Validates what to request and how to reach it: an engine configuration with the
/// request, TLS, timeout and address set (load settings at their defaults), and the URL.
pub fn request_config(r: &RequestArgs) -> Result<(Config, String), InputError> {
    let url = r.url.clone().ok_or_else(|| {
        InputError::new("<URL>", "", "is required (usage: belier [OPTIONS] <URL>)")
    })?;
    let (url, auth) = without_credentials(url);
    let (host, port, path_and_query, https) = parse_url(&url)?;
    let tls = tls_options(r, https)?;
    let resolved = crate::resolve::addresses(&r.resolve, &host, port)?;
    check_token("--method <METHOD>", &r.method)?;
    let mut headers = r
        .every
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    // --compressed asks for every coding belier decodes, unless -H names one already.
    if r.every.compressed
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
    {
        headers.push((ACCEPT_ENCODING.0.into(), ACCEPT_ENCODING.1.into()));
    }
    if r.llm {
        llm_headers(&mut headers);
    }
    // An Authorization header given with -H wins over the URL's credentials, as with curl.
    if let Some(auth) = auth {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&auth.0)) {
            headers.insert(0, auth);
        }
    }
    let body = match (&r.body, &r.body_file) {
        (Some(s), _) => s.clone().into_bytes(),
        (None, Some(path)) => files::read(path, files::MOST_BODY_BYTES)
            .map_err(|e| InputError::new("--body-file <PATH>", path.display(), read_error(&e)))?,
        (None, None) if r.llm => {
            return Err(InputError::new(
                "--llm",
                "",
                "needs a request body (-d or -D): the API's JSON, with \"stream\": true",
            ))
        }
        (None, None) => Vec::new(),
    };
    // --llm posts unless -m names another method.
    let method = match (r.llm, r.method.as_str()) {
        (true, "GET") => "POST".to_owned(),
        _ => r.method.clone(),
    };
    let mut engine = Config::new(RequestSpec {
        method,
        host,
        port,
        path_and_query,
        headers,
        body,
    });
    check_framing(&engine.request)?;
    engine.timeout = r.timeout;
    engine.compressed = r.every.compressed;
    engine.server_timing = server_timing(&r.every)?;
    engine.trace_sample = trace_sample(&r.every, &engine.request.headers)?;
    engine.stream = match r.llm {
        true => Some(belier_engine::BodyStream::Llm),
        false => r.stream.map(Into::into),
    };
    if r.sse_reconnect.is_some() && engine.stream != Some(belier_engine::BodyStream::Sse) {
        return Err(InputError::new(
            "--sse-reconnect",
            "",
            "needs --stream sse: it reconnects Server-Sent Events streams",
        ));
    }
    engine.sse_reconnect = r.sse_reconnect;
    engine.tls = tls;
    engine.connect_to = r.every.connect_to;
    crate::resolve::apply(&mut engine, resolved);
    engine.dns_policy = r.every.dns_policy.into();
    engine.dns_server = r.every.dns_server;
    engine.dns_ttl = r.every.dns_ttl;
    engine.unix_socket.clone_from(&r.unix_socket);
    engine.local_addresses = local_addresses(&r.local_address)?;
    if let Some(proxy) = &r.proxy {
        crate::proxy::apply(&mut engine, proxy, &url)?;
    }
    Ok((engine, url))
}

/// The source addresses `--local-address` names, in the order given, each once.
fn local_addresses(values: &[String]) -> Result<Vec<std::net::IpAddr>, InputError> {
    let (mut addrs, mut seen) = (Vec::new(), std::collections::HashSet::new());
    for value in values {
        let range = belier_engine::source::parse_range(value)
            .map_err(|e| InputError::new("--local-address", value, e.to_string()))?;
        addrs.extend(range.into_iter().filter(|addr| seen.insert(*addr)));
        // Each value is bounded; so are they all together, or repeating one would hold any
        // number of addresses in memory.
        if addrs.len() as u128 > belier_engine::source::MOST_SOURCE_ADDRESSES {
            return Err(InputError::new(
                "--local-address",
                value,
                format!(
                    "brings the source addresses to more than the {} belier takes in all",
                    belier_engine::source::MOST_SOURCE_ADDRESSES
                ),
            ));
        }
    }
    Ok(addrs)
}

/// The connections `--hold` keeps beside the load: `connections` of them (the flag's, or a
/// capacity step's level), held as `args` say; `None` for none.
pub fn hold(
    args: &crate::args::HoldArgs,
    connections: Option<u64>,
) -> Result<Option<belier_engine::Hold>, InputError> {
    let Some(connections) = connections else {
        return Ok(None);
    };
    check_range("--hold <N>", connections, 1, MAX_CONNECTIONS as u64)?;
    let interval = args.hold_interval;
    if interval < MIN_TRICKLE_INTERVAL || interval > MAX_TRICKLE_INTERVAL {
        return Err(InputError::new(
            "--hold-interval <D>",
            humantime::format_duration(interval),
            "must be from 1ms to 10m",
        ));
    }
    Ok(Some(belier_engine::Hold {
        connections,
        mode: args.hold_mode.into(),
        interval,
    }))
}

/// Bounds of `--hold-interval`: a byte a millisecond is no longer slow, and a byte every ten
/// minutes outlasts any server's patience.
const MIN_TRICKLE_INTERVAL: std::time::Duration = std::time::Duration::from_millis(1);
const MAX_TRICKLE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(600);

/// Validates `args`. `cores` is the default thread count.
pub fn from_args(args: LoadArgs, cores: usize) -> Result<Settings, InputError> {
    let (engine, url) = request_config(&args.request)?;
    with_request(args, cores, engine, url, None)
}

/// Validates the load and output flags of `args` for a run whose request side (`engine`, the
/// report's `url`) is made already: by [`request_config`], or from a targets file whose
/// `targets` then drive the run.
pub fn with_request(
    args: LoadArgs,
    cores: usize,
    mut engine: Config,
    url: String,
    targets: Option<TargetsRun>,
) -> Result<Settings, InputError> {
    let (shard, seed_given) = (args.shard.shard, args.open_loop.seed.is_some());
    let open_loop = args.pace.rate.is_some();
    // `--http3`, or `--http3=auto` (which speaks HTTP/2 until the server's Alt-Svc is read).
    let http3 = args.http2.http3.is_some();
    if let Some(n) = args.requests {
        check_range("--requests <N>", n, 1, MAX_REQUESTS)?;
    }
    check_range(
        "--connections <N>",
        args.connections as u64,
        1,
        MAX_CONNECTIONS as u64,
    )?;
    engine.load = load_model(&args)?;
    let threads = threads(args.sending.threads, cores)?;
    engine.keepalive = !args.no_keepalive;
    engine.resend = !args.sending.no_resend;
    engine.stop = StopWhen {
        requests: args.requests,
        duration: args.pace.duration,
        iterations: None,
    };
    engine.keep_samples = args.raw.is_some();
    engine.hold = hold(&args.hold, args.hold.hold)?;
    engine.kernel_stamps = args.kernel_stamps != Some(crate::args::OnOff::Off);
    if let Some(slack) = args.timer_slack {
        if slack > MAX_TIMER_SLACK {
            return Err(InputError::new(
                "--timer-slack <D>",
                humantime::format_duration(slack),
                "must be at most 10ms: beyond, batching would distort the schedule itself",
            ));
        }
        engine.timer_slack = slack;
    }
    let output = output(args.results, &mut engine)?;
    if let Some(t) = &targets {
        engine.users = Some(t.users.clone());
    }
    if engine.users.is_some() {
        // Each of the users' iterations is one request (a target's, a templated gRPC
        // call's): -n counts both.
        engine.stop.iterations = args.requests;
    }
    let mut settings = Draft {
        engine,
        url,
        output,
        raw: args.raw,
        plan: None,
        threads,
        http2: Http2 {
            on: args.http2.http2,
            http3: args.http2.http3 == Some(crate::args::Http3Mode::Always),
            auto: args.http2.http3 == Some(crate::args::Http3Mode::Auto),
            early: args.http2.quic_0rtt,
            max_streams: args.http2.max_streams,
            origin: Origin::Flags,
        },
        cap_given: args.open_loop.max_connections.is_some(),
        part: shard.unwrap_or_else(|| args.cluster.first_part()),
    }
    .finish()?;
    refuse_reconnection(&settings.engine, open_loop, http3)?;
    settings.targets = targets;
    crate::shard::apply(&mut settings.engine, shard, seed_given)?;
    Ok(settings)
}

/// `--sse-reconnect` makes each connection of a closed loop over HTTP/1.1 an `EventSource`:
/// an open loop's arrivals are independent clients, HTTP/2's and HTTP/3's slots share
/// connections, and users with cookie jars or redirects to follow are scripted users; each is
/// refused by name (targets files are, where they are read); `http3`: `--http3` was given,
/// `auto` included.
fn refuse_reconnection(engine: &Config, open_loop: bool, http3: bool) -> Result<(), InputError> {
    if engine.sse_reconnect.is_none() {
        return Ok(());
    }
    let refused = [
        (
            open_loop,
            "--rate",
            "an open loop's arrivals are new clients",
        ),
        (http3, "--http3", "it reconnects HTTP/1.1 connections"),
        (
            engine.http2,
            "--http2",
            "it reconnects HTTP/1.1 connections",
        ),
        // Users with cookie jars or hops (`--cookies`, `--follow`) send the run's request.
        (
            engine.users.is_some(),
            "--cookies or --follow",
            "it reconnects the run's one request, not users'",
        ),
    ];
    match refused.iter().find(|(given, ..)| *given) {
        Some((_, flag, why)) => Err(InputError::new(
            "--sse-reconnect",
            "",
            format!("does not apply with {flag}: {why} (the closed loop's connections reconnect)"),
        )),
        None => Ok(()),
    }
}

/// The load model the flags ask for.
fn load_model(args: &LoadArgs) -> Result<Load, InputError> {
    let stages = args.stages.as_deref().map(parse_stages).transpose()?;
    match args.pace.rate {
        Some(rate) => open_loop(args, rate, stages),
        None => closed_loop(args, stages),
    }
}

/// A fixed, ramped or staged number of connections, each sending as soon as it is answered.
fn closed_loop(args: &LoadArgs, stages: Option<Vec<Stage>>) -> Result<Load, InputError> {
    for (given, flag) in [
        (
            args.open_loop.max_connections.is_some(),
            "--max-connections",
        ),
        (args.open_loop.max_in_flight.is_some(), "--max-in-flight"),
        (args.open_loop.arrivals.is_some(), "--arrivals"),
        (
            args.open_loop.seed.is_some() && args.targets.order != crate::args::OrderArg::Random,
            "--seed",
        ),
        (args.timer_slack.is_some(), "--timer-slack"),
    ] {
        if given {
            return Err(InputError::new(
                flag,
                "",
                "only applies to the open loop: add --rate R",
            ));
        }
    }
    let connections = match (stages, args.ramp_up) {
        (Some(stages), _) => {
            let p = Profile::staged(0.0, stages);
            check_range(
                "--stages <STAGES>",
                p.peak().ceil() as u64,
                1,
                MAX_CONNECTIONS as u64,
            )?;
            p
        }
        (None, Some(d)) => Profile::staged(
            0.0,
            vec![Stage {
                duration: d,
                target: args.connections as f64,
            }],
        )
        .then_hold(),
        (None, None) => Profile::constant(args.connections as f64),
    };
    Ok(Load::Closed { connections })
}

/// Arrivals at a rate (constant or staged), whatever the server's answers take.
fn open_loop(args: &LoadArgs, rate: f64, stages: Option<Vec<Stage>>) -> Result<Load, InputError> {
    const RATE: &str = "--rate <R>";
    if !rate.is_finite() || rate < 0.0 || (rate == 0.0 && stages.is_none()) {
        return Err(InputError::new(
            RATE,
            rate,
            "must be a positive number of requests per second",
        ));
    }
    let profile = match stages {
        Some(stages) => Profile::staged(rate, stages),
        None => Profile::constant(rate),
    };
    if profile.peak() > MAX_RATE {
        return Err(InputError::new(
            RATE,
            profile.peak(),
            format!("rates above {MAX_RATE} per second are not supported"),
        ));
    }
    if profile.peak() <= 0.0 {
        return Err(InputError::new(
            "--stages <STAGES>",
            args.stages.as_deref().unwrap_or(""),
            "never sends anything: every rate is 0",
        ));
    }
    let max_connections = args
        .open_loop
        .max_connections
        .unwrap_or(DEFAULT_MAX_CONNECTIONS);
    check_range(
        "--max-connections <N>",
        max_connections as u64,
        1,
        MAX_CONNECTIONS as u64,
    )?;
    if let Some(cap) = args.open_loop.max_in_flight {
        check_range("--max-in-flight <N>", cap, 1, u64::MAX)?;
    }
    Ok(Load::Open {
        rate: profile,
        spacing: spacing(args)?,
        max_connections,
        max_in_flight: args.open_loop.max_in_flight,
    })
}

/// How the open loop spaces its arrivals; a seed only means something to random spacing.
fn spacing(args: &LoadArgs) -> Result<Spacing, InputError> {
    let spacing = match args.open_loop.arrivals.unwrap_or(ArrivalsArg::Even) {
        ArrivalsArg::Even => Spacing::Even,
        ArrivalsArg::Poisson => Spacing::Poisson {
            seed: args.open_loop.seed.unwrap_or_else(random_seed),
        },
    };
    if args.open_loop.seed.is_some()
        && spacing == Spacing::Even
        && args.targets.order != crate::args::OrderArg::Random
    {
        return Err(InputError::new(
            "--seed",
            "",
            "only applies to --arrivals poisson",
        ));
    }
    Ok(spacing)
}

/// TLS settings for an https URL; TLS flags on an http URL are a mistake worth naming.
pub(crate) fn tls_options(
    args: &RequestArgs,
    https: bool,
) -> Result<Option<TlsOptions>, InputError> {
    if !https {
        for (given, flag) in [
            (args.every.insecure, "--insecure"),
            (args.cacert.is_some(), "--cacert"),
            (args.cert.is_some(), "--cert"),
            (args.sni.is_some(), "--sni"),
            (args.every.tls_resume, "--tls-resume"),
        ] {
            if given {
                return Err(InputError::new(flag, "", "only applies to https:// URLs"));
            }
        }
        return Ok(None);
    }
    tls_from_files(
        args.every.insecure,
        args.cacert.as_deref(),
        args.cert.as_deref().zip(args.key.as_deref()),
        args.sni.clone(),
        args.every.tls_resume,
    )
    .map(Some)
}

/// TLS settings from the trust and identity files named by flags or a plan; a file that
/// cannot be read is named with the flag it came from.
pub fn tls_from_files(
    insecure: bool,
    cacert: Option<&std::path::Path>,
    cert_and_key: Option<(&std::path::Path, &std::path::Path)>,
    sni: Option<String>,
    resume: bool,
) -> Result<TlsOptions, InputError> {
    let read = |flag: &'static str, path: &std::path::Path| {
        files::read(path, files::MOST_DOCUMENT_BYTES)
            .map_err(|e| InputError::new(flag, path.display(), read_error(&e)))
    };
    let ca_pem = cacert.map(|p| read("--cacert <FILE>", p)).transpose()?;
    let client_cert_pem = match cert_and_key {
        Some((c, k)) => Some((read("--cert <FILE>", c)?, read("--key <FILE>", k)?)),
        None => None,
    };
    Ok(TlsOptions {
        insecure,
        ca_pem,
        client_cert_pem,
        server_name: sni,
        alpn: vec![b"http/1.1".to_vec()],
        resume,
    })
}

/// The run name: as given, else the results file's stem, else `run`.
pub(crate) fn run_name(
    name: Option<&str>,
    save: Option<&std::path::Path>,
) -> Result<String, InputError> {
    if let Some(n) = name {
        if n.trim().is_empty() || n.chars().any(char::is_control) {
            return Err(InputError::new(
                "--name <NAME>",
                n,
                "must be non-empty and printable",
            ));
        }
        return Ok(n.to_string());
    }
    Ok(save
        .filter(|p| p.as_os_str() != "-")
        .and_then(|p| p.file_stem())
        .map_or_else(|| "run".to_string(), |s| s.to_string_lossy().into_owned()))
}

/// Parses `30s:500,1m:500,10s:0`.
fn parse_stages(raw: &str) -> Result<Vec<Stage>, InputError> {
    const FLAG: &str = "--stages <STAGES>";
    let mut stages = Vec::new();
    for (i, item) in raw.split(',').enumerate() {
        let item = item.trim();
        let fail =
            |why: String| InputError::new(FLAG, raw, format!("stage {} '{item}': {why}", i + 1));
        let (d, level) = item
            .split_once(':')
            .ok_or_else(|| fail("expected DURATION:LEVEL, e.g. 30s:500".into()))?;
        let duration = parse_duration(d).map_err(|e| fail(format!("duration {e}")))?;
        let target: f64 = level
            .trim()
            .parse()
            .ok()
            .filter(|l: &f64| l.is_finite() && *l >= 0.0)
            .ok_or_else(|| fail("the level must be a number, 0 or more".into()))?;
        stages.push(Stage { duration, target });
    }
    Ok(stages)
}

/// A seed nobody chose, for Poisson arrivals (the report shows it so the run can be
/// repeated) and a templated call's random values.
pub(crate) fn random_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// `user:pass@` taken out of the URL (which the reports show) as the Basic `Authorization`
/// header it stands for. A URL that does not parse is left as it is, for [`parse_url`] to name
/// its fault.
fn without_credentials(raw: String) -> (String, Option<(String, String)>) {
    match url::Url::parse(&raw) {
        Ok(mut url) => match belier_scenario::targets::basic_auth(&mut url) {
            Some(auth) => (url.to_string(), Some(auth)),
            None => (raw, None),
        },
        Err(_) => (raw, None),
    }
}

fn parse_url(raw: &str) -> Result<(String, u16, String, bool), InputError> {
    const FLAG: &str = "<URL>";
    // A URL parser drops CR and LF silently, which would hide the mistake.
    rules::check_line(raw).map_err(|p| InputError::new(FLAG, raw.escape_debug(), p.to_string()))?;
    let url = url::Url::parse(raw).map_err(|e| {
        let hint = if raw.contains("://") {
            ""
        } else {
            " (did you mean http://...?)"
        };
        InputError::new(FLAG, raw, format!("{e}{hint}"))
    })?;
    let https = match url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(InputError::new(
                FLAG,
                raw,
                format!("unsupported scheme '{other}', use http:// or https://"),
            ))
        }
    };
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(InputError::new(FLAG, raw, "has no host")),
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok((host, port, path, https))
}

/// RFC 9110 token characters, as method and header names must use.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The share of requests traced (`--trace-sample`); refused beside a `traceparent` of the
/// request's own (`headers`), which would go instead.
pub(crate) fn trace_sample(
    every: &crate::args::EveryRequestArgs,
    headers: &[(String, String)],
) -> Result<f64, InputError> {
    let share = every.trace_sample.unwrap_or(0.0);
    if share > 0.0
        && headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("traceparent"))
    {
        return Err(InputError::new(
            "--trace-sample <SHARE>",
            format!("{}", share * 100.0) + "%",
            "the request has a traceparent header of its own (-H): give one or the other",
        ));
    }
    Ok(share)
}

/// The header the server's own time is read from (`--server-timing`, `--server-time-header`),
/// if the run reads it.
pub(crate) fn server_timing(
    every: &crate::args::EveryRequestArgs,
) -> Result<Option<ServerTimingHeader>, InputError> {
    match (&every.server_time_header, every.server_timing) {
        (Some(name), _) if name.eq_ignore_ascii_case("server-timing") => {
            Ok(Some(ServerTimingHeader::ServerTiming))
        }
        (Some(name), _) => {
            check_token("--server-time-header <NAME>", name)?;
            Ok(Some(ServerTimingHeader::Figure(name.to_ascii_lowercase())))
        }
        (None, true) => Ok(Some(ServerTimingHeader::ServerTiming)),
        (None, false) => Ok(None),
    }
}

fn check_token(flag: &'static str, s: &str) -> Result<(), InputError> {
    if is_token(s) {
        Ok(())
    } else {
        Err(InputError::new(
            flag,
            // Escaped: a CR in an error message would garble the terminal line.
            s.escape_debug(),
            "must be a non-empty HTTP token (letters, digits, !#$%&'*+-.^_`|~)",
        ))
    }
}

pub(crate) fn parse_header(raw: &str) -> Result<(String, String), InputError> {
    const FLAG: &str = "--header <'NAME: VALUE'>";
    // Shown escaped: a CR in an error message would garble the terminal line.
    let shown = raw.escape_debug();
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| InputError::new(FLAG, &shown, "expected 'Name: value'"))?;
    rules::check_header_name(name).map_err(|p| {
        InputError::new(
            FLAG,
            &shown,
            InvalidRequest::HeaderName(name.into(), p).to_string(),
        )
    })?;
    let value = value.trim();
    rules::check_header_value(value).map_err(|p| {
        InputError::new(
            FLAG,
            &shown,
            InvalidRequest::HeaderValue(name.into(), p).to_string(),
        )
    })?;
    Ok((name.to_string(), value.to_string()))
}

/// A `Content-Length` or `Transfer-Encoding` given with -H against the body (-d, -D): a
/// matching `Content-Length` is sent as given; one that contradicts the body would make the
/// server read the next request from inside this one.
fn check_framing(spec: &RequestSpec) -> Result<(), InputError> {
    rules::check_framing(&spec.headers, &spec.body).map_err(|e| {
        let (name, value) = spec
            .headers
            .iter()
            .find(|(n, _)| {
                n.eq_ignore_ascii_case("content-length")
                    || n.eq_ignore_ascii_case("transfer-encoding")
            })
            .map_or(("", ""), |(n, v)| (n.as_str(), v.as_str()));
        InputError::new(
            "--header <'NAME: VALUE'>",
            format!("{name}: {value}"),
            e.to_string(),
        )
    })
}

#[cfg(test)]
mod tests;
