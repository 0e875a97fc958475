//! The `Alt-Svc` header (RFC 7838): the alternative services a server advertises for its
//! origin, read to find HTTP/3 (`--http3=auto`).
//!
//! ```text
//! Alt-Svc       = clear / 1#alt-value
//! alt-value     = alternative *( OWS ";" OWS parameter )
//! alternative   = protocol-id "=" alt-authority     ; protocol-id: a percent-encoded ALPN id
//! alt-authority = quoted-string                      ; [ uri-host ] ":" port
//! parameter     = token "=" ( token / quoted-string ) ; ma=SECONDS, persist=1, others ignored
//! ```
//!
//! Only QUIC version 1's `h3` counts as HTTP/3 here (the drafts' `h3-29` and the like are
//! other protocols to belier), and only on the origin's own host: an alternative on another
//! host would move the load to another machine, which belier does not do unasked.

use std::fmt;

/// What one `Alt-Svc` field value says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AltSvc {
    /// `clear`: the server withdraws every alternative it advertised.
    Clear,
    /// The alternatives, in the server's order of preference.
    Alternatives(Vec<Alternative>),
}

/// One advertised alternative service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alternative {
    /// The ALPN protocol id, percent-decoded (`h3`, `h2`, `h3-29`).
    pub protocol: String,
    /// The host, when it is not the origin's (`"alt.example.com:443"`); `None` for `":443"`.
    pub host: Option<String>,
    /// The port.
    pub port: u16,
    /// `ma`: how many seconds the alternative stays fresh (RFC 7838's default is 24 hours).
    pub max_age: Option<u64>,
}

/// Why an `Alt-Svc` value does not parse, naming where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AltSvcError(pub String);

impl fmt::Display for AltSvcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed Alt-Svc: {}", self.0)
    }
}

impl std::error::Error for AltSvcError {}

/// Parses one `Alt-Svc` field value (several header lines are joined with `,` first).
pub fn parse(value: &str) -> Result<AltSvc, AltSvcError> {
    let value = value.trim();
    if value == "clear" {
        return Ok(AltSvc::Clear);
    }
    let mut cursor = Cursor { text: value, at: 0 };
    let mut alternatives = Vec::new();
    loop {
        cursor.skip_space();
        if cursor.eat(',') {
            // Empty list elements are allowed (RFC 9110 §5.6.1).
            continue;
        }
        if cursor.done() {
            break;
        }
        alternatives.push(alternative(&mut cursor)?);
        cursor.skip_space();
        if !cursor.done() && !cursor.eat(',') {
            return Err(cursor.error("expected ',' between alternatives"));
        }
    }
    if alternatives.is_empty() {
        return Err(AltSvcError("no alternative".into()));
    }
    Ok(AltSvc::Alternatives(alternatives))
}

/// The port of the `h3` alternative on the origin's own host that a run may take, from the
/// `Alt-Svc` values `values` of one response, in order; or why there is none, in a sentence.
/// `origin_host` is the URL's host (compared without case).
pub fn h3_port(values: &[String], origin_host: &str) -> Result<u16, String> {
    if values.is_empty() {
        return Err("the server sent no Alt-Svc header".into());
    }
    let joined = values.join(", ");
    let alternatives = match parse(&joined).map_err(|e| format!("{e} (in {joined:?})"))? {
        AltSvc::Clear => return Err("the server's Alt-Svc is `clear`".into()),
        AltSvc::Alternatives(list) => list,
    };
    let mut elsewhere = None;
    for alt in alternatives.iter().filter(|a| a.protocol == "h3") {
        match &alt.host {
            Some(host) if !host.eq_ignore_ascii_case(origin_host) => {
                elsewhere.get_or_insert(format!("{host}:{}", alt.port));
            }
            _ => return Ok(alt.port),
        }
    }
    Err(match elsewhere {
        Some(other) => format!(
            "the server's Alt-Svc offers h3 only on another host ({other}), which belier \
             does not follow"
        ),
        None => format!("the server's Alt-Svc offers no h3 ({joined})"),
    })
}

/// One alternative and its parameters.
fn alternative(cursor: &mut Cursor<'_>) -> Result<Alternative, AltSvcError> {
    let id = cursor.token("a protocol id")?;
    let protocol = percent_decode(id).ok_or_else(|| cursor.error("bad percent-encoding"))?;
    if !cursor.eat('=') {
        return Err(cursor.error("expected '=' after the protocol id"));
    }
    let authority = cursor.quoted("the alternative's authority")?;
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| cursor.error("the authority has no ':PORT'"))?;
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| cursor.error(&format!("bad port {port:?}")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut alt = Alternative {
        protocol,
        host: (!host.is_empty()).then(|| host.to_string()),
        port,
        max_age: None,
    };
    loop {
        cursor.skip_space();
        if !cursor.eat(';') {
            return Ok(alt);
        }
        cursor.skip_space();
        let name = cursor.token("a parameter name")?;
        if !cursor.eat('=') {
            return Err(cursor.error(&format!("expected '=' after parameter {name}")));
        }
        let value = match cursor.peek() {
            Some('"') => cursor.quoted("a parameter value")?,
            _ => cursor.token("a parameter value")?.to_string(),
        };
        if name.eq_ignore_ascii_case("ma") {
            let seconds = value
                .parse()
                .map_err(|_| cursor.error(&format!("ma={value} is not a number of seconds")))?;
            alt.max_age = Some(seconds);
        }
    }
}

/// `%XX` decoded (RFC 7838 §3: the protocol id is percent-encoded); `None` when malformed.
fn percent_decode(id: &str) -> Option<String> {
    let bytes = id.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = id.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A position in the value being parsed.
struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a str {
        &self.text[self.at..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn done(&self) -> bool {
        self.at >= self.text.len()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.at += c.len_utf8();
            return true;
        }
        false
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    /// An RFC 9110 token (`tchar`s), at least one.
    fn token(&mut self, what: &str) -> Result<&'a str, AltSvcError> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(self.error(&format!("expected {what}")));
        }
        self.at += len;
        Ok(&rest[..len])
    }

    /// A quoted string, its escapes (`\"`, `\\`) undone.
    fn quoted(&mut self, what: &str) -> Result<String, AltSvcError> {
        if !self.eat('"') {
            return Err(self.error(&format!("expected {what} in double quotes")));
        }
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.at += i + 1;
                    return Ok(out);
                }
                '\\' => match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                },
                c => out.push(c),
            }
        }
        self.at = self.text.len();
        Err(self.error(&format!("{what}: the quoted string does not end")))
    }

    fn error(&self, why: &str) -> AltSvcError {
        AltSvcError(format!("{why} at character {}", self.at + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(protocol: &str, host: Option<&str>, port: u16, max_age: Option<u64>) -> Alternative {
        Alternative {
            protocol: protocol.into(),
            host: host.map(Into::into),
            port,
            max_age,
        }
    }

    #[test]
    fn alternatives_parse_with_their_parameters_in_order() {
        let value =
            r#"h3=":443"; ma=86400, h3-29=":8443"; ma=3600; persist=1, h2="alt.example.com:443""#;
        assert_eq!(
            parse(value).unwrap(),
            AltSvc::Alternatives(vec![
                alt("h3", None, 443, Some(86400)),
                alt("h3-29", None, 8443, Some(3600)),
                alt("h2", Some("alt.example.com"), 443, None),
            ])
        );
        // Quoted parameters, escapes, spaces around ';' and ',', empty list elements.
        let value = r#" , h3 = ":1"#;
        assert!(parse(value).is_err(), "spaces around '=' are not allowed");
        let value = r#"h3="[::1]:9443" ;  ma="60" ; foo="a\"b,c" ,, h2=":443""#;
        assert_eq!(
            parse(value).unwrap(),
            AltSvc::Alternatives(vec![
                alt("h3", Some("::1"), 9443, Some(60)),
                alt("h2", None, 443, None)
            ])
        );
        // A percent-encoded protocol id.
        assert_eq!(
            parse(r#"h%33=":443""#).unwrap(),
            AltSvc::Alternatives(vec![alt("h3", None, 443, None)])
        );
        assert_eq!(parse("clear").unwrap(), AltSvc::Clear);
    }

    #[test]
    fn malformed_values_say_what_is_wrong_and_where() {
        for (value, says) in [
            ("", "no alternative"),
            ("h3", "expected '=' after the protocol id"),
            ("h3=:443", "in double quotes"),
            (r#"h3=":443"#, "does not end"),
            (r#"h3="443""#, "no ':PORT'"),
            (r#"h3=":99999""#, "bad port"),
            (r#"h3=":0""#, "bad port"),
            (r#"h3=":443"; ma=soon"#, "ma=soon"),
            (r#"h3=":443"; ma"#, "after parameter ma"),
            (r#"h3=":443" h2=":443""#, "expected ','"),
            (r#"h%3=":443""#, "percent-encoding"),
            ("Clear", "expected '='"),
        ] {
            let e = parse(value).unwrap_err().to_string();
            assert!(e.contains(says), "{value:?}: {e}");
            assert!(
                value.is_empty() || e.contains("at character"),
                "{value:?}: {e}"
            );
        }
    }

    #[test]
    fn the_h3_port_is_the_first_h3_alternative_on_the_origins_host() {
        let values = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let port = |v: &[&str]| h3_port(&values(v), "example.com");
        assert_eq!(port(&[r#"h3=":443"; ma=86400"#]), Ok(443));
        // Several header lines, a draft first, another port.
        assert_eq!(port(&[r#"h3-29=":443""#, r#"h3=":8443""#]), Ok(8443));
        // The origin's host named is the origin's.
        assert_eq!(port(&[r#"h3="EXAMPLE.com:9443""#]), Ok(9443));
        let why = port(&[r#"h3="cdn.example.net:443", h2=":443""#]).unwrap_err();
        assert!(why.contains("another host (cdn.example.net:443)"), "{why}");
        // Another host's h3 is passed over for the origin's own.
        assert_eq!(port(&[r#"h3="cdn.example.net:443", h3=":4433""#]), Ok(4433));
        let why = port(&[r#"h2=":443""#]).unwrap_err();
        assert!(why.contains("offers no h3"), "{why}");
        assert!(port(&["clear"]).unwrap_err().contains("clear"));
        assert!(port(&[]).unwrap_err().contains("no Alt-Svc"));
        let why = port(&["h3=443"]).unwrap_err();
        assert!(why.contains("malformed Alt-Svc"), "{why}");
    }

    proptest::proptest! {
        /// Any value, near-valid or not, parses or is refused with a reason; never a panic,
        /// and what parses names ports that exist.
        #[test]
        fn any_value_parses_or_is_refused(
            value in r#"(h3|h2|h%33|clear|"|:|;|,| |=|ma|443|[a-z.\[\]:]{0,6}|é|\\){0,12}"#,
        ) {
            match parse(&value) {
                Ok(AltSvc::Alternatives(list)) => {
                    proptest::prop_assert!(list.iter().all(|a| a.port > 0));
                }
                Ok(AltSvc::Clear) => proptest::prop_assert_eq!(value.trim(), "clear"),
                Err(e) => proptest::prop_assert!(!e.0.is_empty()),
            }
            let _ = h3_port(&[value], "example.com");
        }
    }
}
