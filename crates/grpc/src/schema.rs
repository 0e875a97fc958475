//! The services and messages a run may call: `.proto` files compiled at start by protox (a
//! pure-Rust protobuf compiler; no `protoc` to install), or a protoset, the serialized
//! `FileDescriptorSet` that `protoc --descriptor_set_out --include_imports` and `buf build`
//! write.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use prost_reflect::{DescriptorPool, MethodDescriptor};
use protox::file::{File, FileResolver, GoogleFileResolver};

/// Why a schema cannot be read, or a method not found in it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    /// A `.proto` file does not compile, at this place in it.
    #[error("{file}:{line}:{column}: {message}")]
    Proto {
        /// The file, as found on the import paths.
        file: String,
        /// Line, from 1.
        line: usize,
        /// Column, from 1, in characters.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A `.proto` file cannot be read or compiled, at no one place in it.
    #[error("{file}: {message}")]
    ProtoFile {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A protoset cannot be read or is not a valid `FileDescriptorSet`.
    #[error("{}: {message}", path.display())]
    Protoset {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The method is not written `package.Service/Method`.
    #[error("{0:?} is not a method: expected package.Service/Method")]
    NotAMethod(String),
    /// No such service in the schema.
    #[error("no service {service} in the schema; it has {}", list(known))]
    NoService {
        /// The service asked for.
        service: String,
        /// The services it has.
        known: Vec<String>,
    },
    /// No such method in the service.
    #[error("service {service} has no method {method}; it has {}", list(known))]
    NoMethod {
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// The methods it has.
        known: Vec<String>,
    },
}

/// Names joined with commas, or "none".
pub(crate) fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// A compiled schema: every file's services and messages, with the files they import.
#[derive(Debug, Clone)]
pub struct Schema {
    pool: DescriptorPool,
}

impl Schema {
    /// Compiles `files` with their imports, looked up on `includes` first and then in each
    /// file's own directory (so a lone file needs no `-I`); the well-known types
    /// (`google/protobuf/*.proto`) are built in.
    pub fn from_proto_files(
        files: &[PathBuf],
        includes: &[PathBuf],
    ) -> Result<Schema, SchemaError> {
        Schema::from_copied_proto_files(files, includes, &HashMap::new()).map(|(schema, _)| schema)
    }

    /// [`Schema::from_proto_files`], each file (given or imported) read from its copy in
    /// `copies` where it has one (a worker's copies of its coordinator's files, by the paths
    /// the coordinator found them at), else from where it is found; with the paths of the
    /// files it read (as found, not as copied; the well-known types aside), so that a
    /// coordinator knows every file a worker needs.
    pub fn from_copied_proto_files(
        files: &[PathBuf],
        includes: &[PathBuf],
        copies: &HashMap<PathBuf, PathBuf>,
    ) -> Result<(Schema, Vec<PathBuf>), SchemaError> {
        let mut paths: Vec<PathBuf> = includes.to_vec();
        for file in files {
            let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
            let dir = dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
            if !paths.contains(&dir) {
                paths.push(dir);
            }
        }
        let read = Rc::new(RefCell::new(Vec::new()));
        let resolver = Copied {
            includes: paths.clone(),
            copies: copies.clone(),
            read: Rc::clone(&read),
        };
        let mut compiler = protox::Compiler::with_file_resolver(resolver);
        for file in files {
            compiler
                .open_file(file)
                .map_err(|e| proto_error(&e, &paths, Some(file)))?;
        }
        let schema = Schema {
            pool: compiler.descriptor_pool(),
        };
        let read = read.take();
        Ok((schema, read))
    }

    /// Reads a protoset file.
    pub fn from_protoset(path: &Path) -> Result<Schema, SchemaError> {
        let error = |message: String| SchemaError::Protoset {
            path: path.to_path_buf(),
            message,
        };
        let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
        let pool = DescriptorPool::decode(bytes.as_slice())
            .map_err(|e| error(format!("not a FileDescriptorSet with its imports: {e}")))?;
        Ok(Schema { pool })
    }

    /// The schema of the files in `pool` (those reflection brought).
    pub(crate) fn from_pool(pool: DescriptorPool) -> Schema {
        Schema { pool }
    }

    /// The method `call` names: `package.Service/Method` (or `package.Service.Method`, as
    /// grpcurl also takes it).
    pub fn method(&self, call: &str) -> Result<MethodDescriptor, SchemaError> {
        let (service, method) = split_call(call)?;
        let Some(found) = self.pool.get_service_by_name(service) else {
            let mut known: Vec<String> = self
                .pool
                .services()
                .map(|s| s.full_name().to_string())
                .collect();
            known.sort();
            return Err(SchemaError::NoService {
                service: service.into(),
                known,
            });
        };
        let known = || found.methods().map(|m| m.name().to_string()).collect();
        let wanted = found.methods().find(|m| m.name() == method);
        wanted.ok_or_else(|| SchemaError::NoMethod {
            service: service.into(),
            method: method.into(),
            known: known(),
        })
    }

    /// Every file, service and message the schema holds.
    pub fn pool(&self) -> &DescriptorPool {
        &self.pool
    }
}

/// The service and the method `call` names (see [`Schema::method`]).
pub fn split_call(call: &str) -> Result<(&str, &str), SchemaError> {
    let (service, method) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .filter(|(s, m)| !s.is_empty() && !m.is_empty() && !m.contains('/'))
        .ok_or_else(|| SchemaError::NotAMethod(call.into()))?;
    Ok((service.trim_start_matches('/'), method))
}

/// protox's error as `FILE:LINE:COL: message` when it points at a place in a file (the file
/// named as found on the import paths), else `FILE: message`.
/// protox's include-path lookup, reading each file found from its copy where it has one and
/// noting the paths it found.
struct Copied {
    includes: Vec<PathBuf>,
    copies: HashMap<PathBuf, PathBuf>,
    read: Rc<RefCell<Vec<PathBuf>>>,
}

impl FileResolver for Copied {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.includes.iter().find_map(|include| {
            let relative = path.strip_prefix(include).ok()?;
            let parts: Option<Vec<&str>> = relative
                .components()
                .map(|c| match c {
                    std::path::Component::Normal(part) => part.to_str(),
                    _ => None,
                })
                .collect();
            parts.filter(|p| !p.is_empty()).map(|p| p.join("/"))
        })
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        for include in &self.includes {
            let found = include.join(name);
            let copy = self.copies.get(&found);
            if !copy.unwrap_or(&found).is_file() {
                continue;
            }
            let mut read = self.read.borrow_mut();
            if !read.contains(&found) {
                read.push(found.clone());
            }
            return match copy {
                None => File::open(name, &found),
                // A copy's path is not the one the file was found at (which protox checks
                // a given file against): it goes as its source alone.
                Some(copy) => match std::fs::read_to_string(copy) {
                    Ok(source) => File::from_source(name, &source),
                    Err(_) => Err(protox::Error::file_not_found(name)),
                },
            };
        }
        GoogleFileResolver::new().open_file(name)
    }
}

fn proto_error(e: &protox::Error, includes: &[PathBuf], given: Option<&PathBuf>) -> SchemaError {
    use miette::Diagnostic as _;
    let name = e.file().map(str::to_string);
    let file = match &name {
        Some(name) => includes
            .iter()
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
            .map_or_else(|| name.clone(), |p| p.display().to_string()),
        None => given.map_or_else(String::new, |p| p.display().to_string()),
    };
    let message = e.to_string();
    let offset = e.labels().and_then(|mut l| l.next()).map(|l| l.offset());
    let text = offset.and_then(|_| std::fs::read_to_string(&file).ok());
    match offset.zip(text) {
        Some((offset, text)) => {
            let (line, column) = line_and_column(&text, offset);
            SchemaError::Proto {
                file,
                line,
                column,
                message,
            }
        }
        None => SchemaError::ProtoFile { file, message },
    }
}

/// The line and column (both from 1, the column in characters) of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..text.floor_char_boundary_at(offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// `str::floor_char_boundary`, stable only from Rust 1.91.
trait FloorCharBoundary {
    fn floor_char_boundary_at(&self, offset: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_at(&self, offset: usize) -> usize {
        let mut at = offset.min(self.len());
        while !self.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const GREETER: &str = r#"syntax = "proto3";
package helloworld;
import "google/protobuf/timestamp.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
}
message HelloRequest {
  string name = 1;
  int32 times = 2;
  repeated string tags = 3;
  google.protobuf.Timestamp at = 4;
}
message HelloReply { string message = 1; }
"#;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_proto_file_compiles_and_its_methods_are_found() {
        let dir = belier_testsupport::dirs::temp_dir("compiles");
        let file = write(&dir, "greeter.proto", GREETER);
        let schema = Schema::from_proto_files(&[file], &[]).unwrap();
        let method = schema.method("helloworld.Greeter/SayHello").unwrap();
        assert_eq!(method.input().full_name(), "helloworld.HelloRequest");
        assert!(!method.is_client_streaming() && !method.is_server_streaming());
        assert_eq!(
            schema.method("helloworld.Greeter.SayHello").unwrap().name(),
            "SayHello"
        );
        assert_eq!(
            schema
                .method("helloworld.Greeter/SayBye")
                .unwrap_err()
                .to_string(),
            "service helloworld.Greeter has no method SayBye; it has SayHello"
        );
        assert_eq!(
            schema.method("Greeter/SayHello").unwrap_err().to_string(),
            "no service Greeter in the schema; it has helloworld.Greeter"
        );
        assert!(matches!(
            schema.method("SayHello"),
            Err(SchemaError::NotAMethod(_))
        ));
    }

    #[test]
    fn imports_are_found_on_the_include_paths() {
        let dir = belier_testsupport::dirs::temp_dir("imports");
        write(
            &dir,
            "shared/types.proto",
            "syntax = \"proto3\";\npackage shared;\nmessage Ping { string id = 1; }\n",
        );
        let file = write(
            &dir,
            "api/ping.proto",
            "syntax = \"proto3\";\npackage api;\nimport \"shared/types.proto\";\n\
             service Pinger { rpc Ping (shared.Ping) returns (shared.Ping); }\n",
        );
        let schema =
            Schema::from_proto_files(std::slice::from_ref(&file), std::slice::from_ref(&dir))
                .unwrap();
        assert_eq!(
            schema
                .method("api.Pinger/Ping")
                .unwrap()
                .input()
                .full_name(),
            "shared.Ping"
        );
        // Without the include path the import is not found, and the error names the file.
        let e = Schema::from_proto_files(&[file], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ping.proto") && e.contains("shared/types.proto"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_proto_file_is_named_with_its_line_and_column() {
        let dir = belier_testsupport::dirs::temp_dir("bad");
        let text = "syntax = \"proto3\";\npackage p;\nmessage A {\n  string name = 1\n}\n";
        let file = write(&dir, "bad.proto", text);
        let e = Schema::from_proto_files(std::slice::from_ref(&file), &[]).unwrap_err();
        let at = format!("{}:5:1: ", file.display());
        assert!(e.to_string().starts_with(&at), "{e}");
        // A type that does not exist: a check error, located too.
        let text = "syntax = \"proto3\";\npackage p;\nmessage A {\n  Missing m = 1;\n}\n";
        let file = write(&dir, "unknown.proto", text);
        let e = Schema::from_proto_files(std::slice::from_ref(&file), &[]).unwrap_err();
        let at = format!("{}:4:3: ", file.display());
        assert!(e.to_string().starts_with(&at), "{e}");
        // A file that is not there.
        let e = Schema::from_proto_files(&[dir.join("none.proto")], &[]).unwrap_err();
        assert!(e.to_string().contains("none.proto"), "{e}");
    }

    #[test]
    fn a_protoset_is_read_and_a_bad_one_named() {
        let dir = belier_testsupport::dirs::temp_dir("protoset");
        let file = write(&dir, "greeter.proto", GREETER);
        let mut compiler = protox::Compiler::new([&dir]).unwrap();
        compiler.include_imports(true);
        compiler.open_file(&file).unwrap();
        let set = write_bytes(
            &dir,
            "greeter.protoset",
            &compiler.encode_file_descriptor_set(),
        );
        let schema = Schema::from_protoset(&set).unwrap();
        assert!(schema.method("helloworld.Greeter/SayHello").is_ok());
        let bad = write_bytes(&dir, "bad.protoset", b"\xff\xff not protobuf");
        let e = Schema::from_protoset(&bad).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{}: not a FileDescriptorSet", bad.display())),
            "{e}"
        );
    }

    fn write_bytes(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn lines_and_columns_count_characters_from_one() {
        let text = "ab\ncé\nx";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, 3), (2, 1));
        assert_eq!(line_and_column(text, 6), (2, 3));
        assert_eq!(line_and_column(text, 7), (3, 1));
        assert_eq!(line_and_column(text, 99), (3, 2));
    }
}
