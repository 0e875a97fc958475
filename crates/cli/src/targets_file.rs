//! `belier --targets FILE` (or `-` for standard input): many requests in one run. The file
//! is read by the scenario crate into users of their own; here the flags are turned into
//! them, the run's connection settings are taken from the first target, and once the run is
//! over the report is given its per-target rows.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use crate::args::{FormatArg, LoadArgs, OrderArg, RequestArgs, TargetsArgs};
use crate::load::Finished;
use crate::settings::{self, tls_options, InputError, Settings, TargetsRun};
use belier_engine::{Config, RequestSpec};
use belier_plan::{PlanError, Pos, Scheme};
use belier_scenario::targets::{self, Format, Order, Reader, TargetUsers};

/// Validates `args`: a targets run's settings with `--targets`, else a single URL's.
pub fn settings(args: LoadArgs, cores: usize) -> anyhow::Result<Settings> {
    match configure(
        &args.targets,
        &args.request,
        args.open_loop.seed,
        args.http2.http2,
    )? {
        Some((engine, url, run)) => {
            let settings = settings::with_request(args, cores, engine, url, Some(run))?;
            if settings.engine.http2 && !settings.engine.origins.is_empty() {
                return Err(InputError::new(
                    "--http2",
                    "",
                    "takes targets on one host only: several hosts need HTTP/1.1",
                )
                .into());
            }
            Ok(settings)
        }
        None if args.targets.cookies || args.targets.follow.is_some() => {
            // One URL with cookies: its request becomes the one target of users with jars.
            let (engine, url) = settings::request_config(&args.request)?;
            let spec = &engine.request;
            let target = targets::Target {
                method: spec.method.clone(),
                url: url.clone(),
                origin: targets::Origin {
                    scheme: if engine.tls.is_some() {
                        Scheme::Https
                    } else {
                        Scheme::Http
                    },
                    host: spec.host.clone(),
                    port: spec.port,
                },
                path_and_query: spec.path_and_query.clone(),
                headers: spec.headers.clone(),
                body: spec.body.clone(),
                line: 1,
            };
            let one = targets::Targets {
                file: url.clone().into(),
                format: Format::Http,
                targets: vec![target],
            };
            let users = TargetUsers::from_file(one, Order::InTurn)?;
            let discover = (!args.http2.http2).then(|| discovered_tls(engine.tls.as_ref()));
            let users = jars_and_hops(users, &args.targets, discover)?;
            let run = TargetsRun {
                users: Arc::new(users),
            };
            Ok(settings::with_request(args, cores, engine, url, Some(run))?)
        }
        None => Ok(settings::from_args(args, cores)?),
    }
}

/// Reads the targets `args` name (a file whole, a stream up to its first target) and makes
/// the run's engine configuration: where to connect and with what TLS settings, from the
/// first target, and its users. `seed` is `--seed`, for `--order random`.
fn configure(
    args: &TargetsArgs,
    request: &RequestArgs,
    seed: Option<u64>,
    http2: bool,
) -> Result<Option<(Config, String, TargetsRun)>, anyhow::Error> {
    let Some(path) = &args.targets else {
        return Ok(None);
    };
    if request.sse_reconnect.is_some() {
        return Err(InputError::new(
            "--sse-reconnect",
            "",
            "does not apply with --targets: it reconnects the run's one request",
        )
        .into());
    }
    let format = args.format.map(|f| match f {
        FormatArg::Http => Format::Http,
        FormatArg::Json => Format::Json,
        FormatArg::Siege => Format::Siege,
    });
    let order = match args.order {
        OrderArg::InTurn => Order::InTurn,
        OrderArg::Random => Order::Random {
            seed: seed.unwrap_or(belier_plan::DEFAULT_SEED),
        },
    };
    let users = if path.as_os_str() == "-" {
        if order != Order::InTurn {
            return Err(InputError::new(
                "--order <ORDER>",
                "random",
                "needs a targets file: targets read from standard input are sent as they come",
            )
            .into());
        }
        stream(format)?
    } else {
        TargetUsers::from_file(targets::load(path, format)?, order)?
    };
    // The TLS flags apply to every https host of the file (--sni to the first one's only).
    let any_https = users.origins().iter().any(|o| o.scheme == Scheme::Https);
    let tls = tls_options(request, any_https)?;
    let discover = (!http2).then(|| discovered_tls(tls.as_ref()));
    let users = jars_and_hops(users, args, discover)?;
    // --compressed: the targets without an Accept-Encoding of their own ask for every coding.
    let users = if request.every.compressed {
        users.asking_compressed()
    } else {
        users
    };
    let origin = users.origins()[0].clone();
    let https = origin.scheme == Scheme::Https;
    let mut engine = Config::new(RequestSpec {
        method: "GET".into(),
        host: origin.host.clone(),
        port: origin.port,
        path_and_query: "/".into(),
        headers: Vec::new(),
        body: Vec::new(),
    });
    engine.timeout = request.timeout;
    engine.compressed = request.every.compressed;
    engine.server_timing = crate::settings::server_timing(&request.every)?;
    engine.trace_sample = crate::settings::trace_sample(&request.every, &[])?;
    // The other hosts of a file: a connection pool each.
    engine.origins = engine_origins(&users.origins()[1..], tls.as_ref());
    engine.tls = tls.filter(|_| https);
    engine.connect_to = request.every.connect_to;
    crate::resolve::apply(
        &mut engine,
        crate::resolve::addresses(&request.resolve, &origin.host, origin.port)?,
    );
    engine.dns_policy = request.every.dns_policy.into();
    engine.dns_server = request.every.dns_server;
    engine.dns_ttl = request.every.dns_ttl;
    if request.unix_socket.is_some() && !engine.origins.is_empty() {
        return Err(InputError::new(
            "--unix-socket",
            "",
            "takes targets on one host only: a socket serves one host",
        )
        .into());
    }
    engine.unix_socket.clone_from(&request.unix_socket);
    Ok(Some((
        engine,
        origin.url(),
        TargetsRun {
            users: Arc::new(users),
        },
    )))
}

/// The engine's view of a run's other hosts: each https one speaks TLS with `tls` (the run's
/// TLS settings), its certificate checked under its own name (an SNI override names the run's
/// first host only).
pub fn engine_origins(
    origins: &[targets::Origin],
    tls: Option<&belier_engine::TlsOptions>,
) -> Vec<belier_engine::Origin> {
    origins
        .iter()
        .map(|o| belier_engine::Origin {
            host: o.host.clone(),
            port: o.port,
            tls: tls
                .filter(|_| o.scheme == Scheme::Https)
                .map(|t| belier_engine::TlsOptions {
                    server_name: None,
                    ..t.clone()
                }),
        })
        .collect()
}

/// The TLS settings of https hosts a redirect leads to: the run's (without its SNI override,
/// which names its first host), or by default the system's roots.
pub fn discovered_tls(run: Option<&belier_engine::TlsOptions>) -> belier_engine::TlsOptions {
    belier_engine::TlsOptions {
        server_name: None,
        ..run.cloned().unwrap_or_default()
    }
}

/// `--cookies` and `--follow N` on the users; with `discover` (HTTP/1.1), redirects to hosts
/// the run did not start with are followed too, https ones spoken with its TLS settings.
fn jars_and_hops(
    users: TargetUsers,
    args: &TargetsArgs,
    discover: Option<belier_engine::TlsOptions>,
) -> Result<TargetUsers, InputError> {
    let users = if args.cookies {
        users.with_cookies()
    } else {
        users
    };
    match args.follow {
        None => Ok(users),
        Some(n) if !(1..=MAX_FOLLOW).contains(&n) => Err(InputError::new(
            "--follow <N>",
            n,
            format!("must be between 1 and {MAX_FOLLOW}"),
        )),
        Some(_) if args.targets.as_deref() == Some(Path::new("-")) => Err(InputError::new(
            "--follow <N>",
            "",
            "needs a targets file: the rows of targets read from standard input are not known \
             ahead",
        )),
        Some(n) => {
            let users = users.following(n);
            Ok(match discover {
                Some(tls) => users.discovering(Some(tls)),
                None => users,
            })
        }
    }
}

/// Most redirects `--follow` takes.
const MAX_FOLLOW: usize = belier_plan::MAX_FOLLOW as usize;

/// Standard input's users: its first target is waited for here (it says where to connect),
/// the rest are read while the run goes.
fn stream(format: Option<Format>) -> Result<TargetUsers, PlanError> {
    let name = Path::new("-");
    let input: Box<dyn BufRead + Send> = Box::new(std::io::BufReader::new(std::io::stdin()));
    let base = std::env::current_dir().unwrap_or_default();
    let mut reader = Reader::new(input, name, base, format);
    match reader.next_target()? {
        Some(first) => Ok(TargetUsers::from_stream(first, reader)),
        None => Err(PlanError::new(
            name,
            Pos {
                line: reader.line().max(1),
                col: 1,
            },
            "expected at least one target on standard input, found none",
        )),
    }
}

/// Gives the report of a finished targets run its per-target rows (a stream's are known only
/// now), and returns the error that ended a stream early, if one did.
pub fn complete(run: &TargetsRun, finished: &mut Finished) -> Option<PlanError> {
    let (targets, steps) = run.rows_and_names();
    finished.info.steps = steps;
    finished.info.targets = targets;
    run.users.stream_error()
}
