//! h2-floor: the least an HTTP/2 client on the `h2` crate does per request, as a floor for
//! `bench/syscalls --http2` to put beside belier's `--http2` (which uses the same crate) and
//! h2load.
//!
//! One thread (a current-thread runtime and a `LocalSet`), one cleartext connection (prior
//! knowledge, h2c) driven by its own task, `-c` concurrent requests as stream slots, each
//! sending `GET URL` (the request built once, cloned per request as h2 takes it by value),
//! reading the head and the whole body (its flow-control window given back), and going again
//! until the deadline. No timing, no histogram, no per-request bookkeeping beyond two counters:
//! what is left is what h2 and tokio cost.
//!
//! The output is the subset of belier's JSON summary that the bench scripts read.

use std::cell::Cell;
use std::net::ToSocketAddrs;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::TcpStream;
use tokio::task::LocalSet;

const USAGE: &str = "usage: h2-floor [-c CONCURRENT] [-z SECONDS] http://HOST:PORT/PATH";

/// Requests that ended, and those that ended with a complete 2xx/3xx response.
#[derive(Default)]
struct Tally {
    requests: Cell<u64>,
    succeeded: Cell<u64>,
}

fn main() -> ExitCode {
    let (concurrent, duration, url) = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("h2-floor: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let began = Instant::now();
    let run = run(concurrent, duration, url);
    let tally = match LocalSet::new().block_on(&runtime, run) {
        Ok(tally) => tally,
        Err(e) => {
            eprintln!("h2-floor: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (requests, succeeded) = (tally.requests.get(), tally.succeeded.get());
    println!(
        "{{\"summary\": {{\"requests\": {requests}, \"succeeded\": {succeeded}, \"errors\": {}, \
         \"duration_s\": {:.3}}}}}",
        requests - succeeded,
        began.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn parse_args(
    mut argv: impl Iterator<Item = String>,
) -> Result<(usize, Duration, http::Uri), String> {
    let (mut concurrent, mut seconds, mut url) = (50, 5.0, None);
    while let Some(arg) = argv.next() {
        let mut number = |flag: &str| -> Result<f64, String> {
            let text = argv.next().ok_or(format!("{flag} needs a value"))?;
            let text = text.strip_suffix('s').unwrap_or(&text).to_string();
            text.parse::<f64>()
                .ok()
                .filter(|n| *n > 0.0)
                .ok_or(format!("{flag} takes a positive number, not {text:?}"))
        };
        match arg.as_str() {
            "-c" => concurrent = number("-c")? as usize,
            "-z" => seconds = number("-z")?,
            _ if arg.starts_with("http://") => url = Some(arg),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let url: http::Uri = url
        .ok_or("no http:// URL")?
        .parse()
        .map_err(|e| format!("the URL: {e}"))?;
    Ok((concurrent.max(1), Duration::from_secs_f64(seconds), url))
}

/// Opens the connection, runs every slot until the deadline, and counts.
async fn run(concurrent: usize, duration: Duration, url: http::Uri) -> Result<Rc<Tally>, String> {
    let authority = url.authority().ok_or("the URL has no host")?.clone();
    let addr = (authority.host(), authority.port_u16().unwrap_or(80))
        .to_socket_addrs()
        .map_err(|e| format!("{authority}: {e}"))?
        .next()
        .ok_or(format!("{authority}: no address"))?;
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| format!("{addr}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let (send, connection) = h2::client::handshake(tcp)
        .await
        .map_err(|e| format!("HTTP/2: {e}"))?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    let request = Rc::new(
        http::Request::get(url)
            .body(())
            .map_err(|e| e.to_string())?,
    );
    let tally = Rc::new(Tally::default());
    let deadline = Instant::now() + duration;
    let slots: Vec<_> = (0..concurrent)
        .map(|_| {
            let (send, request, tally) = (send.clone(), Rc::clone(&request), Rc::clone(&tally));
            tokio::task::spawn_local(slot(send, request, tally, deadline))
        })
        .collect();
    for slot in slots {
        let _ = slot.await;
    }
    Ok(tally)
}

/// One stream slot: a request after another on the connection until the deadline.
async fn slot(
    mut send: h2::client::SendRequest<Bytes>,
    request: Rc<http::Request<()>>,
    tally: Rc<Tally>,
    deadline: Instant,
) {
    while Instant::now() < deadline {
        let answered = exchange(&mut send, &request).await;
        tally.requests.set(tally.requests.get() + 1);
        match answered {
            Ok(true) => tally.succeeded.set(tally.succeeded.get() + 1),
            Ok(false) => {}
            // A broken stream or connection: the slot stops (the run's errors show it).
            Err(_) => return,
        }
    }
}

/// One request: sent (with its end of stream), its head read, its body read whole and
/// dropped; whether its status was a success (2xx or 3xx).
async fn exchange(
    send: &mut h2::client::SendRequest<Bytes>,
    request: &http::Request<()>,
) -> Result<bool, h2::Error> {
    std::future::poll_fn(|cx| send.poll_ready(cx)).await?;
    let (response, _) = send.send_request(request.clone(), true)?;
    let response = response.await?;
    let ok = (200..400).contains(&response.status().as_u16());
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok(ok)
}
