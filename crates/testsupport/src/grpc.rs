//! The grpc-go server of the gRPC tests (`grpc-server/`, a Go module with its go.sum): built
//! with the Go toolchain once per test process into `target/grpc-server/` (Go's own build
//! cache makes a rebuild of an unchanged server take a moment), started on 127.0.0.1, counting
//! calls (and streamed messages) on its own side. Its methods and its `.proto` files are
//! described in `grpc-server/main.go`, `streamer.go` and `pool.go`, [`GREETER_PROTO`],
//! [`STREAMER_PROTO`] and [`POOL_PROTO`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::missing::{find_program, missing};
use crate::process::CountingServer;

/// The server's service as a `.proto` file (its messages are StringValue's wire format).
pub const GREETER_PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc Limited (HelloRequest) returns (HelloReply) {}
  rpc Slow (HelloRequest) returns (HelloReply) {}
}
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; }
"#;

/// The server's streaming service as a `.proto` file of its own (its own message names, so
/// that it compiles beside [`GREETER_PROTO`]): `StreamRequest` is read by the server as a
/// `google.protobuf.Duration` and `Note` as a `StringValue`, their wire formats.
pub const STREAMER_PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Streamer {
  // `count` messages (100 when 0), `gap_ms` apart.
  rpc ServerStream (StreamRequest) returns (stream Note) {}
  // One answer once the client's stream ends.
  rpc ClientStream (stream Note) returns (Note) {}
  // An answer for each message.
  rpc Bidi (stream Note) returns (stream Note) {}
}
message StreamRequest { int64 count = 1; int32 gap_ms = 2; }
message Note { string text = 1; }
"#;

/// The server's pooled service as a `.proto` file of its own: `Serve` is answered by
/// `-pool-workers` handlers holding each call for `-pool-service` (grpc-server/pool.go).
pub const POOL_PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Pool {
  rpc Serve (Job) returns (Job) {}
}
message Job { string name = 1; }
"#;

const INSTALL: &str = "Go 1.26 or later, which grpc-go v1.85 needs: scripts/install-test-deps";

/// Calls the server took, by method, on its own side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Calls {
    /// helloworld.Greeter/SayHello.
    pub say_hello: u64,
    /// helloworld.Greeter/Limited (every 10th: RESOURCE_EXHAUSTED).
    pub limited: u64,
    /// helloworld.Greeter/Slow (answers after 2 s).
    pub slow: u64,
    /// helloworld.Streamer/ServerStream calls, and the messages they sent.
    pub server_stream: u64,
    pub server_stream_out: u64,
    /// helloworld.Streamer/ClientStream calls, and the messages they read.
    pub client_stream: u64,
    pub client_stream_in: u64,
    /// helloworld.Streamer/Bidi calls, and their messages each way.
    pub bidi: u64,
    pub bidi_in: u64,
    pub bidi_out: u64,
    /// helloworld.Pool/Serve calls, and the nanoseconds they held a handler in all.
    pub pooled: u64,
    pub pooled_nanos: u64,
}

impl Calls {
    /// The mean time a helloworld.Pool/Serve call held its handler; `None` before any call.
    pub fn mean_pooled_service(&self) -> Option<std::time::Duration> {
        let nanos = self.pooled_nanos.checked_div(self.pooled)?;
        Some(std::time::Duration::from_nanos(nanos))
    }
}

/// A running grpc-go server; stopped when [`GrpcServer::calls`] is called or it is dropped.
pub struct GrpcServer {
    server: CountingServer,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl GrpcServer {
    /// Builds (once per process) and starts the server; `None` after [`missing`] (which
    /// fails under CI) when there is no Go toolchain.
    pub fn start() -> Option<GrpcServer> {
        GrpcServer::start_with(&[])
    }

    /// [`GrpcServer::start`] with the server's flags (grpc-server/options.go): `-reflection`
    /// (with `-reflection-v1alpha-only`), `-tls-cert FILE -tls-key FILE`,
    /// `-max-connection-age D -max-connection-age-grace D`, `-pool-workers N -pool-service D`.
    pub fn start_with(flags: &[&str]) -> Option<GrpcServer> {
        let binary = built()?;
        let server = CountingServer::start(Command::new(binary).args(flags), "grpc-go server");
        Some(GrpcServer {
            port: server.port,
            server,
        })
    }

    /// `127.0.0.1:PORT`.
    pub fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stops the server and returns what it counted.
    pub fn calls(mut self) -> Calls {
        let count = self.server.counts();
        Calls {
            say_hello: count("SayHello"),
            limited: count("Limited"),
            slow: count("Slow"),
            server_stream: count("ServerStream"),
            server_stream_out: count("ServerStreamOut"),
            client_stream: count("ClientStream"),
            client_stream_in: count("ClientStreamIn"),
            bidi: count("Bidi"),
            bidi_in: count("BidiIn"),
            bidi_out: count("BidiOut"),
            pooled: count("Pooled"),
            pooled_nanos: count("PooledNanos"),
        }
    }
}

/// The server binary, built once per process; `None` (after [`missing`]) without Go.
fn built() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT.get_or_init(build).clone()
}

fn build() -> Option<PathBuf> {
    build_go_server("grpc-server", INSTALL)
}

/// Builds the Go module `name` of this crate (with its go.sum) into `target/NAME/NAME`;
/// `None` (after [`missing`], `install` saying how to get Go) without a Go toolchain.
pub(crate) fn build_go_server(name: &str, install: &str) -> Option<PathBuf> {
    let local = Path::new("/usr/local/go/bin/go");
    let go = match local.is_file() {
        true => local.to_path_buf(),
        false => find_program("go", install)?,
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    let out = target_dir().join(name).join(name);
    let built = Command::new(&go)
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(&source)
        // The toolchain here, never one downloaded; go.sum pins the modules.
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("go runs");
    if !built.status.success() {
        let why = String::from_utf8_lossy(&built.stderr);
        // An older Go refuses the module's `go 1.26` line: the toolchain is missing, not broken.
        if why.contains("requires go") {
            missing(&format!("{} is too old: {why}", go.display()), install);
            return None;
        }
        panic!("go build of {name} failed: {why}");
    }
    Some(out)
}

/// The workspace's target directory: the test binary runs from `target/debug/deps`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "target"))
        .map_or_else(
            || std::env::temp_dir().join("belier-target"),
            Path::to_path_buf,
        )
}

#[cfg(test)]
mod tests {
    /// `scripts/test` runs this one before the tests it times, so that the first gRPC test
    /// does not pay Go's cold build of grpc-go (about 40 s on two cores) inside its deadline
    /// and the suite's clock; it is also an ordinary test of the build.
    #[test]
    fn the_grpc_go_server_builds() {
        if let Some(server) = super::built() {
            assert!(server.is_file(), "{} was not written", server.display());
        }
    }
}
