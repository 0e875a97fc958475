//! The engine's side of a targets run: each user's iteration is one request to the next
//! target, and each distinct method and URL is a statistics row.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Users, Verdict};

use super::{Reader, Target, Targets};
use crate::cookie::{jar_at, Jar};
use crate::redirect::Hosts;
use belier_plan::Origin;
use belier_plan::{PlanError, Pos};

/// Most statistics rows a stream of targets gets: its first this many distinct targets have
/// a row each, every later one counts under the last row, `other targets`, so that a
/// generator of endless distinct URLs keeps memory bounded.
pub const MAX_STREAM_ROWS: usize = 10_000;

/// Targets read ahead of the users from a stream; the generator waits beyond that.
const STREAM_BUFFER: usize = 1024;

/// How long a user waits before looking again when the stream has no target ready.
const STREAM_POLL: Duration = Duration::from_millis(1);

/// The name of the row every stream target past [`MAX_STREAM_ROWS`] counts under.
const OTHER_TARGETS: &str = "other targets";

/// Which target comes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// In the file's order, in turn across the whole run (one shared cursor), starting over
    /// after the last.
    InTurn,
    /// Drawn at random for every request from each user's generator, seeded from this seed
    /// and the user's number, so that a run repeats.
    Random {
        /// The run's seed.
        seed: u64,
    },
}

/// The statistics rows: one per distinct method and URL.
#[derive(Debug, Default)]
struct Rows {
    /// `(method, url)` of each row, in row order.
    keys: Vec<(String, String)>,
    index: HashMap<(String, String), usize>,
}

impl Rows {
    /// The row of `target`, made if new (past `cap` rows, the last row).
    fn of(&mut self, target: &Target, cap: usize) -> usize {
        let key = (target.method.clone(), target.url.clone());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        if self.keys.len() + 1 >= cap {
            if self.keys.len() + 1 == cap {
                self.keys.push((String::new(), OTHER_TARGETS.to_string()));
            }
            return cap - 1;
        }
        self.keys.push(key.clone());
        self.index.insert(key, self.keys.len() - 1);
        self.keys.len() - 1
    }
}

/// Where the users' targets come from.
enum Source {
    /// All of them, read before the run.
    File {
        targets: Vec<Outgoing>,
        order: Order,
        /// [`Order::InTurn`]'s cursor.
        next: AtomicU64,
    },
    /// As a reader thread parses them.
    Stream {
        targets: Mutex<Receiver<Outgoing>>,
        /// The row of each target is decided by the reader thread.
        rows: Arc<Mutex<Rows>>,
        /// Why the stream ended early, if it did.
        error: Arc<Mutex<Option<PlanError>>>,
        /// A user found the stream ended and read to its end.
        drained: AtomicBool,
    },
}

/// A targets run's virtual users: hand it to the engine as `Arc<dyn Users>`.
pub struct TargetUsers {
    shared: Arc<Shared>,
    /// The rows' names, `METHOD URL` (a file's, known before the run; a stream's come later,
    /// from [`TargetUsers::rows`]).
    names: Vec<String>,
}

/// What the users of a run share.
struct Shared {
    source: Source,
    /// Where the targets go: the first target's host first (`Outgoing::origin` indexes them).
    hosts: Hosts,
    /// The file's rows (a stream's are in its [`Source::Stream`]).
    rows: Vec<(String, String)>,
    /// Each user keeps cookies, a jar per host ([`TargetUsers::with_cookies`]).
    cookies: bool,
    /// Redirects followed per request ([`TargetUsers::following`]); 0: none.
    follow: usize,
    /// Requests without an `Accept-Encoding` of their own ask for every coding the engine
    /// decodes ([`TargetUsers::asking_compressed`]).
    compressed: bool,
}

impl std::fmt::Debug for TargetUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetUsers")
            .field("origins", &self.shared.hosts.known)
            .field("rows", &self.rows())
            .finish()
    }
}

/// Checks that a stream's `target` goes where its first went: the run's connections are
/// decided before the rest of a stream is read.
fn same_origin(file: &std::path::Path, origin: &Origin, target: &Target) -> Result<(), PlanError> {
    if &target.origin == origin {
        return Ok(());
    }
    Err(at_line(
        file,
        target,
        format!(
            "expected a target on {} like the first one, found {}: targets read from standard \
             input go to one scheme, host and port (a file's may go to several hosts)",
            origin.url(),
            target.origin.url()
        ),
    ))
}

fn at_line(file: &std::path::Path, target: &Target, message: String) -> PlanError {
    PlanError::new(
        file,
        Pos {
            line: target.line,
            col: 1,
        },
        message,
    )
}

/// The index of `target`'s host among `origins`, added if new.
fn origin_of(origins: &mut Vec<Origin>, target: &Target) -> usize {
    if let Some(i) = origins.iter().position(|o| o == &target.origin) {
        return i;
    }
    origins.push(target.origin.clone());
    origins.len() - 1
}

fn outgoing(target: Target, step: usize, origin: usize) -> Outgoing {
    Outgoing {
        step,
        origin,
        method: target.method,
        path_and_query: target.path_and_query,
        headers: target.headers,
        body: target.body,
        keep_body: false,
        timeout: None,
        stream: None,
    }
}

impl TargetUsers {
    /// The users of a targets file, read whole.
    pub fn from_file(targets: Targets, order: Order) -> Result<TargetUsers, PlanError> {
        let mut origins = Vec::new();
        let mut rows = Rows::default();
        let mut list = Vec::with_capacity(targets.targets.len());
        for target in targets.targets {
            let origin = origin_of(&mut origins, &target);
            let step = rows.of(&target, usize::MAX);
            list.push(outgoing(target, step, origin));
        }
        Ok(TargetUsers {
            names: rows.keys.iter().map(|(m, u)| format!("{m} {u}")).collect(),
            shared: Arc::new(Shared {
                source: Source::File {
                    targets: list,
                    order,
                    next: AtomicU64::new(0),
                },
                hosts: Hosts::known(origins),
                rows: rows.keys,
                cookies: false,
                follow: 0,
                compressed: false,
            }),
        })
    }

    /// The users of a stream whose first target (which decides where the run connects) is
    /// read already: a thread reads the rest as it comes, up to 1,024 targets ahead of
    /// the users, and ends the stream at its end or at its first error
    /// ([`TargetUsers::stream_error`]). Each target is sent once.
    pub fn from_stream<R>(first: Target, mut reader: Reader<R>) -> TargetUsers
    where
        R: BufRead + Send + 'static,
    {
        let origin = first.origin.clone();
        let rows = Arc::new(Mutex::new(Rows::default()));
        let error = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::sync_channel(STREAM_BUFFER);
        let (thread_rows, thread_error) = (Arc::clone(&rows), Arc::clone(&error));
        let thread_origin = origin.clone();
        let send = move |tx: &SyncSender<Outgoing>, target: Target| {
            let step = lock(&thread_rows).of(&target, MAX_STREAM_ROWS);
            // The users are gone (the run ended): nothing more to read for.
            tx.send(outgoing(target, step, 0)).is_ok()
        };
        std::thread::Builder::new()
            .name("belier-targets".into())
            .spawn(move || {
                if !send(&tx, first) {
                    return;
                }
                loop {
                    let next = reader.next_target().and_then(|t| match t {
                        Some(t) => same_origin(reader.name(), &thread_origin, &t).map(|()| Some(t)),
                        None => Ok(None),
                    });
                    match next {
                        Ok(Some(t)) => {
                            if !send(&tx, t) {
                                return;
                            }
                        }
                        Ok(None) => return,
                        Err(e) => {
                            *lock(&thread_error) = Some(e);
                            return;
                        }
                    }
                }
            })
            .expect("a thread to read the targets");
        TargetUsers {
            names: Vec::new(),
            shared: Arc::new(Shared {
                source: Source::Stream {
                    targets: Mutex::new(rx),
                    rows,
                    error,
                    drained: AtomicBool::new(false),
                },
                hosts: Hosts::known(vec![origin]),
                rows: Vec::new(),
                cookies: false,
                follow: 0,
                compressed: false,
            }),
        }
    }

    /// Gives every user a cookie jar per host: the `Set-Cookie` headers of its responses go
    /// back in the `Cookie` header of its later requests (a browser's storage model, paths and
    /// expiry honoured). Call before the run.
    pub fn with_cookies(mut self) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.cookies = true;
        }
        self
    }

    /// Asks for compressed answers: each request without an `Accept-Encoding` header of its
    /// own is sent with one naming every coding the engine decodes (the engine's `compressed`
    /// decodes them). Call before the run.
    pub fn asking_compressed(mut self) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.compressed = true;
        }
        self
    }

    /// Follows up to `hops` redirects of each request, in the same iteration: every hop is a
    /// request of its own, counted and timed in its own row (target `r`'s hop `k` is row
    /// `r·(hops+1)+k`, named after the target). A redirect to another of the run's hosts goes
    /// on that host's connection, without the `Authorization` header; one to a host the run
    /// does not know is followed only when [`TargetUsers::discovering`].
    /// A file's targets only (a stream's rows are not known ahead); call before the run.
    pub fn following(mut self, hops: usize) -> Self {
        if hops == 0 || !matches!(self.shared.source, Source::File { .. }) {
            return self;
        }
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.follow = hops;
            let rows = std::mem::take(&mut shared.rows);
            shared.rows = rows
                .into_iter()
                .flat_map(|(method, url)| {
                    (0..=hops).map(move |k| match k {
                        0 => (method.clone(), url.clone()),
                        k => (String::new(), format!("{url} → redirect {k}")),
                    })
                })
                .collect();
            self.names = shared
                .rows
                .iter()
                .map(|(m, u)| format!("{m} {u}").trim_start().to_string())
                .collect();
        }
        self
    }

    /// Follows redirects to hosts the targets do not name too (HTTP/1.1 only): each becomes
    /// a host of the run when first met (up to `MAX_FOUND_HOSTS`), resolved by
    /// each worker that sends there, https ones spoken with `tls`. With
    /// [`TargetUsers::following`]; call before the run.
    pub fn discovering(mut self, tls: Option<belier_engine::TlsOptions>) -> Self {
        if let Some(shared) = Arc::get_mut(&mut self.shared) {
            shared.hosts.discover = Some(crate::redirect::Discover::new(tls));
        }
        self
    }

    /// Where the targets go, the first target's host first: `Outgoing::origin` indexes them
    /// (a stream's all go to its first).
    pub fn origins(&self) -> &[Origin] {
        &self.shared.hosts.known
    }

    /// `(method, url)` of every statistics row so far, in row order (a stream's grow as its
    /// targets come; past [`MAX_STREAM_ROWS`] the last is `("", "other targets")`).
    pub fn rows(&self) -> Vec<(String, String)> {
        match &self.shared.source {
            Source::File { .. } => self.shared.rows.clone(),
            Source::Stream { rows, .. } => lock(rows).keys.clone(),
        }
    }

    /// Whether the targets come from a stream, whose rows are known only as its targets come.
    pub fn is_stream(&self) -> bool {
        matches!(self.shared.source, Source::Stream { .. })
    }

    /// Why a stream ended before its end: the line that could not be read.
    pub fn stream_error(&self) -> Option<PlanError> {
        match &self.shared.source {
            Source::File { .. } => None,
            Source::Stream { error, .. } => lock(error).clone(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere leaves the data usable: rows and the receiver have no invariant a
    // half-done update could break.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Users for TargetUsers {
    fn steps(&self) -> &[String] {
        &self.names
    }

    fn checks(&self) -> &[String] {
        &[]
    }

    fn origin(&self, index: usize) -> Option<belier_engine::Origin> {
        self.shared.hosts.engine_origin(index)
    }

    fn finished(&self) -> bool {
        matches!(&self.shared.source, Source::Stream { drained, .. } if drained.load(Ordering::Relaxed))
    }

    fn user(&self, vu: u64) -> Box<dyn User> {
        let rng = match &self.shared.source {
            Source::File {
                order: Order::Random { seed },
                ..
            } => Some(fastrand::Rng::with_seed(
                // Spread by a large odd constant so neighbouring users' draws differ.
                seed ^ vu.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            )),
            _ => None,
        };
        Box::new(TargetUser {
            jars: Vec::new(),
            shared: Arc::clone(&self.shared),
            rng,
            sent: false,
            pending: None,
            hop: None,
            next_hop: None,
        })
    }
}

/// One user: each iteration is one request, to the target the source gives next.
struct TargetUser {
    shared: Arc<Shared>,
    /// [`Order::Random`]'s generator.
    rng: Option<fastrand::Rng>,
    /// The iteration's request went: the next action ends the iteration.
    sent: bool,
    /// With cookies: a jar per host, by origin (made when first sent to).
    jars: Vec<Jar>,
    /// With cookies: the origin and path of the request in flight, for its `Set-Cookie`s.
    pending: Option<(usize, String)>,
    /// Following redirects: the request in flight and its hop number; then the next hop to
    /// send, if its answer was a redirect.
    hop: Option<(Outgoing, usize)>,
    next_hop: Option<Outgoing>,
}

impl TargetUser {
    /// Sends `outgoing` with the user's cookies, keeping what following its redirect needs.
    fn send(&mut self, mut outgoing: Outgoing) -> Action {
        if self.shared.follow > 0 {
            // Hop `k` of a target is its row plus `k`. Kept before cookies are added: the
            // next hop gets the jar's cookies as they are then.
            let k = outgoing.step % (self.shared.follow + 1);
            self.hop = Some((outgoing.clone(), k));
        }
        if self.shared.cookies {
            let jar = jar_at(&mut self.jars, outgoing.origin);
            let path = outgoing.path_and_query.split('?').next().unwrap_or("/");
            jar.add_to(&mut outgoing.headers, path, SystemTime::now());
            self.pending = Some((outgoing.origin, path.to_string()));
        }
        Action::Send(outgoing)
    }
}

impl User for TargetUser {
    fn next(&mut self) -> Action {
        if let Some(hop) = self.next_hop.take() {
            return self.send(hop);
        }
        if std::mem::take(&mut self.sent) {
            return Action::EndIteration;
        }
        let outgoing = match &self.shared.source {
            Source::File {
                targets,
                order,
                next,
            } => {
                let i = match (order, &mut self.rng) {
                    (Order::Random { .. }, Some(rng)) => rng.usize(..targets.len()),
                    _ => (next.fetch_add(1, Ordering::Relaxed) % targets.len() as u64) as usize,
                };
                targets[i].clone()
            }
            Source::Stream {
                targets, drained, ..
            } => match lock(targets).try_recv() {
                Ok(o) => o,
                // The generator is behind: a pause frees the worker for the other users.
                Err(TryRecvError::Empty) => return Action::Pause(STREAM_POLL),
                Err(TryRecvError::Disconnected) => {
                    drained.store(true, Ordering::Relaxed);
                    return Action::Stop;
                }
            },
        };
        let mut outgoing = outgoing;
        if self.shared.compressed
            && !outgoing
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
        {
            outgoing.headers.push((
                "Accept-Encoding".into(),
                belier_engine::ACCEPT_ENCODING.into(),
            ));
        }
        if self.shared.follow > 0 {
            // Row `r` of the targets is row `r·(hops+1)` once each has its hops' rows.
            outgoing.step *= self.shared.follow + 1;
        }
        self.sent = true;
        self.send(outgoing)
    }

    fn reply(&mut self, reply: &Reply<'_>, _tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        if let Some((origin, path)) = self.pending.take() {
            jar_at(&mut self.jars, origin).store_all(reply.headers(), &path, SystemTime::now());
        }
        if let (Some((sent, k)), Some(location)) = (self.hop.take(), reply.header("location")) {
            if k < self.shared.follow {
                let location = String::from_utf8_lossy(location);
                self.next_hop = crate::redirect::next_hop(
                    &sent,
                    &self.shared.hosts,
                    reply.status,
                    &location,
                    sent.step + 1,
                );
            }
        }
        Verdict {
            failed: reply.status >= 400,
        }
    }

    fn failed(&mut self, _kind: ErrorKind) -> Verdict {
        self.pending = None;
        self.hop = None;
        Verdict { failed: true }
    }
}

#[cfg(test)]
mod tests;
