//! Reading targets one at a time, in any of the three formats, with the line of every error.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use super::target::{basic_auth, Format, Target};
use belier_engine::request::{rules, InvalidRequest};
use belier_plan::{Origin, Scheme};
use belier_plan::{PlanError, Pos};

/// Reads targets from `input` one at a time, as they come: a stream is parsed while it is
/// still being written.
pub struct Reader<R> {
    input: R,
    /// What errors name: the file, or `-` for standard input.
    name: PathBuf,
    /// Where `@file` and `<file` bodies are looked up.
    base: PathBuf,
    format: Option<Format>,
    /// Lines read so far.
    line: usize,
    buf: String,
    /// Bytes of the `@file` bodies read so far: each target holds its own copy, so a file
    /// naming one large body on many lines is bounded in total, not only per body.
    body_bytes: u64,
}

/// Longest line a targets file may have: a JSON target carrying the largest body belier
/// sends, in base64. A line is held whole while it is parsed.
const MOST_LINE_BYTES: u64 = belier_plan::files::MOST_BODY_BYTES / 3 * 4 + (1 << 20);

impl<R: BufRead> Reader<R> {
    /// A reader of `input`, which errors call `name`; bodies named in it are relative to
    /// `base`. Without `format`, the first line that is neither blank nor a comment decides.
    pub fn new(input: R, name: &Path, base: PathBuf, format: Option<Format>) -> Self {
        Reader {
            input,
            name: name.to_path_buf(),
            base,
            format,
            line: 0,
            buf: String::new(),
            body_bytes: 0,
        }
    }

    /// The format read (`None` before the first target when it is detected).
    pub fn format(&self) -> Option<Format> {
        self.format
    }

    /// What errors call the input.
    pub fn name(&self) -> &Path {
        &self.name
    }

    /// The number of the last line read.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next target, or `None` at the end of the input.
    pub fn next_target(&mut self) -> Result<Option<Target>, PlanError> {
        // The first line that says anything: the start of a target in every format.
        let first = loop {
            match self.next_line()? {
                None => return Ok(None),
                Some(l) if is_blank_or_comment(&l) => continue,
                Some(l) => break l,
            }
        };
        let format = *self.format.get_or_insert_with(|| Format::detect(&first));
        let line = self.line;
        let mut target = match format {
            Format::Http => self.http(&first)?,
            Format::Json => self.json(&first)?,
            Format::Siege => self.siege(&first)?,
        };
        target.line = line;
        rules::check_framing(&target.headers, &target.body)
            .map_err(|e| self.err_at(line, e.to_string()))?;
        Ok(Some(target))
    }

    fn next_line(&mut self) -> Result<Option<String>, PlanError> {
        self.buf.clear();
        let read = std::io::Read::take(&mut self.input, MOST_LINE_BYTES + 1)
            .read_line(&mut self.buf)
            .map_err(|e| self.err_at(self.line + 1, format!("cannot read the targets: {e}")))?;
        if read == 0 {
            return Ok(None);
        }
        if read as u64 > MOST_LINE_BYTES {
            let most = belier_plan::files::size_in_words(MOST_LINE_BYTES);
            return Err(self.err_at(self.line + 1, format!("a line longer than {most}")));
        }
        self.line += 1;
        let l = self.buf.strip_suffix('\n').unwrap_or(&self.buf);
        Ok(Some(l.strip_suffix('\r').unwrap_or(l).to_string()))
    }

    fn err(&self, message: impl Into<String>) -> PlanError {
        self.err_at(self.line, message)
    }

    fn err_at(&self, line: usize, message: impl Into<String>) -> PlanError {
        PlanError::new(&self.name, Pos { line, col: 1 }, message)
    }

    /// vegeta's format: the `METHOD URL` line is read; then headers, a body, a blank line.
    fn http(&mut self, first: &str) -> Result<Target, PlanError> {
        let mut words = first.split_whitespace();
        let (Some(method), Some(url), None) = (words.next(), words.next(), words.next()) else {
            return Err(self.err(
                "expected `METHOD URL`, e.g. `GET http://127.0.0.1:8080/` (vegeta's format)",
            ));
        };
        let mut target = self.target(method, url)?;
        while let Some(line) = self.next_line()? {
            if line.trim().is_empty() {
                break;
            }
            if line.starts_with('#') {
                continue;
            }
            if let Some(path) = line.strip_prefix('@') {
                target.body = self.body_file(path.trim())?;
                break;
            }
            let Some((name, value)) = line.split_once(':') else {
                return Err(self.err(
                    "expected a header `Name: value`, a body `@file` or a blank line \
                     before the next target",
                ));
            };
            self.push_header(&mut target, name, value.trim())?;
        }
        Ok(target)
    }

    /// JSON lines: the whole target is on `line`.
    fn json(&mut self, line: &str) -> Result<Target, PlanError> {
        const EXPECTED: &str = "expected a JSON object with `method`, `url` and optionally \
                                `header` (a map of lists) and `body` (base64)";
        let value: Value =
            serde_json::from_str(line).map_err(|e| self.err(format!("{EXPECTED}: {e}")))?;
        let Value::Object(fields) = value else {
            return Err(self.err(EXPECTED));
        };
        if let Some(key) = fields
            .keys()
            .find(|k| !matches!(k.as_str(), "method" | "url" | "header" | "body"))
        {
            return Err(self.err(format!("unknown key `{key}`: {EXPECTED}")));
        }
        let text = |key: &str| match fields.get(key) {
            Some(Value::String(s)) => Ok(s.as_str()),
            _ => Err(self.err(format!("`{key}` must be a string: {EXPECTED}"))),
        };
        let (method, url) = (text("method")?, text("url")?);
        let mut target = self.target(method, url)?;
        match fields.get("header") {
            None | Some(Value::Null) => {}
            Some(Value::Object(headers)) => {
                for (name, values) in headers {
                    let Value::Array(values) = values else {
                        return Err(self.err(format!(
                            "header `{name}` must be a list of strings: {EXPECTED}"
                        )));
                    };
                    for v in values {
                        let Value::String(v) = v else {
                            return Err(self.err(format!(
                                "header `{name}` must be a list of strings: {EXPECTED}"
                            )));
                        };
                        self.push_header(&mut target, name, v)?;
                    }
                }
            }
            Some(_) => return Err(self.err(format!("`header` must be a map: {EXPECTED}"))),
        }
        match fields.get("body") {
            None | Some(Value::Null) => {}
            Some(Value::String(b64)) => {
                target.body = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| self.err(format!("`body` is not base64: {e}")))?;
            }
            Some(_) => return Err(self.err(format!("`body` must be a string: {EXPECTED}"))),
        }
        Ok(target)
    }

    /// Siege's URL list: `URL`, or `URL METHOD body` (`<file` for a body read from a file).
    fn siege(&mut self, line: &str) -> Result<Target, PlanError> {
        let line = line.trim();
        let (url, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim_start();
        let (method, body) = match rest.split_once(char::is_whitespace) {
            Some((m, b)) => (m, b.trim()),
            None => (rest, ""),
        };
        let method = if method.is_empty() { "GET" } else { method };
        if !method.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(self.err(format!(
                "expected `URL`, or `URL POST body` (Siege's URL list), found `{method}` \
                 after the URL"
            )));
        }
        // Siege takes URLs without a scheme as http.
        let url = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let mut target = self.target(method, &url)?;
        if let Some(path) = body.strip_prefix('<') {
            target.body = self.body_file(path.trim())?;
        } else {
            target.body = body.as_bytes().to_vec();
        }
        if !target.body.is_empty() {
            // Siege's own default for a body given on the line.
            target.headers.push((
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ));
        }
        Ok(target)
    }

    /// A target of `method` to `url`, checked; credentials in the URL become a Basic
    /// `Authorization` header and are left out of its name.
    fn target(&self, method: &str, url: &str) -> Result<Target, PlanError> {
        rules::check_method(method)
            .map_err(|p| self.err(InvalidRequest::Method(method.into(), p).to_string()))?;
        // A URL parser drops CR and LF silently, which would hide the mistake.
        rules::check_line(url)
            .map_err(|p| self.err(format!("the URL `{}` {p}", url.escape_debug())))?;
        let mut parsed = url::Url::parse(url).map_err(|e| {
            self.err(format!(
                "expected an http or https URL such as `http://127.0.0.1:8080/path`, \
                 found `{url}`: {e}"
            ))
        })?;
        let scheme = match parsed.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(self.err(format!(
                    "expected an http or https URL, found scheme `{other}`"
                )))
            }
        };
        let Some(host) = parsed.host_str().filter(|h| !h.is_empty()) else {
            return Err(self.err(format!("the URL `{url}` has no host")));
        };
        let origin = Origin {
            scheme,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port: parsed.port_or_known_default().unwrap_or(80),
        };
        let mut path_and_query = parsed.path().to_string();
        if let Some(q) = parsed.query() {
            path_and_query.push('?');
            path_and_query.push_str(q);
        }
        let headers = basic_auth(&mut parsed).into_iter().collect();
        parsed.set_fragment(None);
        Ok(Target {
            method: method.to_string(),
            url: parsed.to_string(),
            origin,
            path_and_query,
            headers,
            body: Vec::new(),
            line: self.line,
        })
    }

    fn push_header(&self, target: &mut Target, name: &str, value: &str) -> Result<(), PlanError> {
        rules::check_header_name(name).map_err(|p| {
            self.err(format!(
                "expected a header `Name: value`; {}",
                InvalidRequest::HeaderName(name.into(), p)
            ))
        })?;
        rules::check_header_value(value)
            .map_err(|p| self.err(InvalidRequest::HeaderValue(name.into(), p).to_string()))?;
        target.headers.push((name.to_string(), value.to_string()));
        Ok(())
    }

    fn body_file(&mut self, path: &str) -> Result<Vec<u8>, PlanError> {
        use belier_plan::files::{read, size_in_words, MOST_BODY_BYTES, MOST_DATA_BYTES};
        if path.is_empty() {
            return Err(self.err("expected a file name after `@` (or `<`) for the body"));
        }
        let full = self.base.join(path);
        let body = read(&full, MOST_BODY_BYTES)
            .map_err(|e| self.err(format!("cannot read the body file {}: {e}", full.display())))?;
        self.body_bytes += body.len() as u64;
        if self.body_bytes > MOST_DATA_BYTES {
            return Err(self.err(format!(
                "the bodies of the targets so far take more than {}, which belier holds at most",
                size_in_words(MOST_DATA_BYTES)
            )));
        }
        Ok(body)
    }
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, format: Option<Format>) -> Result<Vec<Target>, PlanError> {
        // A directory per call: tests run in parallel, and a body file rewritten by one
        // would read empty in another.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("belier-targets-{}-{call}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("body.json"), b"{\"a\":1}").unwrap();
        let mut r = Reader::new(text.as_bytes(), Path::new("t.txt"), dir, format);
        let mut out = Vec::new();
        let read = loop {
            match r.next_target() {
                Ok(Some(t)) => out.push(t),
                Ok(None) => break Ok(out),
                Err(e) => break Err(e),
            }
        };
        let _ = std::fs::remove_dir_all(&r.base);
        read
    }

    #[test]
    fn reads_vegeta_targets_with_headers_and_bodies() {
        let text = "# a comment\nGET http://127.0.0.1:8080/a?x=1\nX-A: 1\nX-B:  two words \n\n\
                    POST http://127.0.0.1:8080/b\nContent-Type: application/json\n@body.json\n\n\
                    PUT http://[::1]:9/c\n";
        let t = read(text, None).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].method, "GET");
        assert_eq!(t[0].path_and_query, "/a?x=1");
        assert_eq!(
            t[0].headers,
            [
                ("X-A".into(), "1".into()),
                ("X-B".into(), "two words".into())
            ]
        );
        assert_eq!(t[1].body, b"{\"a\":1}");
        assert_eq!(t[1].origin.port, 8080);
        assert_eq!(t[2].origin.host, "::1");
        assert_eq!(t[2].url, "http://[::1]:9/c");
    }

    #[test]
    fn reads_json_lines() {
        let text = "{\"method\":\"POST\",\"url\":\"https://h.test/p\",\"header\":{\"X-A\":[\"1\",\"2\"]},\"body\":\"aGk=\"}\n\n\
                    {\"method\":\"GET\",\"url\":\"http://h.test:81/\"}\n";
        let t = read(text, None).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].origin.scheme, Scheme::Https);
        assert_eq!(t[0].origin.port, 443);
        assert_eq!(t[0].body, b"hi");
        assert_eq!(t[0].headers.len(), 2);
        assert_eq!(t[1].origin.port, 81);
    }

    #[test]
    fn reads_siege_url_lists() {
        let text = "http://127.0.0.1:8080/a\n127.0.0.1:8080/b POST x=1&y=2\n\
                    http://127.0.0.1:8080/c PUT <body.json\n";
        let t = read(text, None).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].method.as_str(), t[0].body.len()), ("GET", 0));
        assert_eq!(t[1].method, "POST");
        assert_eq!(t[1].body, b"x=1&y=2");
        assert_eq!(t[1].origin.host, "127.0.0.1");
        assert_eq!(t[2].body, b"{\"a\":1}");
    }

    #[test]
    fn credentials_become_basic_auth_and_leave_the_name() {
        let t = read("GET http://alice:s%40cret@127.0.0.1:1/x\n", None).unwrap();
        assert_eq!(
            t[0].headers,
            [("Authorization".into(), "Basic YWxpY2U6c0BjcmV0".into())]
        );
        assert_eq!(t[0].url, "http://127.0.0.1:1/x");
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        let cases = [
            (
                "GET http://a/\nnot a header\n",
                None,
                2,
                "expected a header",
            ),
            ("GET\n", Some(Format::Http), 1, "expected `METHOD URL`"),
            ("\n\nGET ftp://a/\n", None, 3, "scheme `ftp`"),
            (
                "GET http://a/\n@missing.bin\n",
                None,
                2,
                "cannot read the body file",
            ),
            (
                "{\"url\":\"http://a/\"}\n",
                None,
                1,
                "`method` must be a string",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://a/\",\"bdy\":1}\n",
                None,
                1,
                "unknown key `bdy`",
            ),
            ("http://a/\nhttp://a/ post x\n", None, 2, "Siege's URL list"),
            ("GET http://a/\nX Y: 1\n", None, 2, "the header name `X Y` holds a space"),
            (
                "{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"X\":[\"a\\r\\nY: 1\"]}}\n",
                None,
                1,
                "the value of header `X` holds a line break (CR",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"X\\nY\":[\"1\"]}}\n",
                None,
                1,
                "the header name `X\\nY` holds a line break (LF",
            ),
            (
                "{\"method\":\"GET\\r\\n\",\"url\":\"http://a/\"}\n",
                None,
                1,
                "the method `GET\\r\\n` holds a line break",
            ),
            (
                "{\"method\":\"GET\",\"url\":\"http://a/x\\r\\nY: 1\"}\n",
                None,
                1,
                "the URL `http://a/x\\r\\nY: 1` holds a line break",
            ),
            (
                "GET http://a/\nX-A: 1\n\nPOST http://a/\nContent-Length: 100\n@body.json\n",
                None,
                4,
                "`Content-Length: 100` does not match the body, which is 7 bytes",
            ),
            (
                "{\"method\":\"POST\",\"url\":\"http://a/\",\"header\":{\"Transfer-Encoding\":[\"chunked\"]},\"body\":\"aGk=\"}\n",
                None,
                1,
                "`Transfer-Encoding: chunked` with a body of 2 bytes that is not chunk-encoded",
            ),
        ];
        for (text, format, line, expected) in cases {
            let e = read(text, format).unwrap_err();
            assert_eq!(e.pos.line, line, "{text:?}: {e}");
            assert!(e.message.contains(expected), "{text:?}: {e}");
            assert!(e.to_string().starts_with(&format!("t.txt:{line}:")), "{e}");
        }
    }
}
