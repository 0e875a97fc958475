//! Docs that run: every fenced block whose info string is `sh runnable`, in the README, the
//! book and the files the book includes, runs with bash (`set -euo pipefail`) in a temp dir of
//! its own, in a network namespace of its own, where `belier` is the binary under test and the
//! built-in target (`belier target`) already listens on its default address, 127.0.0.1:8080.
//! So a renamed flag or a changed output breaks the suite, not the reader. A block must end in
//! a few seconds ([`BLOCK_LIMIT`] stops one that hangs); the time each took is printed, so a
//! slow example shows (a timed assertion would fail on a loaded machine, not on a bad example:
//! under `stress-ng --cpu 1` the examples took 110 s together, unloaded about 55).

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

/// Runs every runnable block; fails naming each block that failed (file and line, its output)
/// and prints how long each took.
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
    let mut failures = Vec::new();
    let mut times = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        let began = Instant::now();
        if let Err(why) = run_one(block, i, flags, &path) {
            failures.push(format!("{}:{}: {why}", block.file, block.line));
        }
        times.push(format!(
            "{}:{} {:.1?}",
            block.file,
            block.line,
            began.elapsed()
        ));
    }
    assert!(
        failures.is_empty(),
        "runnable examples failed:\n{}",
        failures.join("\n\n")
    );
    let _ = writeln!(
        std::io::stderr(),
        "runnable examples: {} blocks in {:.1?}\n{}",
        blocks.len(),
        started.elapsed(),
        times.join("\n")
    );
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
