//! Opens the HTML report in a real browser (headless Chromium): the page must load with no
//! console error, lay out every chart at a real size, show every run in the legends, and render
//! to a non-trivial screenshot. The page and its screenshot are kept to look at:
//! `<target dir>/html-report.html` and `<target dir>/html-report-screenshot.png`. The capacity
//! search's page is opened the same way and kept as `capacity-report.html` and
//! `capacity-report-screenshot.png`.
//!
//! Chromium is Debian's `chromium` package (`scripts/install-chromium`). Without it the test says
//! it skipped, except under CI (`CI=true`), where a missing browser is a failure.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use belier_capacity::overload::Behaviour;
use belier_capacity::{Dimension, LimitedBy, Overload, Step, StepKind};
use belier_report::{render_capacity_html, render_html, HtmlRun, Report};
use belier_results::{fixtures, RunInfo};
use belier_stats::{Collector, ErrorKind, Gauges, Outcome, Recorder, Sample, Series};
use belier_testsupport::temp_dir;

const CHROMIUM: &str = "/usr/bin/chromium";
/// Chromium starts in about a second here; a hung browser fails the test instead of CI.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);
const CHARTS: usize = 4;

fn info(url: &str) -> RunInfo {
    RunInfo {
        url: url.into(),
        connections: 50,
        requests: None,
        duration_s: Some(60.0),
        timeout_s: 2.0,
        ..fixtures::info()
    }
}

/// 60 one-second intervals of seeded pseudo-random latencies around `base_us`, with a few
/// 404s, 503s, timeouts and resets, and (if `spike_at`) one slow second.
fn results(seed: u64, base_us: u64, spike_at: Option<u64>) -> (Recorder, Series) {
    let mut c = Collector::new(1, Duration::from_secs(1));
    let t = Instant::now();
    let mut state = seed;
    let mut next = move || {
        // xorshift64: deterministic, no dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for second in 0..60u64 {
        let mut r = Recorder::new();
        let requests = 800 + next() % 200;
        for _ in 0..requests {
            let roll = next() % 1000;
            let outcome = match roll {
                0..=2 => Outcome::Error(ErrorKind::Timeout),
                3 => Outcome::Error(ErrorKind::ConnectionReset),
                4..=9 => Outcome::Response { status: 503 },
                10..=14 => Outcome::Response { status: 404 },
                _ => Outcome::Response { status: 200 },
            };
            // A long tail: mostly near the base, sometimes 10x, rarely 100x.
            let tail = match next() % 1000 {
                0 => 100,
                1..=20 => 10,
                _ => 1,
            };
            let mut latency = base_us / 2 + next() % base_us;
            latency *= tail;
            if spike_at == Some(second) {
                latency *= 30;
            }
            r.record(&Sample {
                bytes_in: 512,
                bytes_out: 80,
                ..Sample::simulated(t, 0, latency, outcome)
            });
            if let Outcome::Error(kind) = outcome {
                r.note_error_example(kind, || match kind {
                    ErrorKind::Timeout => "no response within 2 s".into(),
                    _ => "Connection reset by peer (os error 104)".into(),
                });
            }
        }
        if second == 0 {
            for _ in 0..50 {
                r.record_connection();
            }
        }
        c.add(0, second, &r, Gauges::default());
    }
    c.finish_worker(0, Duration::from_millis(60_000));
    c.finish()
}

fn report<'a>(info: &'a RunInfo, results: &'a (Recorder, Series)) -> Report<'a> {
    Report {
        scenarios: Vec::new(),
        info,
        totals: &results.0,
        series: &results.1,
        elapsed: Duration::from_secs(60),
        interrupted: false,
        warnings: vec![],
        thresholds: vec![],
        changes: vec![],
        host: None,
    }
}

/// Runs headless Chromium on `page` with `extra` flags and a fresh profile; returns (stdout,
/// stderr).
fn chromium(page: &Path, extra: &[String], profile: &Path) -> (String, String) {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    // Read both pipes on threads so a chatty browser cannot block on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "chromium failed: {status}\n{err}");
    (out, err)
}

/// Value of attribute `name` in the tag starting `tag`.
fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// Console messages that mean the page is broken: script errors, or a resource the Content
/// Security Policy refused (the page would have tried to fetch something).
fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught")
                || l.contains("Content Security Policy")
                || (l.contains("CONSOLE") && l.contains("rror"))
        })
        .collect()
}

/// Whether Chromium is here to run the test; outside CI a missing browser skips it (saying
/// so), under CI it fails it.
fn have_chromium() -> bool {
    if Path::new(CHROMIUM).exists() {
        return true;
    }
    belier_testsupport::missing("chromium is not installed", "run scripts/install-chromium");
    false
}

/// The `<svg class="chart">` tags of a DOM, each checked to have a real width and height.
fn chart_tags(dom: &str) -> Vec<&str> {
    let svgs: Vec<&str> = dom
        .match_indices("<svg")
        .map(|(i, _)| &dom[i..i + dom[i..].find('>').unwrap()])
        .filter(|tag| attribute(tag, "class") == Some("chart"))
        .collect();
    for tag in &svgs {
        for dimension in ["width", "height"] {
            let v: f64 = attribute(tag, dimension)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{dimension} of {tag}"));
            assert!(v > 0.0, "{dimension} of {tag}");
        }
    }
    svgs
}

/// Takes a `width`×`height` screenshot of `page` into `png`, checks it is a PNG of that size
/// larger than `min_bytes` (a blank or error page compresses to a few kilobytes; charts and
/// tables do not) and that the browser logged no error.
fn screenshot(page: &Path, png: &Path, (width, height): (u32, u32), min_bytes: usize, name: &str) {
    let _ = std::fs::remove_file(png);
    let (_, stderr) = chromium(
        page,
        &[
            format!("--screenshot={}", png.display()),
            format!("--window-size={width},{height}"),
        ],
        &temp_dir(name),
    );
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let bytes = std::fs::read(png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let size = (
        u32::from_be_bytes(bytes[16..20].try_into().unwrap()),
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
    );
    assert_eq!(size, (width, height));
    assert!(
        bytes.len() > min_bytes,
        "screenshot is only {} bytes",
        bytes.len()
    );
    let _ = std::fs::remove_dir_all(temp_dir(name));
}

/// cargo's target directory, where the pages and screenshots are kept to look at.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .to_path_buf()
}

#[test]
fn report_opens_in_a_headless_browser() {
    if !have_chromium() {
        return;
    }

    let base_info = info("http://127.0.0.1:8080/api?size=512");
    let next_info = info("http://127.0.0.1:8080/api?size=512&cache=1");
    let base = results(0x5eed_0001, 2_000, None);
    let next = results(0x5eed_0002, 1_200, Some(30));
    let (a, b) = (report(&base_info, &base), report(&next_info, &next));
    let html = render_html(&[
        HtmlRun {
            name: "baseline".into(),
            report: &a,
        },
        HtmlRun {
            name: "candidate".into(),
            report: &b,
        },
    ]);

    let target = target_dir();
    let page = target.join("html-report.html");
    std::fs::write(&page, &html).unwrap();

    // The DOM after layout and any script: the charts are there with real sizes.
    let (dom, stderr) = chromium(&page, &["--dump-dom".into()], &temp_dir("profile-dom"));
    assert_eq!(chart_tags(&dom).len(), CHARTS, "chart elements in the DOM");
    let legends = dom.matches("<div class=\"legend\">").count();
    assert_eq!(legends, CHARTS);
    for name in ["baseline", "candidate"] {
        assert!(
            dom.matches(&format!("</i>{name}</span>")).count() >= CHARTS,
            "legend entries for {name}"
        );
    }
    assert!(dom.contains("Latency by percentile") && dom.contains("99.999%"));
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let _ = std::fs::remove_dir_all(temp_dir("profile-dom"));

    // What a person sees.
    let png = target.join("html-report-screenshot.png");
    screenshot(&page, &png, (1280, 2000), 40_000, "profile-shot");
}

/// A step of the capacity search below: latency grows with the level, goodput follows it
/// until errors take a share.
fn step(kind: StepKind, level: f64, p99_ms: f64, error_share: f64, why: Option<&str>) -> Step {
    let sent = level * 0.998;
    Step {
        kind,
        target_rate: level,
        achieved_rate: sent,
        goodput: sent * (1.0 - error_share),
        requests: (sent * 20.0) as u64,
        p50_ms: Some(p99_ms * 0.3),
        p99_ms: Some(p99_ms),
        p999_ms: Some(p99_ms * 1.7),
        error_share,
        errors: Default::default(),
        rejected: 0,
        cancelled: 0,
        host_cpu: None,
        drain_s: None,
        drained: None,
        server_timing: None,
        pass: Some(why.is_none()),
        why: why.map(String::from),
    }
}

/// A search for `p99<30ms` as `belier capacity` runs it: growing from 10/s to a failure at
/// 320/s, bisecting to 200/s, confirming it, overloading at 250, 300 and 400/s (all failing on
/// p99) and recovering at 160/s.
fn capacity_outcome() -> belier_capacity::Outcome {
    use StepKind::{Bisect, Confirm, Grow, Recovery};
    let over = |p99: f64| format!("p99 = {p99:.1} ms (wanted p99<30ms)");
    let (w240, w320) = (over(47.9), over(182.3));
    let (w250, w300, w400) = (over(64.2), over(191.0), over(640.5));
    belier_capacity::Outcome {
        url: "http://127.0.0.1:8080/api/search?q=belier&limit=20".into(),
        dimension: Dimension::Rate,
        slos: vec!["p99<30ms".into(), "errors<1%".into()],
        max_rate: Some(200.0),
        limited_by: LimitedBy::Slo,
        passed_rate: Some(200.0),
        failed_rate: Some(240.0),
        failed_why: Some(w240.clone()),
        generator: None,
        steps: vec![
            step(Grow, 10.0, 4.1, 0.0, None),
            step(Grow, 20.0, 4.3, 0.0, None),
            step(Grow, 40.0, 4.9, 0.0, None),
            step(Grow, 80.0, 6.2, 0.0, None),
            step(Grow, 160.0, 11.4, 0.0, None),
            step(Grow, 320.0, 182.3, 0.004, Some(&w320)),
            step(Bisect, 240.0, 47.9, 0.0, Some(&w240)),
            step(Bisect, 200.0, 23.8, 0.0, None),
            step(Confirm, 200.0, 25.1, 0.0, None),
            step(StepKind::Overload, 250.0, 64.2, 0.0, Some(&w250)),
            step(StepKind::Overload, 300.0, 191.0, 0.02, Some(&w300)),
            step(StepKind::Overload, 400.0, 640.5, 0.31, Some(&w400)),
            step(Recovery, 160.0, 13.9, 0.0, None),
        ],
        overload: Some(Overload {
            behaviour: Behaviour::Slows,
            recovered: Some(true),
            drained_s: Some(4.0),
            drained: Some(true),
        }),
        elapsed_s: 412.0,
    }
}

#[test]
fn capacity_page_opens_in_a_headless_browser() {
    if !have_chromium() {
        return;
    }
    let outcome = capacity_outcome();
    let page = target_dir().join("capacity-report.html");
    std::fs::write(&page, render_capacity_html(&outcome)).unwrap();

    let (dom, stderr) = chromium(&page, &["--dump-dom".into()], &temp_dir("capacity-dom"));
    assert_eq!(chart_tags(&dom).len(), 2, "chart elements in the DOM");
    assert!(dom.contains("Capacity: 200/s with p99&lt;30ms"));
    for label in [">SLO p99&lt;30ms</text>", ">capacity 200/s</text>"] {
        assert!(dom.contains(label), "{label}");
    }
    assert_eq!(dom.matches("<tr class=\"").count(), outcome.steps.len());
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors:\n{}", errors.join("\n"));
    let _ = std::fs::remove_dir_all(temp_dir("capacity-dom"));

    let png = target_dir().join("capacity-report-screenshot.png");
    screenshot(&page, &png, (1280, 2000), 30_000, "capacity-shot");
}
