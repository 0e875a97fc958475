//! Checks on a response: each has a stable name for reports and a pass/fail test.

use std::time::Duration;

use belier_engine::user::Reply;
use regex::Regex;
use serde_json::Value;
use serde_json_path::JsonPath;

use crate::duration;
use crate::extract::BodyJson;

/// What a check tests.
#[derive(Clone, Debug)]
pub enum Kind {
    /// The status is one of these (replaces the default rule "status < 400").
    Status(Vec<u16>),
    /// A gRPC call's status code is one of these (replaces the default rule "status OK").
    GrpcStatus(Vec<u8>),
    /// The body contains this text.
    BodyContains(String),
    /// The body matches this regex.
    BodyMatches(Regex),
    /// The first node the path selects equals the value (numbers compare as numbers).
    Json(JsonPath, String, Value),
    /// The header is present, or has this value.
    Header(String, Option<String>),
    /// `Reply::latency` is at most this.
    MaxLatency(Duration),
}

/// One check of a request step.
#[derive(Clone, Debug)]
pub struct Check {
    /// Row in `Users::checks`.
    pub index: usize,
    /// What it tests.
    pub kind: Kind,
}

impl Kind {
    /// The check's name in reports, without the step: `status in [200]`.
    pub fn label(&self) -> String {
        match self {
            Kind::Status(codes) => {
                let codes: Vec<String> = codes.iter().map(u16::to_string).collect();
                format!("status in [{}]", codes.join(", "))
            }
            Kind::GrpcStatus(codes) => {
                let names: Vec<&str> = codes
                    .iter()
                    .map(|c| belier_grpc::Code::from_number(u32::from(*c)).name())
                    .collect();
                format!("status in [{}]", names.join(", "))
            }
            Kind::BodyContains(text) => format!("body contains {text:?}"),
            Kind::BodyMatches(re) => format!("body matches /{}/", re.as_str()),
            Kind::Json(_, path, value) => format!("json {path} == {value}"),
            Kind::Header(name, None) => format!("header {name} present"),
            Kind::Header(name, Some(value)) => format!("header {name} == {value:?}"),
            Kind::MaxLatency(bound) => {
                format!("latency <= {}", duration::show(*bound))
            }
        }
    }

    /// Whether the response body must be kept for this check.
    pub fn needs_body(&self) -> bool {
        matches!(
            self,
            Kind::BodyContains(_) | Kind::BodyMatches(_) | Kind::Json(..)
        )
    }

    /// Whether the reply passes.
    pub fn passes(&self, reply: &Reply<'_>, json: &mut BodyJson) -> bool {
        match self {
            Kind::Status(codes) => codes.contains(&reply.status),
            Kind::GrpcStatus(codes) => reply.grpc.is_some_and(|c| codes.contains(&c)),
            Kind::BodyContains(text) => {
                let needle = text.as_bytes();
                needle.is_empty() || reply.body.windows(needle.len()).any(|w| w == needle)
            }
            Kind::BodyMatches(re) => re.is_match(&String::from_utf8_lossy(reply.body)),
            Kind::Json(path, _, expected) => json
                .get(reply.body)
                .and_then(|doc| path.query(doc).first().cloned())
                .is_some_and(|actual| json_equal(&actual, expected)),
            Kind::Header(name, expected) => match (reply.header(name), expected) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(actual), Some(expected)) => actual == expected.as_bytes(),
            },
            Kind::MaxLatency(bound) => reply.latency <= *bound,
        }
    }
}

/// JSON equality where `1` equals `1.0`.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply<'a>(status: u16, body: &'a [u8], latency_ms: u64) -> Reply<'a> {
        Reply {
            status,
            head: b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n",
            body,
            body_truncated: false,
            latency: Duration::from_millis(latency_ms),
            grpc: None,
        }
    }

    #[test]
    fn each_kind_passes_and_fails() {
        let body = br#"{"name": "bob", "n": 3, "tags": ["a"]}"#;
        let ok = reply(200, body, 50);
        let bad = reply(500, b"oops", 500);
        let json = |p: &str, v: Value| Kind::Json(JsonPath::parse(p).unwrap(), p.into(), v);
        let cases = [
            Kind::Status(vec![200, 201]),
            Kind::BodyContains("bob".into()),
            Kind::BodyMatches(Regex::new(r#""n": \d"#).unwrap()),
            json("$.name", Value::from("bob")),
            json("$.n", serde_json::json!(3.0)),
            json("$.tags", serde_json::json!(["a"])),
            Kind::Header("content-type".into(), None),
            Kind::Header("Content-Type".into(), Some("application/json".into())),
            Kind::MaxLatency(Duration::from_millis(200)),
        ];
        for kind in &cases {
            assert!(
                kind.passes(&ok, &mut BodyJson::default()),
                "{}",
                kind.label()
            );
            let failing = if matches!(kind, Kind::Header(..)) {
                Reply {
                    head: b"HTTP/1.1 500 X\r\nContent-Type: text/plain\r\n\r\n",
                    ..bad
                }
            } else {
                bad
            };
            let expect_pass = matches!(kind, Kind::Header(_, None));
            assert_eq!(
                kind.passes(&failing, &mut BodyJson::default()),
                expect_pass,
                "{}",
                kind.label()
            );
        }
        assert!(!Kind::Header("x-missing".into(), None).passes(&ok, &mut BodyJson::default()));
        assert!(!json("$.name", Value::from("ann")).passes(&ok, &mut BodyJson::default()));
    }

    #[test]
    fn labels_are_stable() {
        assert_eq!(Kind::Status(vec![200]).label(), "status in [200]");
        assert_eq!(
            Kind::BodyContains("ok".into()).label(),
            "body contains \"ok\""
        );
        assert_eq!(
            Kind::MaxLatency(Duration::from_millis(200)).label(),
            "latency <= 200ms"
        );
        assert_eq!(
            Kind::Header("X-A".into(), None).label(),
            "header X-A present"
        );
    }
}
