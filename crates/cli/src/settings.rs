//! Validated configuration: raw flags in, an engine configuration out, or an error that names
//! the flag and the value at fault.

use std::path::PathBuf;

use belier_engine::{Config, RequestSpec, StopWhen, DEFAULT_DURATION};

use crate::args::{Format, LoadArgs};

/// Most connections belier accepts; more is surely a typo.
const MAX_CONNECTIONS: usize = 1_000_000;
/// Most worker threads belier accepts.
const MAX_THREADS: usize = 1024;
/// Most requests belier accepts in one run.
const MAX_REQUESTS: u64 = 1_000_000_000_000;

/// A load test, ready to run.
#[derive(Debug)]
pub struct Settings {
    /// What the engine runs.
    pub engine: Config,
    /// The URL as the user gave it.
    pub url: String,
    /// Report format.
    pub format: Format,
    /// Report file, if not standard output.
    pub out: Option<PathBuf>,
}

/// Input that cannot be used, with the flag and value it came from.
#[derive(Debug, PartialEq, Eq)]
pub struct InputError {
    flag: &'static str,
    value: String,
    reason: String,
}

impl InputError {
    pub(crate) fn new(flag: &'static str, value: impl ToString, reason: impl Into<String>) -> Self {
        InputError {
            flag,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            write!(f, "{} {}", self.flag, self.reason)
        } else {
            write!(
                f,
                "invalid value '{}' for '{}': {}",
                self.value, self.flag, self.reason
            )
        }
    }
}

impl std::error::Error for InputError {}

/// Validates `args`. `cores` is the default thread count.
pub fn from_args(args: LoadArgs, cores: usize) -> Result<Settings, InputError> {
    let url = args.url.ok_or_else(|| {
        InputError::new("<URL>", "", "is required (usage: belier [OPTIONS] <URL>)")
    })?;
    let (host, port, path_and_query) = parse_url(&url)?;

    if let Some(n) = args.requests {
        check_range("--requests <N>", n, 1, MAX_REQUESTS)?;
    }
    check_range(
        "--connections <N>",
        args.connections as u64,
        1,
        MAX_CONNECTIONS as u64,
    )?;
    let threads = args.threads.unwrap_or(cores.max(1));
    check_range("--threads <N>", threads as u64, 1, MAX_THREADS as u64)?;
    check_token("--method <METHOD>", &args.method)?;
    let headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match (args.body, args.body_file) {
        (Some(s), _) => s.into_bytes(),
        (None, Some(path)) => std::fs::read(&path).map_err(|e| {
            InputError::new(
                "--body-file <PATH>",
                path.display(),
                format!("cannot read it: {e}"),
            )
        })?,
        (None, None) => Vec::new(),
    };

    let mut engine = Config::new(RequestSpec {
        method: args.method,
        host,
        port,
        path_and_query,
        headers,
        body,
    });
    engine.connections = args.connections;
    engine.threads = threads.min(args.connections);
    engine.keepalive = !args.no_keepalive;
    engine.timeout = args.timeout;
    engine.stop = match (args.requests, args.duration) {
        (None, None) => StopWhen {
            requests: None,
            duration: Some(DEFAULT_DURATION),
        },
        (requests, duration) => StopWhen { requests, duration },
    };
    Ok(Settings {
        engine,
        url,
        format: args.output,
        out: args.out,
    })
}

fn parse_url(raw: &str) -> Result<(String, u16, String), InputError> {
    const FLAG: &str = "<URL>";
    let url = url::Url::parse(raw).map_err(|e| {
        let hint = if raw.contains("://") {
            ""
        } else {
            " (did you mean http://...?)"
        };
        InputError::new(FLAG, raw, format!("{e}{hint}"))
    })?;
    match url.scheme() {
        "http" => {}
        "https" => {
            return Err(InputError::new(
                FLAG,
                raw,
                "https is not supported yet (TLS arrives with the HTTP/2 work); use http://",
            ))
        }
        other => {
            return Err(InputError::new(
                FLAG,
                raw,
                format!("unsupported scheme '{other}', use http://"),
            ))
        }
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(a)) => a.to_string(),
        Some(url::Host::Ipv6(a)) => a.to_string(),
        None => return Err(InputError::new(FLAG, raw, "has no host")),
    };
    let port = url.port_or_known_default().unwrap_or(80);
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    Ok((host, port, path))
}

fn check_range(flag: &'static str, v: u64, min: u64, max: u64) -> Result<(), InputError> {
    if v < min {
        Err(InputError::new(flag, v, format!("must be at least {min}")))
    } else if v > max {
        Err(InputError::new(flag, v, format!("must be at most {max}")))
    } else {
        Ok(())
    }
}

/// RFC 9110 token characters, as method and header names must use.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn check_token(flag: &'static str, s: &str) -> Result<(), InputError> {
    if is_token(s) {
        Ok(())
    } else {
        Err(InputError::new(
            flag,
            s,
            "must be a non-empty HTTP token (letters, digits, !#$%&'*+-.^_`|~)",
        ))
    }
}

fn parse_header(raw: &str) -> Result<(String, String), InputError> {
    const FLAG: &str = "--header <'NAME: VALUE'>";
    let (name, value) = raw
        .split_once(':')
        .ok_or_else(|| InputError::new(FLAG, raw, "expected 'Name: value'"))?;
    if !is_token(name) {
        return Err(InputError::new(
            FLAG,
            raw,
            "the header name must be an HTTP token with no spaces",
        ));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(InputError::new(
            FLAG,
            raw,
            "the value must not contain CR, LF or NUL",
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;

    fn settings(argv: &[&str]) -> Result<Settings, InputError> {
        let cli =
            Cli::try_parse_from(std::iter::once("belier").chain(argv.iter().copied())).unwrap();
        from_args(cli.load, 4)
    }

    #[test]
    fn defaults() {
        let s = settings(&["http://localhost:8080/a/b?c=d"]).unwrap();
        let e = &s.engine;
        assert_eq!(e.request.host, "localhost");
        assert_eq!(e.request.port, 8080);
        assert_eq!(e.request.path_and_query, "/a/b?c=d");
        assert_eq!(e.connections, 50);
        assert_eq!(e.threads, 4);
        assert!(e.keepalive);
        assert_eq!(
            e.stop,
            StopWhen {
                requests: None,
                duration: Some(DEFAULT_DURATION)
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
    fn bad_input_names_the_flag_and_value() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "<URL> is required"),
            (
                &["localhost:8080"],
                "invalid value 'localhost:8080' for '<URL>'",
            ),
            (&["ftp://x/"], "unsupported scheme 'ftp'"),
            (&["https://x/"], "https is not supported yet"),
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
        ];
        for (argv, want) in cases {
            let err = settings(argv).unwrap_err().to_string();
            assert!(err.contains(want), "{argv:?}: {err}");
        }
    }
}
