//! Every parser of plan input gives a value or a located error, never a panic: threshold
//! expressions, durations wherever a plan writes one, and whole plans one slip away from a
//! valid one. Where there is a printer it round-trips: a threshold's canonical form, and a
//! duration as `belier check` shows it, parse back to what was printed. (`fuzz.rs` feeds the
//! plan parser pure noise and plan-shaped random documents.)
//!
//! `PROPTEST_CASES` sets the number of cases (256 by default); `bench/fuzz` runs many more.

use std::path::Path;
use std::time::Duration;

use belier_plan::{Metric, Plan, PlanError, Threshold};
use belier_scenario::VirtualUsers;
use belier_testsupport::near_miss;
use proptest::prelude::*;

/// The longest duration a plan may write.
const LONGEST: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

const THRESHOLDS: &[&str] = &[
    "p99 < 200ms",
    "p99.9 <= 1s",
    "median > 5ms",
    "mean < 100ms",
    "min >= 1us",
    "max < 2s",
    "avg<1m30s",
    "p50 < 1.5s",
    "error_rate < 1%",
    "errors <= 0.5%",
    "rate > 900/s",
    "rate >= 12.5",
    "checks > 99%",
    "requests >= 1000",
    "login: p95 < 500ms",
    "GET /a:b: mean < 5ms",
    "p0 < 1h",
    "p100 <= 250µs",
];

/// Pieces thresholds are made of, to assemble plausible nonsense.
const THRESHOLD_WORDS: &[&str] = &[
    "p99", "p", "p99.", "p1e2", "p-1", "mean", "median", "errors", "rate", "checks", "requests",
    "login", ":", " ", "<", "<=", ">", ">=", "=", "=>", "200", "1.5", "-3", "1e300", "ms", "s",
    "us", "µs", "%", "/s", "NaN", "inf",
];

const DURATIONS: &[&str] = &[
    "250ms",
    "2s",
    "1m30s",
    "1.5s",
    "3",
    "0.25",
    "1h",
    "2m",
    "800us",
    "1µs",
    "1h2m3s4ms5us",
    "0s",
    "1min",
    "876000h",
];

/// Where a plan writes a duration; `{}` is the duration, quoted.
const DURATION_SITES: &[&str] = &[
    "timeout: {}",
    "load: { duration: {} }",
    "load: { vus: 2, pacing: {} }",
    "load: { vus: 1, stages: [{ duration: {}, target: 3 }] }",
    "scenarios: [{ steps: [{ pause: {} }] }]",
    "scenarios: [{ steps: [{ get: /, timeout: {} }] }]",
    "scenarios: [{ steps: [{ get: /, check: { max_latency: {} } }] }]",
];

/// Whole plans, every feature but files (a near miss of a missing file stops at the file).
const PLANS: &[&str] = &[
    r#"target: https://api.example.test:8443/v1/
headers:
  Accept: application/json
  X-Run: "{{ run }}"
timeout: 5s
insecure: true
sni: api.internal
http2: true
max_streams: 10
cookies: false
variables:
  run: r42
  password: secret
load:
  vus: 5
  stages: [{ duration: 30s, target: 50 }, "1m:50", { duration: 10s, target: 0 }]
  pacing: 2s
  duration: 2m
  iterations: 1000
  seed: 9
scenarios:
  - name: shopper
    weight: 3
    steps:
      - name: login
        post: /login
        json: { user: "u{{ vu }}", password: "{{ password }}", remember: true, n: 3 }
        extract:
          token: { json: $.token }
          csrf: { regex: 'csrf=(\w+)' }
          where: { header: Location }
          session: { cookie: SID }
        check:
          status: [200, 201]
          body_contains: token
          body_matches: '"token":'
          json: { $.ok: true }
          header: { Content-Type: application/json }
          max_latency: 200ms
        abort_on_fail: true
        timeout: 2s
      - pause: 1s..3s
      - loop: 3
        steps:
          - get: /items/{{ random_int(1, 500) }}?q={{ random_string(8) }}
            headers: { Authorization: "Bearer {{ token }}", X-Id: "{{ uuid }}" }
      - group: browse
        steps:
          - method: PUT
            url: https://api.example.test:8443/v1/cart/{{ iteration }}
            body: "a={{ csrf }}"
  - name: browser
    steps:
      - get: /items
thresholds:
  - p99 < 300ms
  - error_rate < 1%
  - "login: p95 < 500ms"
  - login: checks > 99%
"#,
    r#"target: http://127.0.0.1:8080
keepalive: false
load:
  rate: 20
  stages: ['1m:200', '2m:200', '30s:0']
  max_vus: 500
  arrivals: poisson
  seed: 7
  duration: 5m
scenarios:
  - steps:
      - delete: /a
        check: { status: 204, header: [ETag, Date] }
      - loop: { count: 2, steps: [{ head: /b }, { pause: 10ms }] }
thresholds: [rate > 900/s, requests >= 1000, p99.9 < 1s]
"#,
    "target: http://h\nscenarios: [{ steps: [{ get: / }] }]\n",
];

/// Values of every YAML type, to put where another type is expected.
const TYPED: &[&str] = &[
    "[1, 2]",
    "{a: 1}",
    "[]",
    "{}",
    "~",
    "true",
    "\"x\"",
    "-1",
    "0",
    "1e400",
    "18446744073709551616",
    "&a x",
    "*a",
    "!!binary aGk=",
    "|\n  block",
    "\"{{\"",
    "\"{{ nope }}\"",
    "\"(\"",
    "$.[",
];

fn plan(text: &str) -> Result<Plan, PlanError> {
    belier_plan::parse(text, Path::new("fuzz.yaml"))
}

/// A plan error names the file, line and column of the fault.
fn assert_located(e: &PlanError) -> Result<(), TestCaseError> {
    let shown = e.to_string();
    let mut parts = shown.splitn(4, ':');
    prop_assert_eq!(parts.next(), Some("fuzz.yaml"), "{}", shown);
    for _ in 0..2 {
        let n = parts.next().and_then(|n| n.parse::<usize>().ok());
        prop_assert!(n.is_some_and(|n| n > 0), "no line:column in {}", shown);
    }
    Ok(())
}

/// A plan that parsed can be described, turned into the engine's load and into users.
fn use_plan(p: &Plan) {
    let _ = p.describe();
    let _ = p.load.engine_load();
    let _ = p.users();
}

/// Half of the last digit `show_us` prints for a latency of `us` (as the canonical form does).
fn shown_precision_us(us: f64) -> f64 {
    if us < 1000.0 {
        0.5
    } else if us < 1e6 {
        50.0
    } else {
        5000.0
    }
}

fn check_threshold(text: &str) -> Result<(), TestCaseError> {
    let t = match Threshold::parse(text) {
        Err((at, why)) => {
            prop_assert!(at <= text.len(), "offset {} past {:?}", at, text);
            prop_assert!(!why.is_empty());
            return Ok(());
        }
        Ok(t) => t,
    };
    let shown = t.canonical();
    let again = Threshold::parse(&shown);
    prop_assert!(again.is_ok(), "{:?} → {:?}: {:?}", text, shown, again);
    let again = again.unwrap();
    prop_assert_eq!(&again.scope, &t.scope, "{:?} → {:?}", text, shown);
    prop_assert_eq!(again.metric, t.metric, "{:?} → {:?}", text, shown);
    prop_assert_eq!(again.comparison, t.comparison, "{:?} → {:?}", text, shown);
    let tolerance = match t.metric {
        Metric::Percentile(_) | Metric::Mean | Metric::Min | Metric::Max => {
            shown_precision_us(t.bound)
        }
        _ => 1e-12 * t.bound.abs().max(1.0),
    };
    prop_assert!(
        (again.bound - t.bound).abs() <= tolerance,
        "{:?} → {:?}: bound {} became {}",
        text,
        shown,
        t.bound,
        again.bound
    );
    Ok(())
}

/// A plan with `value` (quoted, so that any text reaches the duration parser) at `site`.
fn plan_with_duration(site: &str, value: &str) -> String {
    let line = site.replacen("{}", &serde_json::to_string(value).unwrap(), 1);
    let scenarios = if line.starts_with("scenarios:") {
        String::new()
    } else {
        "scenarios: [{ steps: [{ get: / }] }]\n".to_string()
    };
    format!("target: http://127.0.0.1:8080\n{line}\n{scenarios}")
}

fn check_duration(site: &str, value: &str) -> Result<(), TestCaseError> {
    match plan(&plan_with_duration(site, value)) {
        Err(e) => assert_located(&e),
        Ok(p) => {
            let timeout = p.options.timeout.unwrap_or_default();
            let run = p.load.duration.unwrap_or_default();
            prop_assert!(timeout <= LONGEST && run <= LONGEST, "{:?} accepted", value);
            use_plan(&p);
            Ok(())
        }
    }
}

/// A duration, as the plan's `timeout`, shown by `belier check`.
fn shown_timeout(text: &str) -> Result<(Duration, String), TestCaseError> {
    let p = plan(&plan_with_duration("timeout: {}", text));
    prop_assert!(p.is_ok(), "{:?}: {:?}", text, p.err());
    let p = p.unwrap();
    let described = p.describe();
    let shown = described
        .lines()
        .find_map(|l| l.strip_prefix("options: timeout "))
        .and_then(|rest| rest.split(',').next())
        .map(str::to_string);
    prop_assert!(shown.is_some(), "no timeout in {}", described);
    Ok((p.options.timeout.unwrap(), shown.unwrap()))
}

/// A duration written the ways a plan may write it.
fn written(d: Duration, style: u8) -> String {
    let us = d.as_micros();
    let (h, m, s) = (
        us / 3_600_000_000,
        us / 60_000_000 % 60,
        us / 1_000_000 % 60,
    );
    match style % 4 {
        0 => format!("{us}us"),
        1 => format!("{h}h{m}m{s}s{}ms{}us", us / 1000 % 1000, us % 1000),
        2 => format!("{}.{:06}s", us / 1_000_000, us % 1_000_000),
        _ => format!("{}.{:06}", us / 1_000_000, us % 1_000_000),
    }
}

/// A line of a plan with its value replaced by one of another type.
fn retyped(seed: &str, line: prop::sample::Index, value: &str) -> String {
    let lines: Vec<&str> = seed.lines().collect();
    let keyed: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains(": "))
        .collect();
    if keyed.is_empty() {
        return seed.to_string();
    }
    let i = *line.get(&keyed);
    let at = lines[i].find(": ").unwrap();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out[i] = format!("{}: {value}", &lines[i][..at]);
    out.join("\n")
}

fn plan_near_miss() -> impl Strategy<Value = String> {
    (
        prop::sample::select(PLANS),
        any::<prop::sample::Index>(),
        prop::sample::select(TYPED),
        any::<bool>(),
        prop::collection::vec(near_miss::mutation(), 0..=2),
    )
        .prop_map(|(seed, line, value, retype, mutations)| {
            let text = if retype {
                retyped(seed, line, value)
            } else {
                seed.to_string()
            };
            near_miss::mutate(&text, &mutations)
        })
}

proptest! {
    #[test]
    fn threshold_noise_never_panics(text in "\\PC{0,40}") {
        check_threshold(&text)?;
    }

    #[test]
    fn threshold_words_never_panic(
        words in prop::collection::vec(prop::sample::select(THRESHOLD_WORDS), 0..8),
    ) {
        check_threshold(&words.concat())?;
    }

    #[test]
    fn threshold_near_misses_never_panic(text in near_miss::near_miss(THRESHOLDS)) {
        check_threshold(&text)?;
    }

    #[test]
    fn duration_noise_never_panics(
        site in prop::sample::select(DURATION_SITES),
        text in prop_oneof![
            "\\PC{0,20}",
            "([0-9]{0,22}(\\.[0-9]{0,4})?(us|µs|ms|s|m|min|h|d| )?){1,4}",
        ],
    ) {
        check_duration(site, &text)?;
    }

    #[test]
    fn duration_near_misses_never_panic(
        site in prop::sample::select(DURATION_SITES),
        text in near_miss::near_miss(DURATIONS),
    ) {
        check_duration(site, &text)?;
    }

    /// Whatever way a duration is written, it reads as itself, and what `belier check` shows
    /// reads back as the same duration.
    #[test]
    fn durations_round_trip(us in 0..=LONGEST.as_micros() as u64, style in any::<u8>()) {
        let d = Duration::from_micros(us);
        let text = written(d, style);
        let (read, shown) = shown_timeout(&text)?;
        prop_assert_eq!(read, d, "{:?}", text);
        let (again, _) = shown_timeout(&shown)?;
        prop_assert_eq!(again, d, "{:?} shown as {:?}", text, shown);
    }

    #[test]
    fn plan_near_misses_never_panic(text in plan_near_miss()) {
        match plan(&text) {
            Ok(p) => use_plan(&p),
            Err(e) => assert_located(&e)?,
        }
    }
}

#[test]
fn the_seeds_are_valid() {
    for seed in PLANS {
        plan(seed).unwrap_or_else(|e| panic!("{e}\n{seed}"));
    }
    for t in THRESHOLDS {
        Threshold::parse(t).unwrap_or_else(|e| panic!("{t}: {e:?}"));
    }
    for d in DURATIONS {
        plan(&plan_with_duration("timeout: {}", d)).unwrap_or_else(|e| panic!("{d}: {e}"));
    }
    for site in DURATION_SITES {
        plan(&plan_with_duration(site, "1s")).unwrap_or_else(|e| panic!("{site}: {e}"));
    }
}
