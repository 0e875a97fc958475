//! A curl command's arguments read: its options (grouped short ones, values inline or in the
//! next word), URLs and data, then made into the request they send.

use std::path::PathBuf;

use base64::Engine as _;

use belier_engine::request::rules;

use super::refusals::{check_option, framing, shown};
use super::request::{header, CurlBody, CurlRequest, FOLLOW, INPUT};
use crate::error::ImportError;

/// What `--compressed` asks for; curl asks for the encodings it was built with.
const COMPRESSED: &str = "gzip, deflate, br, zstd";

/// Gives the bytes of a file a `@FILE` value names.
pub(super) type ReadFile<'r> = dyn FnMut(&str) -> std::io::Result<Vec<u8>> + 'r;

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

/// What a curl command's options say, before they are made the request they send.
#[derive(Default)]
pub(super) struct Args {
    method: Option<String>,
    /// `-I`.
    head: bool,
    /// `-G`: the data goes in the query.
    get: bool,
    urls: Vec<String>,
    /// `-H` headers, in order.
    headers: Vec<(String, String)>,
    /// The argument each -H header came from.
    header_args: Vec<usize>,
    /// Headers other options add (`-u`, `-A`, `-e`, `-b`, `--compressed`), unless -H gave them.
    added: Vec<(String, String)>,
    data: Vec<Data>,
    insecure: bool,
    cacert: Option<PathBuf>,
    unix_socket: Option<PathBuf>,
    compressed: bool,
    follow: bool,
    cookies: bool,
    /// Options read and not carried over, and why.
    notes: Vec<String>,
}

impl Args {
    /// Reads the arguments after `curl`, numbered from 1 for errors that name one.
    pub(super) fn read(words: impl Iterator<Item = String>) -> Result<Args, ImportError> {
        let mut args = Args::default();
        let mut words = words.enumerate().map(|(i, w)| (i + 1, w));
        while let Some((arg, word)) = words.next() {
            let (options, mut inline) = if let Some(long) = word.strip_prefix("--") {
                if long.is_empty() {
                    args.urls.extend(words.by_ref().map(|(_, w)| w));
                    break;
                }
                (vec![format!("--{long}")], None)
            } else if word.len() > 1 && word.starts_with('-') {
                short_options(&word)
            } else {
                args.urls.push(word);
                continue;
            };
            for opt in options {
                let value = value_of(&opt, &mut inline, &mut words)?;
                check_option(&opt, arg, &value)?;
                args.take(&opt, value, arg)?;
            }
        }
        Ok(args)
    }

    /// Takes option `opt` (argument `arg`) with its `value` (empty for a switch).
    fn take(&mut self, opt: &str, value: String, arg: usize) -> Result<(), ImportError> {
        match opt {
            "-X" | "--request" => self.method = Some(value),
            "-H" | "--header" => {
                self.headers.push(header(&value)?);
                self.header_args.push(arg);
            }
            "-d" | "--data" | "--data-ascii" => self.data.push(Data::Ascii(value)),
            "--data-raw" => self.data.push(Data::Raw(value)),
            "--data-binary" => self.data.push(Data::Binary(value)),
            "--data-urlencode" => self.data.push(Data::UrlEncode(value)),
            "--json" => self.data.push(Data::Json(value)),
            "-u" | "--user" => {
                if !value.contains(':') {
                    return Err(ImportError::new(
                        INPUT,
                        "option `-u` expects USER:PASSWORD (belier does not prompt for a password)",
                    ));
                }
                let encoded = base64::engine::general_purpose::STANDARD.encode(&value);
                self.added
                    .push(("Authorization".into(), format!("Basic {encoded}")));
            }
            "-A" | "--user-agent" => self.added.push(("User-Agent".into(), value)),
            "-e" | "--referer" => self.added.push(("Referer".into(), value)),
            "-b" | "--cookie" => {
                if !value.contains('=') {
                    return Err(ImportError::new(
                        INPUT,
                        format!("option `{opt}` names a cookie file (`{value}`); give the cookies themselves, `-b 'name=value'`"),
                    ));
                }
                self.added.push(("Cookie".into(), value));
                self.cookies = true;
            }
            "--compressed" => {
                self.added
                    .push(("Accept-Encoding".into(), COMPRESSED.into()));
                self.compressed = true;
            }
            "-k" | "--insecure" => self.insecure = true,
            "--cacert" => self.cacert = Some(PathBuf::from(value)),
            "--unix-socket" => self.unix_socket = Some(PathBuf::from(value)),
            "-G" | "--get" => self.get = true,
            "-I" | "--head" => self.head = true,
            "--url" => self.urls.push(value),
            "-L" | "--location" => {
                self.follow = true;
                self.notes.push(format!(
                    "-L: belier's --follow {FOLLOW} (a plan's follow: {FOLLOW}) follows at most {FOLLOW} redirects"
                ));
            }
            _ => {} // output options: nothing to carry over
        }
        Ok(())
    }

    /// The request the options send, and the notes on what was not carried over; `read`
    /// gives the files data options name.
    pub(super) fn request(
        self,
        read: &mut ReadFile<'_>,
    ) -> Result<(CurlRequest, Vec<String>), ImportError> {
        let mut url = self.url()?;
        let json = self.data.iter().any(|d| matches!(d, Data::Json(_)));
        let mut body = body(&self.data, read)?;
        if self.get {
            if let Some(query) = query(body.take(), read)? {
                url.push(if url.contains('?') { '&' } else { '?' });
                url.push_str(&query);
            }
        }
        let method = self.method.unwrap_or_else(|| {
            if self.head {
                "HEAD".into()
            } else if body.is_some() {
                "POST".into()
            } else {
                "GET".into()
            }
        });
        let headers = headers(self.headers, self.added, json, body.is_some());
        framing(&headers, &self.header_args, body.as_ref())?;
        let request = CurlRequest {
            method,
            url,
            headers,
            body,
            insecure: self.insecure,
            cacert: self.cacert,
            unix_socket: self.unix_socket,
            compressed: self.compressed,
            follow: self.follow,
            cookies: self.cookies,
        };
        Ok((request, self.notes))
    }

    /// The one URL given, with a scheme.
    fn url(&self) -> Result<String, ImportError> {
        match self.urls.as_slice() {
            [url] => absolute(url),
            [] => Err(ImportError::new(INPUT, "expected a URL, found none")),
            _ => Err(ImportError::new(
                INPUT,
                format!(
                    "expected one URL, found {}: {}",
                    self.urls.len(),
                    self.urls.join(", ")
                ),
            )),
        }
    }
}

/// The options in a word that starts with one `-`: short options may be grouped (`-sSL`); one
/// that takes a value takes the rest of the word (`-XPOST`), returned apart, or the next word.
fn short_options(word: &str) -> (Vec<String>, Option<String>) {
    let mut opts = Vec::new();
    for (i, c) in word[1..].char_indices() {
        let opt = format!("-{c}");
        let takes = takes_value(&opt);
        opts.push(opt);
        if takes == Some(true) {
            let rest = &word[1 + i + c.len_utf8()..];
            return (opts, (!rest.is_empty()).then(|| rest.to_string()));
        }
    }
    (opts, None)
}

/// The value of option `opt`: the rest of its word (`inline`, taken once), else the next
/// word; empty for a switch. An option belier does not know is refused.
fn value_of(
    opt: &str,
    inline: &mut Option<String>,
    words: &mut impl Iterator<Item = (usize, String)>,
) -> Result<String, ImportError> {
    match takes_value(opt) {
        None => Err(ImportError::new(
            INPUT,
            format!(
                "unknown curl option `{opt}` (belier reads -X, -H, -d, --data-raw, --data-binary, --data-urlencode, --json, -u, -A, -e, -b, -G, -I, -k, --cacert, --unix-socket, -L, --compressed, --url and ignores output options such as -s, -v, -o)"
            ),
        )),
        Some(false) => Ok(String::new()),
        Some(true) => inline
            .take()
            .or_else(|| words.next().map(|(_, w)| w))
            .ok_or_else(|| {
                ImportError::new(
                    INPUT,
                    format!("option `{opt}` expects a value, found the end of the command"),
                )
            }),
    }
}

/// The body the data options make: a file sent as it is (`--data-binary @FILE` or
/// `--json @FILE` alone), else their texts joined.
fn body(data: &[Data], read: &mut ReadFile<'_>) -> Result<Option<CurlBody>, ImportError> {
    let binary_file = match data {
        [Data::Binary(v)] | [Data::Json(v)] => v.strip_prefix('@').map(PathBuf::from),
        _ => None,
    };
    Ok(match binary_file {
        Some(path) => Some(CurlBody::File(path)),
        None if data.is_empty() => None,
        None => Some(CurlBody::Text(join_data(data, read)?)),
    })
}

/// What `-G` puts in the query: the body, a file's read as text.
fn query(body: Option<CurlBody>, read: &mut ReadFile<'_>) -> Result<Option<String>, ImportError> {
    Ok(match body {
        Some(CurlBody::Text(query)) => Some(query),
        Some(CurlBody::File(path)) => {
            let name = path.to_string_lossy().into_owned();
            Some(text_of(&name, read_file(&name, read)?)?)
        }
        None => None,
    })
}

/// The -H headers, then those other options add unless -H gave them, then the ones a body
/// goes with (`--json`'s, or the form type curl sends with -d and --data-binary).
fn headers(
    mut all: Vec<(String, String)>,
    added: Vec<(String, String)>,
    json: bool,
    has_body: bool,
) -> Vec<(String, String)> {
    let has = |list: &[(String, String)], name: &str| {
        list.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
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
    } else if has_body && !has(&all, "Content-Type") {
        // What curl sends with -d and --data-binary unless told otherwise.
        all.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
    }
    all
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

fn read_file(path: &str, read: &mut ReadFile<'_>) -> Result<Vec<u8>, ImportError> {
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
fn join_data(data: &[Data], read: &mut ReadFile<'_>) -> Result<String, ImportError> {
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
fn url_encode(value: &str, read: &mut ReadFile<'_>) -> Result<String, ImportError> {
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
