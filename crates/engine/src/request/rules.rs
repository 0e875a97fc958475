//! What may go on the wire: the rules a request's method, target, header fields and framing
//! follow.
//!
//! The encoders check every request against them before writing a byte of it, so nothing
//! that would split a request (a CR or LF in a header, a space in the target) or desynchronise
//! a keep-alive connection (a `Content-Length` that is not the body's length) is ever sent,
//! whoever built the request. The readers of requests (flags, plans, targets files, importers)
//! apply the same functions first, so a user hears of the problem at load time with its place
//! (file, line, flag) rather than as failed requests.

use std::fmt;

use crate::http1::ChunkedDecoder;

/// Longest header name accepted. Real names are a few dozen characters; a plan's YAML keys
/// stop at 1,024, and a name of hundreds of characters is a mistake (or an attack on a
/// server's header buffers), not a test of one.
pub const MAX_HEADER_NAME: usize = 256;

/// Why a method, target, header name or value cannot be written as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// Nothing where something is needed.
    #[error("is empty")]
    Empty,
    /// A CR or LF: the line would end there and the rest pass for another header, or another
    /// request (request splitting).
    #[error(
        "holds a line break ({}): the line would end there and the rest be sent as another header or request",
        shown_char(*.0)
    )]
    LineBreak(char),
    /// A NUL byte, which servers read as the end of the text or refuse.
    #[error("holds a NUL byte (\\0)")]
    Nul,
    /// A character an HTTP token (a method, a header name) may not hold.
    #[error(
        "holds {}, which an HTTP token may not (letters, digits and !#$%&'*+-.^_`|~ only)",
        shown_char(*.0)
    )]
    NotToken(char),
    /// A space or control character in the request target, which would change the request
    /// line (`GET /a HTTP/1.0 HTTP/1.1`).
    #[error(
        "holds a space or control character ({}): percent-encode it (a space is %20)",
        shown_char(*.0)
    )]
    Blank(char),
    /// A header name longer than [`MAX_HEADER_NAME`].
    #[error("is {0} characters long (at most {MAX_HEADER_NAME})")]
    TooLong(usize),
}

/// Why a user's `Content-Length` or `Transfer-Encoding` header contradicts the body: the server
/// would read the body differently from how it is sent, and the next request on the connection
/// would start in the middle of it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Framing {
    /// `Content-Length` is not a number.
    #[error("`Content-Length: {0}` is not a number of bytes (leave it out: belier writes the body's length)")]
    NotANumber(String),
    /// `Content-Length` says another length than the body has.
    #[error("`Content-Length: {given}` does not match the body, which is {body} bytes (leave it out: belier writes the body's length)")]
    Mismatch {
        /// What the header says.
        given: u64,
        /// The body's length.
        body: usize,
    },
    /// `Transfer-Encoding` and `Content-Length` together (RFC 9112 §6.3: a server may take
    /// either, the classic request smuggling).
    #[error("`Transfer-Encoding` and `Content-Length` together: the server may read either (keep one, or neither: belier writes Content-Length)")]
    Both,
    /// A `Transfer-Encoding` whose last coding is not `chunked`: the server cannot tell where
    /// the body ends.
    #[error("`Transfer-Encoding: {0}` does not end in `chunked`, so the body has no end a server can find")]
    NotChunked(String),
    /// `Transfer-Encoding: chunked` with a body that is not a whole chunked message (belier
    /// sends a body as it is given; it does not chunk it).
    #[error("`Transfer-Encoding: chunked` with a body of {0} bytes that is not chunk-encoded (belier sends the body as given; leave the header out and belier writes Content-Length)")]
    BodyNotChunked(usize),
}

/// A request that must not be sent, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRequest {
    /// The method.
    #[error("the method `{}` {}", shown(.0), .1)]
    Method(String, Problem),
    /// The request target (path and query).
    #[error("the path `{}` {}", shown(.0), .1)]
    Target(String, Problem),
    /// The `Host` belier would write (from the URL).
    #[error("the host `{}` {}", shown(.0), .1)]
    Host(String, Problem),
    /// A header's name.
    #[error("the header name `{}` {}", shown(.0), .1)]
    HeaderName(String, Problem),
    /// A header's value (by the header's name).
    #[error("the value of header `{}` {}", shown(.0), .1)]
    HeaderValue(String, Problem),
    /// The framing headers and the body disagree.
    #[error(transparent)]
    Framing(#[from] Framing),
}

/// Whether `b` may be part of an HTTP token (RFC 9110 §5.6.2): a method, a header name.
pub fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A method: a non-empty token.
pub fn check_method(method: &str) -> Result<(), Problem> {
    check_token(method)
}

/// A header name: a non-empty token of at most [`MAX_HEADER_NAME`] characters.
pub fn check_header_name(name: &str) -> Result<(), Problem> {
    check_token(name)?;
    match name.len() {
        n if n > MAX_HEADER_NAME => Err(Problem::TooLong(n)),
        _ => Ok(()),
    }
}

/// A header value: no CR, LF or NUL (the rest, tabs and non-ASCII included, goes as given).
pub fn check_header_value(value: &str) -> Result<(), Problem> {
    match value.bytes().find(|b| matches!(b, b'\r' | b'\n' | 0)) {
        Some(0) => Err(Problem::Nul),
        Some(b) => Err(Problem::LineBreak(b as char)),
        None => Ok(()),
    }
}

/// A request target (or a part of one that is written as it is): no CR, LF, NUL, space or
/// other control character.
pub fn check_target(target: &str) -> Result<(), Problem> {
    match target.bytes().find(|b| *b <= b' ' || *b == 0x7f) {
        Some(0) => Err(Problem::Nul),
        Some(b @ (b'\r' | b'\n')) => Err(Problem::LineBreak(b as char)),
        Some(b) => Err(Problem::Blank(b as char)),
        None => Ok(()),
    }
}

/// Text that arrives whole and is taken apart later (a URL, a `Name: value` line): no CR, LF or
/// NUL anywhere. A URL parser drops CR and LF silently, which would hide the mistake.
pub fn check_line(text: &str) -> Result<(), Problem> {
    check_header_value(text)
}

fn check_token(text: &str) -> Result<(), Problem> {
    if text.is_empty() {
        return Err(Problem::Empty);
    }
    match text
        .chars()
        .find(|c| !c.is_ascii() || !is_token_byte(*c as u8))
    {
        Some('\0') => Err(Problem::Nul),
        Some(c @ ('\r' | '\n')) => Err(Problem::LineBreak(c)),
        Some(c) => Err(Problem::NotToken(c)),
        None => Ok(()),
    }
}

/// The user's framing headers against the body: a `Content-Length` must be the body's length
/// (several must all be); a `Transfer-Encoding` must end in `chunked`, come without
/// `Content-Length`, and the body must be one whole chunked message. Without either header
/// belier writes `Content-Length` itself.
pub fn check_framing(headers: &[(String, String)], body: &[u8]) -> Result<(), Framing> {
    let named = |name: &'static str| {
        headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let mut lengths = named("content-length").peekable();
    let mut codings = named("transfer-encoding").peekable();
    if lengths.peek().is_some() && codings.peek().is_some() {
        return Err(Framing::Both);
    }
    for given in lengths {
        // Digits only: `+5` and ` 5` parse as numbers in Rust but not in HTTP.
        let parsed = (!given.is_empty() && given.bytes().all(|b| b.is_ascii_digit()))
            .then(|| given.parse::<u64>().ok())
            .flatten();
        match parsed {
            None => return Err(Framing::NotANumber(given.to_string())),
            Some(n) if n != body.len() as u64 => {
                return Err(Framing::Mismatch {
                    given: n,
                    body: body.len(),
                })
            }
            Some(_) => {}
        }
    }
    // Several Transfer-Encoding lines are one list (RFC 9110 §5.3): the last coding decides.
    let Some(last) = codings.last() else {
        return Ok(());
    };
    let final_coding = last.rsplit(',').next().unwrap_or("").trim();
    if !final_coding.eq_ignore_ascii_case("chunked") {
        return Err(Framing::NotChunked(last.to_string()));
    }
    let mut decoder = ChunkedDecoder::default();
    match decoder.feed(body) {
        Ok((used, true)) if used == body.len() => Ok(()),
        _ => Err(Framing::BodyNotChunked(body.len())),
    }
}

/// `text` for a message: control characters escaped, cut after 40 characters.
fn shown(text: &str) -> impl fmt::Display + '_ {
    struct Shown<'a>(&'a str);
    impl fmt::Display for Shown<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            const MAX: usize = 40;
            for c in self.0.chars().take(MAX) {
                write!(f, "{}", c.escape_debug())?;
            }
            if self.0.chars().nth(MAX).is_some() {
                f.write_str("…")?;
            }
            Ok(())
        }
    }
    Shown(text)
}

fn shown_char(c: char) -> String {
    match c {
        '\r' => "CR, \\r".into(),
        '\n' => "LF, \\n".into(),
        ' ' => "a space".into(),
        c => format!("`{}`", c.escape_debug()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn tokens_values_and_targets() {
        assert_eq!(check_method("GET"), Ok(()));
        assert_eq!(check_method(""), Err(Problem::Empty));
        assert_eq!(check_method("GE T"), Err(Problem::NotToken(' ')));
        assert_eq!(check_method("GET\r\nX"), Err(Problem::LineBreak('\r')));
        assert_eq!(check_header_name("X-A"), Ok(()));
        assert_eq!(check_header_name("X:A"), Err(Problem::NotToken(':')));
        assert_eq!(check_header_name("X\0"), Err(Problem::Nul));
        assert_eq!(check_header_name("é"), Err(Problem::NotToken('é')));
        let long = "x".repeat(1100);
        assert_eq!(check_header_name(&long), Err(Problem::TooLong(1100)));
        assert_eq!(check_header_name(&long[..MAX_HEADER_NAME]), Ok(()));
        assert_eq!(check_header_value("a\tb é"), Ok(()));
        assert_eq!(
            check_header_value("a\r\nX: 1"),
            Err(Problem::LineBreak('\r'))
        );
        assert_eq!(check_header_value("a\nX: 1"), Err(Problem::LineBreak('\n')));
        assert_eq!(check_header_value("a\0"), Err(Problem::Nul));
        assert_eq!(check_target("/a?b=%20&c"), Ok(()));
        assert_eq!(check_target("/a b"), Err(Problem::Blank(' ')));
        assert_eq!(check_target("/a\tb"), Err(Problem::Blank('\t')));
        assert_eq!(check_target("/a\r\n"), Err(Problem::LineBreak('\r')));
        assert_eq!(check_target("/\0"), Err(Problem::Nul));
    }

    #[test]
    fn framing_headers_must_match_the_body() {
        let ok = |h: &[(&str, &str)], body: &[u8]| check_framing(&headers(h), body);
        assert_eq!(ok(&[], b"hello"), Ok(()));
        assert_eq!(ok(&[("Content-Length", "5")], b"hello"), Ok(()));
        assert_eq!(ok(&[("content-length", " 0 ")], b""), Ok(()));
        assert_eq!(
            ok(&[("Content-Length", "100")], b"hello"),
            Err(Framing::Mismatch {
                given: 100,
                body: 5
            })
        );
        assert_eq!(
            ok(
                &[("Content-Length", "5"), ("Content-Length", "6")],
                b"hello"
            ),
            Err(Framing::Mismatch { given: 6, body: 5 })
        );
        for bad in ["", "+5", "5x", "-1", "99999999999999999999999"] {
            assert_eq!(
                ok(&[("Content-Length", bad)], b"hello"),
                Err(Framing::NotANumber(bad.into())),
                "{bad:?}"
            );
        }
        let chunked = b"5\r\nhello\r\n0\r\n\r\n";
        assert_eq!(ok(&[("Transfer-Encoding", "chunked")], chunked), Ok(()));
        assert_eq!(
            ok(&[("Transfer-Encoding", "gzip, chunked")], chunked),
            Ok(())
        );
        assert_eq!(
            ok(&[("Transfer-Encoding", "chunked")], b"hello"),
            Err(Framing::BodyNotChunked(5))
        );
        assert_eq!(
            ok(&[("Transfer-Encoding", "chunked")], b""),
            Err(Framing::BodyNotChunked(0))
        );
        let trailing = b"5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n";
        assert_eq!(
            ok(&[("Transfer-Encoding", "chunked")], trailing),
            Err(Framing::BodyNotChunked(trailing.len()))
        );
        assert_eq!(
            ok(&[("Transfer-Encoding", "gzip")], b"x"),
            Err(Framing::NotChunked("gzip".into()))
        );
        assert_eq!(
            ok(
                &[("Transfer-Encoding", "chunked"), ("Content-Length", "16")],
                chunked
            ),
            Err(Framing::Both)
        );
    }

    #[test]
    fn messages_show_the_text_escaped_and_cut() {
        let e = InvalidRequest::HeaderValue("X-A".into(), Problem::LineBreak('\r'));
        assert_eq!(
            e.to_string(),
            "the value of header `X-A` holds a line break (CR, \\r): the line would end there \
             and the rest be sent as another header or request"
        );
        let e = InvalidRequest::HeaderName("a\r\n".repeat(20), Problem::LineBreak('\r'));
        assert!(
            e.to_string().starts_with("the header name `a\\r\\na\\r\\n"),
            "{e}"
        );
        assert!(e.to_string().contains("…`"), "{e}");
    }
}
