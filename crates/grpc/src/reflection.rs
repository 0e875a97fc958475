//! Server reflection (`grpc.reflection.v1.ServerReflection`): the questions a client asks to
//! learn a server's schema when it was given none, and what the answers mean. The file that
//! declares the called service is asked for by symbol, then every file it imports that has not
//! come yet by name; the files become a [`Schema`] as a protoset would. A service the server
//! does not know makes the client ask for the list of those it serves, so the error can name
//! them.
//!
//! Pure: the caller carries each request over a stream of its own (one request and one answer
//! per call of `ServerReflectionInfo`; the method streams both ways, and a server answers each
//! request as it comes, so a call per question is as valid as one long call) and hands back
//! the answer's message.

use std::collections::{HashSet, VecDeque};

use bytes::Bytes;
use prost::Message as _;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::DescriptorPool;

use crate::frame::{self, Compression};
use crate::Schema;

/// The path of reflection's method, version 1.
pub const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
/// The same method under its earlier name, which servers older than grpc-go 1.45 (2022) and
/// some other implementations still serve alone.
pub const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// `NOT_FOUND`, the code of a reflection error answer for a name the server does not know.
const NOT_FOUND: i32 = 5;

/// Why reflection gave no schema.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReflectionError {
    /// The server serves no such service.
    #[error(
        "the server has no service {service}; it serves {}",
        crate::schema::list(known)
    )]
    NoService {
        /// The service asked for.
        service: String,
        /// The services it serves, reflection's own included.
        known: Vec<String>,
    },
    /// The server answered a question with an error.
    #[error("the server's reflection answered {what} with error {code}: {message}")]
    Refused {
        /// What was asked.
        what: String,
        /// The gRPC code it gave.
        code: i32,
        /// Its message.
        message: String,
    },
    /// An answer that is not reflection's, or files that do not make a schema.
    #[error("the server's reflection answer cannot be read: {0}")]
    Malformed(String),
}

/// A question put to the server.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Question {
    /// The file that declares a symbol (the service).
    Symbol(String),
    /// A file by name (an import).
    File(String),
    /// The services it serves.
    Services,
}

/// Reflection of one service's schema, as questions and answers (see the module's text).
#[derive(Debug)]
pub struct Reflection {
    service: String,
    question: Option<Question>,
    /// Imports still to ask for.
    wanted: VecDeque<String>,
    /// The names of the files received, and their serialized `FileDescriptorProto`s.
    names: HashSet<String>,
    files: Vec<Vec<u8>>,
}

impl Reflection {
    /// Reflection of the schema of `service` (`package.Service`).
    pub fn new(service: &str) -> Reflection {
        Reflection {
            service: service.into(),
            question: Some(Question::Symbol(service.into())),
            wanted: VecDeque::new(),
            names: HashSet::new(),
            files: Vec::new(),
        }
    }

    /// The next request to send, framed; `None` once the schema is complete.
    pub fn request(&self) -> Option<Bytes> {
        let question = self.question.as_ref()?;
        let message_request = Some(match question {
            Question::Symbol(s) => proto::Request::FileContainingSymbol(s.clone()),
            Question::File(f) => proto::Request::FileByFilename(f.clone()),
            Question::Services => proto::Request::ListServices(String::new()),
        });
        let request = proto::ServerReflectionRequest {
            host: String::new(),
            message_request,
        };
        Some(frame::encode(
            &request.encode_to_vec(),
            Compression::Identity,
        ))
    }

    /// Takes in the answer to the last request: the response message, unframed.
    pub fn answer(&mut self, message: &[u8]) -> Result<(), ReflectionError> {
        let response = proto::ServerReflectionResponse::decode(message)
            .map_err(|e| ReflectionError::Malformed(e.to_string()))?;
        match response.message_response {
            Some(proto::Response::Files(files)) => {
                for bytes in files.file_descriptor_proto {
                    self.take_file(bytes)?;
                }
            }
            Some(proto::Response::Error(e))
                if e.error_code == NOT_FOUND
                    && matches!(self.question, Some(Question::Symbol(_))) =>
            {
                self.question = Some(Question::Services);
                return Ok(());
            }
            Some(proto::Response::Error(e)) => {
                return Err(ReflectionError::Refused {
                    what: self.asked(),
                    code: e.error_code,
                    message: e.error_message,
                })
            }
            Some(proto::Response::Services(list)) => {
                let mut known: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
                known.sort();
                return Err(ReflectionError::NoService {
                    service: self.service.clone(),
                    known,
                });
            }
            other => {
                return Err(ReflectionError::Malformed(format!(
                    "{other:?} for {}",
                    self.asked()
                )))
            }
        }
        self.question = self.next_import().map(Question::File);
        Ok(())
    }

    /// What the current question asks, in words.
    fn asked(&self) -> String {
        match &self.question {
            Some(Question::Symbol(s)) => format!("the file declaring {s}"),
            Some(Question::File(f)) => format!("the file {f}"),
            Some(Question::Services) => "the list of services".into(),
            None => "nothing".into(),
        }
    }

    /// A file received: kept unless it came already, its imports wanted unless they did.
    fn take_file(&mut self, bytes: Vec<u8>) -> Result<(), ReflectionError> {
        let file = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| ReflectionError::Malformed(format!("a file descriptor: {e}")))?;
        let name = file.name.unwrap_or_default();
        if !self.names.insert(name) {
            return Ok(());
        }
        self.files.push(bytes);
        self.wanted.extend(file.dependency);
        Ok(())
    }

    /// The next import not received yet.
    fn next_import(&mut self) -> Option<String> {
        std::iter::from_fn(|| self.wanted.pop_front()).find(|name| !self.names.contains(name))
    }

    /// The schema of the files received, once [`Reflection::request`] says it is complete.
    pub fn schema(self) -> Result<Schema, ReflectionError> {
        let set = proto::FileDescriptorSet { file: self.files };
        DescriptorPool::decode(set.encode_to_vec().as_slice())
            .map(Schema::from_pool)
            .map_err(|e| ReflectionError::Malformed(format!("the files do not build: {e}")))
    }
}

/// Reflection's messages (grpc/reflection/v1/reflection.proto; v1alpha's are the same on the
/// wire), the fields a client uses, and a `FileDescriptorSet` of serialized files.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServerReflectionRequest {
        #[prost(string, tag = "1")]
        pub host: String,
        #[prost(oneof = "Request", tags = "3, 4, 7")]
        pub message_request: Option<Request>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Request {
        #[prost(string, tag = "3")]
        FileByFilename(String),
        #[prost(string, tag = "4")]
        FileContainingSymbol(String),
        #[prost(string, tag = "7")]
        ListServices(String),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServerReflectionResponse {
        #[prost(oneof = "Response", tags = "4, 6, 7")]
        pub message_response: Option<Response>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Response {
        #[prost(message, tag = "4")]
        Files(FileDescriptorResponse),
        #[prost(message, tag = "6")]
        Services(ListServiceResponse),
        #[prost(message, tag = "7")]
        Error(ErrorResponse),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FileDescriptorResponse {
        #[prost(bytes = "vec", repeated, tag = "1")]
        pub file_descriptor_proto: Vec<Vec<u8>>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ListServiceResponse {
        #[prost(message, repeated, tag = "1")]
        pub service: Vec<ServiceResponse>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ServiceResponse {
        #[prost(string, tag = "1")]
        pub name: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ErrorResponse {
        #[prost(int32, tag = "1")]
        pub error_code: i32,
        #[prost(string, tag = "2")]
        pub error_message: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct FileDescriptorSet {
        #[prost(bytes = "vec", repeated, tag = "1")]
        pub file: Vec<Vec<u8>>,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A server's reflection over a compiled schema: api/ping.proto declares api.Pinger and
    /// imports shared/types.proto, which imports google/protobuf/timestamp.proto. Like grpc-go,
    /// it answers a symbol with its file alone (and a file by name with that file).
    struct Server {
        files: HashMap<String, Vec<u8>>,
    }

    impl Server {
        fn new(test: &str) -> Server {
            let dir = belier_testsupport::dirs::temp_dir(test);
            let write = |name: &str, text: &str| {
                let path = dir.join(name);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            };
            write(
                "shared/types.proto",
                "syntax = \"proto3\";\npackage shared;\nimport \"google/protobuf/timestamp.proto\";\n\
                 message Ping { string id = 1; google.protobuf.Timestamp at = 2; }\n",
            );
            write(
                "api/ping.proto",
                "syntax = \"proto3\";\npackage api;\nimport \"shared/types.proto\";\n\
                 service Pinger { rpc Ping (shared.Ping) returns (shared.Ping); }\n",
            );
            let mut compiler = protox::Compiler::new([&dir]).unwrap();
            compiler.include_imports(true);
            compiler.open_file("api/ping.proto").unwrap();
            let files = compiler
                .file_descriptor_set()
                .file
                .into_iter()
                .map(|f| (f.name().to_string(), f.encode_to_vec()))
                .collect();
            Server { files }
        }

        fn answer(&self, request: &[u8]) -> Vec<u8> {
            let request = proto::ServerReflectionRequest::decode(&request[5..]).unwrap();
            let file = |name: &str| {
                let found = self.files.get(name).cloned().into_iter().collect();
                proto::Response::Files(proto::FileDescriptorResponse {
                    file_descriptor_proto: found,
                })
            };
            let not_found = proto::Response::Error(proto::ErrorResponse {
                error_code: NOT_FOUND,
                error_message: "symbol not found".into(),
            });
            let response = match request.message_request.unwrap() {
                proto::Request::FileContainingSymbol(s) if s == "api.Pinger" => {
                    file("api/ping.proto")
                }
                proto::Request::FileContainingSymbol(_) => not_found,
                proto::Request::FileByFilename(name) => file(&name),
                proto::Request::ListServices(_) => {
                    let names = ["api.Pinger", "grpc.reflection.v1.ServerReflection"];
                    let service = names
                        .iter()
                        .map(|n| proto::ServiceResponse {
                            name: n.to_string(),
                        })
                        .collect();
                    proto::Response::Services(proto::ListServiceResponse { service })
                }
            };
            proto::ServerReflectionResponse {
                message_response: Some(response),
            }
            .encode_to_vec()
        }
    }

    /// Asks `server` until the reflection is done; the questions asked, and the outcome.
    fn reflect(server: &Server, service: &str) -> (usize, Result<Schema, ReflectionError>) {
        let mut reflection = Reflection::new(service);
        let mut asked = 0;
        while let Some(request) = reflection.request() {
            asked += 1;
            if let Err(e) = reflection.answer(&server.answer(&request)) {
                return (asked, Err(e));
            }
        }
        (asked, reflection.schema())
    }

    #[test]
    fn the_service_file_and_its_imports_make_the_schema() {
        let (asked, schema) = reflect(&Server::new("reflect-imports"), "api.Pinger");
        // The symbol, then shared/types.proto, then google/protobuf/timestamp.proto.
        assert_eq!(asked, 3);
        let method = schema.unwrap().method("api.Pinger/Ping").unwrap();
        let at = method.input().get_field_by_name("at").unwrap();
        assert_eq!(
            at.kind().as_message().unwrap().full_name(),
            "google.protobuf.Timestamp"
        );
    }

    #[test]
    fn an_unknown_service_is_named_with_those_the_server_serves() {
        let (asked, e) = reflect(&Server::new("reflect-unknown"), "api.Pong");
        assert_eq!(asked, 2);
        assert_eq!(
            e.unwrap_err().to_string(),
            "the server has no service api.Pong; it serves api.Pinger, \
             grpc.reflection.v1.ServerReflection"
        );
    }

    #[test]
    fn an_error_answer_and_a_bad_answer_are_errors() {
        let mut reflection = Reflection::new("api.Pinger");
        reflection
            .answer(&Server::new("reflect-errors").answer(&reflection.request().unwrap()))
            .unwrap();
        let refused = proto::ServerReflectionResponse {
            message_response: Some(proto::Response::Error(proto::ErrorResponse {
                error_code: 13,
                error_message: "boom".into(),
            })),
        };
        assert_eq!(
            reflection
                .answer(&refused.encode_to_vec())
                .unwrap_err()
                .to_string(),
            "the server's reflection answered the file shared/types.proto with error 13: boom"
        );
        let e = Reflection::new("api.Pinger")
            .answer(b"\xff\xff")
            .unwrap_err();
        assert!(matches!(e, ReflectionError::Malformed(_)), "{e}");
    }
}
