//! Docs that run: every fenced block whose info string is `sh runnable`, in the README, the
//! book and the files the book includes, runs with bash (`set -euo pipefail`) in a temp dir of
//! its own, in a network namespace of its own, where `belier` is the binary under test and the
//! built-in target (`belier target`) already listens on its default address, 127.0.0.1:8080.
//! So a renamed flag or a changed output breaks the suite, not the reader. A block must end in
//! a few seconds ([`BLOCK_LIMIT`] stops one that hangs); the time each took is printed, so a
//! slow example shows (a timed assertion would fail on a loaded machine, not on a bad example:
//! under `stress-ng --cpu 1` the examples took 110 s together, unloaded about 55, one at a
//! time). Blocks run [`AT_ONCE`] at a time, each in its own namespace; a block whose outcome
//! depends on the machine's timing (a capacity search) runs alone.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use belier_testsupport::{find_program, missing, temp_dir};

use crate::markdown;

/// How long one block may take before it is stopped and fails.
const BLOCK_LIMIT: Duration = Duration::from_secs(20);

/// Runs in the namespace: brings the loopback up, starts the target, waits until it listens,
/// then runs the block and stops the target.
const WRAPPER: &str = r#"set -uo pipefail
ip link set lo up || exit 97
belier target > target.log 2>&1 &
target=$!
for _ in $(seq 400); do
    (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null && break
    sleep 0.025
done
if ! (exec 3<>/dev/tcp/127.0.0.1/8080) 2>/dev/null; then
    echo "the built-in target did not listen on 127.0.0.1:8080:" >&2
    cat target.log >&2
    exit 97
fi
bash block.sh
status=$?
kill "$target" 2>/dev/null
wait "$target" 2>/dev/null
exit "$status"
"#;

/// A runnable block and where it is.
struct Runnable {
    file: String,
    line: usize,
    code: String,
}

/// The `sh runnable` blocks of the README, the book and what the book includes.
fn runnables() -> Vec<Runnable> {
    markdown::documents()
        .iter()
        .flat_map(|path| {
            let file = markdown::shown(path);
            markdown::fenced_blocks(&markdown::read(path))
                .into_iter()
                .filter(|b| b.info.split_whitespace().collect::<Vec<_>>() == ["sh", "runnable"])
                .map(move |b| Runnable {
                    file: file.clone(),
                    line: b.line,
                    code: b.code,
                })
        })
        .collect()
}

/// `unshare`'s flags for a new network namespace: as root `-n`; otherwise `-rn`, in a user
/// namespace of its own where the process may set the loopback up. `None`, after saying why
/// (a failure under CI), when neither works here.
fn namespace_flags() -> Option<&'static str> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    let flags = if root { "-n" } else { "-rn" };
    let works = Command::new("unshare")
        .args([flags, "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !works {
        missing(
            &format!("`unshare {flags}` cannot make a network namespace here"),
            "run as root, or allow unprivileged user namespaces",
        );
        return None;
    }
    Some(flags)
}

/// How many blocks run at once. Each has its own namespace (its own 127.0.0.1:8080), so two
/// do not meet; one at a time they took 107 s of the suite's run on two cores.
const AT_ONCE: usize = 2;

/// Whether a block's outcome depends on this machine's timing, so that it runs alone: a
/// capacity search's answer (and whether any rate met its SLO, its exit status) moves with
/// whatever else holds the cores.
fn runs_alone(block: &Runnable) -> bool {
    block.code.contains("belier capacity")
}

/// Runs every runnable block, [`AT_ONCE`] at a time, then those that [`runs_alone`] one by one;
/// fails naming each block that failed (file and line, its output) and prints how long each
/// took.
pub fn run_all(belier: &Path) {
    let blocks = runnables();
    assert!(
        !blocks.is_empty(),
        "no `sh runnable` block found: the scan is broken"
    );
    if find_program("ip", "apt-get install -y iproute2").is_none() {
        return;
    }
    let Some(flags) = namespace_flags() else {
        return;
    };
    let bin_dir = belier.parent().expect("the binary's directory");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let started = Instant::now();
    let (alone, shared): (Vec<usize>, Vec<usize>) =
        (0..blocks.len()).partition(|&i| runs_alone(&blocks[i]));
    let mut outcomes = run_indices(&blocks, &shared, AT_ONCE, flags, &path);
    outcomes.extend(run_indices(&blocks, &alone, 1, flags, &path));
    outcomes.sort_by_key(|o| o.0);
    let failures: Vec<String> = outcomes.iter().filter_map(|o| o.1.clone()).collect();
    let times: Vec<String> = outcomes.iter().map(|o| o.2.clone()).collect();
    assert!(
        failures.is_empty(),
        "runnable examples failed:\n{}",
        failures.join("\n\n")
    );
    let _ = writeln!(
        std::io::stderr(),
        "runnable examples: {} blocks in {:.1?} ({AT_ONCE} at a time, {} alone)\n{}",
        blocks.len(),
        started.elapsed(),
        alone.len(),
        times.join("\n")
    );
}

/// A block's index, its failure (file and line, why) if it failed, and how long it took.
type Outcome = (usize, Option<String>, String);

/// Runs the blocks at `indices`, `at_once` at a time (threads taking the next index in turn).
fn run_indices(
    blocks: &[Runnable],
    indices: &[usize],
    at_once: usize,
    flags: &str,
    path: &str,
) -> Vec<Outcome> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let outcomes = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..at_once {
            scope.spawn(|| {
                while let Some(&i) =
                    indices.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let block = &blocks[i];
                    let began = Instant::now();
                    let failure = run_one(block, i, flags, path)
                        .err()
                        .map(|why| format!("{}:{}: {why}", block.file, block.line));
                    let took = format!("{}:{} {:.1?}", block.file, block.line, began.elapsed());
                    outcomes
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((i, failure, took));
                }
            });
        }
    });
    outcomes.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Runs one block in its own temp dir and namespace.
fn run_one(block: &Runnable, i: usize, flags: &str, path: &str) -> Result<(), String> {
    let dir = temp_dir(&format!("runnable-{i}"));
    std::fs::write(
        dir.join("block.sh"),
        format!("set -euo pipefail\n{}", block.code),
    )
    .expect("write the block");
    std::fs::write(dir.join("wrapper.sh"), WRAPPER).expect("write the wrapper");
    // timeout runs the namespace in a process group of its own and ends all of it.
    let out = Command::new("timeout")
        .args([
            "-k",
            "5",
            &BLOCK_LIMIT.as_secs().to_string(),
            "unshare",
            flags,
        ])
        .args(["bash", "wrapper.sh"])
        .current_dir(&dir)
        .env("PATH", path)
        .output()
        .expect("timeout runs");
    if out.status.success() {
        return Ok(());
    }
    let why = match out.status.code() {
        Some(124) | Some(137) => format!("did not end within {BLOCK_LIMIT:?}"),
        Some(97) => "the built-in target could not be started".to_string(),
        code => format!("exit {code:?}"),
    };
    Err(format!(
        "{why} (in {})\n{}--- stdout\n{}--- stderr\n{}",
        dir.display(),
        block.code,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}
