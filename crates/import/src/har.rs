//! HAR 1.2 files (what browsers' developer tools and proxies save) → a [`Draft`].
//!
//! Only what a plan needs is read; the other fields of the specification (cookies, timings,
//! cache, sizes) may be present or not. The entries (of every http/https host, or those of
//! `--include-host`) are kept in the order they started; the plan's target is the first HTML
//! document's origin and steps on other hosts get an absolute `url:`; a gap between one ending
//! and the next starting becomes a pause; correlation turns tokens into extractions.

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::correlate::{Correlation, Exchange, Response};
use super::draft::{Draft, DraftRequest};
use super::error::ImportError;
use super::headers::{check_header, is_dropped_on_import};
use super::recording::{self, Recorded};
use belier_engine::request::{rules, InvalidRequest};

/// File name endings of static resources.
const STATIC_EXTENSIONS: &[&str] = &[
    ".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".ico", ".webp",
    ".avif", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm", ".mp3",
];

/// What to keep of a HAR file.
#[derive(Clone, Debug, Default)]
pub struct HarOptions {
    /// Keep only entries on these hosts (`host` or `host:port`); empty: every http/https host.
    pub include_hosts: Vec<String>,
    /// Leave out static resources: stylesheets, scripts, images, fonts, media (by the
    /// response's type or the path's extension).
    pub exclude_static: bool,
}

/// A HAR file made into a plan.
#[derive(Clone, Debug)]
pub struct HarImport {
    /// The plan.
    pub draft: Draft,
    /// The tokens carried from a response to later requests.
    pub correlations: Vec<Correlation>,
    /// What was left out and why, for the user (names and counts, never header values).
    pub notes: Vec<String>,
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    time: f64,
    request: Request,
    response: HarResponse,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    headers: Vec<NameValue>,
    #[serde(rename = "postData")]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    text: Option<String>,
    #[serde(default)]
    params: Vec<Param>,
}

#[derive(Deserialize)]
struct Param {
    name: String,
    value: Option<String>,
}

#[derive(Deserialize)]
struct HarResponse {
    headers: Vec<NameValue>,
    content: Content,
}

#[derive(Deserialize)]
struct Content {
    #[serde(rename = "mimeType", default)]
    mime_type: String,
    text: Option<String>,
    encoding: Option<String>,
}

/// Reads the HAR text of `input` (a file name, for messages) into a plan.
pub fn from_har(text: &str, input: &str, options: &HarOptions) -> Result<HarImport, ImportError> {
    let har = parse(text, input)?;
    let mut notes = Vec::new();
    let kept = select(&har.log.entries, input, options, &mut notes)?;
    let recorded = recorded(&kept, input)?;
    let (draft, correlations) = recording::plan("recorded", recorded);
    Ok(HarImport {
        draft,
        correlations,
        notes,
    })
}

/// The entries to import, with their index and URL: http and https ones, on the hosts
/// `--include-host` names if it does, not static with `--exclude-static`. What was left out is
/// noted in `notes`; none left is an error.
fn select<'h>(
    entries: &'h [Entry],
    input: &str,
    options: &HarOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<(usize, url::Url, &'h Entry)>, ImportError> {
    let mut kept: Vec<(usize, url::Url, &Entry)> = Vec::new();
    let mut skipped_static = 0;
    let mut skipped_hosts: Vec<(String, usize)> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let at = |what: &str| format!("entry {index} (log.entries[{index}].request.url): {what}");
        // A URL parser drops CR and LF silently, which would hide what the file holds.
        rules::check_line(&entry.request.url).map_err(|p| {
            ImportError::new(
                input,
                at(&format!("`{}` {p}", entry.request.url.escape_debug())),
            )
        })?;
        let url = url::Url::parse(&entry.request.url).map_err(|e| {
            ImportError::new(
                input,
                at(&format!("`{}` is not a URL: {e}", entry.request.url)),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            count(&mut skipped_hosts, url.scheme().to_string() + ":");
            continue;
        }
        let host = url.host_str().unwrap_or_default();
        let host_port = match url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        };
        if !options.include_hosts.is_empty()
            && !options
                .include_hosts
                .iter()
                .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(&host_port))
        {
            count(&mut skipped_hosts, host_port);
            continue;
        }
        if options.exclude_static && is_static(&url, &entry.response.content.mime_type) {
            skipped_static += 1;
            continue;
        }
        kept.push((index, url, entry));
    }
    if skipped_static > 0 {
        notes.push(format!(
            "{skipped_static} static resources left out (--exclude-static)"
        ));
    }
    if !skipped_hosts.is_empty() {
        let list: Vec<String> = skipped_hosts
            .iter()
            .map(|(h, n)| format!("{h} ({n})"))
            .collect();
        notes.push(format!(
            "entries left out (not http or https, or not on --include-host): {}",
            list.join(", ")
        ));
    }
    if kept.is_empty() {
        return Err(ImportError::new(
            input,
            format!(
                "no request left to import among {} entries (expected http or https entries{})",
                entries.len(),
                if options.include_hosts.is_empty() && !options.exclude_static {
                    ""
                } else {
                    " matching --include-host / --exclude-static"
                }
            ),
        ));
    }
    Ok(kept)
}

/// The kept entries as recorded exchanges, in the order they started (the specification does
/// not promise it), each timed from the earliest.
fn recorded(kept: &[(usize, url::Url, &Entry)], input: &str) -> Result<Vec<Recorded>, ImportError> {
    let mut recorded = Vec::with_capacity(kept.len());
    let mut first: Option<OffsetDateTime> = None;
    for (index, url, entry) in kept {
        let started = OffsetDateTime::parse(&entry.started, &Rfc3339).map_err(|e| {
            ImportError::new(
                input,
                format!(
                    "entry {index} (log.entries[{index}].startedDateTime): expected an ISO 8601 date and time such as 2026-11-25T19:30:00.000Z, found `{}`: {e}",
                    entry.started
                ),
            )
        })?;
        let first = *first.get_or_insert(started);
        let exchange = exchange(input, *index, url, entry)?;
        recorded.push((started - first, entry.time, exchange));
    }
    recorded.sort_by_key(|r| r.0);
    let earliest = recorded.first().map_or(time::Duration::ZERO, |r| r.0);
    Ok(recorded
        .into_iter()
        .map(|(at, took_ms, exchange)| Recorded {
            start: Duration::try_from(at - earliest).unwrap_or_default(),
            // A negative, absurd or overflowing `time` is taken as no time at all.
            took: Duration::try_from_secs_f64(took_ms / 1000.0).unwrap_or_default(),
            exchange,
        })
        .collect())
}

fn count(list: &mut Vec<(String, usize)>, key: String) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => list.push((key, 1)),
    }
}

/// The document, or where it is wrong: syntax errors at their line and column, missing or
/// mistyped fields with the entry index and the field's path too.
fn parse(text: &str, input: &str) -> Result<Har, ImportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let har: Har = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        // A syntax error inside a value names the key being read as `?`.
        let path = path.trim_end_matches(".?").to_string();
        let inner = e.into_inner();
        let message = inner.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m);
        let entry = match entry_index(&path) {
            Some(i) => format!("entry {i} ({path}): "),
            None if path.is_empty() || path == "." || path == "?" => String::new(),
            None => format!("{path}: "),
        };
        let expected = if inner.is_syntax() || inner.is_eof() {
            "the file is not valid JSON (a HAR file is JSON): "
        } else {
            "not a HAR 1.2 document: "
        };
        ImportError::new(input, format!("{entry}{expected}{message}"))
            .at(inner.line(), inner.column())
    })?;
    de.end().map_err(|e| {
        ImportError::new(
            input,
            "expected the end of the document after the HAR object",
        )
        .at(e.line(), e.column())
    })?;
    Ok(har)
}

/// `3` of a path such as `log.entries[3].request`.
fn entry_index(path: &str) -> Option<usize> {
    let rest = path.strip_prefix("log.entries[")?;
    rest[..rest.find(']')?].parse().ok()
}

fn is_static(url: &url::Url, mime: &str) -> bool {
    let mime = mime.to_ascii_lowercase();
    let path = url.path().to_ascii_lowercase();
    mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime.starts_with("video/")
        || mime.starts_with("audio/")
        || mime.starts_with("text/css")
        || mime.contains("javascript")
        || STATIC_EXTENSIONS.iter().any(|e| path.ends_with(e))
}

/// One entry as a request step and its recorded response.
fn exchange(
    input: &str,
    index: usize,
    url: &url::Url,
    entry: &Entry,
) -> Result<Exchange, ImportError> {
    let request = &entry.request;
    let at = |field: &str, what: &str| {
        ImportError::new(
            input,
            format!("entry {index} (log.entries[{index}].request.{field}): {what}"),
        )
    };
    rules::check_method(&request.method).map_err(|p| {
        at(
            "method",
            &InvalidRequest::Method(request.method.clone(), p).to_string(),
        )
    })?;
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let mut headers = Vec::with_capacity(request.headers.len());
    for (j, h) in request.headers.iter().enumerate() {
        if is_dropped_on_import(&h.name) {
            continue;
        }
        check_header(&h.name, &h.value)
            .map_err(|(part, why)| at(&format!("headers[{j}].{part}"), &why))?;
        headers.push((h.name.clone(), h.value.clone()));
    }
    let body = request.post_data.as_ref().map(|p| match &p.text {
        Some(text) => text.clone(),
        None => form(&p.params),
    });
    let template_free = |field: &str, text: &str| {
        if text.contains("{{") {
            Err(at(
                field,
                "holds `{{`, which a plan reads as the start of a template; edit the HAR file or write this step by hand",
            ))
        } else {
            Ok(())
        }
    };
    template_free("url", &path)?;
    for (_, v) in &headers {
        template_free("headers", v)?;
    }
    if let Some(b) = &body {
        template_free("postData", b)?;
    }
    if let Some(p) = &request.post_data {
        check_header("Content-Type", &p.mime_type)
            .map_err(|(_, why)| at("postData.mimeType", &why))?;
        if !p.mime_type.is_empty()
            && !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        {
            headers.push(("Content-Type".into(), p.mime_type.clone()));
        }
    }
    Ok(Exchange {
        request: DraftRequest {
            method: request.method.to_ascii_uppercase(),
            origin: Some(url.origin().ascii_serialization()),
            path,
            headers,
            body,
            body_file: None,
            extract: Vec::new(),
        },
        response: Response {
            headers: response_headers(&entry.response),
            body: response_text(&entry.response.content),
        },
    })
}

/// The response's body as text (decoded from base64 where the HAR says so); `None` when it
/// is not recorded or not UTF-8.
fn response_text(content: &Content) -> Option<String> {
    content.text.as_ref().and_then(|t| {
        if content.encoding.as_deref() == Some("base64") {
            base64::engine::general_purpose::STANDARD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        } else {
            Some(t.clone())
        }
    })
}

/// The response's headers, with its content's type as `Content-Type` where the headers do not
/// say it (the plan's target is the first HTML document's origin).
fn response_headers(response: &HarResponse) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = response
        .headers
        .iter()
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let mime = &response.content.mime_type;
    if !mime.is_empty()
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
    {
        headers.push(("Content-Type".into(), mime.clone()));
    }
    headers
}

/// `params` of a form post as `application/x-www-form-urlencoded` text.
fn form(params: &[Param]) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for p in params {
        out.append_pair(&p.name, p.value.as_deref().unwrap_or(""));
    }
    out.finish()
}

#[cfg(test)]
mod tests;
