//! A method as a plan's `grpc:` step calls it: the request message built from JSON per call
//! (a step's message is templated, so it cannot be framed once as [`crate::Call`] frames a
//! flags run's), and the response message read back as JSON for checks and extraction.

use bytes::Bytes;
use prost_reflect::{DynamicMessage, MethodDescriptor, SerializeOptions};

use crate::call::{message_from_json, CallError, Kind};
use crate::frame::{self, Compression, Frames};

/// Most bytes a response message read back as JSON may have (a kept body is bounded too).
const MOST_RESPONSE_BYTES: usize = 4 << 20;

/// A method of a schema ([`crate::Schema::method`]), ready to encode requests and decode
/// responses.
#[derive(Debug, Clone)]
pub struct Method {
    descriptor: MethodDescriptor,
}

impl Method {
    /// The method `descriptor` describes.
    pub fn new(descriptor: MethodDescriptor) -> Method {
        Method { descriptor }
    }

    /// `package.Service/Method`.
    pub fn name(&self) -> String {
        let service = self.descriptor.parent_service();
        format!("{}/{}", service.full_name(), self.descriptor.name())
    }

    /// `/package.Service/Method`, the request's path.
    pub fn path(&self) -> String {
        format!("/{}", self.name())
    }

    /// The full name of its request message type.
    pub fn input(&self) -> String {
        self.descriptor.input().full_name().to_string()
    }

    /// Unary, or which side streams.
    pub fn kind(&self) -> Kind {
        Kind::of(&self.descriptor)
    }

    /// `json`, one request message, encoded and framed (uncompressed).
    pub fn frame(&self, json: &str) -> Result<Bytes, CallError> {
        let message = message_from_json(&self.descriptor.input(), json)?;
        Ok(frame::encode(&message, Compression::Identity))
    }

    /// The last response message of `body` (a response body whose `grpc-encoding` was
    /// `encoding`), as protobuf's JSON mapping writes it (field names in lowerCamelCase,
    /// fields at their default values left out, 64-bit integers as strings); `None` when the
    /// body holds no whole message of the method's output type.
    pub fn response_json(
        &self,
        body: &[u8],
        encoding: Option<Compression>,
    ) -> Option<serde_json::Value> {
        let mut frames = Frames::new(encoding, MOST_RESPONSE_BYTES, true);
        frames.feed(body).ok()?;
        frames.finish().ok()?;
        let message = DynamicMessage::decode(self.descriptor.output(), frames.last()?).ok()?;
        let options = SerializeOptions::new();
        message
            .serialize_with_options(serde_json::value::Serializer, &options)
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schema;
    use prost::Message as _;

    const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter { rpc SayHello (HelloRequest) returns (HelloReply); }
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; int64 count = 2; }
"#;

    fn method() -> Method {
        let dir = std::env::temp_dir().join(format!("belier-grpc-method-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("hello.proto");
        std::fs::write(&file, PROTO).unwrap();
        let schema = Schema::from_proto_files(&[file], &[]).unwrap();
        Method::new(schema.method("helloworld.Greeter/SayHello").unwrap())
    }

    #[test]
    fn a_request_is_framed_and_a_response_read_back_as_json() {
        let m = method();
        assert_eq!(m.name(), "helloworld.Greeter/SayHello");
        assert_eq!(m.path(), "/helloworld.Greeter/SayHello");
        let framed = m.frame(r#"{"name": "ada"}"#).unwrap();
        assert_eq!(&framed[..5], &[0, 0, 0, 0, 5]);
        assert!(m.frame(r#"{"nom": "ada"}"#).is_err());
        let reply = DynamicMessage::deserialize(
            m.descriptor.output(),
            &mut serde_json::Deserializer::from_str(r#"{"message": "hi ada", "count": 3}"#),
        )
        .unwrap();
        let body = frame::encode(&reply.encode_to_vec(), Compression::Gzip);
        let json = m.response_json(&body, Some(Compression::Gzip)).unwrap();
        assert_eq!(json, serde_json::json!({"message": "hi ada", "count": "3"}));
        assert_eq!(m.response_json(&body[..4], Some(Compression::Gzip)), None);
    }
}
