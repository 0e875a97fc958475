//! Files belier reads whole (issue #28): a body file that is not a regular file (a named
//! pipe, a device, a directory) or is larger than the limit is refused at once with exit 2,
//! naming the file and what it is, through every way a body is named; names of 65,536
//! characters and more (a plan's step, a targets file's entry) report without a panic, cut
//! in the text report and whole in JSON. Real runs against belier's test server on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;

belier_testsupport::binary!();

fn server() -> Server {
    Server::start(Config {
        threads: 1,
        ..Config::default()
    })
    .expect("test server starts")
}

/// Runs `cmd`, failing the test if it has not ended within 10 s (a pipe without a writer
/// blocked belier forever). Its output is read as it comes, so a long report cannot fill
/// the pipe and stall it.
fn output_within(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("belier runs");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("{cmd:?} still runs after 10 s");
        }
    }
}

/// The files no body may be: what each is called in the error.
fn hostile_files(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let fifo = dir.join("pipe");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    // Sparse: 2 GiB long, no block written.
    let sparse = dir.join("sparse.bin");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    vec![
        (fifo, "it is a named pipe (FIFO), not a regular file"),
        (
            "/dev/zero".into(),
            "it is a character device, not a regular file",
        ),
        (dir.to_path_buf(), "it is a directory, not a regular file"),
        (sparse, "it is 2.0 GiB, more than the 64 MiB belier reads"),
    ]
}

fn succeeded(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

fn assert_refused(out: &Output, file: &Path, why: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {stderr}", file.display());
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains(why), "{stderr}");
}

#[test]
fn body_files_that_are_not_regular_or_too_large_are_refused_at_once() {
    let s = server();
    let dir = temp_dir("bodies");
    for (file, why) in hostile_files(&dir) {
        let path = file.display().to_string();
        // -D
        let out = output_within(belier().args(["-n", "1", "-D", &path, &s.url("/")]));
        assert_refused(&out, &file, why);
        // A plan's body_file, multipart file and data file.
        for (key, step) in [
            ("body_file", format!("post: /\n        body_file: {path}")),
            (
                "multipart",
                format!("post: /\n        multipart: {{ f: {{ file: {path} }} }}"),
            ),
        ] {
            let plan = dir.join(format!("{key}.yaml"));
            let text = format!(
                "target: {}\nscenarios:\n  - steps:\n      - {step}\n",
                s.url("")
            );
            std::fs::write(&plan, text).unwrap();
            let out = output_within(belier().arg("check").arg(&plan));
            assert_refused(&out, &file, why);
        }
        // A targets file's @file body.
        let targets = dir.join("targets.txt");
        std::fs::write(&targets, format!("POST {}\n@{path}\n", s.url("/"))).unwrap();
        let out = output_within(belier().arg("--targets").arg(&targets).args(["-n", "1"]));
        assert_refused(&out, &file, why);
    }
    // A data file: the plan's line is named, and a 2 GiB one is above the data limit too.
    let plan = dir.join("data.yaml");
    let fifo = dir.join("pipe");
    let text = format!(
        "target: {}\ndata: {{ users: {} }}\nscenarios:\n  - steps:\n      - get: /\n",
        s.url(""),
        fifo.display()
    );
    std::fs::write(&plan, text).unwrap();
    let out = output_within(belier().arg("check").arg(&plan));
    assert_refused(&out, &fifo, "it is a named pipe (FIFO), not a regular file");
    assert_eq!(s.counts().requests, 0, "nothing was sent");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A name of 70,000 characters made the text report's padding panic (exit 101) after the
/// load was sent.
#[test]
fn names_of_65536_characters_and_more_report_without_a_panic() {
    let s = server();
    let dir = temp_dir("names");
    let long = format!("step-{}-end", "x".repeat(70_000));
    let plan = dir.join("plan.yaml");
    let text = format!(
        "target: {}\nscenarios:\n  - steps:\n      - name: {long}\n        get: /\n",
        s.url("")
    );
    std::fs::write(&plan, text).unwrap();
    let out = output_within(belier().arg("run").arg(&plan).args(["-i", "3"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    succeeded(&out);
    assert!(
        stdout.contains("step-xxxxxxxxxxxxxxxxxxxxxxxx…"),
        "{stdout}"
    );
    assert!(stdout.lines().all(|l| l.chars().count() < 400));
    // JSON keeps it whole.
    let out = output_within(
        belier()
            .arg("run")
            .arg(&plan)
            .args(["-i", "3", "--output", "json"]),
    );
    succeeded(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&long));

    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 3 + 3);

    // A targets file whose entry (its URL) is as long. The test server refuses a target of
    // 70,000 characters (it is not counted there): the report must still come, whole.
    let targets = dir.join("targets.txt");
    let path = format!("/{}", "y".repeat(70_000));
    std::fs::write(&targets, format!("GET {}\n", s.url(&path))).unwrap();
    let out = output_within(belier().arg("--targets").arg(&targets).args(["-n", "4"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    succeeded(&out);
    assert!(stdout.contains("/yy…yyyyyyyyyyyyyyyy"), "{stdout}");
    let requests = stdout
        .lines()
        .find(|l| l.starts_with("  Requests"))
        .unwrap();
    assert_eq!(requests.split_whitespace().nth(1), Some("4"), "{requests}");
    std::fs::remove_dir_all(&dir).unwrap();
}
