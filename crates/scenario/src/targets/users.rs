//! The engine's side of a targets run: each user's iteration is one request to the next
//! target, and each distinct method and URL is a statistics row.

use std::collections::HashMap;
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Users, Verdict};

use super::{Origin, Reader, Target, Targets};
use crate::cookie::Jar;
use crate::error::{PlanError, Pos};

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
    origins: Vec<Origin>,
    /// The file's rows (a stream's are in its [`Source::Stream`]).
    rows: Vec<(String, String)>,
    /// Each user keeps cookies, a jar per host ([`TargetUsers::with_cookies`]).
    cookies: bool,
}

impl std::fmt::Debug for TargetUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetUsers")
            .field("origins", &self.shared.origins)
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

/// The index of `target`'s host among `origins`, added if new; every host of a run speaks the
/// first one's scheme (one set of TLS settings).
fn origin_of(
    file: &std::path::Path,
    origins: &mut Vec<Origin>,
    target: &Target,
) -> Result<usize, PlanError> {
    if let Some(i) = origins.iter().position(|o| o == &target.origin) {
        return Ok(i);
    }
    if let Some(first) = origins.first() {
        if first.scheme != target.origin.scheme {
            return Err(at_line(
                file,
                target,
                format!(
                    "expected a target on the first one's scheme ({}), found {}: one run \
                     speaks either http or https",
                    first.url(),
                    target.origin.url()
                ),
            ));
        }
    }
    origins.push(target.origin.clone());
    Ok(origins.len() - 1)
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
    }
}

impl TargetUsers {
    /// The users of a targets file, read whole.
    pub fn from_file(targets: Targets, order: Order) -> Result<TargetUsers, PlanError> {
        let mut origins = Vec::new();
        let mut rows = Rows::default();
        let mut list = Vec::with_capacity(targets.targets.len());
        for target in targets.targets {
            let origin = origin_of(&targets.file, &mut origins, &target)?;
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
                origins,
                rows: rows.keys,
                cookies: false,
            }),
        })
    }

    /// The users of a stream whose first target (which decides where the run connects) is
    /// read already: a thread reads the rest as it comes, up to [`STREAM_BUFFER`] ahead of
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
                origins: vec![origin],
                rows: Vec::new(),
                cookies: false,
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

    /// Where the targets go, the first target's host first: `Outgoing::origin` indexes them
    /// (a stream's all go to its first).
    pub fn origins(&self) -> &[Origin] {
        &self.shared.origins
    }

    /// `(method, url)` of every statistics row so far, in row order (a stream's grow as its
    /// targets come; past [`MAX_STREAM_ROWS`] the last is `("", "other targets")`).
    pub fn rows(&self) -> Vec<(String, String)> {
        match &self.shared.source {
            Source::File { .. } => self.shared.rows.clone(),
            Source::Stream { rows, .. } => lock(rows).keys.clone(),
        }
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
            jars: if self.shared.cookies {
                vec![Jar::default(); self.shared.origins.len()]
            } else {
                Vec::new()
            },
            shared: Arc::clone(&self.shared),
            rng,
            sent: false,
            pending: None,
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
    /// With cookies: a jar per host, by origin.
    jars: Vec<Jar>,
    /// With cookies: the origin and path of the request in flight, for its `Set-Cookie`s.
    pending: Option<(usize, String)>,
}

impl User for TargetUser {
    fn next(&mut self) -> Action {
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
        if let Some(jar) = self.jars.get(outgoing.origin) {
            let path = outgoing.path_and_query.split('?').next().unwrap_or("/");
            jar.add_to(&mut outgoing.headers, path, SystemTime::now());
            self.pending = Some((outgoing.origin, path.to_string()));
        }
        self.sent = true;
        Action::Send(outgoing)
    }

    fn reply(&mut self, reply: &Reply<'_>, _tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        if let Some((origin, path)) = self.pending.take() {
            self.jars[origin].store_all(reply.headers(), &path, SystemTime::now());
        }
        Verdict {
            failed: reply.status >= 400,
        }
    }

    fn failed(&mut self, _kind: ErrorKind) -> Verdict {
        self.pending = None;
        Verdict { failed: true }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::targets::Format;

    fn targets(text: &str) -> Targets {
        let mut r = Reader::new(text.as_bytes(), Path::new("t"), ".".into(), None);
        let mut targets = Vec::new();
        while let Some(t) = r.next_target().unwrap() {
            targets.push(t);
        }
        Targets {
            file: "t".into(),
            format: Format::Http,
            targets,
        }
    }

    fn paths(user: &mut dyn User, n: usize) -> Vec<(usize, String)> {
        (0..n)
            .map(|_| match user.next() {
                Action::Send(o) => {
                    assert_eq!(user.next(), Action::EndIteration);
                    (o.step, o.path_and_query)
                }
                other => panic!("{other:?}"),
            })
            .collect()
    }

    const THREE: &str =
        "GET http://h:1/a\n\nPOST http://h:1/b\n\nGET http://h:1/a\n\nGET http://h:1/c\n";

    #[test]
    fn in_turn_across_users_with_a_row_per_method_and_url() {
        let users = TargetUsers::from_file(targets(THREE), Order::InTurn).unwrap();
        assert_eq!(
            users.steps(),
            ["GET http://h:1/a", "POST http://h:1/b", "GET http://h:1/c"]
        );
        let (mut u0, mut u1) = (users.user(0), users.user(1));
        let mut got = paths(u0.as_mut(), 2);
        got.extend(paths(u1.as_mut(), 3));
        assert_eq!(
            got,
            [
                (0, "/a".into()),
                (1, "/b".into()),
                (0, "/a".into()),
                (2, "/c".into()),
                (0, "/a".into())
            ]
        );
    }

    #[test]
    fn random_order_repeats_with_its_seed() {
        let draw = |seed| {
            let users = TargetUsers::from_file(targets(THREE), Order::Random { seed }).unwrap();
            paths(users.user(3).as_mut(), 40)
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let all = draw(7);
        assert!((0..3).all(|step| all.iter().any(|(s, _)| *s == step)));
    }

    #[test]
    fn each_host_has_its_origin_and_one_scheme_is_spoken() {
        let users = TargetUsers::from_file(
            targets(
                "GET http://h:1/a\n\nGET http://g:1/b\n\nGET http://h:2/c\n\nGET http://h:1/d\n",
            ),
            Order::InTurn,
        )
        .unwrap();
        assert_eq!(
            users.origins().iter().map(Origin::url).collect::<Vec<_>>(),
            ["http://h:1", "http://g:1", "http://h:2"]
        );
        let mut user = users.user(0);
        let sent: Vec<usize> = (0..4)
            .map(|_| match (user.next(), user.next()) {
                (Action::Send(o), Action::EndIteration) => o.origin,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sent, [0, 1, 2, 0]);
        let e = TargetUsers::from_file(
            targets("GET http://h:1/a\n\nGET https://g:1/b\n"),
            Order::InTurn,
        )
        .unwrap_err();
        assert_eq!(e.pos.line, 3);
        assert!(e.message.contains("https://g:1"), "{e}");
    }

    #[test]
    fn a_stream_sends_each_target_once_then_stops() {
        let text = "GET http://h:1/a\n\nGET http://h:1/b\n\nGET http://h:1/a\n";
        let mut reader = Reader::new(text.as_bytes(), Path::new("-"), ".".into(), None);
        let first = reader.next_target().unwrap().unwrap();
        let users = TargetUsers::from_stream(first, reader);
        let mut user = users.user(0);
        let mut got = Vec::new();
        loop {
            match user.next() {
                Action::Send(o) => got.push((o.step, o.path_and_query)),
                Action::EndIteration | Action::Pause(_) => {}
                Action::Stop => break,
            }
        }
        assert_eq!(got, [(0, "/a".into()), (1, "/b".into()), (0, "/a".into())]);
        assert_eq!(users.rows().len(), 2);
        assert!(users.stream_error().is_none());
        assert!(users.finished());
    }

    #[test]
    fn a_stream_error_ends_the_stream_and_is_kept() {
        let text = "GET http://h:1/a\n\nGET http://h:1/b\nbroken\n";
        let mut reader = Reader::new(text.as_bytes(), Path::new("-"), ".".into(), None);
        let first = reader.next_target().unwrap().unwrap();
        let users = TargetUsers::from_stream(first, reader);
        let mut user = users.user(0);
        let mut sent = 0;
        while user.next() != Action::Stop {
            sent += 1;
        }
        assert!(sent >= 1);
        let e = users.stream_error().expect("the error");
        assert_eq!(e.pos.line, 4);
    }

    #[test]
    fn rows_past_the_cap_share_the_last() {
        let mut rows = Rows::default();
        let t = |p: &str| targets(&format!("GET http://h:1/{p}\n")).targets.remove(0);
        assert_eq!(rows.of(&t("a"), 3), 0);
        assert_eq!(rows.of(&t("b"), 3), 1);
        assert_eq!(rows.of(&t("c"), 3), 2);
        assert_eq!(rows.of(&t("d"), 3), 2);
        assert_eq!(rows.of(&t("a"), 3), 0);
        assert_eq!(rows.keys.len(), 3);
        assert_eq!(rows.keys[2].1, OTHER_TARGETS);
    }
}
