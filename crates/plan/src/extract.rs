//! Extraction of values from a response into a user's variables: JSONPath, regex, header,
//! cookie.

use belier_engine::user::Reply;
use regex::Regex;
use serde_json::Value;
use serde_json_path::JsonPath;

/// The name and value of a `Set-Cookie` header.
pub fn name_value(set_cookie: &str) -> Option<(&str, &str)> {
    let pair = set_cookie.split(';').next()?;
    // A control character (a NUL a server let through, say) makes the cookie ignored, as RFC
    // 6265bis §5.6 says: sent back, it would make the next request unsendable.
    if pair.chars().any(|c| c.is_control() && c != '\t') {
        return None;
    }
    let (name, value) = pair.split_once('=')?;
    let name = name.trim();
    (!name.is_empty()).then(|| (name, value.trim().trim_matches('"')))
}

/// Where a value comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// The first node a JSONPath selects in the JSON body (strings as they are, anything else
    /// as JSON text).
    Json(JsonPath, String),
    /// The first capture group of the first match in the body (the whole match if the regex
    /// has no group).
    Regex(Regex),
    /// A response header's value.
    Header(String),
    /// A cookie set by this response, or else held in the jar.
    Cookie(String),
}

/// One extraction of a request step.
#[derive(Clone, Debug)]
pub struct Extraction {
    /// Variable slot written.
    pub slot: usize,
    /// Variable name.
    pub name: String,
    /// Where its value comes from.
    pub source: Source,
    /// Check row that counts whether it worked.
    pub check: usize,
}

/// The reply's body parsed as JSON at most once, for every extraction and check that needs it.
#[derive(Default)]
pub struct BodyJson {
    parsed: Option<Option<Value>>,
}

impl BodyJson {
    /// A gRPC reply's response message as JSON ([`belier_grpc::Method::response_json`]),
    /// decompressed as its `grpc-encoding` says: what its checks and extractions read.
    pub fn of_grpc(method: &belier_grpc::Method, reply: &Reply<'_>) -> BodyJson {
        let encoding = reply
            .header("grpc-encoding")
            .and_then(belier_grpc::Compression::parse);
        BodyJson {
            parsed: Some(method.response_json(reply.body, encoding)),
        }
    }

    /// The body as JSON, parsed the first time; `None` if it is not JSON.
    pub fn get(&mut self, body: &[u8]) -> Option<&Value> {
        self.parsed
            .get_or_insert_with(|| serde_json::from_slice(body).ok())
            .as_ref()
    }
}

impl Source {
    /// Whether the response body must be kept for this extraction.
    pub fn needs_body(&self) -> bool {
        matches!(self, Source::Json(..) | Source::Regex(_))
    }

    /// How the plan wrote it, for `describe`.
    pub fn describe(&self) -> String {
        match self {
            Source::Json(_, path) => format!("json {path}"),
            Source::Regex(re) => format!("regex /{}/", re.as_str()),
            Source::Header(name) => format!("header {name}"),
            Source::Cookie(name) => format!("cookie {name}"),
        }
    }

    /// The extracted value, if the response has it; a cookie this response does not set is
    /// looked up in `held` (the user's jar, now).
    pub fn extract(
        &self,
        reply: &Reply<'_>,
        json: &mut BodyJson,
        held: &dyn Fn(&str) -> Option<String>,
    ) -> Option<String> {
        match self {
            Source::Json(path, _) => {
                let value = path.query(json.get(reply.body)?).first()?;
                Some(match value {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            }
            Source::Regex(re) => {
                let body = String::from_utf8_lossy(reply.body);
                let captures = re.captures(&body)?;
                let m = captures.get(1).or_else(|| captures.get(0))?;
                Some(m.as_str().to_string())
            }
            Source::Header(name) => reply
                .header(name)
                .map(|v| String::from_utf8_lossy(v).into_owned()),
            Source::Cookie(name) => reply
                .headers()
                .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
                .filter_map(|(_, v)| {
                    let v = std::str::from_utf8(v).ok()?;
                    let (n, value) = name_value(v)?;
                    (n == name).then(|| value.to_string())
                })
                .last()
                .or_else(|| held(name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn reply<'a>(head: &'a [u8], body: &'a [u8]) -> Reply<'a> {
        Reply {
            status: 200,
            head,
            body,
            body_truncated: false,
            latency: Duration::from_millis(5),
            grpc: None,
        }
    }

    fn run(source: &Source, r: &Reply<'_>) -> Option<String> {
        source.extract(r, &mut BodyJson::default(), &|_| None)
    }

    #[test]
    fn each_source() {
        let head = b"HTTP/1.1 200 OK\r\nLocation: /next\r\nSet-Cookie: sid=s1; Path=/\r\n\r\n";
        let body = br#"{"token": "t0k", "user": {"id": 42}, "items": [1, 2]}"#;
        let r = reply(head, body);
        let json = |p: &str| Source::Json(JsonPath::parse(p).unwrap(), p.into());
        assert_eq!(run(&json("$.token"), &r).as_deref(), Some("t0k"));
        assert_eq!(run(&json("$.user.id"), &r).as_deref(), Some("42"));
        assert_eq!(run(&json("$.items"), &r).as_deref(), Some("[1,2]"));
        assert_eq!(run(&json("$.nope"), &r), None);
        let re = Source::Regex(Regex::new(r#""token": "(\w+)""#).unwrap());
        assert_eq!(run(&re, &r).as_deref(), Some("t0k"));
        assert_eq!(
            run(&Source::Regex(Regex::new("t0.").unwrap()), &r).as_deref(),
            Some("t0k")
        );
        assert_eq!(run(&Source::Regex(Regex::new("zzz").unwrap()), &r), None);
        assert_eq!(
            run(&Source::Header("location".into()), &r).as_deref(),
            Some("/next")
        );
        assert_eq!(run(&Source::Header("x-none".into()), &r), None);
        assert_eq!(
            run(&Source::Cookie("sid".into()), &r).as_deref(),
            Some("s1")
        );
        assert_eq!(run(&Source::Cookie("other".into()), &r), None);
        // Not JSON: a JSONPath finds nothing, without error.
        assert_eq!(run(&json("$.token"), &reply(head, b"<html>")), None);
    }

    #[test]
    fn cookie_from_the_jar() {
        let held = |name: &str| (name == "sid").then(|| "old".to_string());
        let r = reply(b"HTTP/1.1 200 OK\r\n\r\n", b"");
        let got = Source::Cookie("sid".into()).extract(&r, &mut BodyJson::default(), &held);
        assert_eq!(got.as_deref(), Some("old"));
    }
}
