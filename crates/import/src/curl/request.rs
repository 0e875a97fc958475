//! The request a curl command sends, and what it becomes in belier's terms: the flags that
//! send it, and a plan of that one request.

use std::path::PathBuf;

use crate::draft::{Draft, DraftRequest, DraftStep};
use crate::error::ImportError;

/// What the errors call the input.
pub(super) const INPUT: &str = "curl command";

/// The request a curl command sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurlRequest {
    /// HTTP method.
    pub method: String,
    /// The absolute URL (with `-G`'s query).
    pub url: String,
    /// Headers in the order given (`-H`, then those `-u`, `-A`, `-e`, `-b`, `--json`,
    /// `--compressed` and a body's default `Content-Type` add).
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Option<CurlBody>,
    /// `-k`: do not verify the certificate.
    pub insecure: bool,
    /// `--cacert FILE`: verify the certificate against these PEM CA certificates (belier's
    /// `--cacert`, the plan's `cacert:`).
    pub cacert: Option<PathBuf>,
    /// `--unix-socket PATH`: connect to this Unix domain socket, the URL naming the host,
    /// paths and scheme (belier's `--unix-socket`, the plan's `unix_socket:`).
    pub unix_socket: Option<PathBuf>,
    /// `--compressed`: belier's `--compressed` asks for and decodes compressed answers.
    pub compressed: bool,
    /// `-L`: follow redirects (belier's `--follow`).
    pub follow: bool,
    /// `-b NAME=VALUE`: curl's cookie engine is on, so cookies the server sets go back on
    /// the next requests (belier's `--cookies`).
    pub cookies: bool,
}

/// Most redirects `-L` becomes in belier's `--follow` (belier takes at most 20; curl's
/// default limit is 50).
pub const FOLLOW: usize = 20;

/// A request body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CurlBody {
    /// Text, as sent.
    Text(String),
    /// A file sent as it is (`--data-binary @FILE` alone).
    File(PathBuf),
}

/// A `-H` value, `Name: value`.
pub(super) fn header(raw: &str) -> Result<(String, String), ImportError> {
    match raw.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(ImportError::new(
            INPUT,
            format!("option `-H` expects 'Name: value', found `{raw}`"),
        )),
    }
}

impl CurlRequest {
    /// The `belier` arguments that send the same request.
    pub(super) fn flags(&self) -> Vec<String> {
        let r = self;
        let mut out = vec![r.url.clone()];
        if r.method != "GET" {
            out.extend(["-m".into(), r.method.clone()]);
        }
        for (name, value) in &r.headers {
            out.extend(["-H".into(), format!("{name}: {value}")]);
        }
        match &r.body {
            Some(CurlBody::Text(t)) => out.extend(["-d".into(), t.clone()]),
            Some(CurlBody::File(p)) => out.extend(["-D".into(), p.display().to_string()]),
            None => {}
        }
        // The Accept-Encoding header above goes as curl's, and --compressed decodes the answers.
        if r.compressed {
            out.push("--compressed".into());
        }
        if r.follow {
            out.extend(["--follow".into(), FOLLOW.to_string()]);
        }
        if r.cookies {
            out.push("--cookies".into());
        }
        if r.insecure {
            out.push("-k".into());
        }
        if let Some(file) = &r.cacert {
            out.extend(["--cacert".into(), file.display().to_string()]);
        }
        if let Some(path) = &r.unix_socket {
            out.extend(["--unix-socket".into(), path.display().to_string()]);
        }
        out
    }

    /// A plan of the one request.
    pub(super) fn draft(&self) -> Result<Draft, ImportError> {
        let r = self;
        let url = url::Url::parse(&r.url)
            .map_err(|e| ImportError::new(INPUT, format!("`{}` is not a URL: {e}", r.url)))?;
        let mut path = url.path().to_string();
        if let Some(q) = url.query() {
            path.push('?');
            path.push_str(q);
        }
        let (body, body_file) = match &r.body {
            Some(CurlBody::Text(t)) => (Some(t.clone()), None),
            Some(CurlBody::File(p)) => (None, Some(p.clone())),
            None => (None, None),
        };
        let texts = r.headers.iter().map(|(_, v)| v).chain(body.as_ref());
        for text in texts.chain(std::iter::once(&path)) {
            if text.contains("{{") {
                return Err(ImportError::new(
                    INPUT,
                    "a header, the body or the URL holds `{{`, which a plan reads as the start of a template; the printed flags send it as is",
                ));
            }
        }
        Ok(Draft {
            origin: url.origin().ascii_serialization(),
            scenario: "curl".into(),
            headers: Vec::new(),
            insecure: r.insecure,
            cacert: r.cacert.clone(),
            unix_socket: r.unix_socket.clone(),
            follow: if r.follow { FOLLOW } else { 0 },
            compressed: r.compressed,
            steps: vec![DraftStep::Request(DraftRequest {
                method: r.method.clone(),
                origin: None,
                path,
                headers: r.headers.clone(),
                body,
                body_file,
                extract: Vec::new(),
            })],
        })
    }
}
