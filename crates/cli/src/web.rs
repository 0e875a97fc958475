//! The web console wired to belier's runs: `--web[=ADDR]` on a flag or plan run, where the
//! console watches that run and offers its report at the end, and `belier web`, a console
//! that starts runs from its form ([`form`]) and keeps each one's report and results. The
//! console itself (page, API, safety checks) is the `belier-console` crate; here its flags are
//! validated and the run loop feeds it ([`Live`]).

mod form;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_console::{Console, ConsoleError, Hub, Options, Report, RunEnd, RunId, RunStart};
use belier_engine::Control;
use belier_results::RunInfo;
use belier_stats::Collector;

use crate::args::WebArgs;
use crate::load::Finished;
use crate::settings::{InputError, Settings};
use crate::signals::Signals;
use crate::token::GENERATE;

/// Where a token is read from when no flag gives one: unlike a flag, the environment does not
/// show in `ps` or a shell's history.
pub const TOKEN_VARIABLE: &str = "BELIER_WEB_TOKEN";

/// How long a `--web` console stays up after its run unless `--web-linger` says otherwise.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(60);

/// How often a lingering console or an idle `belier web` checks for Ctrl-C.
const POLL: Duration = Duration::from_millis(100);

/// The console of a run, validated.
pub enum Web {
    /// `--web`: a console of its own, for this run.
    Serve(Listen),
    /// The console of `belier web` the run reports to.
    Attach(Arc<Hub>),
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Web::Serve(l) => f.debug_tuple("Serve").field(l).finish(),
            Web::Attach(_) => f.write_str("Attach"),
        }
    }
}

/// Where a console listens and the token it asks for; `Debug` shows no token.
pub struct Listen {
    addr: SocketAddr,
    token: Option<String>,
    /// The token was made here, so it is printed with the console's address.
    generated: bool,
    linger: Duration,
}

impl std::fmt::Debug for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listen")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("linger", &self.linger)
            .finish()
    }
}

/// Validates `--web`, `--web-token` (or [`TOKEN_VARIABLE`]) and `--web-linger`: an address off
/// the loopback needs a token.
pub fn listen(
    addr: Option<SocketAddr>,
    token: Option<String>,
    linger: Option<Duration>,
) -> Result<Option<Listen>, InputError> {
    let Some(addr) = addr else { return Ok(None) };
    listen_as(addr, token, "--web-token <TOKEN>", "--web=<ADDR>").map(|mut l| {
        l.linger = linger.unwrap_or(DEFAULT_LINGER);
        Some(l)
    })
}

fn listen_as(
    addr: SocketAddr,
    token: Option<String>,
    token_flag: &'static str,
    addr_flag: &'static str,
) -> Result<Listen, InputError> {
    let token = token.or_else(|| std::env::var(TOKEN_VARIABLE).ok().filter(|t| !t.is_empty()));
    // What a URL's query and a cookie carry as they are: `?token=` needs no escaping.
    if token.as_ref().is_some_and(|t| {
        t.is_empty()
            || !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    }) {
        return Err(InputError::new(
            token_flag,
            "",
            "must be non-empty, of letters, digits and - . _ ~ only",
        ));
    }
    let token = crate::token::settle(token, addr, token_flag)?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(InputError::new(
            addr_flag,
            addr,
            format!(
                "not a loopback address: anything else needs a token ({token_flag}, \
                 {TOKEN_VARIABLE}, or {} {GENERATE} to make one)",
                token_flag.split(' ').next().unwrap_or(token_flag)
            ),
        ));
    }
    Ok(Listen {
        addr,
        generated: token.as_ref().is_some_and(|t| t.generated),
        token: token.map(|t| t.value),
        linger: DEFAULT_LINGER,
    })
}

/// Starts a console and says where it is (with the token to open it, if made here).
fn start(
    listen: &Listen,
    launcher: Option<Arc<dyn belier_console::Launcher>>,
) -> Result<Console, InputError> {
    let console = Console::start(Options {
        addr: listen.addr,
        token: listen.token.clone(),
        launcher,
    })
    .map_err(|e| match e {
        ConsoleError::TokenRequired => InputError::new("--web=<ADDR>", listen.addr, e.to_string()),
        ConsoleError::Server(e) => InputError::new("--web=<ADDR>", listen.addr, e.to_string()),
    })?;
    let url = format!("http://{}/", console.addr());
    match &listen.token {
        Some(t) if listen.generated => eprintln!("belier: web console at {url}?token={t}"),
        Some(_) => eprintln!("belier: web console at {url}?token=… (the token you gave)"),
        None => eprintln!("belier: web console at {url}"),
    }
    Ok(console)
}

/// A run's link to its console: the run loop hands it the run's handle, each settled
/// interval, and at the end the report.
pub struct Live {
    hub: Arc<Hub>,
    /// The console of a `--web` run, kept until the run's report is fetched or it lingered.
    own: Option<(Console, Duration)>,
    id: Option<RunId>,
    /// Intervals already sent.
    sent: usize,
    results: Option<PathBuf>,
    /// The HTML report file the run writes, if any.
    html: Option<PathBuf>,
    /// What the run's level counts, for the page's controls.
    unit: crate::tui::Unit,
}

impl Live {
    /// Starts the console of a `--web` run (before any load, so a taken port stops nothing),
    /// or joins that of `belier web`.
    pub fn open(settings: &Settings) -> Result<Option<Live>, InputError> {
        let results = settings
            .output
            .save
            .clone()
            .filter(|p| p.as_os_str() != "-");
        let (hub, own) = match &settings.output.web {
            None => return Ok(None),
            Some(Web::Attach(hub)) => (Arc::clone(hub), None),
            Some(Web::Serve(listen)) => {
                let console = start(listen, None)?;
                (Arc::clone(console.hub()), Some((console, listen.linger)))
            }
        };
        Ok(Some(Live {
            hub,
            own,
            id: None,
            sent: 0,
            results,
            html: settings.output.html.clone(),
            unit: crate::load::unit(settings),
        }))
    }

    /// The run has started.
    pub fn begin(&mut self, control: Control, info: &RunInfo) {
        self.id = Some(self.hub.begin(RunStart {
            settings: serde_json::to_value(info).unwrap_or_default(),
            unit: self.unit,
            control,
            steps: info.steps.clone(),
        }));
    }

    /// Sends the intervals settled since the last call.
    pub fn update(&mut self, collector: &Collector) {
        let Some(id) = self.id else { return };
        let points = collector.series().points();
        // A long run's series merges old points (coarsening): the latest is then all to send.
        let from = if self.sent > points.len() {
            points.len().saturating_sub(1)
        } else {
            self.sent
        };
        for p in &points[from..] {
            self.hub.interval(id, p, collector.settled_total());
        }
        self.sent = points.len();
    }

    /// Whether the page asked the run to stop.
    pub fn stop_requested(&self) -> bool {
        self.id.is_some_and(|id| self.hub.stop_requested(id))
    }

    /// The run is over and its report written: the page offers it, and the results file. A
    /// `--web` console then stays up for its linger (or until Ctrl-C).
    pub fn end(self, finished: &Finished, signals: &Signals) {
        if let Some(id) = self.id {
            self.hub.end(
                id,
                RunEnd {
                    report: match &self.html {
                        // belier web's runs write it into their directory: served from there,
                        // so that a console of many runs keeps none in memory.
                        Some(path) if self.own.is_none() && path.is_file() => {
                            Report::File(path.clone())
                        }
                        _ => Report::Html(finished.render_html()),
                    },
                    results: self.results.clone(),
                    interrupted: finished.interrupted,
                },
            );
        }
        let Some((console, linger)) = self.own else {
            return;
        };
        if linger.is_zero() || signals.stop_requested() {
            return;
        }
        eprintln!(
            "belier: the web console at http://{}/ offers the report for {} (Ctrl-C to stop)",
            console.addr(),
            humantime::format_duration(linger)
        );
        let deadline = Instant::now() + linger;
        while Instant::now() < deadline && !signals.stop_requested() {
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }
}

/// The console as a watcher of its run: told of its start, sent each interval at the next
/// tick (and the last ones at the end); its page's stop button asks the run to stop.
impl belier_run::Watcher for Live {
    fn begin(&mut self, run: &belier_run::Begin<'_>) {
        Live::begin(self, run.control.clone(), run.info);
    }

    fn tick(&mut self, now: &belier_run::Now<'_>) -> Option<belier_run::Stop> {
        self.update(now.collector);
        self.stop_requested().then_some(belier_run::Stop::Asked)
    }

    fn end(&mut self, collector: &Collector, _: &mut Vec<String>) {
        self.update(collector);
    }
}

/// A run the form asked for, ready to go.
pub struct Job {
    settings: Settings,
    plan: Option<crate::plan::Prepared>,
}

/// `belier web`: serves the console, and runs what its form asks, one run at a time, until
/// Ctrl-C (which also stops a run in progress, whose report is kept), exiting 0 as `belier
/// target` does.
pub fn run(args: WebArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let listen = listen_as(
        args.listen,
        args.token,
        "--token <TOKEN>",
        "--listen <ADDR>",
    )?;
    std::fs::create_dir_all(&args.runs_dir).map_err(|e| {
        InputError::new(
            "--runs-dir <DIR>",
            args.runs_dir.display(),
            format!("cannot create it: {e}"),
        )
    })?;
    let (jobs, next_job) = mpsc::channel();
    let launcher = Arc::new(form::Launcher::new(jobs, args.runs_dir, cores)?);
    let console = start(&listen, Some(launcher))?;
    let hub = Arc::clone(console.hub());
    loop {
        if signals.stop_requested() {
            return Ok(0);
        }
        let Job { mut settings, plan } = match next_job.recv_timeout(POLL) {
            Ok(job) => job,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(0),
        };
        settings.output.web = Some(Web::Attach(Arc::clone(&hub)));
        // A plan's setup first (a failure is a run that could not start), its teardown after.
        let setup = plan.as_ref().map(|p| p.setup(&settings, signals));
        if let Some(Ok(Some(_interrupted))) = setup {
            return Ok(0);
        }
        let outcome = setup.transpose().and_then(|_| match &plan {
            Some(prepared) => prepared.execute(&settings, signals),
            None => crate::load::execute(&settings, signals),
        });
        let outcome = outcome.map(|mut finished| {
            let _ = crate::write_report(&settings, &finished, 0);
            crate::linger(&mut finished, signals);
        });
        if let Err(e) = outcome {
            // The page hears of it as a run that could not start; the console goes on.
            eprintln!("belier: the run failed: {e:#}");
            hub.failed(&format!("{e:#}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: &str) -> SocketAddr {
        a.parse().unwrap()
    }

    #[test]
    fn off_the_loopback_a_token_is_required() {
        let e = listen_as(
            addr("0.0.0.0:5665"),
            None,
            "--token <TOKEN>",
            "--listen <ADDR>",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("'--listen <ADDR>'") && e.contains("--token generate"),
            "{e}"
        );
        let l = listen_as(
            addr("0.0.0.0:5665"),
            Some("generate".into()),
            "--token",
            "--listen",
        )
        .unwrap();
        let token = l.token.clone().unwrap();
        assert_eq!(token.len(), 64);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()) && l.generated);
        assert!(!format!("{l:?}").contains(&token), "Debug shows no token");
        for bad in ["", "a b", "a;b", "a%20", "ü"] {
            assert!(
                listen_as(addr("127.0.0.1:1"), Some(bad.into()), "--token", "--listen").is_err(),
                "{bad:?}"
            );
        }
        let short = listen_as(addr("0.0.0.0:5665"), Some("s3cret".into()), "--t", "--l");
        assert!(short.is_err(), "a short token off the loopback");
        assert!(listen_as(addr("127.0.0.1:1"), Some("s3cret".into()), "--t", "--l").is_ok());
        let l = listen(Some(addr("127.0.0.1:1")), None, None)
            .unwrap()
            .unwrap();
        assert_eq!((l.token, l.linger), (None, DEFAULT_LINGER));
    }
}
