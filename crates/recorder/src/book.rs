//! The exchanges recorded so far, and the plan written after each.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use belier_import::{self as import, Correlation, Recorded};

/// What a recording gave.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Exchanges in the plan.
    pub recorded: u64,
    /// The plan's origin, if anything was recorded.
    pub origin: Option<String>,
    /// Tokens carried from a response to later requests.
    pub correlations: Vec<Correlation>,
    /// Exchanges forwarded but not in the plan, and why (host names and counts only).
    pub notes: Vec<String>,
    /// The last error writing the plan, if any.
    pub write_error: Option<String>,
}

pub(crate) struct Book {
    out: PathBuf,
    max: Option<u64>,
    include_hosts: Vec<String>,
    started: Instant,
    count: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    origin: Option<String>,
    recorded: Vec<Recorded>,
    correlations: Vec<Correlation>,
    other_hosts: Vec<(String, u64)>,
    not_text: u64,
    /// Environment variables the plan reads credentials from, in place of recorded values.
    secrets: Vec<String>,
    write_error: Option<String>,
}

impl Book {
    pub(crate) fn new(out: PathBuf, max: Option<u64>, include_hosts: Vec<String>) -> Book {
        Book {
            out,
            max,
            include_hosts,
            started: Instant::now(),
            count: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        }
    }

    pub(crate) fn recorded(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub(crate) fn full(&self) -> bool {
        self.max.is_some_and(|m| self.recorded() >= m)
    }

    /// Time since the recording started, the clock of [`Recorded::start`].
    pub(crate) fn now(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Adds an exchange on `origin` (`host_port` names it in notes) and writes the plan again:
    /// every host's exchanges (or those of `include_hosts`) go into one plan, those of hosts
    /// other than its target as steps with an absolute `url:`.
    pub(crate) fn add(
        &self,
        origin: String,
        host: &str,
        host_port: &str,
        recorded: Option<Recorded>,
    ) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if self.full() {
            return;
        }
        let wanted = self.include_hosts.is_empty()
            || self
                .include_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(host_port));
        if !wanted {
            match state.other_hosts.iter_mut().find(|(h, _)| h == host_port) {
                Some((_, n)) => *n += 1,
                None => state.other_hosts.push((host_port.to_string(), 1)),
            }
            return;
        }
        let Some(mut recorded) = recorded else {
            state.not_text += 1;
            return;
        };
        recorded.exchange.request.origin = Some(origin);
        state.recorded.push(recorded);
        let (mut draft, correlations) = import::plan("recorded", state.recorded.clone());
        state.origin = Some(draft.origin.clone());
        state.correlations = correlations;
        state.secrets = draft.hide_credentials();
        let mut comment = String::from(
            "Recorded by `belier record`; rewritten after each request, so it is complete whenever\nthe recorder stops. Run it: belier run PLAN (add -u N -z D for more users and time).",
        );
        if !state.secrets.is_empty() {
            comment.push_str(&format!(
                "\nCredentials were not recorded: set {} before running it\n(e.g. export BELIER_AUTHORIZATION='Bearer …'). Cookies the server sets are kept per user.",
                state.secrets.join(", ")
            ));
        }
        let yaml = draft.to_yaml(&comment);
        match write_plan(&self.out, &yaml) {
            Ok(()) => {
                self.count.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                state.recorded.pop();
                state.write_error = Some(format!(
                    "cannot write the plan to {}: {e}",
                    self.out.display()
                ));
            }
        }
    }

    pub(crate) fn summary(&self) -> Summary {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut notes = Vec::new();
        if !state.other_hosts.is_empty() {
            let list: Vec<String> = state
                .other_hosts
                .iter()
                .map(|(h, n)| format!("{h} ({n})"))
                .collect();
            notes.push(format!(
                "forwarded but not recorded, not on --include-host: {}",
                list.join(", ")
            ));
        }
        if state.not_text > 0 {
            notes.push(format!(
                "{} requests forwarded but not recorded: a body that is not UTF-8 text, text holding `{{{{` (a plan's template mark), or a header a plan cannot hold",
                state.not_text
            ));
        }
        if !state.secrets.is_empty() {
            notes.push(format!(
                "credentials were not recorded: the plan reads them from {} (set it before running the plan)",
                state.secrets.join(", ")
            ));
        }
        Summary {
            recorded: state.recorded.len() as u64,
            origin: state.origin.clone(),
            correlations: state.correlations.clone(),
            notes,
            write_error: state.write_error.clone(),
        }
    }
}

/// Writes a plan that may carry secrets (a recorded or imported one) to `path`, readable and
/// writable by its owner only (mode 0600). It is written to `PATH.partial` first and renamed
/// over `path`, so a reader (or a Ctrl-C) never finds half a plan, and a plan that was there
/// with wider permissions is replaced, not kept.
pub fn write_plan(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let partial = path.with_extension("yaml.partial");
    // A partial file left by a crash may have other permissions: made again.
    match std::fs::remove_file(&partial) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(&partial)?;
    file.write_all(text.as_bytes())?;
    drop(file);
    std::fs::rename(&partial, path)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use belier_import::{DraftRequest, Exchange, Response};

    use super::*;

    fn get(path: &str, at_ms: u64) -> Option<Recorded> {
        Some(Recorded {
            start: Duration::from_millis(at_ms),
            took: Duration::from_millis(5),
            exchange: Exchange {
                request: DraftRequest {
                    method: "GET".into(),
                    path: path.into(),
                    ..DraftRequest::default()
                },
                response: Response::default(),
            },
        })
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("belier-book-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn every_host_in_one_plan_up_to_the_limit_and_a_valid_plan_after_each() {
        let out = dir("limit").join("plan.yaml");
        let book = Book::new(out.clone(), Some(3), vec![]);
        let a = "http://a.test:8080".to_string();
        book.add(a.clone(), "a.test", "a.test:8080", get("/one", 0));
        let plan = belier_plan::load(&out).unwrap();
        assert_eq!(plan.target.url(), "http://a.test:8080");
        book.add(
            "http://b.test".into(),
            "b.test",
            "b.test:80",
            get("/other", 10),
        );
        book.add(a.clone(), "a.test", "a.test:8080", None);
        assert!(!book.full());
        book.add(a.clone(), "a.test", "a.test:8080", get("/two", 600));
        assert!(book.full());
        book.add(a, "a.test", "a.test:8080", get("/three", 700));
        let summary = book.summary();
        assert_eq!(summary.recorded, 3);
        assert_eq!(summary.origin.as_deref(), Some("http://a.test:8080"));
        assert!(
            summary.notes[0].starts_with("1 requests forwarded but not recorded"),
            "{:?}",
            summary.notes
        );
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(
            text.contains("url: \"http://b.test/other\"")
                && text.contains("path: /two")
                && text.contains("pause: 585ms")
                && !text.contains("/three"),
            "{text}"
        );
        let plan = belier_plan::load(&out).unwrap();
        assert_eq!(plan.hosts.len(), 1);
    }

    #[test]
    fn include_hosts_choose_the_origin_and_write_errors_are_kept() {
        let out = dir("include").join("missing-dir").join("plan.yaml");
        let book = Book::new(out, None, vec!["b.test".into()]);
        book.add("http://a.test".into(), "a.test", "a.test:80", get("/a", 0));
        book.add("http://b.test".into(), "b.test", "b.test:80", get("/b", 0));
        let summary = book.summary();
        assert_eq!(summary.recorded, 0, "the plan could not be written");
        assert!(summary
            .write_error
            .unwrap()
            .contains("cannot write the plan"));
        assert!(summary.notes[0].ends_with("a.test:80 (1)"));
    }

    #[test]
    fn the_plan_keeps_no_credential_and_is_its_owners_only() {
        let dir = dir("secrets");
        let out = dir.join("plan.yaml");
        // A plan there before, readable by all, is replaced.
        std::fs::write(&out, "old").unwrap();
        let book = Book::new(out.clone(), None, vec![]);
        let mut login = get("/me", 0).unwrap();
        login.exchange.request.headers = vec![
            ("Authorization".into(), "Basic YW5uOnMzY3JldA==".into()),
            ("X-Api-Key".into(), "k-s3cret".into()),
        ];
        book.add("http://a.test".into(), "a.test", "a.test:80", Some(login));
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains("YW5u") && !text.contains("s3cret"), "{text}");
        assert!(text.contains("{{ env.BELIER_AUTHORIZATION }}"), "{text}");
        assert!(
            text.contains(
                "# Credentials were not recorded: set BELIER_AUTHORIZATION, BELIER_X_API_KEY"
            ),
            "{text}"
        );
        let summary = book.summary();
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.contains("BELIER_AUTHORIZATION")),
            "{:?}",
            summary.notes
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&out).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        assert!(!dir.join("plan.yaml.partial").exists());
    }
}
