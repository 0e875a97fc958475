//! A distributed `belier grpc` run against a real grpc-go server: the coordinator compiles the
//! .proto files (one importing another through `-I`) and sends the schema with the job, the
//! workers each send their share, and the merged report counts every call by its code as the
//! server counted them; and a plan whose `grpc:` steps need such files, run by spawned
//! workers.

use belier_testsupport::dirs::temp_dir;
use belier_testsupport::grpc::GrpcServer;
use serde_json::{json, Value};

belier_testsupport::binary!(BELIER);

/// The Greeter service in one file, its messages in another found through an import path.
/// In a directory of its own, `test`.
fn split_proto(test: &str) -> (String, String) {
    let dir = temp_dir(test);
    let (service, messages) = (dir.join("service"), dir.join("include/messages"));
    std::fs::create_dir_all(&service).unwrap();
    std::fs::create_dir_all(&messages).unwrap();
    std::fs::write(
        service.join("greeter.proto"),
        r#"syntax = "proto3";
package helloworld;
import "messages/hello.proto";
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc Limited (HelloRequest) returns (HelloReply) {}
}
"#,
    )
    .unwrap();
    std::fs::write(
        messages.join("hello.proto"),
        r#"syntax = "proto3";
package helloworld;
message HelloRequest { string name = 1; }
message HelloReply { string message = 1; }
"#,
    )
    .unwrap();
    let proto = service.join("greeter.proto").display().to_string();
    (proto, dir.join("include").display().to_string())
}

#[test]
fn spawned_workers_send_every_call_and_the_report_counts_each_code() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    let (proto, include) = split_proto("grpc-cluster");
    let target = server.target();
    let out = BELIER.ok(&[
        "grpc",
        &target,
        "--plaintext",
        "--call",
        "helloworld.Greeter/Limited",
        "--proto",
        &proto,
        "-I",
        &include,
        "-d",
        r#"{"name": "belier"}"#,
        "-n",
        "2000",
        "-c",
        "10",
        "--spawn",
        "2",
        "--output",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(server.calls().limited, 2_000);
    assert_eq!(doc["summary"]["requests"], 2_000, "{}", doc["summary"]);
    // Sent by the two workers, not here.
    let workers = doc["run"]["workers"].as_array().map(Vec::len);
    assert_eq!(workers, Some(2), "{}", doc["run"]);
    // The server refuses every 10th call it takes, whichever worker sent it.
    assert_eq!(
        doc["grpc_codes"],
        json!({"OK": 1_800, "RESOURCE_EXHAUSTED": 200})
    );
}

#[test]
fn a_plans_grpc_steps_run_on_spawned_workers_with_the_files_their_proto_imports() {
    let Some(server) = GrpcServer::start() else {
        return;
    };
    // The plan names the service's file and the import path; the messages' file is only
    // imported. The workers get both, as the plan's files.
    let (proto, include) = split_proto("grpc-cluster-plan");
    let plan = std::path::Path::new(&proto)
        .parent()
        .unwrap()
        .with_file_name("plan.yaml");
    let text = format!(
        "target: http://{}\nproto: {proto}\nimport_paths: [{include}]\nload: {{ vus: 4, iterations: 400 }}\nscenarios:\n  - steps:\n      - grpc: helloworld.Greeter/SayHello\n        message: {{ name: \"{{{{ vu }}}}\" }}\n",
        server.target()
    );
    std::fs::write(&plan, text).unwrap();
    let out = BELIER.ok(&[
        "run",
        plan.to_str().unwrap(),
        "--spawn",
        "2",
        "--output",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(server.calls().say_hello, 400);
    assert_eq!(doc["run"]["workers"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["grpc_codes"], json!({"OK": 400}), "{doc:#}");
}
