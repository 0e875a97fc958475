//! What a plan takes from outside itself, through the real binary against belier's test server
//! on 127.0.0.1: `{{ env.NAME }}` values and `--var` overrides reach the server, and a secret
//! from the environment stays out of the report, the results file and `belier check`.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use belier_testserver::{Config, Server};
use belier_testsupport::assert_exit;
use belier_testsupport::temp_dir;

belier_testsupport::binary!();

fn server() -> Server {
    Server::start(Config {
        threads: 2,
        record_requests: 64,
        ..Config::default()
    })
    .expect("test server starts")
}

fn text(out: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const SECRET: &str = "tok-7f3a9c1e5b";

const ENV_PLAN: &str = r#"
target: http://{{ env.BELIER_TEST_HOST }}:{{ env.BELIER_TEST_PORT }}/{{ env.BELIER_TEST_BASE | default("v1") }}
headers:
  Authorization: "Bearer {{ env.BELIER_TEST_TOKEN }}"
variables:
  user: nobody
  key: "{{ env.BELIER_TEST_TOKEN }}"
scenarios:
  - steps:
      - name: profile
        get: /users/{{ user }}
        headers: { X-Key: "{{ key }}" }
        check: { status: 200 }
"#;

/// `belier SUB PLAN ARGS` with the test's environment: the target from the server, the token.
fn with_env(sub: &str, plan: &Path, s: &Server, args: &[&str]) -> Output {
    belier()
        .arg(sub)
        .arg(plan)
        .args(args)
        .env("BELIER_TEST_HOST", "127.0.0.1")
        .env("BELIER_TEST_PORT", s.addr().port().to_string())
        .env("BELIER_TEST_TOKEN", SECRET)
        .env_remove("BELIER_TEST_BASE")
        .output()
        .expect("belier runs")
}

#[test]
fn target_and_token_from_the_environment_and_var_reach_the_server_but_no_report() {
    let s = server();
    let dir = temp_dir("env");
    let plan = dir.join("plan.yaml");
    std::fs::write(&plan, ENV_PLAN).unwrap();
    let saved = dir.join("run.results");
    let out = with_env(
        "run",
        &plan,
        &s,
        &[
            "-i",
            "6",
            "-z",
            "20s",
            "--var",
            "user=ann",
            "--output",
            "json",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    assert_exit(&out, 0);
    // No --connect-to: the server was reached through the host and port of the environment.
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 6);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 6);
    for r in &seen {
        assert_eq!(r.target, "/v1/users/ann");
        assert_eq!(
            r.header("authorization"),
            Some(&*format!("Bearer {SECRET}"))
        );
        assert_eq!(r.header("x-key"), Some(SECRET));
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["summary"]["requests"], 6);
    assert!(!text(&out).contains(SECRET), "{}", text(&out));
    let results = std::fs::read(&saved).unwrap();
    assert!(!results.is_empty());
    assert!(
        !String::from_utf8_lossy(&results).contains(SECRET),
        "the results file holds the secret"
    );

    // `belier check` shows where the values come from, not what they are.
    let out = with_env("check", &plan, &s, &["--var", "user=ann"]);
    assert_exit(&out, 0);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!text(&out).contains(SECRET), "{shown}");
    assert!(
        shown.contains("Authorization: Bearer {{ env.BELIER_TEST_TOKEN }}"),
        "{shown}"
    );
    assert!(
        shown.contains("key: {{ env.BELIER_TEST_TOKEN }}"),
        "{shown}"
    );
    assert!(shown.contains("user: (set by --var)"), "{shown}");
}

/// Values that come at run time (a `--var`, a data cell, what a script sets) cannot split a
/// request (issue 28): header values arrive cleaned of CR and LF, paths percent-encoded, and a
/// request a script makes unsendable fails unsent (`other_io`). The server parses what came:
/// exactly the good requests, no smuggled header.
#[test]
fn values_that_come_at_run_time_cannot_split_a_request() {
    let s = server();
    let dir = temp_dir("splitting");
    std::fs::write(dir.join("rows.csv"), "value\n\"r\r\nX-Injected: 2\"\n").unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            r#"target: http://{}
load: {{ vus: 1, iterations: 1 }}
data: {{ rows: rows.csv }}
variables: {{ given: x }}
scenarios:
  - steps:
      - name: var
        get: "/v/{{{{ given }}}}"
        headers: {{ X-Given: "{{{{ given }}}}" }}
      - name: data
        get: /d
        headers: {{ X-Row: "{{{{ rows.value }}}}" }}
      - name: script header
        get: /s
        before_request: |
          request.headers["X-Script"] = "s\r\nX-Injected: 3";
      - name: script path
        get: /p
        before_request: |
          request.path = "/p HTTP/1.1\r\nX-Injected: 4\r\n\r\nGET /q";
"#,
            s.addr()
        ),
    )
    .unwrap();
    let out = belier()
        .arg("run")
        .arg(&plan)
        .args(["--var", "given=v\r\nX-Injected: 1", "--output", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    s.wait_idle(Duration::from_secs(5));
    let seen = s.recent_requests();
    let targets: Vec<&str> = seen.iter().map(|r| r.target.as_str()).collect();
    assert_eq!(
        targets,
        ["/v/v%0D%0AX-Injected:%201", "/d", "/s"],
        "{}",
        text(&out)
    );
    for r in &seen {
        assert!(r.header("x-injected").is_none(), "{r:?}");
    }
    assert_eq!(seen[0].header("x-given"), Some("vX-Injected: 1"));
    assert_eq!(seen[1].header("x-row"), Some("rX-Injected: 2"));
    assert_eq!(seen[2].header("x-script"), Some("sX-Injected: 3"));
    assert_eq!(doc["summary"]["requests"], 4, "{}", doc["summary"]);
    let errors = &doc["errors"];
    assert_eq!(errors.as_array().map(Vec::len), Some(1), "{errors}");
    assert_eq!(
        (&errors[0]["kind"], &errors[0]["count"]),
        (&"other_io".into(), &1.into())
    );
    assert!(
        errors[0]["example"]
            .as_str()
            .is_some_and(|e| e.starts_with("the request was not sent: the path `/p HTTP/1.1")),
        "{errors}"
    );
}

#[test]
fn a_missing_variable_or_a_bad_var_exits_2_naming_it() {
    let s = server();
    let dir = temp_dir("bad");
    let plan = dir.join("plan.yaml");
    std::fs::write(&plan, ENV_PLAN).unwrap();

    let out = belier()
        .arg("check")
        .arg(&plan)
        .env_remove("BELIER_TEST_HOST")
        .output()
        .unwrap();
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plan.yaml:2:16: environment variable `BELIER_TEST_HOST` is not set"),
        "{err}"
    );

    for (sub, var, expected) in [
        ("run", "usr=x", "--var <NAME=VALUE>"),
        (
            "check",
            "usr=x",
            "the plan has no variable `usr` (its variables: user, key)",
        ),
        ("run", "user", "expects NAME=VALUE (found no `=`)"),
    ] {
        let out = with_env(
            sub,
            &plan,
            &s,
            &["--var", var, "-i", "1"][..if sub == "run" { 4 } else { 2 }],
        );
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected) && err.contains("--var"), "{err}");
    }
    s.wait_idle(Duration::from_secs(1));
    assert_eq!(s.counts().requests, 0, "a bad plan or flag sends nothing");
}

/// The parts of a multipart/form-data body, read by multer (an independent parser): for each,
/// its name, file name, content type and bytes.
type Parts = Vec<(String, Option<String>, Option<String>, Vec<u8>)>;

fn parse_multipart(content_type: &str, body: Vec<u8>) -> Parts {
    let boundary = multer::parse_boundary(content_type).expect("a multipart content type");
    let stream =
        futures_util::stream::once(
            async move { Ok::<_, std::io::Error>(bytes::Bytes::from(body)) },
        );
    let mut multipart = multer::Multipart::new(stream, boundary);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut parts = Vec::new();
        while let Some(field) = multipart.next_field().await.expect("a well-formed part") {
            let name = field.name().unwrap_or_default().to_string();
            let file = field.file_name().map(str::to_string);
            let kind = field.content_type().map(|m| m.to_string());
            let bytes = field.bytes().await.expect("the part's content").to_vec();
            parts.push((name, file, kind, bytes));
        }
        parts
    })
}

#[test]
fn a_multipart_upload_delivers_the_exact_bytes_and_a_form_post_its_fields() {
    let s = server();
    let dir = temp_dir("upload");
    // Every byte value, with what a sloppy encoder would break on: CR LF, `--`, a fake
    // delimiter line.
    let mut file: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    file.extend_from_slice(b"\r\n--belier-\r\n--\r\n\r\n\x00");
    std::fs::write(dir.join("photo.bin"), &file).unwrap();
    let plan = dir.join("plan.yaml");
    std::fs::write(
        &plan,
        r#"
target: http://127.0.0.1:8080
variables:
  title: "été & co"
scenarios:
  - steps:
      - name: upload
        post: /upload
        multipart:
          title: "{{ title }} #{{ iteration }}"
          note: plain text
          photo: { file: photo.bin, content_type: image/x-test, filename: "my photo.bin" }
        check: { status: 200 }
      - name: form
        post: /form
        form: { q: "a b&c=d/é+%", n: "{{ iteration }}", empty: "", tag: [x, "y{{ iteration }}"] }
        check: { status: 200 }
"#,
    )
    .unwrap();
    let out = belier()
        .arg("run")
        .arg(&plan)
        .args(["--connect-to", &s.addr().to_string(), "-u", "1", "-i", "2"])
        .args(["-z", "20s", "--output", "json"])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    s.wait_idle(Duration::from_secs(5));
    assert_eq!(s.counts().requests, 4);
    let seen = s.recent_requests();
    let uploads: Vec<_> = seen.iter().filter(|r| r.target == "/upload").collect();
    let forms: Vec<_> = seen.iter().filter(|r| r.target == "/form").collect();
    assert_eq!((uploads.len(), forms.len()), (2, 2));
    for (iteration, r) in uploads.iter().enumerate() {
        let content_type = r.header("content-type").unwrap();
        assert!(content_type.starts_with("multipart/form-data; boundary="));
        let length: usize = r.header("content-length").unwrap().parse().unwrap();
        assert_eq!(length, r.body.len());
        let parts = parse_multipart(content_type, r.body.clone());
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0].0, "title");
        assert_eq!(
            String::from_utf8(parts[0].3.clone()).unwrap(),
            format!("été & co #{iteration}")
        );
        assert_eq!(
            (parts[1].0.as_str(), &parts[1].3[..]),
            ("note", &b"plain text"[..])
        );
        assert_eq!(parts[2].0, "photo");
        assert_eq!(parts[2].1.as_deref(), Some("my photo.bin"));
        assert_eq!(parts[2].2.as_deref(), Some("image/x-test"));
        assert!(parts[2].3 == file, "the file's bytes arrived changed");
    }
    for (iteration, r) in forms.iter().enumerate() {
        assert_eq!(
            r.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        let fields: Vec<(String, String)> = form_urlencoded::parse(&r.body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        assert_eq!(
            fields,
            vec![
                ("q".to_string(), "a b&c=d/é+%".to_string()),
                ("n".to_string(), iteration.to_string()),
                ("empty".to_string(), String::new()),
                ("tag".to_string(), "x".to_string()),
                ("tag".to_string(), format!("y{iteration}")),
            ]
        );
    }

    // `belier check` lists the parts; a missing file is a plan error at its line.
    let out = belier().arg("check").arg(&plan).output().unwrap();
    assert_exit(&out, 0);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("[multipart: title, note, photo ← file my photo.bin (4116 bytes)]"),
        "{shown}"
    );
    assert!(shown.contains("[form: q, n, empty, tag, tag]"), "{shown}");
    std::fs::remove_file(dir.join("photo.bin")).unwrap();
    let out = belier().arg("check").arg(&plan).output().unwrap();
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("plan.yaml:12:26: cannot read multipart file `"),
        "{err}"
    );
}
