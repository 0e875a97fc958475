//! What the server does with one request: the knobs, their query-string form and the faults.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Body sent when a [`Behaviour`] does not ask for a size.
///
/// Short and newline-terminated so that `curl` against `belier target` prints something readable.
pub const DEFAULT_BODY: &[u8] = b"hello\n";

/// Body length announced by [`Fault::CloseMidBody`] when the behaviour has no (or a zero) size,
/// so that there is always a "half" to send.
pub const CLOSE_MID_BODY_DEFAULT_LEN: usize = 1000;

/// How the server answers one request.
///
/// [`Config::defaults`](crate::Config::defaults) applies to every request; the request's query
/// string can override any knob (see [`Behaviour::apply_query`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Behaviour {
    /// Time to wait after the whole request has been read, before answering (or injecting the
    /// fault). Precise to the kernel's timer on Linux (a timerfd), not rounded up to whole
    /// milliseconds.
    pub delay: Duration,
    /// Response status code, `100..=999`. Default 200.
    ///
    /// A 1xx status is sent like a final response (no body), which clients read as an interim
    /// response and then wait for more: it behaves much like [`Fault::Stall`].
    pub status: u16,
    /// Response body length in bytes; `None` sends [`DEFAULT_BODY`].
    pub body_size: Option<usize>,
    /// Misbehaviour to inject instead of a normal response.
    pub fault: Option<Fault>,
    /// Answer with `Connection: close` and close the connection afterwards.
    pub close: bool,
    /// Send the body with `Transfer-Encoding: chunked`, split into a few chunks.
    ///
    /// Ignored for HTTP/1.0 clients, which cannot decode it.
    pub chunked: bool,
    /// Answer as a login would: a JSON body `{"token":"t<C>-<K>","user":<K>}` and a
    /// `Set-Cookie: session=t<C>-<K>; Path=/`, where `C` is the connection's number (as in
    /// [`SeenRequest::connection`](crate::SeenRequest::connection)) and `K` the request's index
    /// on that connection, from 0, so a test can recompute every token from the requests it saw.
    /// Takes precedence over `json` and `size`; never chunked.
    pub token: bool,
    /// Answer with the small JSON body [`JSON_BODY`] (`Content-Type: application/json`) so
    /// that JSON checks and extractions have something to read. Takes precedence over `size`;
    /// never chunked.
    pub json: bool,
    /// Send `Server-Timing: app;dur=D` with a plain answer (not a JSON, redirect or gzip one),
    /// D the milliseconds (to the microsecond) from when a handler took the request, after any
    /// wait for one ([`Config::handlers`](crate::Config::handlers)), to the answer's head: its
    /// service time and delay, as a server that times its own handler reports them.
    pub timing: bool,
    /// Answer with a redirect to the same path and query with this knob one less (`302 Found`,
    /// or `status` when it is 301, 303, 307 or 308), so `?redirect=3` is a chain of three
    /// redirects before the answer the other knobs ask for. At most [`MAX_REDIRECTS`].
    pub redirect: u32,
    /// With `redirect`: send the client to this address (`to=127.0.0.1:8081`), the
    /// `Location` an absolute `http://ADDR/…` URL, so a redirect can cross to another server.
    pub redirect_to: Option<std::net::SocketAddr>,
}

/// Longest redirect chain the `redirect` knob asks for.
pub const MAX_REDIRECTS: u32 = 100;

/// Body sent for the `json` knob.
pub const JSON_BODY: &str = r#"{"ok":true,"items":[{"id":1},{"id":2}]}"#;

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            delay: Duration::ZERO,
            status: 200,
            body_size: None,
            fault: None,
            close: false,
            chunked: false,
            token: false,
            json: false,
            timing: false,
            redirect: 0,
            redirect_to: None,
        }
    }
}

/// Names of the query-string knobs, as accepted by [`Behaviour::apply_query`].
pub const KNOBS: [&str; 11] = [
    "delay", "status", "size", "fault", "close", "chunked", "token", "json", "timing", "redirect",
    "to",
];

impl Behaviour {
    /// Overrides knobs from a query string such as `delay=20ms&status=503&size=1024`.
    ///
    /// Knobs: `delay` (a duration as flags take it: `20ms`, `1s`), `status` (`100..=999`), `size`
    /// (body bytes), `fault` (see [`Fault`]), and the switches `close`, `chunked`, `token` and
    /// `json` (`1`/`0`, `true`/`false`, or the bare name for true). Unknown keys are ignored so that real-world URLs with their
    /// own parameters (`/search?q=x`) can be load-tested unchanged. Values are not
    /// percent-decoded; none of the knobs needs it.
    ///
    /// # Errors
    /// A [`KnobError`] naming the first knob whose value does not parse. Knobs before it have
    /// already been applied.
    pub fn apply_query(&mut self, query: &str) -> Result<(), KnobError> {
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = match pair.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (pair, None),
            };
            self.apply_knob(key, value)?;
        }
        Ok(())
    }

    fn apply_knob(&mut self, key: &str, value: Option<&str>) -> Result<(), KnobError> {
        let Some(knob) = KNOBS.iter().copied().find(|k| *k == key) else {
            return Ok(());
        };
        let text = value.unwrap_or("");
        let bad = |expected| KnobError {
            knob,
            value: text.to_owned(),
            expected,
        };
        match knob {
            "delay" => {
                self.delay = belier_vocabulary::duration::parse(text)
                    .map_err(|_| bad("a duration such as 20ms or 1s"))?;
            }
            "status" => {
                self.status = text
                    .parse()
                    .ok()
                    .filter(|s| (100..=999).contains(s))
                    .ok_or_else(|| bad("a status code in 100..=999"))?;
            }
            "size" => {
                self.body_size = Some(text.parse().map_err(|_| bad("a byte count"))?);
            }
            "fault" => {
                self.fault = Some(text.parse().map_err(|_| bad(Fault::EXPECTED))?);
            }
            "redirect" => {
                self.redirect = text
                    .parse()
                    .ok()
                    .filter(|n| *n <= MAX_REDIRECTS)
                    .ok_or_else(|| bad("a number of redirects, at most 100"))?;
            }
            "to" => {
                self.redirect_to = Some(
                    text.parse()
                        .map_err(|_| bad("an address such as 127.0.0.1:8081"))?,
                );
            }
            "close" | "chunked" | "token" | "json" | "timing" => {
                let on = match value {
                    None => true,
                    Some("1" | "true" | "yes" | "on") => true,
                    Some("0" | "false" | "no" | "off") => false,
                    Some(_) => return Err(bad("1 or 0")),
                };
                match knob {
                    "close" => self.close = on,
                    "chunked" => self.chunked = on,
                    "token" => self.token = on,
                    "timing" => self.timing = on,
                    _ => self.json = on,
                }
            }
            _ => unreachable!("every name in KNOBS has an arm"),
        }
        Ok(())
    }
}

/// Where a request for `target` (path and query) with `redirect=N` in its query is sent next:
/// the same target with `N - 1`, the knob left out once it reaches 0.
pub(crate) fn next_hop(target: &str) -> String {
    let Some((path, query)) = target.split_once('?') else {
        return target.to_string();
    };
    let pairs: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .filter_map(|pair| match pair.split_once('=') {
            Some(("redirect", n)) => match n.parse::<u32>() {
                Ok(n) if n > 1 => Some(format!("redirect={}", n - 1)),
                _ => None,
            },
            _ => Some(pair.to_string()),
        })
        .collect();
    if pairs.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

/// Parses a query string (see [`Behaviour::apply_query`]) on top of [`Behaviour::default`].
impl FromStr for Behaviour {
    type Err = KnobError;

    fn from_str(query: &str) -> Result<Self, Self::Err> {
        let mut behaviour = Behaviour::default();
        behaviour.apply_query(query)?;
        Ok(behaviour)
    }
}

/// Renders the knobs that differ from [`Behaviour::default`] as a query string (without the
/// `?`), so that `format!("/?{behaviour}")` asks the server for exactly this behaviour. The
/// output parses back to an equal value.
impl fmt::Display for Behaviour {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = Behaviour::default();
        let mut sep = "";
        let mut knob = |f: &mut fmt::Formatter<'_>, args: fmt::Arguments<'_>| {
            let result = write!(f, "{sep}{args}");
            sep = "&";
            result
        };
        if self.delay != base.delay {
            // One unit, because a duration formatted with spaces (as humantime writes it)
            // would need escaping in a query.
            let d = self.delay;
            if d.subsec_nanos().is_multiple_of(1_000_000) {
                knob(f, format_args!("delay={}ms", d.as_millis()))?;
            } else if d.subsec_nanos().is_multiple_of(1_000) {
                knob(f, format_args!("delay={}us", d.as_micros()))?;
            } else {
                knob(f, format_args!("delay={}ns", d.as_nanos()))?;
            }
        }
        if self.status != base.status {
            knob(f, format_args!("status={}", self.status))?;
        }
        if let Some(size) = self.body_size {
            knob(f, format_args!("size={size}"))?;
        }
        if let Some(fault) = self.fault {
            knob(f, format_args!("fault={fault}"))?;
        }
        if self.close {
            knob(f, format_args!("close=1"))?;
        }
        if self.chunked {
            knob(f, format_args!("chunked=1"))?;
        }
        if self.token {
            knob(f, format_args!("token=1"))?;
        }
        if self.json {
            knob(f, format_args!("json=1"))?;
        }
        if self.timing {
            knob(f, format_args!("timing=1"))?;
        }
        if self.redirect > 0 {
            knob(f, format_args!("redirect={}", self.redirect))?;
        }
        if let Some(to) = self.redirect_to {
            knob(f, format_args!("to={to}"))?;
        }
        Ok(())
    }
}

/// A knob in a query string had a value that does not parse.
///
/// The server answers such a request with `400 Bad Request` and this error's text as the body.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for knob `{knob}`: expected {expected}")]
pub struct KnobError {
    knob: &'static str,
    value: String,
    expected: &'static str,
}

impl KnobError {
    /// Name of the offending knob, one of [`KNOBS`].
    pub fn knob(&self) -> &'static str {
        self.knob
    }
}

/// A misbehaviour injected after the request has been read (and counted).
///
/// Over TLS, the faults that close act on the TCP socket under the TLS layer, as a crashing
/// server would: `Reset` sends RST and the two `Close…` faults send FIN without TLS
/// `close_notify`, which a rustls client reports as an `UnexpectedEof` error rather than a clean
/// end of stream. `Malformed` closes gracefully, `close_notify` included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Close with `SO_LINGER` 0 without writing anything: the client sees `ECONNRESET`.
    Reset,
    /// Close (FIN) without writing anything: the client sees end of stream.
    CloseBeforeHeaders,
    /// Send the head with a `Content-Length`, then half of the body, then close (FIN).
    CloseMidBody,
    /// Send a status line no HTTP parser accepts, then close.
    Malformed,
    /// Never answer; keep the connection open until the client closes it or the server stops.
    Stall,
}

impl Fault {
    /// Every fault with the name query strings and [`FromStr`] use, in declaration order: the
    /// one list the names, the parser and the error message are read from.
    const NAMED: [(Fault, &'static str); 5] = [
        (Fault::Reset, "reset"),
        (Fault::CloseBeforeHeaders, "close-before-headers"),
        (Fault::CloseMidBody, "close-mid-body"),
        (Fault::Malformed, "malformed"),
        (Fault::Stall, "stall"),
    ];

    const EXPECTED: &'static str =
        "reset, close-before-headers, close-mid-body, malformed or stall";

    /// Every fault, in declaration order.
    pub fn all() -> impl Iterator<Item = Fault> {
        Self::NAMED.into_iter().map(|(fault, _)| fault)
    }

    /// The name used in query strings and by [`FromStr`].
    pub fn name(self) -> &'static str {
        Self::NAMED
            .into_iter()
            .find_map(|(fault, name)| (fault == self).then_some(name))
            .expect("every fault is in NAMED")
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fault {
    type Err = ParseFaultError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::NAMED
            .into_iter()
            .find_map(|(fault, name)| (name == s).then_some(fault))
            .ok_or_else(|| ParseFaultError(s.to_owned()))
    }
}

/// The text is not the name of a [`Fault`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown fault {0:?}: expected {expected}", expected = Fault::EXPECTED)]
pub struct ParseFaultError(String);

#[cfg(test)]
mod tests {

    #[test]
    fn redirect_hops_count_down_and_keep_the_other_knobs() {
        assert_eq!(next_hop("/a?redirect=3&size=5"), "/a?redirect=2&size=5");
        assert_eq!(next_hop("/a?size=5&redirect=1"), "/a?size=5");
        assert_eq!(next_hop("/a?redirect=1"), "/a");
        let b: Behaviour = "redirect=3&status=307".parse().unwrap();
        assert_eq!((b.redirect, b.status), (3, 307));
        assert_eq!(b.to_string().parse::<Behaviour>().unwrap(), b);
        assert!("redirect=101".parse::<Behaviour>().is_err());
        assert!("redirect=x".parse::<Behaviour>().is_err());
    }

    use super::*;

    fn parse(query: &str) -> Result<Behaviour, KnobError> {
        query.parse()
    }

    #[test]
    fn knobs_parse() {
        let cases: &[(&str, Behaviour)] = &[
            ("", Behaviour::default()),
            (
                "delay=20ms",
                Behaviour {
                    delay: Duration::from_millis(20),
                    ..Behaviour::default()
                },
            ),
            (
                "status=503&size=0",
                Behaviour {
                    status: 503,
                    body_size: Some(0),
                    ..Behaviour::default()
                },
            ),
            (
                "fault=close-mid-body&close=1&chunked",
                Behaviour {
                    fault: Some(Fault::CloseMidBody),
                    close: true,
                    chunked: true,
                    ..Behaviour::default()
                },
            ),
            (
                "q=anything&&close=0&id",
                Behaviour {
                    close: false,
                    ..Behaviour::default()
                },
            ),
            (
                "token&json=1",
                Behaviour {
                    token: true,
                    json: true,
                    ..Behaviour::default()
                },
            ),
            (
                "delay=1s500ms",
                Behaviour {
                    delay: Duration::from_millis(1500),
                    ..Behaviour::default()
                },
            ),
        ];
        for (query, want) in cases {
            assert_eq!(parse(query).as_ref(), Ok(want), "query {query:?}");
        }
    }

    #[test]
    fn bad_values_name_the_knob() {
        let cases = [
            ("delay=soon", "delay"),
            ("delay=", "delay"),
            ("status=99", "status"),
            ("status=1000", "status"),
            ("status=abc", "status"),
            ("size=-1", "size"),
            ("fault=explode", "fault"),
            ("close=maybe", "close"),
            ("chunked=", "chunked"),
            ("token=2", "token"),
            ("json=yes please", "json"),
            ("timing=soon", "timing"),
            ("to=localhost", "to"),
        ];
        for (query, knob) in cases {
            let err = parse(query).expect_err(query);
            assert_eq!(err.knob(), knob, "query {query:?}");
            assert!(err.to_string().contains(knob), "{err}");
        }
    }

    #[test]
    fn faults_round_trip() {
        for fault in Fault::all() {
            assert_eq!(fault.to_string().parse(), Ok(fault));
        }
        assert!("Reset".parse::<Fault>().is_err());
    }

    #[test]
    fn display_round_trips() {
        let behaviours = [
            Behaviour::default(),
            Behaviour {
                delay: Duration::from_micros(1500),
                status: 418,
                body_size: Some(12),
                fault: Some(Fault::Stall),
                close: true,
                chunked: true,
                token: true,
                json: true,
                timing: true,
                redirect: 2,
                redirect_to: Some("127.0.0.1:8081".parse().unwrap()),
            },
        ];
        for b in behaviours {
            assert_eq!(parse(&b.to_string()), Ok(b.clone()), "{b}");
        }
        assert_eq!(Behaviour::default().to_string(), "");
        let b = Behaviour {
            status: 503,
            close: true,
            ..Behaviour::default()
        };
        assert_eq!(b.to_string(), "status=503&close=1");
    }
}
