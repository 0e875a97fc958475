//! One request of a targets file ([`Target`]), the formats it may be written in ([`Format`]),
//! and the credentials a URL may carry ([`basic_auth`]).

use belier_plan::Origin;

/// A targets file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// vegeta's: `METHOD URL`, then `Name: value` headers, then `@path` for a body, blank
    /// lines between targets; `#` starts a comment line.
    Http,
    /// One JSON object a line: `{"method", "url", "header": {"Name": ["value"]}, "body"}`,
    /// the body in base64.
    Json,
    /// Siege's URL list: `URL`, or `URL POST body` (`PUT` too; `<path` reads the body from a
    /// file); `#` starts a comment.
    Siege,
}

impl Format {
    /// The name `--targets-format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Http => "http",
            Format::Json => "json",
            Format::Siege => "siege",
        }
    }

    /// Guesses the format from the first line that is neither blank nor a comment: `{` starts
    /// JSON, a method followed by a URL is vegeta's, anything else a URL list.
    pub fn detect(line: &str) -> Format {
        let line = line.trim_start();
        if line.starts_with('{') {
            return Format::Json;
        }
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some(first), Some(_))
                if !first.is_empty() && first.bytes().all(|b| b.is_ascii_uppercase()) =>
            {
                Format::Http
            }
            _ => Format::Siege,
        }
    }
}

/// One request of a targets file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Method, e.g. `GET`.
    pub method: String,
    /// The URL as written (the per-target table's name for it).
    pub url: String,
    /// Where it goes.
    pub origin: Origin,
    /// Origin-form request target: path and query.
    pub path_and_query: String,
    /// Header lines, in order.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
    /// The line it starts on.
    pub line: usize,
}

/// Takes the credentials out of `url` (`user:pass@`, percent-decoded) and returns them as the
/// Basic `Authorization` header they stand for, as curl sends them: the URL is left without
/// them, fit to be shown in a report.
pub fn basic_auth(url: &mut url::Url) -> Option<(String, String)> {
    use base64::Engine as _;
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let decode = |s: &str| {
        // Percent-decoding; a `+` in a user name or password is a plus, not a space.
        url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let user = decode(url.username());
    let password = decode(url.password().unwrap_or(""));
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    // Neither the password nor the user name is shown anywhere the URL is.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Some(("Authorization".to_string(), format!("Basic {token}")))
}
