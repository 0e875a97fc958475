//! A call, built once before a run and sent as it is by every request: the method's path, the
//! request headers gRPC asks for, the user's metadata, and the request messages read from JSON,
//! encoded and framed once (never per call). The method's [`Kind`] (unary or which side
//! streams) comes from its schema.

use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde::de::{SeqAccess, Visitor};

use crate::frame::{self, Compression};

/// The content type of a gRPC request whose messages are protobuf.
pub const CONTENT_TYPE: &str = "application/grpc";

/// Why a call cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CallError {
    /// The JSON is not a message of the method's input type.
    #[error("the message is not a {message} as JSON: {reason}")]
    Json {
        /// The input message's full name.
        message: String,
        /// serde_json's or prost-reflect's reason, with a line and column.
        reason: String,
    },
    /// A JSON array of messages for a method whose client sends one message.
    #[error(
        "a JSON array of messages is for a method whose client streams; {method} is {kind}: \
         give one message, a JSON object"
    )]
    Array {
        /// The method's full name.
        method: String,
        /// Its kind's name.
        kind: &'static str,
    },
    /// A metadata key the protocol itself sets.
    #[error(
        "metadata {0:?} is set by gRPC itself (te, content-type and grpc-* keys are reserved)"
    )]
    Reserved(String),
}

/// How a method's messages flow: one each way, or a stream from either side or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One request message, one response message.
    Unary,
    /// One request message, a stream of response messages.
    ServerStreaming,
    /// A stream of request messages, one response message.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

impl Kind {
    /// The kind the schema declares for `method`.
    pub fn of(method: &MethodDescriptor) -> Kind {
        match (method.is_client_streaming(), method.is_server_streaming()) {
            (false, false) => Kind::Unary,
            (false, true) => Kind::ServerStreaming,
            (true, false) => Kind::ClientStreaming,
            (true, true) => Kind::Bidi,
        }
    }

    /// Whether the client sends a stream of messages.
    pub fn client_streams(self) -> bool {
        matches!(self, Kind::ClientStreaming | Kind::Bidi)
    }

    /// Whether either side streams.
    pub fn streams(self) -> bool {
        self != Kind::Unary
    }

    /// Its name in words.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Unary => "unary",
            Kind::ServerStreaming => "server streaming",
            Kind::ClientStreaming => "client streaming",
            Kind::Bidi => "bidirectional streaming",
        }
    }
}

/// A call as every request sends it.
#[derive(Debug, Clone)]
pub struct Call {
    /// `/package.Service/Method`, the request's path.
    pub path: String,
    /// The request's headers, lower-case names: `content-type`, `te: trailers`, the
    /// `grpc-timeout` and `grpc-encoding` when given, `grpc-accept-encoding`, then the metadata.
    pub headers: Vec<(String, String)>,
    /// The framed request messages, one after the other: one, unless the client streams and
    /// the JSON was an array of them.
    pub body: Bytes,
    /// How many messages `body` holds.
    pub messages: usize,
    /// The method's kind.
    pub kind: Kind,
}

impl Call {
    /// The call of `method` with the request message `json` (for a method whose client
    /// streams, a JSON array of messages too, sent in turn), `metadata` sent as headers (names
    /// lower-cased), the server told of `timeout` (`grpc-timeout`), the messages compressed
    /// with `compression`.
    pub fn new(
        method: &MethodDescriptor,
        json: &str,
        metadata: &[(String, String)],
        timeout: Option<Duration>,
        compression: Compression,
    ) -> Result<Call, CallError> {
        let kind = Kind::of(method);
        let messages = match json.trim_start().starts_with('[') {
            true if kind.client_streams() => messages_from_json(&method.input(), json)?,
            true => {
                return Err(CallError::Array {
                    method: method.full_name().into(),
                    kind: kind.name(),
                })
            }
            false => vec![message_from_json(&method.input(), json)?],
        };
        let mut headers = vec![
            ("content-type".to_string(), CONTENT_TYPE.to_string()),
            ("te".into(), "trailers".into()),
        ];
        if let Some(timeout) = timeout {
            headers.push(("grpc-timeout".into(), timeout_header(timeout)));
        }
        if compression != Compression::Identity {
            headers.push(("grpc-encoding".into(), compression.name().into()));
        }
        headers.push(("grpc-accept-encoding".into(), "gzip".into()));
        for (name, value) in metadata {
            let name = name.to_ascii_lowercase();
            if name == "te" || name == "content-type" || name.starts_with("grpc-") {
                return Err(CallError::Reserved(name));
            }
            headers.push((name, value.clone()));
        }
        let service = method.parent_service();
        let body: Vec<u8> = messages
            .iter()
            .flat_map(|m| frame::encode(m, compression))
            .collect();
        Ok(Call {
            path: format!("/{}/{}", service.full_name(), method.name()),
            headers,
            body: body.into(),
            messages: messages.len(),
            kind,
        })
    }
}

/// `json` read as a `descriptor` message (protobuf's JSON mapping: field names in lowerCamelCase
/// or as declared, enums by name, 64-bit integers as strings or numbers, well-known types in
/// their JSON forms; an unknown field is an error) and encoded in protobuf's binary form.
pub fn message_from_json(descriptor: &MessageDescriptor, json: &str) -> Result<Vec<u8>, CallError> {
    let error = |reason: String| CallError::Json {
        message: descriptor.full_name().into(),
        reason,
    };
    let mut reader = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(descriptor.clone(), &mut reader)
        .map_err(|e| error(e.to_string()))?;
    reader.end().map_err(|e| error(e.to_string()))?;
    Ok(message.encode_to_vec())
}

/// `json`, a JSON array of `descriptor` messages (each read as [`message_from_json`] reads
/// one), encoded; an empty array is refused.
pub fn messages_from_json(
    descriptor: &MessageDescriptor,
    json: &str,
) -> Result<Vec<Vec<u8>>, CallError> {
    let error = |reason: String| CallError::Json {
        message: descriptor.full_name().into(),
        reason,
    };
    let mut reader = serde_json::Deserializer::from_str(json);
    let messages = serde::Deserializer::deserialize_seq(&mut reader, Messages(descriptor))
        .map_err(|e| error(e.to_string()))?;
    reader.end().map_err(|e| error(e.to_string()))?;
    if messages.is_empty() {
        return Err(error("the array holds no message".into()));
    }
    Ok(messages.iter().map(|m| m.encode_to_vec()).collect())
}

/// Reads a JSON array's elements as messages of one type, each where it stands in the text
/// (an error keeps its line and column).
struct Messages<'a>(&'a MessageDescriptor);

impl<'de> Visitor<'de> for Messages<'_> {
    type Value = Vec<DynamicMessage>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "an array of {} messages", self.0.full_name())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut messages = Vec::new();
        while let Some(m) = seq.next_element_seed(self.0.clone())? {
            messages.push(m);
        }
        Ok(messages)
    }
}

/// A `grpc-timeout` value: at most 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`), the
/// finest unit the timeout fits in, rounded up so the server's deadline is never the shorter.
pub fn timeout_header(timeout: Duration) -> String {
    const MAX: u128 = 99_999_999;
    let nanos = timeout.as_nanos().max(1);
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (size, unit) in units {
        let value = nanos.div_ceil(size);
        if value <= MAX {
            return format!("{value}{unit}");
        }
    }
    format!("{MAX}H")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frames;
    use crate::schema::Schema;

    /// Compiled once for all the tests: each compiling its own from one directory, the tests
    /// running at once emptied it under each other (`temp_dir` starts it afresh).
    fn greeter() -> Schema {
        static GREETER: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
        GREETER.get_or_init(compile_greeter).clone()
    }

    fn compile_greeter() -> Schema {
        let dir = belier_testsupport::dirs::temp_dir("call");
        let proto = r#"syntax = "proto3";
package helloworld;
import "google/protobuf/duration.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc Lots (HelloRequest) returns (stream HelloReply) {}
  rpc Up (stream HelloRequest) returns (HelloReply) {}
  rpc Chat (stream HelloRequest) returns (stream HelloReply) {}
}
enum Mood { CALM = 0; CHEERFUL = 1; }
message HelloRequest {
  string name = 1;
  int64 times = 2;
  repeated string tags = 3;
  Mood mood = 4;
  google.protobuf.Duration wait = 5;
}
message HelloReply { string message = 1; }
"#;
        let path = dir.join("greeter.proto");
        std::fs::write(&path, proto).unwrap();
        Schema::from_proto_files(&[path], &[]).unwrap()
    }

    #[test]
    fn json_becomes_the_message_protobuf_would_encode() {
        let schema = greeter();
        let input = schema
            .method("helloworld.Greeter/SayHello")
            .unwrap()
            .input();
        let json = r#"{"name": "belier", "times": "3", "tags": ["a", "b"], "mood": "CHEERFUL", "wait": "1.5s"}"#;
        let bytes = message_from_json(&input, json).unwrap();
        let decoded = DynamicMessage::decode(input.clone(), bytes.as_slice()).unwrap();
        assert_eq!(
            serde_json::to_value(&decoded).unwrap(),
            serde_json::json!({"name": "belier", "times": "3", "tags": ["a", "b"], "mood": "CHEERFUL", "wait": "1.500s"})
        );
        // Field 1, length-delimited, "belier": the bytes protobuf itself writes.
        assert_eq!(&bytes[..8], b"\x0a\x06belier");
        assert!(message_from_json(&input, "{}").unwrap().is_empty());
    }

    #[test]
    fn json_that_is_not_the_message_is_refused_with_where() {
        let schema = greeter();
        let input = schema
            .method("helloworld.Greeter/SayHello")
            .unwrap()
            .input();
        for (json, says) in [
            (r#"{"nom": "x"}"#, "nom"),
            (r#"{"name": 3}"#, "line 1 column"),
            (r#"{"name": "x""#, "EOF"),
            (r#"{"name": "x"} extra"#, "trailing"),
            (r#"{"mood": "SAD"}"#, "SAD"),
        ] {
            let e = message_from_json(&input, json).unwrap_err().to_string();
            assert!(
                e.starts_with("the message is not a helloworld.HelloRequest as JSON: "),
                "{e}"
            );
            assert!(e.contains(says), "{json}: {e}");
        }
    }

    #[test]
    fn a_unary_call_is_built_once_with_its_path_headers_and_framed_message() {
        let schema = greeter();
        let method = schema.method("helloworld.Greeter/SayHello").unwrap();
        let metadata = [("X-Tenant".to_string(), "blue".to_string())];
        let call = Call::new(
            &method,
            r#"{"name": "belier"}"#,
            &metadata,
            Some(Duration::from_millis(250)),
            Compression::Identity,
        )
        .unwrap();
        assert_eq!(call.path, "/helloworld.Greeter/SayHello");
        let headers: Vec<(&str, &str)> = call
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                ("grpc-timeout", "250000u"),
                ("grpc-accept-encoding", "gzip"),
                ("x-tenant", "blue"),
            ]
        );
        assert_eq!(&call.body[..], b"\0\0\0\0\x08\x0a\x06belier");
        let gzipped = Call::new(
            &method,
            r#"{"name": "belier"}"#,
            &[],
            None,
            Compression::Gzip,
        )
        .unwrap();
        assert!(gzipped
            .headers
            .contains(&("grpc-encoding".into(), "gzip".into())));
        let mut frames = Frames::new(Some(Compression::Gzip), frame::MAX_MESSAGE, true);
        frames.feed(&gzipped.body).unwrap();
        assert_eq!(frames.last(), Some(&b"\x0a\x06belier"[..]));
    }

    #[test]
    fn reserved_metadata_is_refused() {
        let schema = greeter();
        let hello = schema.method("helloworld.Greeter/SayHello").unwrap();
        for name in ["grpc-timeout", "TE", "Content-Type"] {
            let metadata = [(name.to_string(), "x".to_string())];
            let e = Call::new(&hello, "{}", &metadata, None, Compression::Identity);
            assert_eq!(
                e.unwrap_err(),
                CallError::Reserved(name.to_ascii_lowercase())
            );
        }
    }

    #[test]
    fn each_kind_comes_from_the_schema_and_a_client_stream_takes_an_array_of_messages() {
        let schema = greeter();
        let method = |name: &str| {
            schema
                .method(&format!("helloworld.Greeter/{name}"))
                .unwrap()
        };
        let kinds = [
            ("SayHello", Kind::Unary),
            ("Lots", Kind::ServerStreaming),
            ("Up", Kind::ClientStreaming),
            ("Chat", Kind::Bidi),
        ];
        for (name, kind) in kinds {
            let call = Call::new(&method(name), "{}", &[], None, Compression::Identity).unwrap();
            assert_eq!((call.kind, call.messages), (kind, 1), "{name}");
            assert_eq!(&call.body[..], b"\0\0\0\0\0");
        }
        let json = r#"[{"name": "a"}, {}, {"name": "b"}]"#;
        for name in ["Up", "Chat"] {
            let call = Call::new(&method(name), json, &[], None, Compression::Identity).unwrap();
            assert_eq!(call.messages, 3);
            assert_eq!(
                &call.body[..],
                b"\0\0\0\0\x03\x0a\x01a\0\0\0\0\0\0\0\0\0\x03\x0a\x01b"
            );
        }
        // An array for a method whose client sends one message, an empty or a bad one.
        let e = Call::new(&method("Lots"), json, &[], None, Compression::Identity);
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("helloworld.Greeter.Lots is server streaming"),
            "{e}"
        );
        for (json, says) in [
            ("[]", "no message"),
            ("[{}, {\"nom\": 1}]", "line 1 column"),
            ("[{}] {}", "trailing"),
        ] {
            let e = Call::new(&method("Up"), json, &[], None, Compression::Identity);
            let e = e.unwrap_err().to_string();
            assert!(e.contains(says), "{json}: {e}");
        }
    }

    #[test]
    fn grpc_timeouts_take_the_finest_unit_that_fits_eight_digits() {
        for (timeout, header) in [
            (Duration::from_nanos(1), "1n"),
            (Duration::ZERO, "1n"),
            (Duration::from_millis(50), "50000000n"),
            (Duration::from_millis(250), "250000u"),
            (Duration::from_secs(20), "20000000u"),
            (Duration::from_secs(3600), "3600000m"),
            (Duration::from_secs(200_000), "200000S"),
            (Duration::from_secs(100_000_000), "1666667M"),
            (Duration::from_nanos(1_500_000_001), "1500001u"),
        ] {
            assert_eq!(timeout_header(timeout), header, "{timeout:?}");
        }
    }
}
