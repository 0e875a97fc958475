//! The coordinator: starts a run on several workers at one instant and hands on what they
//! record, worker by worker, record by record.
//!
//! The calls go in order: [`Coordinator::connect`] (connection and hello with each worker),
//! [`Coordinator::measure_clocks`], [`Coordinator::prepare`], [`Coordinator::start`], then
//! [`Coordinator::next_event`] until every worker has ended or was lost;
//! [`Coordinator::steer`] changes the level of the run on every worker, and
//! [`Coordinator::abort`] stops the workers still running. Everything a worker sent is handed
//! on before it is reported lost.

use std::io::{BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use belier_results::{End, Header, Reader, Record};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper::{header, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::clock::{self, wall_ns, Offset, Sample};
use crate::protocol::{
    bearer, path, ClockReading, Hello, Job, Note, Refusal, Start, Steering, PROTOCOL,
};

/// Why the coordinator could not start the run; each names the worker.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The worker could not be reached.
    #[error("worker {worker}: cannot connect: {why}")]
    Connect {
        /// The worker's address.
        worker: String,
        /// Why.
        why: String,
    },
    /// The worker refused the token (or wanted one).
    #[error("worker {worker} refused the token (401): give the token it printed (or was given) with --worker-token or BELIER_WORKER_TOKEN")]
    Token {
        /// The worker's address.
        worker: String,
    },
    /// The worker refused the request.
    #[error("worker {worker} refused the run: {why}")]
    Refused {
        /// The worker's address.
        worker: String,
        /// Its reason.
        why: String,
    },
}

/// What a worker sent or what became of it.
#[derive(Debug)]
pub enum Event {
    /// Its results file's header.
    Header {
        /// The worker's number, in the order given.
        worker: usize,
        /// The header.
        header: Box<Header>,
    },
    /// One record of its results file.
    Record {
        /// The worker's number.
        worker: usize,
        /// The record.
        record: Box<Record>,
    },
    /// Its run ended; `end` is its results file's end line.
    Ended {
        /// The worker's number.
        worker: usize,
        /// The end line (absent if the worker's file had none).
        end: Option<End>,
    },
    /// The worker was lost: its connection broke, it stayed silent too long, or its run failed.
    Lost {
        /// The worker's number.
        worker: usize,
        /// What happened.
        why: String,
    },
}

/// One worker's connection.
struct Link {
    name: String,
    sender: SendRequest<Full<Bytes>>,
}

/// Coordinates workers through one run.
pub struct Coordinator {
    runtime: tokio::runtime::Runtime,
    links: Vec<Link>,
    token: String,
    offsets: Vec<Offset>,
    events: Option<std_mpsc::Receiver<Event>>,
}

impl Coordinator {
    /// Connects to every worker (`HOST:PORT`) and checks that it speaks this protocol.
    /// `token` goes with every request; it is printable ASCII
    /// ([`crate::protocol::token_problem`]).
    pub fn connect(workers: &[String], token: String) -> Result<Self, ClusterError> {
        if let Some(why) = crate::protocol::token_problem(&token, false) {
            return Err(ClusterError::Refused {
                worker: "(all)".into(),
                why: format!("the token {why}"),
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Connect {
                worker: "(all)".into(),
                why: format!("no runtime: {e}"),
            })?;
        let links = runtime.block_on(async {
            let mut links = Vec::new();
            for name in workers {
                links.push(link(name).await?);
            }
            Ok::<_, ClusterError>(links)
        })?;
        let c = Coordinator {
            runtime,
            links,
            token,
            offsets: Vec::new(),
            events: None,
        };
        let ours = Hello {
            protocol: PROTOCOL,
            belier: env!("CARGO_PKG_VERSION").into(),
        };
        let body = serde_json::to_vec(&ours).expect("a hello serialises");
        c.each(path::HELLO, |_| body.clone())?;
        Ok(c)
    }

    /// The workers' addresses, in order.
    pub fn workers(&self) -> Vec<String> {
        self.links.iter().map(|l| l.name.clone()).collect()
    }

    /// Measures each worker's clock against this one's, keeping the best of `samples`
    /// exchanges (shortest round trip).
    pub fn measure_clocks(&mut self, samples: usize) -> Result<Vec<Offset>, ClusterError> {
        let mut offsets = Vec::new();
        for i in 0..self.links.len() {
            let mut taken = Vec::new();
            for _ in 0..samples.max(1) {
                let sent = wall_ns();
                let answer = self.request(i, path::CLOCK, Vec::new())?;
                let received = wall_ns();
                let reading: ClockReading =
                    serde_json::from_slice(&answer).map_err(|e| self.refused(i, e))?;
                taken.push(Sample {
                    sent,
                    worker: reading.wall_ns,
                    received,
                });
            }
            offsets.push(clock::best(&taken).expect("at least one sample"));
        }
        self.offsets.clone_from(&offsets);
        Ok(offsets)
    }

    /// Has every worker prepare its job (`jobs[i]` for worker `i`); the first refusal stops
    /// the others' and is the error.
    pub fn prepare(&self, jobs: &[Job]) -> Result<(), ClusterError> {
        let bodies: Vec<Vec<u8>> = jobs
            .iter()
            .map(|j| serde_json::to_vec(j).expect("a job serialises"))
            .collect();
        let prepared = self.each(path::PREPARE, |i| bodies[i].clone());
        if prepared.is_err() {
            self.abort();
        }
        prepared.map(|_| ())
    }

    /// Starts every worker `lead` from now (by this machine's clock, converted by each
    /// worker's offset) and begins handing on their events. A worker silent for longer than
    /// `silence` is lost. With `keep`, each worker's stream is also written, as it comes, to
    /// `keep/worker-N.jsonl` (N from 1): each worker's own results file.
    pub fn start(
        &mut self,
        lead: Duration,
        silence: Duration,
        keep: Option<PathBuf>,
    ) -> Result<Duration, ClusterError> {
        let at_ns = wall_ns() + i128::try_from(lead.as_nanos()).unwrap_or(i128::MAX);
        let (tx, rx) = std_mpsc::channel();
        let starts: Vec<_> = (0..self.links.len())
            .map(|i| {
                let start = Start {
                    at_ns,
                    offset_ns: self.offsets.get(i).map_or(0, |o| o.offset_ns),
                };
                let body = serde_json::to_vec(&start).expect("a start serialises");
                self.send(i, path::START, body)
            })
            .collect();
        let answers = self
            .runtime
            .block_on(futures_util::future::join_all(starts));
        let mut streams = Vec::new();
        let mut failure = None;
        for (i, answer) in answers.into_iter().enumerate() {
            match answer {
                Ok(response) if response.status() == StatusCode::OK => streams.push(response),
                Ok(response) => {
                    failure.get_or_insert_with(|| self.runtime.block_on(self.refusal(i, response)));
                }
                Err(e) => {
                    failure.get_or_insert(ClusterError::Connect {
                        worker: self.links[i].name.clone(),
                        why: e.to_string(),
                    });
                }
            }
        }
        if let Some(e) = failure {
            self.abort();
            return Err(e);
        }
        for (i, response) in streams.into_iter().enumerate() {
            let file = keep.as_ref().and_then(|dir| {
                std::fs::File::create(dir.join(format!("worker-{}.jsonl", i + 1))).ok()
            });
            let (pieces, taken) = std_mpsc::channel();
            let name = self.links[i].name.clone();
            self.runtime
                .spawn(stream(response.into_body(), pieces, silence, file));
            let events = tx.clone();
            std::thread::spawn(move || decode(i, &name, taken, &events));
        }
        self.events = Some(rx);
        Ok(lead)
    }

    /// The next event, waiting up to `wait`; `None` when there is none yet or no more.
    pub fn next_event(&self, wait: Duration) -> Option<Event> {
        self.events.as_ref()?.recv_timeout(wait).ok()
    }

    /// Has every worker hold `steering`'s level from now on (the whole run's level: each
    /// worker's engine takes its shard's share); the first refusal, in worker order.
    pub fn steer(&self, steering: Steering) -> Result<(), ClusterError> {
        let body = serde_json::to_vec(&steering).expect("a steering serialises");
        self.each(path::STEER, |_| body.clone())
    }

    /// Tells every worker to stop (each one's end line still comes down its stream).
    pub fn abort(&self) {
        let aborts: Vec<_> = (0..self.links.len())
            .map(|i| self.send(i, path::ABORT, Vec::new()))
            .collect();
        let all = futures_util::future::join_all(aborts);
        let _ = self
            .runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(2), all).await });
    }

    /// Sends `path` with `body` to worker `i`: the answer, once its head is in.
    fn send(
        &self,
        i: usize,
        path: &str,
        body: Vec<u8>,
    ) -> impl std::future::Future<Output = Result<Response<Incoming>, hyper::Error>> + 'static {
        let request = self.post(i, path, body);
        let mut sender = self.links[i].sender.clone();
        async move {
            sender.ready().await?;
            sender.send_request(request).await
        }
    }

    fn post(&self, i: usize, path: &str, body: Vec<u8>) -> Request<Full<Bytes>> {
        Request::post(format!("http://{}{path}", self.links[i].name))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, bearer(&self.token))
            .body(Full::new(Bytes::from(body)))
            .expect("a request to a worker is well formed")
    }

    /// Sends `path` to worker `i` and returns the answer's body, or why not.
    fn request(&self, i: usize, path: &str, body: Vec<u8>) -> Result<Bytes, ClusterError> {
        let sent = self.send(i, path, body);
        self.runtime.block_on(async {
            let response = sent.await.map_err(|e| ClusterError::Connect {
                worker: self.links[i].name.clone(),
                why: e.to_string(),
            })?;
            if response.status() != StatusCode::OK {
                return Err(self.refusal(i, response).await);
            }
            let body = response.into_body().collect().await;
            body.map(|b| b.to_bytes())
                .map_err(|e| ClusterError::Connect {
                    worker: self.links[i].name.clone(),
                    why: e.to_string(),
                })
        })
    }

    /// Sends `path` to every worker at once; the first failure, in worker order.
    fn each(&self, path: &str, body: impl Fn(usize) -> Vec<u8>) -> Result<(), ClusterError> {
        let sends: Vec<_> = (0..self.links.len())
            .map(|i| self.send(i, path, body(i)))
            .collect();
        let answers = self.runtime.block_on(futures_util::future::join_all(sends));
        for (i, answer) in answers.into_iter().enumerate() {
            match answer {
                Ok(r) if r.status() == StatusCode::OK => {}
                Ok(r) => return Err(self.runtime.block_on(self.refusal(i, r))),
                Err(e) => {
                    return Err(ClusterError::Connect {
                        worker: self.links[i].name.clone(),
                        why: e.to_string(),
                    })
                }
            }
        }
        Ok(())
    }

    /// The error a worker's non-200 answer means.
    async fn refusal(&self, i: usize, response: Response<Incoming>) -> ClusterError {
        let worker = self.links[i].name.clone();
        let status = response.status();
        if status == StatusCode::UNAUTHORIZED {
            return ClusterError::Token { worker };
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let why = serde_json::from_slice::<Refusal>(&body)
            .map(|r| r.error)
            .unwrap_or_else(|_| format!("HTTP {status}"));
        ClusterError::Refused { worker, why }
    }

    fn refused(&self, i: usize, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::Refused {
            worker: self.links[i].name.clone(),
            why: format!("an answer that does not read: {e}"),
        }
    }
}

/// Connects to one worker over HTTP/2 (cleartext, prior knowledge).
async fn link(name: &str) -> Result<Link, ClusterError> {
    let fail = |why: String| ClusterError::Connect {
        worker: name.to_string(),
        why,
    };
    let tcp = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(name))
        .await
        .map_err(|_| fail("no answer within 5 s".into()))?
        .map_err(|e| fail(e.to_string()))?;
    let _ = tcp.set_nodelay(true);
    let (sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .map_err(|e| fail(e.to_string()))?;
    tokio::spawn(connection);
    Ok(Link {
        name: name.to_string(),
        sender,
    })
}

/// What the stream of one worker brings to its decoder.
enum Piece {
    Line(Vec<u8>),
    Lost(String),
}

/// Reads one worker's stream, line by line, into `pieces` (and `keep`, when given), until its
/// end line, a break, or `silence` without a line.
async fn stream(
    mut body: Incoming,
    pieces: std_mpsc::Sender<Piece>,
    silence: Duration,
    mut keep: Option<std::fs::File>,
) {
    let mut partial = Vec::new();
    let mut ended = false;
    let lost = loop {
        let frame = match tokio::time::timeout(silence, body.frame()).await {
            Err(_) => {
                break Some(format!(
                    "silent for more than {:.1} s",
                    silence.as_secs_f64()
                ))
            }
            Ok(None) if ended => break None,
            Ok(None) => break Some("its stream ended before its run did".to_string()),
            Ok(Some(Err(e))) => break Some(format!("its connection broke ({e})")),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        partial.extend_from_slice(&data);
        while let Some(end) = partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = partial.drain(..=end).collect();
            match Note::parse(&line) {
                Some(Note::Alive {}) => {}
                Some(Note::Failed(why)) => {
                    let _ = pieces.send(Piece::Lost(format!("its run failed: {why}")));
                    return;
                }
                None => {
                    ended |= line.starts_with(br#"{"end""#);
                    if let Some(f) = &mut keep {
                        let _ = f.write_all(&line);
                    }
                    let _ = pieces.send(Piece::Line(line));
                }
            }
        }
    };
    if let Some(why) = lost {
        let _ = pieces.send(Piece::Lost(why));
    }
}

/// The lines of one worker's stream as a byte stream for the results reader; records why the
/// worker was lost, if it was.
struct Pieces {
    taken: std_mpsc::Receiver<Piece>,
    line: Vec<u8>,
    at: usize,
    lost: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

impl Read for Pieces {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.line.len() {
            if self.lost.lock().expect("lost lock").is_some() {
                return Ok(0);
            }
            match self.taken.recv() {
                Ok(Piece::Line(line)) => {
                    self.line = line;
                    self.at = 0;
                }
                Ok(Piece::Lost(why)) => *self.lost.lock().expect("lost lock") = Some(why),
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.line.len() - self.at);
        buf[..n].copy_from_slice(&self.line[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Decodes one worker's results file as it comes and hands on its header, records and end,
/// or what was lost.
fn decode(
    worker: usize,
    name: &str,
    taken: std_mpsc::Receiver<Piece>,
    events: &std_mpsc::Sender<Event>,
) {
    let lost = std::sync::Arc::default();
    let pieces = Pieces {
        taken,
        line: Vec::new(),
        at: 0,
        lost: std::sync::Arc::clone(&lost),
    };
    let outcome = (|| {
        let input = Box::new(BufReader::new(pieces));
        let mut reader = Reader::open(input, name).map_err(|e| e.0)?;
        let _ = events.send(Event::Header {
            worker,
            header: Box::new(reader.header().clone()),
        });
        while let Some(record) = reader.next_record().map_err(|e| e.0)? {
            let _ = events.send(Event::Record {
                worker,
                record: Box::new(record),
            });
        }
        Ok::<_, String>(reader.end.take())
    })();
    let lost = lost.lock().expect("lost lock").take();
    let _ = events.send(match (outcome, lost) {
        (_, Some(why)) | (Err(why), None) => Event::Lost { worker, why },
        (Ok(end), None) => Event::Ended { worker, end },
    });
}
