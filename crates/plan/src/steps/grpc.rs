//! A `grpc:` step compiled: the method it calls (from the plan's `proto:` or `protoset:`
//! schema), its request message (JSON whose strings are templates, encoded per request; or,
//! without templates, encoded once here), its metadata, and the checks (status by code name,
//! fields of the response message) and extractions (fields) read from its reply. It compiles
//! to a [`Request`] as an HTTP step does: a POST of the framed message to the method's path.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use belier_grpc::{call, Method, Schema};
use serde_json_path::JsonPath;

use super::request::{self as http, json_path};
use crate::check;
use crate::compiler::Compiler;
use crate::error::Result;
use crate::extract::Source;
use crate::model::{Body, Request};
use crate::template::Template;
use crate::yaml::{Fields, Kind, Node};

/// Keys of a `grpc:` step.
pub(super) const GRPC_KEYS: &[&str] = &[
    "name",
    "grpc",
    "message",
    "metadata",
    "timeout",
    "extract",
    "check",
    "abort_on_fail",
    "if",
];
const CHECK_KEYS: &[&str] = &["status", "field", "json", "max_latency"];
const EXTRACT_KEYS: &[&str] = &["field", "json", "header"];

/// Compiles a `grpc:` step into a request; returns its index.
pub(super) fn grpc(
    c: &mut Compiler<'_>,
    f: &Fields<'_>,
    defined: &mut HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<usize> {
    let rd = c.rd;
    let method = method(c, f.get("grpc").unwrap_or(f.node))?;
    let name = match f.get("name") {
        Some(n) => rd.str(n, "a step name")?.to_string(),
        None => method.name(),
    };
    let step = c.step_row(&name);
    let Some(message) = f.get("message") else {
        return Err(rd.err(
            f.node,
            format!(
                "a grpc step needs `message:`, its {} as JSON (`message: {{}}` for an empty one)",
                method.input()
            ),
        ));
    };
    let body = message_body(c, message, &method, defined, feeders)?;
    let timeout = http::timeout(c, f)?;
    let headers = headers(c, f, timeout, defined, feeders)?;
    let path = Template::literal(&method.path());
    let vars_check = http::uses_extracted(c, &path, &headers, &body)
        .then(|| c.check_row(&format!("{name}: variables set")));
    let (checks, status_checked) = http::checks(c, f, &name, check_kinds)?;
    let extract = http::extractions(c, f, &name, source)?;
    defined.extend(extract.iter().map(|e| e.slot));
    let abort_on_fail = http::abort_on_fail(c, f)?;
    let keep_body =
        extract.iter().any(|e| e.source.needs_body()) || checks.iter().any(|c| c.kind.needs_body());
    c.grpc = true;
    c.requests.push(Request {
        step,
        name,
        method: "POST".into(),
        path,
        path_text: method.path(),
        origin: 0,
        headers,
        body,
        extract,
        checks,
        status_checked,
        vars_check,
        abort_on_fail,
        timeout,
        keep_body,
        before: None,
        after: None,
        grpc: Some(method),
        stream: None,
        ws: None,
    });
    Ok(c.requests.len() - 1)
}

/// The unary method `node` names (`package.Service/Method`) in the plan's schema.
fn method(c: &Compiler<'_>, node: &Node) -> Result<Method> {
    let rd = c.rd;
    let call = rd.str(node, "a gRPC method (package.Service/Method)")?;
    let Some(schema) = &c.schema else {
        return Err(rd.err(
            node,
            "a grpc step needs the plan's schema: `proto:` (.proto files, with `import_paths:`) \
             or `protoset:`",
        ));
    };
    let method = schema
        .method(call)
        .map(Method::new)
        .map_err(|e| rd.err(node, e.to_string()))?;
    if method.kind().streams() {
        return Err(rd.err(
            node,
            format!(
                "{call} is {}: a plan's grpc steps call unary methods (stream with `belier grpc`)",
                method.kind().name()
            ),
        ));
    }
    Ok(method)
}

/// The step's request message: encoded and framed once when it has no template, else kept
/// as a JSON template (its field names and fixed values checked here against the message
/// type, each template taken as the field's default).
fn message_body(
    c: &Compiler<'_>,
    node: &Node,
    method: &Method,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Body> {
    let rd = c.rd;
    if !matches!(node.kind, Kind::Map(_)) {
        return Err(rd.err(
            node,
            format!(
                "expected the request message, a {} as a JSON object (a mapping), found {}",
                method.input(),
                node.describe()
            ),
        ));
    }
    let json = http::json_template(c, node, defined, feeders)?;
    let framed = method.frame(&json.probe().to_string()).map_err(|e| {
        // serde's place is in the JSON belier made of the mapping, not in the plan.
        let why = e.to_string();
        let why = why
            .rsplit_once(" at line ")
            .map_or(why.as_str(), |(why, _)| why);
        rd.err(node, why)
    })?;
    Ok(match http::fixed_json(&json) {
        Some(_) => Body::Bytes(Arc::from(framed.to_vec()), " [message]"),
        None => Body::Json(json),
    })
}

/// The call's headers: gRPC's own (content type, `te`, the deadline when the step has a
/// timeout, the encodings it reads), then the step's `metadata` (templates).
fn headers(
    c: &Compiler<'_>,
    f: &Fields<'_>,
    timeout: Option<std::time::Duration>,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Vec<(String, Template)>> {
    let mut headers = vec![
        (
            "content-type".to_string(),
            Template::literal(call::CONTENT_TYPE),
        ),
        ("te".into(), Template::literal("trailers")),
    ];
    if let Some(timeout) = timeout {
        let value = call::timeout_header(timeout);
        headers.push(("grpc-timeout".into(), Template::literal(&value)));
    }
    headers.push(("grpc-accept-encoding".into(), Template::literal("gzip")));
    let Some(node) = f.get("metadata") else {
        return Ok(headers);
    };
    let metadata = c.headers(node, defined, feeders)?;
    let keys = c.rd.map(node, "metadata", &[])?;
    for ((name, _), (_, key, _)) in metadata.iter().zip(keys.iter()) {
        let lower = name.to_ascii_lowercase();
        if lower == "te" || lower == "content-type" || lower.starts_with("grpc-") {
            return Err(c.rd.err(key, call::CallError::Reserved(lower).to_string()));
        }
    }
    headers.extend(
        metadata
            .into_iter()
            .map(|(n, t)| (n.to_ascii_lowercase(), t)),
    );
    Ok(headers)
}

/// A `grpc:` step's `check:` mapping: `status` (code names or numbers), `field` (dotted path
/// → expected value), `json` (JSONPath → expected value), `max_latency`.
fn check_kinds(c: &Compiler<'_>, node: &Node) -> Result<Vec<check::Kind>> {
    let rd = c.rd;
    let mut out = Vec::new();
    for (key, _, value) in rd.map(node, "a grpc step's check", CHECK_KEYS)?.iter() {
        match key {
            "status" => {
                let codes = rd
                    .strings(value, "a gRPC status code")?
                    .into_iter()
                    .map(|n| code(c, n))
                    .collect::<Result<Vec<u8>>>()?;
                out.push(check::Kind::GrpcStatus(codes));
            }
            "field" | "json" => {
                let what = format!("{key} checks (path → expected value)");
                for (_, k, expected) in rd.map(value, &what, &[])?.iter() {
                    let (path, text) = match key {
                        "field" => field_path(c, k)?,
                        _ => json_path(c, k)?,
                    };
                    out.push(check::Kind::Json(path, text, expected.to_json()));
                }
            }
            _ => out.push(check::Kind::MaxLatency(rd.duration(value, "max_latency")?)),
        }
    }
    Ok(out)
}

/// A status code by name (`OK`, `RESOURCE_EXHAUSTED`, any case) or number (0 to 16).
fn code(c: &Compiler<'_>, node: &Node) -> Result<u8> {
    let text = c.rd.str(node, "a gRPC status code")?.trim();
    let by_number = text.parse::<u8>().ok().filter(|n| *n <= 16);
    let by_name = belier_grpc::status::CODES
        .iter()
        .find(|code| code.name().eq_ignore_ascii_case(text))
        .map(|code| code.number());
    by_number.or(by_name).ok_or_else(|| {
        let names: Vec<&str> = belier_grpc::status::CODES
            .iter()
            .map(|c| c.name())
            .collect();
        c.rd.err(
            node,
            format!(
                "expected a gRPC status code, a name or a number from 0 to 16 ({}), found `{text}`",
                names.join(", ")
            ),
        )
    })
}

/// An `extract:` entry of a `grpc:` step: a field path (`greeting: message`, or
/// `{field: message}`), a JSONPath (`{json: $.message}`) or a response header (metadata).
fn source(c: &Compiler<'_>, node: &Node) -> Result<Source> {
    let rd = c.rd;
    if let Kind::Scalar { .. } = node.kind {
        let (path, text) = field_path(c, node)?;
        return Ok(Source::Json(path, text));
    }
    let f = rd.map(
        node,
        "an extraction (`field`, `json` or `header`)",
        EXTRACT_KEYS,
    )?;
    let [(kind, _, value)] = f.iter().collect::<Vec<_>>()[..] else {
        return Err(rd.err(
            node,
            "an extraction has exactly one of `field`, `json`, `header`",
        ));
    };
    Ok(match kind {
        "field" => {
            let (path, text) = field_path(c, value)?;
            Source::Json(path, text)
        }
        "json" => {
            let (path, text) = json_path(c, value)?;
            Source::Json(path, text)
        }
        _ => Source::Header(rd.str(value, "a header name")?.to_string()),
    })
}

/// A dotted path into the response message as JSON (`message`, `reply.items.0.id`: field
/// names as protobuf's JSON writes them, lowerCamelCase, and list indices) as a JSONPath.
fn field_path(c: &Compiler<'_>, node: &Node) -> Result<(JsonPath, String)> {
    let text = c.rd.str(node, "a field path")?.trim();
    let mut path = String::from("$");
    for part in text.split('.') {
        let name = part.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '_')
            && part
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if name {
            path.push('.');
            path.push_str(part);
        } else if !part.is_empty() && part.chars().all(|ch| ch.is_ascii_digit()) {
            path.push_str(&format!("[{part}]"));
        } else {
            return Err(c.rd.err(
                node,
                format!(
                    "expected a field path such as `message` or `reply.items.0.id`, found `{text}`"
                ),
            ));
        }
    }
    let parsed = JsonPath::parse(&path).map_err(|e| c.rd.err(node, e.to_string()))?;
    Ok((parsed, path))
}

/// The plan's gRPC schema: `proto:` (one file or a list, relative to the plan) with
/// `import_paths:`, or `protoset:`; `None` when it names neither. A bad .proto file is named
/// with its line and column.
pub(crate) fn schema(c: &Compiler<'_>, top: &Fields<'_>) -> Result<Option<Schema>> {
    let rd = c.rd;
    match (top.get("proto"), top.get("protoset")) {
        (Some(_), Some(_)) => Err(rd.err(
            top.key_node("protoset").unwrap_or(top.node),
            "give `proto:` or `protoset:`, not both",
        )),
        (None, Some(node)) => {
            if let Some(k) = top.key_node("import_paths") {
                return Err(rd.err(k, "`import_paths` goes with `proto:` files"));
            }
            let path = c.file(rd.str(node, "a protoset file")?);
            let schema = Schema::from_protoset(&path).map_err(|e| rd.err(node, e.to_string()))?;
            Ok(Some(schema))
        }
        (Some(node), None) => {
            // As the plan names them: the compiler reads each from its copy where it has one,
            // and so every file it imports.
            let files = rd
                .strings(node, "a .proto file")?
                .into_iter()
                .map(|n| Ok(c.relative(rd.str(n, "a .proto file")?)))
                .collect::<Result<Vec<PathBuf>>>()?;
            let includes = match top.get("import_paths") {
                Some(n) => rd
                    .strings(n, "an import path")?
                    .into_iter()
                    .map(|n| Ok(c.relative(rd.str(n, "an import path")?)))
                    .collect::<Result<Vec<PathBuf>>>()?,
                None => Vec::new(),
            };
            let (schema, read) = Schema::from_copied_proto_files(&files, &includes, c.copies)
                .map_err(|e| rd.err(node, format!("proto: {e}")))?;
            // The files given and those they import, each among the plan's files: a worker
            // gets them all.
            let mut noted = c.files.borrow_mut();
            for path in files.into_iter().chain(read) {
                if !noted.contains(&path) {
                    noted.push(path);
                }
            }
            Ok(Some(schema))
        }
        (None, None) => match top.key_node("import_paths") {
            Some(k) => Err(rd.err(k, "`import_paths` goes with `proto:` files")),
            None => Ok(None),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    const PROTO: &str = r#"syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc Chat (stream HelloRequest) returns (stream HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; }
message HelloReply { string message = 1; }
"#;

    /// A directory holding `greeter.proto`, and the path of a plan in it.
    fn plan_path(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("belier-plan-grpc-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("greeter.proto"), PROTO).unwrap();
        dir.join("plan.yaml")
    }

    /// A plan on the greeter whose one scenario's steps are `steps` (indented as list items
    /// under `steps:`).
    fn plan(steps: &str) -> String {
        format!(
            "target: http://127.0.0.1:50051\nproto: greeter.proto\nscenarios:\n  - steps:\n{steps}"
        )
    }

    fn error(test: &str, text: &str) -> String {
        let path = plan_path(test);
        match crate::parse(text, &path) {
            Ok(_) => panic!("{test}: the plan was taken"),
            Err(e) => e
                .to_string()
                .strip_prefix(&format!("{}:", path.display()))
                .unwrap_or_else(|| panic!("{test}: {e} names the plan"))
                .to_string(),
        }
    }

    #[test]
    fn a_grpc_step_compiles_to_a_post_of_its_method_over_http2() {
        let text = plan(
            "      - grpc: helloworld.Greeter/SayHello\n        message: {name: \"{{ vu }}\"}\n        metadata: {X-Token: abc}\n        timeout: 2s\n        extract: {greeting: message}\n        check: {status: [OK, resource_exhausted, 14], field: {message: hi}}\n      - name: fixed\n        grpc: helloworld.Greeter/SayHello\n        message: {name: ada, times: 2}\n",
        );
        let plan = crate::parse(&text, &plan_path("ok")).unwrap();
        assert!(plan.options.http2, "a plan with grpc steps speaks HTTP/2");
        assert_eq!(plan.steps(), ["helloworld.Greeter/SayHello", "fixed"]);
        let checks = plan.checks();
        assert!(
            checks.contains(
                &"helloworld.Greeter/SayHello: status in [OK, RESOURCE_EXHAUSTED, UNAVAILABLE]"
                    .to_string()
            ),
            "{checks:?}"
        );
        assert!(
            checks.contains(&"helloworld.Greeter/SayHello: json $.message == \"hi\"".to_string())
        );
        let request = &plan.program().requests[0];
        assert_eq!(request.path_text, "/helloworld.Greeter/SayHello");
        assert!(request.status_checked && request.keep_body);
        let headers: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            headers,
            [
                "content-type",
                "te",
                "grpc-timeout",
                "grpc-accept-encoding",
                "x-token"
            ]
        );
        // No template: encoded and framed once (field 1 "ada", field 2 = 2).
        match &plan.program().requests[1].body {
            crate::program::Body::Bytes(bytes, _) => {
                assert_eq!(&bytes[..], &[0, 0, 0, 0, 7, 10, 3, b'a', b'd', b'a', 16, 2])
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_grpc_steps_are_named_by_file_line_and_column() {
        let cases = [
            (
                "call",
                "      - grpc: helloworld.Greeter/Nope\n        message: {}\n",
                "5:15: service helloworld.Greeter has no method Nope",
            ),
            (
                "name",
                "      - grpc: SayHello\n        message: {}\n",
                "5:15: \"SayHello\" is not a method",
            ),
            (
                "missing",
                "      - grpc: helloworld.Greeter/SayHello\n",
                "5:9: a grpc step needs `message:`, its helloworld.HelloRequest as JSON",
            ),
            (
                "field",
                "      - grpc: helloworld.Greeter/SayHello\n        message: {nom: \"{{ vu }}\"}\n",
                "6:18: the message is not a helloworld.HelloRequest as JSON: unrecognized field name 'nom'",
            ),
            (
                "stream",
                "      - grpc: helloworld.Greeter/Chat\n        message: {}\n",
                "5:15: helloworld.Greeter/Chat is bidirectional streaming",
            ),
            (
                "status",
                "      - grpc: helloworld.Greeter/SayHello\n        message: {}\n        check: {status: NOPE}\n",
                "7:25: expected a gRPC status code",
            ),
            (
                "key",
                "      - grpc: helloworld.Greeter/SayHello\n        mesage: {}\n",
                "6:9: unknown key `mesage` in a grpc step; did you mean `message`?",
            ),
            (
                "reserved",
                "      - grpc: helloworld.Greeter/SayHello\n        message: {}\n        metadata: {grpc-timeout: 1S}\n",
                "7:20: metadata \"grpc-timeout\" is set by gRPC itself",
            ),
        ];
        for (test, steps, expected) in cases {
            let e = error(test, &plan(steps));
            assert!(e.starts_with(expected), "{test}: {e}");
        }
        let no_schema = "target: http://h:1\nscenarios:\n  - steps:\n      - grpc: a.B/C\n        message: {}\n";
        let e = error("schema", no_schema);
        assert!(
            e.starts_with("4:15: a grpc step needs the plan's schema"),
            "{e}"
        );
    }

    #[test]
    fn a_bad_proto_file_is_named_with_its_line_and_column() {
        let path = plan_path("bad-proto");
        let bad = path.with_file_name("bad.proto");
        std::fs::write(
            &bad,
            "syntax = \"proto3\";\nmessage A {\n  string name = ;\n}\n",
        )
        .unwrap();
        let text = "target: http://h:1\nproto: bad.proto\nscenarios:\n  - steps:\n      - get: /\n";
        let e = crate::parse(text, &path).unwrap_err().to_string();
        let named = format!("{}:3:17:", bad.display());
        assert!(e.contains(&named), "{e}");
        assert!(
            e.starts_with(&format!("{}:2:8: proto: ", path.display())),
            "{e}"
        );
    }

    #[test]
    fn a_plans_proto_imports_are_among_its_files_and_read_from_copies() {
        let plan_path = plan_path("imports");
        let dir = plan_path.parent().unwrap().to_path_buf();
        let (given, imported) = (
            dir.join("api/svc.proto"),
            dir.join("deps/common/types.proto"),
        );
        std::fs::create_dir_all(given.parent().unwrap()).unwrap();
        std::fs::create_dir_all(imported.parent().unwrap()).unwrap();
        let svc = "syntax = \"proto3\";\npackage svc;\nimport \"common/types.proto\";\nservice S { rpc M (common.Req) returns (common.Rep); }\n";
        let types = "syntax = \"proto3\";\npackage common;\nmessage Req { string name = 1; }\nmessage Rep { string message = 1; }\n";
        std::fs::write(&given, svc).unwrap();
        std::fs::write(&imported, types).unwrap();
        let text = "target: http://h:1\nproto: api/svc.proto\nimport_paths: [deps]\nscenarios:\n  - steps:\n      - grpc: svc.S/M\n        message: {name: x}\n";
        std::fs::write(&plan_path, text).unwrap();
        let plan = crate::load(&plan_path).unwrap();
        for file in [&given, &imported] {
            assert!(
                plan.files.contains(file),
                "{file:?} not in {:?}",
                plan.files
            );
        }
        // A worker's: the files only as copies elsewhere, under the paths found here.
        let elsewhere = dir.join("copies");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let mut copies = crate::Copies::new();
        for (i, file) in [&given, &imported].into_iter().enumerate() {
            let copy = elsewhere.join(format!("{i}.proto"));
            std::fs::rename(file, &copy).unwrap();
            copies.insert(file.clone(), copy);
        }
        let plan = crate::load_with(&plan_path, &copies, crate::Environment::Process).unwrap();
        assert_eq!(plan.steps(), ["svc.S/M"]);
        std::fs::remove_dir_all(&elsewhere).unwrap();
        let e = crate::load(&plan_path).unwrap_err().to_string();
        assert!(e.contains("proto: "), "without the files or copies: {e}");
    }
}
