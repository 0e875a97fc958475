//! A `belier worker` against a hostile client, over real sockets: what a web page, another
//! local process or a guesser can send it (HTTP/1.1, `text/plain`, a foreign `Origin`,
//! `Sec-Fetch-*`, a rebinding `Host`, no or a wrong token) is refused, and no load reaches the
//! counting target; one prepare at a time, within a stated size; a job reads only the files
//! sent with it; `--spawn`'s workers die with their coordinator, `kill -9` included.

#![allow(clippy::print_stderr)]

use std::convert::Infallible;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use belier_cluster::protocol::{Job, PlanFile, Shard, Start};
use belier_testserver::{Config, Server};
use belier_testsupport::temp_dir;
use belier_testsupport::{free_port, Belier};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};

belier_testsupport::binary!(BELIER);

/// The worker's token in these tests.
const TOKEN: &str = "guard-test-token-0123";

type Body = BoxBody<Bytes, Infallible>;

/// One HTTP/2 connection to a worker, requests sent as the test says.
struct Client {
    runtime: tokio::runtime::Runtime,
    sender: SendRequest<Body>,
}

/// A request's head: its `:authority` and headers.
struct Head<'a> {
    authority: &'a str,
    headers: Vec<(&'a str, String)>,
}

impl<'a> Head<'a> {
    /// What the coordinator sends.
    fn coordinator(addr: &'a str) -> Head<'a> {
        Head {
            authority: addr,
            headers: vec![
                ("content-type", "application/json".into()),
                ("authorization", format!("Bearer {TOKEN}")),
            ],
        }
    }

    fn with(mut self, name: &'a str, value: &str) -> Head<'a> {
        self.headers.retain(|(n, _)| *n != name);
        self.headers.push((name, value.into()));
        self
    }

    fn without(mut self, name: &str) -> Head<'a> {
        self.headers.retain(|(n, _)| *n != name);
        self
    }
}

impl Client {
    fn connect(addr: &str) -> Client {
        // A thread of its own, so that a request spawned on it goes on while the test waits.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let sender = runtime.block_on(async {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let (sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                    .await
                    .unwrap();
            tokio::spawn(connection);
            sender
        });
        Client { runtime, sender }
    }

    /// POSTs `body` to `path`: the answer's status and whole body (a start's: its stream,
    /// to the run's end).
    fn post(&mut self, path: &str, head: &Head, body: Body) -> (u16, String) {
        let mut request = hyper::Request::post(format!("http://{}{path}", head.authority));
        for (name, value) in &head.headers {
            request = request.header(*name, value);
        }
        let request = request.body(body).unwrap();
        let sender = &mut self.sender;
        self.runtime.block_on(async {
            let answer = tokio::time::timeout(Duration::from_secs(30), async {
                sender.ready().await.unwrap();
                let response = sender.send_request(request).await.unwrap();
                let status = response.status().as_u16();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                (status, String::from_utf8_lossy(&body).into_owned())
            });
            answer.await.expect("the worker answers within 30 s")
        })
    }

    fn json(&mut self, path: &str, head: &Head, value: &serde_json::Value) -> (u16, String) {
        let body = Full::new(Bytes::from(serde_json::to_vec(value).unwrap())).boxed();
        self.post(path, head, body)
    }

    /// Prepares `job` and starts it as the coordinator would: the two answers' statuses,
    /// and the refusal or the results stream.
    fn prepare_and_start(&mut self, head: &Head, job: &Job) -> [(u16, String); 2] {
        let prepared = self.json("/v1/prepare", head, &serde_json::json!(job));
        let start = Start {
            at_ns: wall_ns() + 100_000_000,
            offset_ns: 0,
        };
        let started = self.json("/v1/start", head, &serde_json::json!(start));
        [prepared, started]
    }
}

fn wall_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

fn job(args: &[&str]) -> Job {
    Job {
        args: args.iter().map(ToString::to_string).collect(),
        shard: Shard { index: 1, count: 1 },
        plan: None,
        files: Vec::new(),
        env: Default::default(),
    }
}

/// A worker on a free loopback port with [`TOKEN`] (and `more` flags), started.
fn worker(more: &[&str]) -> (Belier, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut args = vec!["worker", "--listen", &addr, "--token", TOKEN];
    args.extend(more);
    let mut worker = BELIER.spawn(&args);
    worker.wait_for("runs' results in");
    (worker, addr)
}

/// An HTTP/1.1 request, as a browser's `fetch` or `curl` without `--http2-prior-knowledge`
/// sends it: the worker's answer's status line.
fn http1(addr: &str, job: &Job) -> String {
    let body = serde_json::to_vec(job).unwrap();
    let mut tcp = std::net::TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST /v1/prepare HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n\
         Authorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    tcp.write_all(head.as_bytes()).unwrap();
    tcp.write_all(&body).unwrap();
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_string()
}

#[test]
fn hostile_requests_are_refused_and_no_load_leaves() {
    let server = Server::start(Config::default()).unwrap();
    let (_worker, addr) = worker(&[]);
    let work = job(&[&server.url("/"), "-n", "5"]);

    assert_eq!(
        http1(&addr, &work),
        "HTTP/1.1 505 HTTP Version Not Supported"
    );
    let port = addr.rsplit_once(':').unwrap().1;
    let rebinding = format!("127.attacker.example:{port}");
    let hostile: Vec<(&str, Head, u16, &str)> = vec![
        (
            "a text/plain body (what a page's no-cors fetch sends)",
            Head::coordinator(&addr).with("content-type", "text/plain"),
            415,
            "JSON",
        ),
        (
            "no Content-Type",
            Head::coordinator(&addr).without("content-type"),
            415,
            "JSON",
        ),
        (
            "a foreign Origin",
            Head::coordinator(&addr).with("origin", "https://attacker.example"),
            403,
            "web page",
        ),
        (
            "Sec-Fetch-Site",
            Head::coordinator(&addr).with("sec-fetch-site", "cross-site"),
            403,
            "web page",
        ),
        (
            "a rebinding :authority",
            Head {
                authority: &rebinding,
                ..Head::coordinator(&addr)
            },
            403,
            "not as `127.attacker.example:",
        ),
        (
            "no token",
            Head::coordinator(&addr).without("authorization"),
            401,
            "token",
        ),
        (
            "a wrong token",
            Head::coordinator(&addr).with("authorization", "Bearer guard-test-token-0124"),
            401,
            "token",
        ),
    ];
    let mut client = Client::connect(&addr);
    for (what, head, status, reason) in &hostile {
        for (i, (got, body)) in client.prepare_and_start(head, &work).iter().enumerate() {
            let request = ["prepare", "start"][i];
            assert_eq!(got, status, "{what}, {request}: {body}");
            assert!(body.contains(reason), "{what}, {request}: {body}");
        }
    }
    assert_eq!(server.counts().requests, 0, "no hostile request sent load");

    // The same job from the coordinator's head runs: the refusals above were the headers'.
    let [(prepared, why), (started, stream)] =
        client.prepare_and_start(&Head::coordinator(&addr), &work);
    assert_eq!((prepared, started), (200, 200), "{why}");
    assert!(stream.contains(r#"{"end""#), "{stream}");
    assert_eq!(server.counts().requests, 5);
    // localhost is the loopback's other name.
    let localhost = format!("localhost:{port}");
    let head = Head {
        authority: &localhost,
        ..Head::coordinator(&addr)
    };
    let (hello, body) = client.json(
        "/v1/hello",
        &head,
        &serde_json::json!({"protocol": belier_cluster::protocol::PROTOCOL, "belier": "t"}),
    );
    assert_eq!(hello, 200, "{body}");
}

/// A body that comes as the test sends it, and ends when the sender is dropped.
fn coming() -> (tokio::sync::mpsc::Sender<Bytes>, Body) {
    let (more, rest) = tokio::sync::mpsc::channel::<Bytes>(4);
    let stream = futures_util::stream::unfold(rest, |mut rest| async move {
        rest.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rest))
    });
    (more, StreamBody::new(stream).boxed())
}

/// A prepare sent on `client` whose job's first bytes are `start`, the rest to come through
/// the sender returned; its answer comes from the handle.
fn prepare_coming(
    client: &Client,
    head: &Head<'_>,
    start: &[u8],
) -> (
    tokio::sync::mpsc::Sender<Bytes>,
    tokio::task::JoinHandle<(u16, String)>,
) {
    let (more, body) = coming();
    more.try_send(Bytes::copy_from_slice(start)).unwrap();
    let mut request = hyper::Request::post(format!("http://{}/v1/prepare", head.authority));
    for (name, value) in &head.headers {
        request = request.header(*name, value);
    }
    let request = request.body(body).unwrap();
    let mut sender = client.sender.clone();
    let pending = client.runtime.spawn(async move {
        sender.ready().await.unwrap();
        let response = sender.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    });
    (more, pending)
}

#[test]
fn one_prepare_at_a_time_within_a_stated_size() {
    let server = Server::start(Config::default()).unwrap();
    let (_worker, addr) = worker(&[]);
    let head = Head::coordinator(&addr);
    let work = job(&[&server.url("/"), "-n", "1"]);
    let whole = serde_json::to_vec(&work).unwrap();

    // A prepare whose job is still coming holds the worker.
    let first = Client::connect(&addr);
    let (mut more, mut pending) = prepare_coming(&first, &head, &whole[..10]);
    let mut second = Client::connect(&addr);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if pending.is_finished() {
            // The first came while the probe below held the worker for its own job, and was
            // refused: it goes again, on the same connection.
            let (status, body) = first.runtime.block_on(pending).unwrap();
            assert_eq!(status, 409, "{body}");
            (more, pending) = prepare_coming(&first, &head, &whole[..10]);
        }
        // Until the first prepare holds the worker, this one takes it and is refused for
        // its empty job (400), which lets it go again.
        let (status, body) = second.json("/v1/prepare", &head, &serde_json::json!({}));
        if status == 409 && body.contains("another prepare is under way") {
            break;
        }
        assert!(status == 400 || status == 409, "{status}: {body}");
        assert!(
            Instant::now() < deadline,
            "the first prepare never held the worker"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Beyond the stated size, refused before a byte of the body is read.
    let stated = belier_cluster::protocol::MAX_PREPARE_BYTES;
    let big = Head::coordinator(&addr).with("content-length", &(stated + 1).to_string());
    let (_open, body) = coming();
    let (status, body) = second.post("/v1/prepare", &big, body);
    assert_eq!(status, 413, "{body}");
    assert!(body.contains(&format!("at most {stated} bytes")), "{body}");

    // The first job arrives whole: prepared. A prepare while a run is prepared is refused.
    more.try_send(Bytes::copy_from_slice(&whole[10..])).unwrap();
    drop(more);
    let (status, body) = first.runtime.block_on(pending).unwrap();
    assert_eq!(status, 200, "{body}");
    let (status, body) = second.json("/v1/prepare", &head, &serde_json::json!(work));
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("a run is prepared already"), "{body}");
    // Nor may another connection start it; the one that prepared it going away frees the worker.
    let start = Start {
        at_ns: wall_ns(),
        offset_ns: 0,
    };
    let (status, body) = second.json("/v1/start", &head, &serde_json::json!(start));
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("prepared by another coordinator"), "{body}");
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = second.json("/v1/prepare", &head, &serde_json::json!(work));
        if status == 200 {
            break;
        }
        assert!(body.contains("prepared already"), "{body}");
        assert!(
            Instant::now() < deadline,
            "the run of a closed connection stayed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, stream) = second.json("/v1/start", &head, &serde_json::json!(start));
    assert_eq!(status, 200, "{stream}");
    assert_eq!(server.counts().requests, 1, "the one run that started");
}

#[test]
fn a_job_reads_only_the_files_sent_with_it() {
    let server = Server::start(Config::default()).unwrap();
    let dir = temp_dir("local");
    let secret = dir.join("id_ed25519");
    std::fs::write(&secret, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let secret_path = secret.display().to_string();
    let data = dir.join("users.csv");
    std::fs::write(&data, "name\nada\n").unwrap();
    let url = server.url("/");
    let flag_run = job(&[&url, "-m", "POST", "-D", &secret_path, "-n", "1"]);
    let plan_text = format!(
        "target: {url}\nload:\n  vus: 1\n  iterations: 1\ndata:\n  users:\n    file: {}\n\
         scenarios:\n  - name: s\n    steps:\n      - get: /\n",
        data.display()
    );
    let mut plan_run = job(&["run", "/nowhere/plan.yaml"]);
    plan_run.plan = Some(PlanFile {
        path: "/nowhere/plan.yaml".into(),
        text: plan_text,
    });
    // A targets file sent with the job, whose body file is the worker's.
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, format!("POST {url}\n@{secret_path}\n")).unwrap();
    let targets_path = targets.display().to_string();
    let mut targets_run = job(&["--targets", &targets_path, "-n", "1"]);
    targets_run.files = belier_cluster::files::gather(std::slice::from_ref(&targets)).unwrap();
    let refusals = [
        (flag_run.clone(), secret_path.clone()),
        (
            targets_run,
            format!("{targets_path}:2: the body file {secret_path}"),
        ),
        (
            job(&[&url, "--unix-socket", "/run/docker.sock", "-n", "1"]),
            "--unix-socket /run/docker.sock".to_string(),
        ),
        (plan_run, data.display().to_string()),
    ];

    let (_worker, addr) = worker(&[]);
    let mut client = Client::connect(&addr);
    let head = Head::coordinator(&addr);
    for (work, named) in &refusals {
        let [(prepared, why), (started, _)] = client.prepare_and_start(&head, work);
        assert_eq!((prepared, started), (422, 409), "{why}");
        assert!(why.contains(named.as_str()), "{why}");
        assert!(why.contains("--allow-local-files"), "{why}");
    }
    assert_eq!(server.counts().requests, 0);

    // The same files, sent with the job, are read from their copies.
    let mut sent = flag_run.clone();
    sent.files = belier_cluster::files::gather(std::slice::from_ref(&secret)).unwrap();
    let [(prepared, why), (started, _)] = client.prepare_and_start(&head, &sent);
    assert_eq!((prepared, started), (200, 200), "{why}");
    assert_eq!(server.counts().requests, 1);

    // A worker started with the allowance reads this machine's files.
    let (_allowing, addr) = worker(&["--allow-local-files"]);
    let mut client = Client::connect(&addr);
    let [(prepared, why), (started, _)] =
        client.prepare_and_start(&Head::coordinator(&addr), &flag_run);
    assert_eq!((prepared, started), (200, 200), "{why}");
    assert_eq!(server.counts().requests, 2);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_job_reads_only_the_environment_sent_with_it_within_a_bound() {
    let server = Server::start(Config::default()).unwrap();
    let url = server.url("/");
    // A job made by hand, as whoever holds the token may: its plan asks for the worker's
    // PATH (set in every process) to go out in a header.
    let mut plan_run = job(&["run", "/nowhere/plan.yaml"]);
    plan_run.plan = Some(PlanFile {
        path: "/nowhere/plan.yaml".into(),
        text: format!(
            "target: {url}\nload:\n  vus: 1\n  iterations: 1\nscenarios:\n  - name: s\n    \
             steps:\n      - get: /\n        headers: {{ X-Path: \"{{{{ env.PATH }}}}\" }}\n"
        ),
    });
    let (_worker, addr) = worker(&[]);
    let mut client = Client::connect(&addr);
    let head = Head::coordinator(&addr);
    let [(prepared, why), (started, _)] = client.prepare_and_start(&head, &plan_run);
    assert_eq!((prepared, started), (422, 409), "{why}");
    assert!(
        why.contains("environment variable `PATH` is not set"),
        "{why}"
    );

    // More variables than a job carries: refused, naming the bound.
    let mut crowded = plan_run.clone();
    crowded.env = (0..=belier_cluster::environment::MAX_VARIABLES)
        .map(|i| (format!("V{i}"), None))
        .collect();
    let [(prepared, why), (started, _)] = client.prepare_and_start(&head, &crowded);
    assert_eq!((prepared, started), (422, 409), "{why}");
    assert!(why.contains("at most 256"), "{why}");
    assert_eq!(server.counts().requests, 0);

    // With the variable sent, the same job runs.
    plan_run.env = [("PATH".to_string(), Some("sent".to_string()))].into();
    let [(prepared, why), (started, _)] = client.prepare_and_start(&head, &plan_run);
    assert_eq!((prepared, started), (200, 200), "{why}");
    assert_eq!(server.counts().requests, 1);
}

/// Whether process `pid` is gone (or a zombie no one reaped yet: it runs nothing).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[test]
fn spawned_workers_die_with_a_coordinator_killed_hard() {
    let server = Server::start(Config::default()).unwrap();
    let url = server.url("/");
    let mut coordinator = BELIER.spawn(&[&url, "--rate", "20", "-z", "60s", "--spawn", "4"]);
    let workers: Vec<u32> = (1..=4)
        .map(|i| {
            let line = coordinator.wait_for(&format!("belier: worker {i} at "));
            let pid = line.rsplit_once("(pid ").unwrap().1.trim_end_matches(')');
            pid.parse().unwrap()
        })
        .collect();
    coordinator.wait_for("workers started together");
    let folder = std::env::temp_dir().join(format!("belier-spawned-{}", coordinator.pid()));
    assert!(folder.is_dir(), "{}", folder.display());
    assert!(workers.iter().all(|&w| !gone(w)));
    // SIGKILL: the coordinator has no chance to stop anything.
    drop(coordinator);
    let killed = Instant::now();
    while killed.elapsed() < Duration::from_secs(3)
        && (folder.exists() || !workers.iter().all(|&w| gone(w)))
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = workers.iter().copied().filter(|&w| !gone(w)).collect();
    assert!(left.is_empty(), "workers still running 3 s on: {left:?}");
    assert!(!folder.exists(), "{} left behind", folder.display());
    eprintln!(
        "spawned workers gone {} ms after the coordinator's kill -9",
        killed.elapsed().as_millis()
    );
}
