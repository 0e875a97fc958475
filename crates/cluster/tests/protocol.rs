//! A real worker server and the coordinator over HTTP/2 on the loopback, with runners of the
//! test's own: what a run writes arrives record by record, a refusal names the worker and its
//! reason, a token is checked, another protocol version is refused.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use belier_cluster::coordinator::{ClusterError, Coordinator, Event};
use belier_cluster::files::{self, Received};
use belier_cluster::protocol::{Job, Shard};
use belier_cluster::worker::{self, Options, Prepared, Runner};

/// A results file of three one-second intervals, as `belier --save` wrote it.
const THREE: &str = include_str!("fixtures/three.jsonl");

/// Writes [`THREE`] line by line, `pause` apart; refuses jobs whose first argument is `bad`.
struct Replay {
    pause: Duration,
}

struct Replaying {
    pause: Duration,
}

impl Runner for Replay {
    fn prepare(&self, job: &Job, dir: &Path) -> Result<Box<dyn Prepared>, String> {
        if job.args.first().is_some_and(|a| a == "bad") {
            return Err("unexpected argument 'bad'".into());
        }
        // The files arrive whole: their copies hold what was sent, byte for byte.
        let files = Received::write(&job.files, &dir.join("files"))?;
        for (named, copy) in files.copies() {
            let sent = std::fs::metadata(named).map_err(|e| e.to_string())?.len();
            let got = std::fs::metadata(copy).map_err(|e| e.to_string())?.len();
            if sent != got {
                return Err(format!(
                    "{} came with {got} of {sent} bytes",
                    named.display()
                ));
            }
        }
        Ok(Box::new(Replaying { pause: self.pause }))
    }
}

impl Prepared for Replaying {
    fn run(
        self: Box<Self>,
        start: Instant,
        results: &Path,
        stop: Arc<AtomicBool>,
    ) -> Result<(), String> {
        std::thread::sleep(start.saturating_duration_since(Instant::now()));
        let mut written = String::new();
        for line in THREE.lines() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            written.push_str(line);
            written.push('\n');
            std::fs::write(results, &written).map_err(|e| e.to_string())?;
            std::thread::sleep(self.pause);
        }
        Ok(())
    }
}

/// The workers' token, unless a test says otherwise.
const TOKEN: &str = "test-token-0123456789";

/// A worker on a free loopback port, serving until the test ends.
fn worker(token: &str, pause: Duration) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let options = Options {
        token: token.into(),
        dir: std::env::temp_dir()
            .join(format!("belier-cluster-test-{}-{addr}", std::process::id())),
        version: "test".into(),
    };
    let runner = Box::new(Replay { pause });
    std::thread::spawn(move || worker::serve(listener, options, runner, || false));
    addr
}

fn job(first: &str, index: u32, count: u32) -> Job {
    Job {
        args: vec![first.into()],
        shard: Shard { index, count },
        plan: None,
        files: Vec::new(),
        env: Default::default(),
    }
}

#[test]
fn a_run_streams_record_by_record_and_ends() {
    let addrs = vec![
        worker(TOKEN, Duration::from_millis(50)),
        worker(TOKEN, Duration::from_millis(50)),
    ];
    let mut c = Coordinator::connect(&addrs, TOKEN.into()).unwrap();
    let offsets = c.measure_clocks(4).unwrap();
    assert_eq!(offsets.len(), 2);
    for o in &offsets {
        // One machine, one clock: the offset is within the round trip.
        assert!(
            o.offset_ns.unsigned_abs() <= o.round_trip.as_nanos(),
            "{o:?}"
        );
    }
    c.prepare(&[job("ok", 1, 2), job("ok", 2, 2)]).unwrap();
    c.start(Duration::from_millis(100), Duration::from_secs(3), None)
        .unwrap();
    let mut records = [Vec::new(), Vec::new()];
    let mut headers = [0, 0];
    let mut ended = [false, false];
    let deadline = Instant::now() + Duration::from_secs(30);
    while ended.contains(&false) {
        assert!(Instant::now() < deadline, "the run did not end");
        match c.next_event(Duration::from_millis(100)) {
            Some(Event::Header { worker, header }) => {
                assert_eq!(header.name, "fixture");
                headers[worker] += 1;
            }
            Some(Event::Record { worker, record }) => records[worker].push(record.index),
            Some(Event::Ended { worker, end }) => {
                assert!(end.is_some_and(|e| !e.interrupted));
                ended[worker] = true;
            }
            Some(Event::Lost { worker, why }) => panic!("worker {worker} lost: {why}"),
            None => {}
        }
    }
    assert_eq!(headers, [1, 1]);
    assert_eq!(records, [vec![0, 1, 2], vec![0, 1, 2]]);
}

#[test]
fn a_refusal_names_the_worker_and_its_reason() {
    let addrs = vec![worker(TOKEN, Duration::ZERO), worker(TOKEN, Duration::ZERO)];
    let c = Coordinator::connect(&addrs, TOKEN.into()).unwrap();
    let err = c.prepare(&[job("ok", 1, 2), job("bad", 2, 2)]).unwrap_err();
    assert!(matches!(err, ClusterError::Refused { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "worker {} refused the run: unexpected argument 'bad'",
            addrs[1]
        )
    );
}

#[test]
fn a_job_carries_its_files_up_to_the_bound() {
    let dir = std::env::temp_dir().join(format!("belier-cluster-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (small, large) = (dir.join("small.csv"), dir.join("large.bin"));
    std::fs::write(&small, "id\n1\n").unwrap();
    let large_file = std::fs::File::create(&large).unwrap();
    large_file.set_len(files::MAX_BYTES - 5).unwrap();
    let addrs = vec![worker(TOKEN, Duration::ZERO)];
    let c = Coordinator::connect(&addrs, TOKEN.into()).unwrap();
    let mut j = job("ok", 1, 1);
    j.files = files::gather(&[small, large]).unwrap();
    c.prepare(&[j]).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_token_is_checked() {
    let addrs = vec![worker("s3cret", Duration::ZERO)];
    let err = Coordinator::connect(&addrs, "wrong".into())
        .err()
        .expect("refused");
    assert!(matches!(err, ClusterError::Token { .. }), "{err}");
    // A token that cannot travel in a header is refused before anything is sent.
    for unusable in ["", "two words", "line\nbreak"] {
        let err = Coordinator::connect(&addrs, unusable.into())
            .err()
            .expect("refused");
        assert!(err.to_string().contains("printable ASCII"), "{err}");
    }
    Coordinator::connect(&addrs, "s3cret".into()).unwrap();
}

#[test]
fn an_abort_stops_the_run_and_a_stream_cut_short_is_a_loss() {
    let addrs = vec![worker(TOKEN, Duration::from_millis(400))];
    let mut c = Coordinator::connect(&addrs, TOKEN.into()).unwrap();
    c.prepare(&[job("ok", 1, 1)]).unwrap();
    c.start(Duration::from_millis(50), Duration::from_secs(3), None)
        .unwrap();
    let mut records = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    let why = loop {
        assert!(Instant::now() < deadline, "the run did not end");
        match c.next_event(Duration::from_millis(100)) {
            Some(Event::Record { .. }) => {
                records += 1;
                if records == 1 {
                    c.abort();
                }
            }
            Some(Event::Ended { .. }) => panic!("the replay was to stop before its end line"),
            Some(Event::Lost { why, .. }) => break why,
            _ => {}
        }
    };
    // What came before the loss was handed on first; the replay stopped before its end line.
    assert!((1..3).contains(&records), "{records} records");
    assert!(why.contains("ended before its run did"), "{why}");
}

#[test]
fn another_protocol_version_is_refused_at_hello() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let addr = worker(TOKEN, Duration::ZERO);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, body) = runtime.block_on(async {
        let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(connection);
        let hello = r#"{"protocol":999,"belier":"9.9.9"}"#;
        let request = hyper::Request::post(format!("http://{addr}/v1/hello"))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {TOKEN}"))
            .body(Full::new(bytes::Bytes::from(hello)))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    });
    assert_eq!(status, hyper::StatusCode::CONFLICT);
    let expected = format!(
        r#"{{"error":"protocol {} (belier test) here, 999 (belier 9.9.9) there"}}"#,
        belier_cluster::protocol::PROTOCOL
    );
    assert_eq!(body, expected);
}
