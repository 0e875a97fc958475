//! A curl command line → the request it sends, the equivalent `belier` flags, and a
//! one-step [`Draft`].
//!
//! The line is split as a POSIX shell would (quotes, backslashes, line continuations). The
//! options a copied request uses are read ("Copy as cURL" in browsers writes `-H`,
//! `--data-raw`, `--compressed`); options that only change what curl prints are ignored;
//! any other option is an error naming it, rather than a request that silently differs.

use std::path::PathBuf;

use base64::Engine as _;

use belier_engine::request::rules;

use super::draft::{Draft, DraftRequest, DraftStep};
use super::error::ImportError;

mod refusals;

use refusals::{check_option, framing, shown};

/// What the errors call the input.
const INPUT: &str = "curl command";

/// What `--compressed` asks for; curl asks for the encodings it was built with.
const COMPRESSED: &str = "gzip, deflate, br, zstd";

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

/// A curl command made into belier's terms.
#[derive(Clone, Debug)]
pub struct CurlImport {
    /// The request.
    pub request: CurlRequest,
    /// The equivalent `belier` arguments (after the program name), for one request each time.
    pub flags: Vec<String>,
    /// A plan of that one request.
    pub draft: Draft,
    /// Options read and not carried over, and why.
    pub notes: Vec<String>,
}

/// One `-d`-like option's value and how curl treats it.
enum Data {
    /// `-d`, `--data`, `--data-ascii`: `@FILE` read with CR and LF removed.
    Ascii(String),
    /// `--data-raw`: as is, `@` included.
    Raw(String),
    /// `--data-binary`: `@FILE` read as is.
    Binary(String),
    /// `--data-urlencode`.
    UrlEncode(String),
    /// `--json`: like `--data-binary`, with JSON headers.
    Json(String),
}

/// Reads the curl `command`; `read` gives the bytes of a file a `@FILE` value names.
pub fn from_curl(
    command: &str,
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<CurlImport, ImportError> {
    let words = shell_words::split(command)
        .map_err(|e| ImportError::new(INPUT, format!("cannot be split as a shell would: {e}")))?;
    // Bash's ANSI-C quoting, which browsers' "Copy as cURL (bash)" writes for bodies with
    // newlines or quotes, is not POSIX: split as POSIX, `$'a\nb'` would be sent as `$a\nb`.
    if let Some(word) = words.iter().find(|w| w.starts_with('$')) {
        if command.contains(" $'") || command.contains("\t$'") {
            return Err(ImportError::new(
                INPUT,
                format!(
                    "bash ANSI-C quoting (`$'…'`, here `{}`) is not read: quote the value with '…' (POSIX), or save the body to a file and use --data-binary @FILE",
                    word.chars().take(20).collect::<String>()
                ),
            ));
        }
    }
    let mut words = words.into_iter();
    match words.next() {
        Some(w) if w == "curl" || w.ends_with("/curl") => {}
        Some(w) => {
            return Err(ImportError::new(
                INPUT,
                format!("expected a command starting with `curl`, found `{w}`"),
            ))
        }
        None => {
            return Err(ImportError::new(
                INPUT,
                "expected `curl URL …`, found nothing",
            ))
        }
    }
    let mut method: Option<String> = None;
    let mut head = false;
    let mut get = false;
    let mut urls: Vec<String> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut added: Vec<(String, String)> = Vec::new();
    let mut data: Vec<Data> = Vec::new();
    let mut insecure = false;
    let (mut cacert, mut unix_socket) = (None, None);
    let (mut compressed, mut follow, mut cookies) = (false, false, false);
    let mut notes = Vec::new();
    // Arguments numbered from 1 after `curl`, for errors that name one.
    let mut words = words.enumerate().map(|(i, w)| (i + 1, w)).peekable();
    // The argument each -H header came from.
    let mut header_args: Vec<usize> = Vec::new();
    while let Some((arg, word)) = words.next() {
        let (options, inline): (Vec<String>, Option<String>) =
            if let Some(long) = word.strip_prefix("--") {
                if long.is_empty() {
                    urls.extend(words.by_ref().map(|(_, w)| w));
                    break;
                }
                (vec![format!("--{long}")], None)
            } else if word.len() > 1 && word.starts_with('-') {
                // Short options may be grouped (`-sSL`); one that takes a value takes the rest of
                // the word (`-XPOST`) or the next word.
                let mut opts = Vec::new();
                let mut inline = None;
                for (i, c) in word[1..].char_indices() {
                    let opt = format!("-{c}");
                    let takes = takes_value(&opt);
                    opts.push(opt);
                    if takes == Some(true) {
                        let rest = &word[1 + i + c.len_utf8()..];
                        if !rest.is_empty() {
                            inline = Some(rest.to_string());
                        }
                        break;
                    }
                }
                (opts, inline)
            } else {
                urls.push(word);
                continue;
            };
        let mut inline = inline;
        for opt in options {
            let value = match takes_value(&opt) {
                None => {
                    return Err(ImportError::new(
                        INPUT,
                        format!(
                            "unknown curl option `{opt}` (belier reads -X, -H, -d, --data-raw, --data-binary, --data-urlencode, --json, -u, -A, -e, -b, -G, -I, -k, --cacert, --unix-socket, -L, --compressed, --url and ignores output options such as -s, -v, -o)"
                        ),
                    ))
                }
                Some(false) => String::new(),
                Some(true) => match inline.take().or_else(|| words.next().map(|(_, w)| w)) {
                    Some(v) => v,
                    None => {
                        return Err(ImportError::new(
                            INPUT,
                            format!("option `{opt}` expects a value, found the end of the command"),
                        ))
                    }
                },
            };
            check_option(&opt, arg, &value)?;
            match opt.as_str() {
                "-X" | "--request" => method = Some(value),
                "-H" | "--header" => {
                    headers.push(header(&value)?);
                    header_args.push(arg);
                }
                "-d" | "--data" | "--data-ascii" => data.push(Data::Ascii(value)),
                "--data-raw" => data.push(Data::Raw(value)),
                "--data-binary" => data.push(Data::Binary(value)),
                "--data-urlencode" => data.push(Data::UrlEncode(value)),
                "--json" => data.push(Data::Json(value)),
                "-u" | "--user" => {
                    if !value.contains(':') {
                        return Err(ImportError::new(
                            INPUT,
                            "option `-u` expects USER:PASSWORD (belier does not prompt for a password)",
                        ));
                    }
                    let encoded = base64::engine::general_purpose::STANDARD.encode(&value);
                    added.push(("Authorization".into(), format!("Basic {encoded}")));
                }
                "-A" | "--user-agent" => added.push(("User-Agent".into(), value)),
                "-e" | "--referer" => added.push(("Referer".into(), value)),
                "-b" | "--cookie" => {
                    if !value.contains('=') {
                        return Err(ImportError::new(
                            INPUT,
                            format!("option `{opt}` names a cookie file (`{value}`); give the cookies themselves, `-b 'name=value'`"),
                        ));
                    }
                    added.push(("Cookie".into(), value));
                    cookies = true;
                }
                "--compressed" => {
                    added.push(("Accept-Encoding".into(), COMPRESSED.into()));
                    compressed = true;
                }
                "-k" | "--insecure" => insecure = true,
                "--cacert" => cacert = Some(PathBuf::from(value)),
                "--unix-socket" => unix_socket = Some(PathBuf::from(value)),
                "-G" | "--get" => get = true,
                "-I" | "--head" => head = true,
                "--url" => urls.push(value),
                "-L" | "--location" => {
                    follow = true;
                    notes.push(format!(
                        "-L: belier's --follow {FOLLOW} (a plan's follow: {FOLLOW}) follows at most {FOLLOW} redirects"
                    ));
                }
                _ => {} // output options: nothing to carry over
            }
        }
    }
    let url = match urls.as_slice() {
        [url] => absolute(url)?,
        [] => return Err(ImportError::new(INPUT, "expected a URL, found none")),
        _ => {
            return Err(ImportError::new(
                INPUT,
                format!(
                    "expected one URL, found {}: {}",
                    urls.len(),
                    urls.join(", ")
                ),
            ))
        }
    };
    let json = data.iter().any(|d| matches!(d, Data::Json(_)));
    let binary_file = match data.as_slice() {
        [Data::Binary(v)] | [Data::Json(v)] => v.strip_prefix('@').map(PathBuf::from),
        _ => None,
    };
    let mut body = match binary_file {
        Some(path) => Some(CurlBody::File(path)),
        None if data.is_empty() => None,
        None => Some(CurlBody::Text(join_data(&data, read)?)),
    };
    let mut url = url;
    if get {
        let query = match body.take() {
            Some(CurlBody::Text(query)) => Some(query),
            Some(CurlBody::File(path)) => {
                let name = path.to_string_lossy().into_owned();
                Some(text_of(&name, read_file(&name, read)?)?)
            }
            None => None,
        };
        if let Some(query) = query {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query);
        }
    }
    let method = method.unwrap_or_else(|| {
        if head {
            "HEAD".into()
        } else if body.is_some() {
            "POST".into()
        } else {
            "GET".into()
        }
    });
    let has = |list: &[(String, String)], name: &str| {
        list.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    let mut all = headers;
    for (name, value) in added {
        if !has(&all, &name) {
            all.push((name, value));
        }
    }
    if json {
        for name in ["Content-Type", "Accept"] {
            if !has(&all, name) {
                all.push((name.into(), "application/json".into()));
            }
        }
    } else if body.is_some() && !has(&all, "Content-Type") {
        // What curl sends with -d and --data-binary unless told otherwise.
        all.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
    }
    framing(&all, &header_args, body.as_ref())?;
    let request = CurlRequest {
        method,
        url,
        headers: all,
        body,
        insecure,
        cacert,
        unix_socket,
        compressed,
        follow,
        cookies,
    };
    let flags = flags(&request);
    let draft = draft(&request)?;
    Ok(CurlImport {
        request,
        flags,
        draft,
        notes,
    })
}

/// `Some(true)` for options that take a value, `Some(false)` for switches, `None` for options
/// belier does not know.
fn takes_value(opt: &str) -> Option<bool> {
    const WITH_VALUE: &[&str] = &[
        "-X",
        "--request",
        "-H",
        "--header",
        "-d",
        "--data",
        "--data-ascii",
        "--data-raw",
        "--data-binary",
        "--data-urlencode",
        "--json",
        "-u",
        "--user",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-b",
        "--cookie",
        "--url",
        "--cacert",
        "--unix-socket",
        // Output only.
        "-o",
        "--output",
        "-w",
        "--write-out",
    ];
    const SWITCHES: &[&str] = &[
        "--compressed",
        "-k",
        "--insecure",
        "-G",
        "--get",
        "-I",
        "--head",
        "-L",
        "--location",
        // Output only.
        "-s",
        "--silent",
        "-S",
        "--show-error",
        "-v",
        "--verbose",
        "-i",
        "--include",
        "-f",
        "--fail",
        "--fail-with-body",
        "-#",
        "--progress-bar",
        "--no-progress-meter",
        "-N",
        "--no-buffer",
    ];
    if WITH_VALUE.contains(&opt) {
        Some(true)
    } else if SWITCHES.contains(&opt) {
        Some(false)
    } else {
        None
    }
}

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

/// The URL with a scheme (curl takes `host/path` as `http://host/path`), checked.
fn absolute(url: &str) -> Result<String, ImportError> {
    // A URL parser drops CR and LF silently, which would hide the mistake.
    rules::check_line(url)
        .map_err(|p| ImportError::new(INPUT, format!("the URL `{}` {p}", shown(url))))?;
    let with_scheme = if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    };
    match url::Url::parse(&with_scheme) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
            Ok(with_scheme)
        }
        Ok(u) => Err(ImportError::new(
            INPUT,
            format!(
                "expected an http or https URL, found `{url}` ({})",
                u.scheme()
            ),
        )),
        Err(e) => Err(ImportError::new(
            INPUT,
            format!("`{url}` is not a URL: {e}"),
        )),
    }
}

fn read_file(
    path: &str,
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<Vec<u8>, ImportError> {
    read(path)
        .map_err(|e| ImportError::new(INPUT, format!("cannot read the data file `{path}`: {e}")))
}

fn text_of(path: &str, bytes: Vec<u8>) -> Result<String, ImportError> {
    String::from_utf8(bytes).map_err(|_| {
        ImportError::new(
            INPUT,
            format!("the data of `{path}` is not UTF-8 text; send a binary body alone with --data-binary @{path}"),
        )
    })
}

/// The body of several data options, joined with `&` as curl does.
fn join_data(
    data: &[Data],
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<String, ImportError> {
    let mut parts = Vec::with_capacity(data.len());
    for d in data {
        let part = match d {
            Data::Raw(v) => v.clone(),
            Data::Ascii(v) => match v.strip_prefix('@') {
                Some(path) => text_of(path, read_file(path, read)?)?.replace(['\r', '\n'], ""),
                None => v.clone(),
            },
            Data::Binary(v) | Data::Json(v) => match v.strip_prefix('@') {
                Some(path) => text_of(path, read_file(path, read)?)?,
                None => v.clone(),
            },
            Data::UrlEncode(v) => url_encode(v, read)?,
        };
        parts.push(part);
    }
    Ok(parts.join("&"))
}

/// `--data-urlencode`'s forms: `content`, `=content`, `name=content`, `@file`, `name@file`.
fn url_encode(
    value: &str,
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<String, ImportError> {
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    if let Some((name, content)) = value.split_once('=') {
        let encoded = encode(content);
        return Ok(if name.is_empty() {
            encoded
        } else {
            format!("{name}={encoded}")
        });
    }
    if let Some((name, path)) = value.split_once('@') {
        let content = text_of(path, read_file(path, read)?)?;
        let encoded = encode(&content);
        return Ok(if name.is_empty() {
            encoded
        } else {
            format!("{name}={encoded}")
        });
    }
    Ok(encode(value))
}

/// The `belier` arguments that send the same request.
fn flags(r: &CurlRequest) -> Vec<String> {
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
fn draft(r: &CurlRequest) -> Result<Draft, ImportError> {
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

#[cfg(test)]
mod tests;
