//! `belier report FILE --type hdr` read by the reference reader: HdrHistogram's Java
//! `HistogramLogProcessor` (Maven Central, org.hdrhistogram:HdrHistogram:2.2.2) takes the log of
//! a real run as it is (no `-tag`: a single run's lines are untagged) and finds the p50, p90 and
//! p99 belier reports, and the same maximum; a log of two runs has a tag per run, and `-tag`
//! reads each.
//!
//! Without Java or the jar the test says it skipped, except under CI (`CI=true`), where that is
//! a failure: `scripts/install-test-deps` fetches the jar with `mvn dependency:get`.

use std::path::{Path, PathBuf};
use std::process::Command;

use belier_testserver::{Config, Server};
use hdrhistogram::Histogram;
use serde_json::Value;

belier_testsupport::binary!(BELIER);

/// The jar `mvn dependency:get -Dartifact=org.hdrhistogram:HdrHistogram:2.2.2` leaves in the
/// local repository, unless `HDRHISTOGRAM_JAR` names one.
fn jar() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("HDRHISTOGRAM_JAR") {
        return Some(PathBuf::from(path));
    }
    let home = PathBuf::from(std::env::var_os("HOME")?);
    let jar =
        home.join(".m2/repository/org/hdrhistogram/HdrHistogram/2.2.2/HdrHistogram-2.2.2.jar");
    jar.is_file().then_some(jar)
}

/// Java and the jar, or `None` after saying why (a failure under CI).
fn java_and_jar() -> Option<PathBuf> {
    let java = Command::new("java").arg("-version").output().is_ok();
    let why = match (java, jar()) {
        (true, Some(jar)) => return Some(jar),
        (false, _) => (
            "java is not installed",
            "apt-get install -y default-jre-headless",
        ),
        (true, None) => (
            "HdrHistogram's jar is not in ~/.m2",
            "mvn dependency:get -Dartifact=org.hdrhistogram:HdrHistogram:2.2.2",
        ),
    };
    belier_testsupport::missing(why.0, why.1);
    None
}

/// The last line of `HistogramLogProcessor -csv`: its Total_ columns cover every interval.
fn totals(csv: &Path) -> Vec<(String, f64)> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut rows = text.lines().filter(|l| !l.starts_with('#'));
    let names: Vec<String> = rows
        .next()
        .unwrap()
        .split(',')
        .map(|n| n.trim_matches('"').to_string())
        .collect();
    let last = rows.next_back().expect("at least one interval");
    names
        .into_iter()
        .zip(last.split(',').map(|v| v.parse::<f64>().unwrap()))
        .collect()
}

/// Runs `HistogramLogProcessor` on `log` (with `-tag TAG` if given) and checks that its totals
/// over every interval are belier's report `latency` (the JSON report's `latency_us`).
fn processor_agrees(jar: &Path, log: &Path, tag: Option<&str>, latency: &Value) {
    // Values in microseconds as they are (the processor divides by 1,000,000 by default).
    let prefix = log.with_extension(tag.unwrap_or("untagged"));
    let mut java = Command::new("java");
    java.arg("-cp")
        .arg(jar)
        .arg("org.HdrHistogram.HistogramLogProcessor")
        .arg("-i")
        .arg(log)
        .arg("-o")
        .arg(&prefix)
        .args(["-csv", "-outputValueUnitRatio", "1"]);
    if let Some(tag) = tag {
        java.args(["-tag", tag]);
    }
    let java = java.output().expect("java runs");
    assert!(
        java.status.success(),
        "{}",
        String::from_utf8_lossy(&java.stderr)
    );
    let got = totals(&prefix);
    let column = |name: &str| {
        got.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name} in {got:?}"))
            .1
    };
    assert_eq!(column("Total_Count"), latency["count"].as_f64().unwrap());
    for (java_name, ours) in [
        ("Total_50%", "p50"),
        ("Total_90%", "p90"),
        ("Total_99%", "p99"),
    ] {
        let want = latency["percentiles"][ours].as_u64().unwrap();
        assert_eq!(column(java_name), want as f64, "{ours}: {got:?}\n{latency}");
    }
    // belier reports the exact maximum it measured; a histogram knows the bucket it fell in,
    // and HdrHistogram reports that bucket's top: the same value at the histogram's precision.
    let max = latency["max"].as_u64().unwrap();
    let bucket_top = Histogram::<u64>::new(3).unwrap().highest_equivalent(max);
    assert_eq!(column("Total_Max"), bucket_top as f64, "{got:?}\n{latency}");
}

/// belier's JSON report on `files`: its latency figures.
fn latency_of(files: &[&Path]) -> Value {
    let mut args = vec!["report", "--type", "json"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let report: Value = serde_json::from_slice(&BELIER.ok(&args).stdout).unwrap();
    report["latency_us"].clone()
}

/// `belier report --type hdr` of `files`, written to `log`; its text.
fn hdr_log(files: &[&Path], log: &Path) -> String {
    let mut args = vec!["report", "--type", "hdr"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let out = BELIER.ok(&args);
    std::fs::write(log, &out.stdout).unwrap();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn javas_histogram_log_processor_reads_the_log_and_agrees_with_the_report() {
    let Some(jar) = java_and_jar() else { return };
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hdr-java-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 3 ms a request: latencies past 2,048 µs, where a histogram bucket is wider than 1 µs;
    // a second run, another name, at 1 ms.
    let save = |name: &str, delay: &str| {
        let saved = dir.join(format!("{name}.jsonl"));
        BELIER.ok(&[
            "-n",
            "600",
            "-c",
            "6",
            "--save",
            saved.to_str().unwrap(),
            &server.url(&format!("/?delay={delay}")),
        ]);
        saved
    };
    let (slow, fast) = (save("slow", "3ms"), save("fast", "1ms"));

    // One run: untagged, read as it is.
    let log = dir.join("slow.hlog");
    let text = hdr_log(&[&slow], &log);
    assert!(!text.contains("Tag="), "one run: no tags\n{text}");
    processor_agrees(&jar, &log, None, &latency_of(&[&slow]));

    // Two runs in one log: each line tagged with its run, each run read with -tag.
    let log = dir.join("both.hlog");
    let text = hdr_log(&[&slow, &fast], &log);
    assert!(
        text.contains("\nTag=slow,") && text.contains("\nTag=fast,"),
        "{text}"
    );
    processor_agrees(&jar, &log, Some("slow"), &latency_of(&[&slow]));
    processor_agrees(&jar, &log, Some("fast"), &latency_of(&[&fast]));
    server.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
