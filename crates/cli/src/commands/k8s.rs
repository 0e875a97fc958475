//! `belier k8s`: a distributed run placed by Kubernetes. `render` prints its manifests
//! (crates/k8s), `run` applies them with kubectl and follows the coordinator's report, `wait`
//! is the coordinator pod's init container (every worker accepting connections).

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use belier_k8s::{Run, Token, Workload};
use clap::Parser;

use crate::args::{K8sArgs, K8sCommand, PlaceArgs, WaitArgs};
use crate::settings::InputError;

/// `belier k8s …`.
pub fn run(args: K8sArgs) -> anyhow::Result<u8> {
    match args.command {
        K8sCommand::Render(place) => {
            print!("{}", render(place)?.1);
            Ok(0)
        }
        K8sCommand::Run(place) => apply_and_follow(place),
        K8sCommand::Wait(w) => wait(&w),
    }
}

/// The run described by `place`, and its manifests.
fn render(mut place: PlaceArgs) -> anyhow::Result<(Run, String)> {
    take_own_flags(&mut place)?;
    let workers = place.workers.ok_or_else(|| {
        InputError::new(
            "--workers <N>",
            "",
            "is required: the number of worker pods",
        )
    })?;
    let token = match place.token_secret {
        Some(name) => Token::Secret(name),
        None => Token::Generated(crate::token::generate()?),
    };
    let run = Run {
        name: place.run_name,
        namespace: place.namespace,
        image: place.image,
        workers,
        port: place.port,
        cpu: place.cpu,
        memory: place.memory,
        token,
        workload: workload(place.run)?,
    };
    let text = belier_k8s::render(&run).map_err(|e| InputError::in_file(e.to_string()))?;
    Ok((run, text))
}

/// This command's options given after the run (`belier k8s render URL --rate 9 --workers
/// 4`): taken out of the run's arguments.
fn take_own_flags(place: &mut PlaceArgs) -> Result<(), InputError> {
    let mut rest = Vec::with_capacity(place.run.len());
    let mut args = std::mem::take(&mut place.run).into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let own = [
            "--workers",
            "--image",
            "--namespace",
            "--cpu",
            "--memory",
            "--token-secret",
            "--run-name",
            "--port",
        ];
        if !own.contains(&flag.as_str()) {
            rest.push(arg);
            continue;
        }
        let Some(value) = inline.or_else(|| args.next()) else {
            return Err(InputError::new("", "", format!("{flag} needs a value")));
        };
        let shown = value.clone();
        let number = |what: &'static str| {
            move |e: std::num::ParseIntError| InputError::new(what, &shown, e.to_string())
        };
        match flag.as_str() {
            "--workers" => {
                place.workers = Some(value.parse().map_err(number("--workers <N>"))?);
            }
            "--port" => place.port = value.parse().map_err(number("--port <PORT>"))?,
            "--image" => place.image = value,
            "--namespace" => place.namespace = Some(value),
            "--cpu" => place.cpu = Some(value),
            "--memory" => place.memory = Some(value),
            "--token-secret" => place.token_secret = Some(value),
            _ => place.run_name = value,
        }
    }
    place.run = rest;
    Ok(())
}

/// What the coordinator runs, checked here as belier would read it there.
fn workload(run: Vec<String>) -> anyhow::Result<Workload> {
    let first = run.first().cloned().unwrap_or_default();
    let is_plan =
        (first.ends_with(".yaml") || first.ends_with(".yml")) && Path::new(&first).is_file();
    if !is_plan {
        let argv = std::iter::once("belier".to_string()).chain(run.iter().cloned());
        match crate::args::Cli::try_parse_from(argv) {
            Ok(cli) if cli.command.is_none() => return Ok(Workload::Flags(run)),
            Ok(_) => {
                return Err(InputError::new(
                    "<RUN>",
                    &first,
                    "expected a URL and its flags, or a plan file",
                )
                .into())
            }
            Err(e) => {
                return Err(
                    InputError::in_file(format!("the run's flags: {}", clap_message(&e))).into(),
                )
            }
        }
    }
    let path = Path::new(&first);
    let argv = ["belier", "run"]
        .into_iter()
        .map(String::from)
        .chain(run.iter().cloned());
    crate::args::Cli::try_parse_from(argv)
        .map_err(|e| InputError::in_file(format!("the run's flags: {}", clap_message(&e))))?;
    let plan = belier_plan::load(path)?;
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {first}"))?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut files = Vec::new();
    for feeder in plan.feeders() {
        let relative = feeder.file.strip_prefix(dir).map_err(|_| {
            InputError::new(
                "<PLAN>",
                &first,
                format!(
                    "data file {} is outside the plan's directory: it cannot be mounted beside the plan",
                    feeder.file.display()
                ),
            )
        })?;
        let contents = std::fs::read_to_string(&feeder.file)
            .with_context(|| format!("cannot read {}", feeder.file.display()))?;
        files.push((relative.to_string_lossy().into_owned(), contents));
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Workload::Plan {
        file,
        text,
        files,
        args: run[1..].to_vec(),
    })
}

/// clap's message without its `error: ` prefix and usage lines.
fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_string()
}

/// `belier k8s run`: `kubectl apply -f -`, then `kubectl logs -f` of the coordinator.
fn apply_and_follow(place: PlaceArgs) -> anyhow::Result<u8> {
    let (run, manifests) = render(place)?;
    let ns: Vec<String> = run
        .namespace
        .iter()
        .flat_map(|n| ["--namespace".to_string(), n.clone()])
        .collect();
    let mut apply = kubectl(&["apply", "-f", "-"], &ns)
        .stdin(Stdio::piped())
        .spawn()
        .map_err(no_kubectl)?;
    apply
        .stdin
        .take()
        .expect("piped")
        .write_all(manifests.as_bytes())
        .context("cannot hand the manifests to kubectl")?;
    if !apply.wait()?.success() {
        anyhow::bail!("kubectl apply failed (its message is above); nothing was started");
    }
    let job = format!("job/{}", belier_k8s::coordinator_job(&run.name));
    let selector = format!("job-name={}", belier_k8s::coordinator_job(&run.name));
    // The coordinator's pod runs once every worker accepts connections; its log is the report.
    wait_for_coordinator(&selector, &ns)?;
    let logs = kubectl(&["logs", "-f", &job, "-c", "coordinator"], &ns)
        .status()
        .map_err(no_kubectl)?;
    if !logs.success() {
        anyhow::bail!(
            "kubectl logs {job} failed (its message is above; if the pod failed before the \
             coordinator started: kubectl logs {job} --all-containers)"
        );
    }
    let code = coordinator_exit_code(&selector, &ns)?
        .with_context(|| format!("cannot read the coordinator's exit code from kubectl ({job})"))?;
    // Workers serve until stopped, so their Job never completes by itself: with the run over,
    // it goes (the coordinator's Job stays, for its log, until its TTL).
    let workers = format!("job/{}", belier_k8s::worker_job(&run.name));
    let deleted = kubectl(&["delete", &workers, "--wait=false"], &ns)
        .stdout(Stdio::null())
        .status()
        .map_err(no_kubectl)?;
    if !deleted.success() {
        eprintln!(
            "belier: could not delete {workers} (kubectl's message is above): delete it yourself"
        );
    }
    Ok(code)
}

/// The coordinator container's exit code once the pod's status shows it: the log stream ends
/// when the container exits, the kubelet's status update may come a moment later (bounded at
/// 30 s).
fn coordinator_exit_code(selector: &str, ns: &[String]) -> anyhow::Result<Option<u8>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let field = ".items[0].status.containerStatuses[0].state.terminated.exitCode";
        if let Ok(code) = pods_field(selector, ns, field)?.trim().parse::<u8>() {
            return Ok(Some(code));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// How long the coordinator's pod may stay `Pending`: its init container gives up on the
/// workers after 10 minutes, and pulling the image takes time too.
const COORDINATOR_START: Duration = Duration::from_secs(15 * 60);

/// Until the coordinator's pod has left `Pending`, checked once a second. `kubectl logs -f`
/// of a container that has not started fails at once ("is waiting to start:
/// PodInitializing"), --pod-running-timeout or not: a real cluster showed it, as the init
/// container waits for the workers.
fn wait_for_coordinator(selector: &str, ns: &[String]) -> anyhow::Result<()> {
    let deadline = Instant::now() + COORDINATOR_START;
    let mut said = false;
    loop {
        let phases = pods_field(selector, ns, ".items[*].status.phase")?;
        if phases.split_whitespace().any(|p| p != "Pending") {
            return Ok(());
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "the coordinator's pod ({selector}) has not started after {}: kubectl describe pods -l {selector}",
                humantime::format_duration(COORDINATOR_START)
            );
        }
        if !said {
            eprintln!("belier: waiting for the coordinator's pod ({selector}) to start");
            said = true;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `kubectl get pods -l SELECTOR -o jsonpath={FIELD}`'s output.
fn pods_field(selector: &str, ns: &[String], field: &str) -> anyhow::Result<String> {
    let jsonpath = format!("jsonpath={{{field}}}");
    let out = kubectl(&["get", "pods", "-l", selector, "-o", &jsonpath], ns)
        .output()
        .map_err(no_kubectl)?;
    if !out.status.success() {
        anyhow::bail!(
            "kubectl get pods -l {selector} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn kubectl(args: &[&str], ns: &[String]) -> Command {
    let mut c = Command::new("kubectl");
    c.args(args).args(ns);
    c
}

fn no_kubectl(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        InputError::in_file(
            "kubectl is not on PATH: `belier k8s run` applies the manifests with it (or print them with `belier k8s render … | kubectl apply -f -`)",
        )
        .into()
    } else {
        anyhow::anyhow!("cannot run kubectl: {e}")
    }
}

/// `belier k8s wait`: every address accepting a TCP connection, tried once a second (names
/// may not resolve until their pod exists).
fn wait(args: &WaitArgs) -> anyhow::Result<u8> {
    let deadline = Instant::now() + args.timeout;
    let mut waiting: Vec<&String> = args.addresses.iter().collect();
    while !waiting.is_empty() {
        waiting.retain(|addr| {
            let up = addr
                .to_socket_addrs()
                .ok()
                .and_then(|mut a| a.next())
                .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok());
            if up {
                eprintln!("belier: {addr} accepts connections");
            }
            !up
        });
        if waiting.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            let names: Vec<&str> = waiting.iter().map(|s| s.as_str()).collect();
            eprintln!(
                "belier: gave up after {}: not accepting connections: {}",
                humantime::format_duration(args.timeout),
                names.join(", ")
            );
            return Ok(1);
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    Ok(0)
}
