//! A unary call, built once before a run and sent as it is by every request: the method's
//! path, the request headers gRPC asks for, the user's metadata, and the request message read
//! from JSON, encoded and framed once (never per call).

use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor, MethodDescriptor};

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
    /// The method streams; only unary calls are sent so far.
    #[error("{0} is a streaming method; only unary calls can be sent so far")]
    Streaming(String),
    /// A metadata key the protocol itself sets.
    #[error(
        "metadata {0:?} is set by gRPC itself (te, content-type and grpc-* keys are reserved)"
    )]
    Reserved(String),
}

/// A unary call as every request sends it.
#[derive(Debug, Clone)]
pub struct Call {
    /// `/package.Service/Method`, the request's path.
    pub path: String,
    /// The request's headers, lower-case names: `content-type`, `te: trailers`, the
    /// `grpc-timeout` and `grpc-encoding` when given, `grpc-accept-encoding`, then the metadata.
    pub headers: Vec<(String, String)>,
    /// The framed request message.
    pub body: Bytes,
}

impl Call {
    /// The unary call of `method` with the request message `json`, `metadata` sent as headers
    /// (names lower-cased), the server told of `timeout` (`grpc-timeout`), the message
    /// compressed with `compression`.
    pub fn unary(
        method: &MethodDescriptor,
        json: &str,
        metadata: &[(String, String)],
        timeout: Option<Duration>,
        compression: Compression,
    ) -> Result<Call, CallError> {
        if method.is_client_streaming() || method.is_server_streaming() {
            return Err(CallError::Streaming(method.full_name().into()));
        }
        let message = message_from_json(&method.input(), json)?;
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
        Ok(Call {
            path: format!("/{}/{}", service.full_name(), method.name()),
            headers,
            body: frame::encode(&message, compression),
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
        let call = Call::unary(
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
        let gzipped = Call::unary(
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
    fn streaming_methods_and_reserved_metadata_are_refused() {
        let schema = greeter();
        let lots = schema.method("helloworld.Greeter/Lots").unwrap();
        let e = Call::unary(&lots, "{}", &[], None, Compression::Identity).unwrap_err();
        assert_eq!(e, CallError::Streaming("helloworld.Greeter.Lots".into()));
        let hello = schema.method("helloworld.Greeter/SayHello").unwrap();
        for name in ["grpc-timeout", "TE", "Content-Type"] {
            let metadata = [(name.to_string(), "x".to_string())];
            let e = Call::unary(&hello, "{}", &metadata, None, Compression::Identity);
            assert_eq!(
                e.unwrap_err(),
                CallError::Reserved(name.to_ascii_lowercase())
            );
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
