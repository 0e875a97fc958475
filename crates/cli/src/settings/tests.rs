//! The flag-to-settings decisions, table by table.

use belier_engine::DEFAULT_DURATION;
use clap::Parser;

use super::*;
use crate::args::Cli;

fn settings(argv: &[&str]) -> Result<Settings, InputError> {
    let cli = Cli::try_parse_from(std::iter::once("belier").chain(argv.iter().copied())).unwrap();
    from_args(cli.load, 4)
}

#[test]
fn defaults() {
    let s = settings(&["http://localhost:8080/a/b?c=d"]).unwrap();
    let e = &s.engine;
    assert_eq!(e.request.host, "localhost");
    assert_eq!(e.request.port, 8080);
    assert_eq!(e.request.path_and_query, "/a/b?c=d");
    assert_eq!(
        e.load,
        Load::Closed {
            connections: Profile::constant(50.0)
        }
    );
    assert_eq!(e.threads, 4);
    assert!(e.keepalive);
    assert_eq!(
        e.stop,
        StopWhen {
            requests: None,
            duration: Some(DEFAULT_DURATION),
            iterations: None,
        }
    );
}

#[test]
fn flags_are_applied() {
    let s = settings(&[
        "http://[::1]/",
        "-n",
        "100",
        "-z",
        "2m",
        "-c",
        "3",
        "-t",
        "8",
        "-m",
        "POST",
        "-H",
        "X-A: 1",
        "-H",
        "X-B:two words ",
        "-d",
        "hi",
        "--no-keepalive",
        "--timeout",
        "500ms",
    ])
    .unwrap();
    let e = &s.engine;
    assert_eq!(e.request.host, "::1");
    assert_eq!(e.request.port, 80);
    assert_eq!(e.threads, 3, "never more threads than connections");
    assert_eq!(e.stop.requests, Some(100));
    assert_eq!(e.stop.duration, Some(std::time::Duration::from_secs(120)));
    assert_eq!(
        e.request.headers,
        [
            ("X-A".into(), "1".into()),
            ("X-B".into(), "two words".into())
        ]
    );
    assert_eq!(e.request.body, b"hi");
    assert!(!e.keepalive);
    assert_eq!(e.timeout, std::time::Duration::from_millis(500));
}

#[test]
fn http2_flags() {
    let s = settings(&["http://x/", "-c", "20", "-t", "8"]).unwrap();
    assert!(!s.engine.http2);
    assert_eq!(s.engine.max_streams, belier_engine::DEFAULT_MAX_STREAMS);
    let s = settings(&[
        "http://x/",
        "--http2",
        "-c",
        "20",
        "--max-streams",
        "10",
        "-t",
        "8",
    ])
    .unwrap();
    assert!(s.engine.http2);
    assert_eq!(s.engine.max_streams, 10);
    assert_eq!(s.engine.max_connections(), 2);
    assert_eq!(s.engine.threads, 2, "never more threads than connections");
}

#[test]
fn load_models() {
    let open = settings(&[
        "http://x/",
        "--rate",
        "2000",
        "--arrivals",
        "poisson",
        "--seed",
        "7",
        "--max-in-flight",
        "100",
    ])
    .unwrap();
    assert_eq!(
        open.engine.load,
        Load::Open {
            rate: Profile::constant(2000.0),
            spacing: Spacing::Poisson { seed: 7 },
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_in_flight: Some(100),
        }
    );
    assert_eq!(open.engine.stop.duration, Some(DEFAULT_DURATION));
    assert_eq!(open.engine.timer_slack, belier_engine::DEFAULT_TIMER_SLACK);
    // The report's verdict relies on knowing the engine's default.
    assert_eq!(
        belier_engine::DEFAULT_TIMER_SLACK.as_micros() as u64,
        belier_report::DEFAULT_TIMER_SLACK_US
    );
    let slack = settings(&["http://x/", "--rate", "10", "--timer-slack", "2ms"]).unwrap();
    assert_eq!(slack.engine.timer_slack, Duration::from_millis(2));

    let ramp = settings(&[
        "http://x/",
        "--rate",
        "10",
        "--stages",
        "30s:500, 1m:500,10s:0",
    ])
    .unwrap();
    let Load::Open { rate, .. } = &ramp.engine.load else {
        panic!()
    };
    assert_eq!(rate.start(), 10.0);
    assert_eq!(rate.stages().len(), 3);
    assert_eq!(rate.end(), Some(Duration::from_secs(100)));
    // Stages bound the run: no default duration on top.
    assert_eq!(
        ramp.engine.stop,
        StopWhen {
            requests: None,
            duration: None,
            iterations: None,
        }
    );

    let users = settings(&["http://x/", "--stages", "10s:20,10s:0"]).unwrap();
    assert_eq!(users.engine.load.max_connections(), 20);

    let held = settings(&["http://x/", "-c", "8", "--ramp-up", "4s", "-z", "10s"]).unwrap();
    let Load::Closed { connections } = &held.engine.load else {
        panic!()
    };
    assert_eq!(connections.end(), None);
    assert_eq!(connections.level_at(Duration::from_secs(2)), 4.0);
}

#[test]
fn bad_input_names_the_flag_and_value() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "<URL> is required"),
        (
            &["localhost:8080"],
            "invalid value 'localhost:8080' for '<URL>'",
        ),
        (&["ftp://x/"], "unsupported scheme 'ftp'"),
        (
            &["http://x/", "--insecure"],
            "--insecure only applies to https://",
        ),
        (
            &["https://x/", "--cacert", "/no/ca.pem"],
            "'--cacert <FILE>': cannot read it",
        ),
        (
            &["http://x/", "-n", "0"],
            "'--requests <N>': must be at least 1",
        ),
        (
            &["http://x/", "-c", "0"],
            "'--connections <N>': must be at least 1",
        ),
        (
            &["http://x/", "-c", "5000000"],
            "'--connections <N>': must be at most",
        ),
        (&["http://x/", "-t", "0"], "'--threads <N>'"),
        (&["http://x/", "-m", "GE T"], "'--method <METHOD>'"),
        (
            &["http://x/", "-H", "novalue"],
            "invalid value 'novalue' for '--header",
        ),
        (&["http://x/", "-H", "bad name: v"], "header name"),
        (
            &["http://x/", "-D", "/definitely/not/here"],
            "for '--body-file <PATH>': cannot read it",
        ),
        (
            &["http://x/", "--http2", "--max-streams", "0"],
            "'--max-streams <N>': must be at least 1",
        ),
        (
            &["http://x/", "--max-streams", "8"],
            "--max-streams only applies to HTTP/2",
        ),
        (
            &["http://x/", "--timer-slack", "1ms"],
            "--timer-slack only applies to the open loop",
        ),
        (
            &["http://x/", "--rate", "10", "--timer-slack", "50ms"],
            "invalid value '50ms' for '--timer-slack <D>': must be at most 10ms",
        ),
        (
            &["http://x/", "--http2", "--no-keepalive"],
            "--no-keepalive does not apply to --http2",
        ),
    ];
    for (argv, want) in cases {
        let err = settings(argv).unwrap_err().to_string();
        assert!(err.contains(want), "{argv:?}: {err}");
    }
}

/// A draft of `load` over plain HTTP, as a plan at `plan.yaml` would give it.
fn plan_draft(load: Load, http2: bool, max_streams: Option<usize>) -> Draft {
    let mut engine = Config::new(RequestSpec {
        method: "GET".into(),
        host: "x".into(),
        port: 80,
        path_and_query: "/".into(),
        headers: Vec::new(),
        body: Vec::new(),
    });
    engine.load = load;
    engine.stop = StopWhen {
        requests: None,
        duration: None,
        iterations: None,
    };
    Draft {
        part: belier_engine::Shard::WHOLE,
        engine,
        url: "http://x/".into(),
        output: Output {
            format: crate::args::Format::Text,
            out: None,
            save: None,
            keep: None,
            name: "run".into(),
            html: None,
            junit: None,
            tui: false,
            metrics: None,
            metrics_out: Vec::new(),
            traces_out: None,
            web: None,
        },
        raw: None,
        plan: Some("plan.yaml".into()),
        threads: 8,
        http2: Http2 {
            on: http2,
            http3: false,
            auto: false,
            early: false,
            max_streams,
            origin: Origin::Plan("plan.yaml".into()),
        },
        cap_given: false,
    }
}

#[test]
fn a_plan_is_decided_as_flags_are() {
    let closed = |n: f64| Load::Closed {
        connections: Profile::constant(n),
    };
    let s = plan_draft(closed(20.0), true, Some(10)).finish().unwrap();
    assert!(s.engine.http2);
    assert_eq!(s.engine.threads, 2, "never more threads than connections");
    assert_eq!(s.engine.stop.duration, Some(DEFAULT_DURATION));
    assert!(s.fd_limit > 0);

    let mut bounded = plan_draft(closed(2.0), false, None);
    bounded.engine.stop.iterations = Some(5);
    let s = bounded.finish().unwrap();
    assert_eq!(s.engine.stop.duration, None, "iterations bound the run");

    let cases = [
        (
            false,
            Some(4),
            true,
            "invalid value 'plan.yaml' for '<PLAN>': max_streams only applies to HTTP/2: \
             add `http2: true`",
        ),
        (
            true,
            None,
            false,
            "invalid value 'plan.yaml' for '<PLAN>': `keepalive: false` does not apply to \
             `http2: true`: streams share their connections",
        ),
        (
            true,
            Some(2_000_000),
            true,
            "invalid value 'plan.yaml' for '<PLAN>': max_streams: must be at most 1048576",
        ),
    ];
    for (http2, max_streams, keepalive, want) in cases {
        let mut draft = plan_draft(closed(2.0), http2, max_streams);
        draft.engine.keepalive = keepalive;
        let err = draft.finish().unwrap_err().to_string();
        assert_eq!(err, want);
    }
}

#[test]
fn compressed_asks_for_every_coding_unless_a_header_does() {
    let s = settings(&["http://h/", "--compressed"]).unwrap();
    assert!(s.engine.compressed);
    let asked: Vec<_> = s
        .engine
        .request
        .headers
        .iter()
        .filter(|(n, _)| n == "Accept-Encoding")
        .collect();
    assert_eq!(
        asked,
        [&("Accept-Encoding".into(), "gzip, br, deflate, zstd".into())]
    );
    let s = settings(&["http://h/", "--compressed", "-H", "accept-encoding: br"]).unwrap();
    assert!(s.engine.compressed);
    assert_eq!(
        s.engine.request.headers,
        [("accept-encoding".into(), "br".into())]
    );
    let s = settings(&["http://h/"]).unwrap();
    assert!(!s.engine.compressed && s.engine.request.headers.is_empty());
    // A targets file's requests get the header unless they carry their own: accepted.
    let cli = Cli::try_parse_from(["belier", "--targets", "t.txt", "--compressed"]);
    assert!(cli.is_ok());
}
