//! `belier k8s render` and `belier k8s run` through the real binary: the manifests pass
//! `kubernetes-validate` (PyPI; the API schemas of a current Kubernetes, strict) for a flag
//! run and a plan, with N workers, their shard index, the token only in the Secret; `k8s run`
//! without kubectl is a clear error. No cluster is started.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use belier_testsupport::temp_dir;
use yaml_rust2::{Yaml, YamlLoader};

belier_testsupport::binary!();

/// The Kubernetes version whose schemas the manifests must satisfy.
const KUBERNETES: &str = "1.34.0";

/// `kubernetes-validate` on PATH; when missing, `None` after saying so, or a panic under CI.
fn validator() -> Option<PathBuf> {
    belier_testsupport::find_program(
        "kubernetes-validate",
        "python3 -m pip install kubernetes-validate; scripts/install-test-deps installs it",
    )
}

/// Validates `text` (written to `dir/name`) strictly; the validator's output on failure.
fn validate(tool: &Path, dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let out = Command::new(tool)
        .args(["-k", KUBERNETES, "--strict", "--no-warn"])
        .arg(&file)
        .output()
        .expect("kubernetes-validate runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn rendered(args: &[&str]) -> (String, Vec<Yaml>) {
    let out: Output = belier()
        .args(["k8s", "render"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = YamlLoader::load_from_str(&text).expect("the manifests are YAML");
    (text, docs)
}

fn kind<'a>(docs: &'a [Yaml], kind: &str, name: &str) -> &'a Yaml {
    docs.iter()
        .find(|d| d["kind"].as_str() == Some(kind) && d["metadata"]["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn env<'a>(container: &'a Yaml, name: &str) -> &'a Yaml {
    container["env"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no env {name}"))
}

/// What every rendering must hold: N indexed workers reached through the headless Service,
/// their shard index, the token read from the Secret and written in no Job.
fn check_run(text: &str, docs: &[Yaml], workers: i64) -> Vec<String> {
    let secret = kind(docs, "Secret", "belier-token");
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["token"].as_str().unwrap())
        .unwrap();
    let token = String::from_utf8(token).unwrap();
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    assert!(!text.contains(&token), "the token in plain text");
    let other = rendered(&["--workers", "1", "http://127.0.0.1/"]).0;
    assert!(
        !other.contains(secret["data"]["token"].as_str().unwrap()),
        "a token generated per rendering"
    );

    let service = kind(docs, "Service", "belier-workers");
    assert_eq!(service["spec"]["clusterIP"].as_str(), Some("None"));
    let job = kind(docs, "Job", "belier-worker");
    assert_eq!(job["spec"]["completionMode"].as_str(), Some("Indexed"));
    assert_eq!(job["spec"]["completions"].as_i64(), Some(workers));
    assert_eq!(job["spec"]["parallelism"].as_i64(), Some(workers));
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["subdomain"].as_str(), Some("belier-workers"));
    let worker = &pod["containers"][0];
    assert_eq!(worker["args"][0].as_str(), Some("worker"));
    assert_eq!(worker["args"][2].as_str(), Some("0.0.0.0:7979"));
    assert_eq!(
        env(worker, "BELIER_SHARD_INDEX")["valueFrom"]["fieldRef"]["fieldPath"].as_str(),
        Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
    );
    let coordinator = &kind(docs, "Job", "belier-coordinator")["spec"]["template"]["spec"];
    for c in [worker, &coordinator["containers"][0]] {
        let from = &env(c, "BELIER_WORKER_TOKEN")["valueFrom"]["secretKeyRef"];
        assert_eq!(from["name"].as_str(), Some("belier-token"));
        assert_eq!(from["key"].as_str(), Some("token"));
    }
    assert_eq!(pod["securityContext"]["runAsUser"].as_i64(), Some(65532));
    let args: Vec<String> = coordinator["containers"][0]["args"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let list: Vec<String> = (0..workers)
        .map(|i| format!("belier-worker-{i}.belier-workers:7979"))
        .collect();
    assert_eq!(
        args[args.len() - 2..],
        ["--workers".to_string(), list.join(",")]
    );
    assert_eq!(
        coordinator["initContainers"][0]["args"][4].as_str(),
        Some(list.join(",").as_str())
    );
    // The names the coordinator dials are ones a worker listening there answers to (its
    // Host check), and the token it reads from the Secret is long enough off the loopback.
    let listen: std::net::SocketAddr = worker["args"][2].as_str().unwrap().parse().unwrap();
    for address in &list {
        assert!(
            belier_cluster::worker::admit::host_allowed(address, listen),
            "{address}"
        );
    }
    assert_eq!(belier_cluster::protocol::token_problem(&token, true), None);
    args
}

#[test]
fn flag_and_plan_runs_render_valid_manifests() {
    let Some(tool) = validator() else {
        return;
    };
    let dir = temp_dir("render");
    // The flags may come after the run, as in `belier k8s render URL … --workers N`.
    let (text, docs) = rendered(&[
        "http://api.internal:8080/",
        "--rate",
        "400",
        "-z",
        "1m",
        "--workers",
        "4",
        "--cpu",
        "2",
        "--memory",
        "1Gi",
    ]);
    let args = check_run(&text, &docs, 4);
    assert_eq!(
        args[..5],
        ["http://api.internal:8080/", "--rate", "400", "-z", "1m"]
    );
    let job = kind(&docs, "Job", "belier-worker");
    let resources = &job["spec"]["template"]["spec"]["containers"][0]["resources"];
    assert_eq!(resources["limits"]["cpu"].as_str(), Some("2"));
    assert_eq!(resources["requests"]["memory"].as_str(), Some("1Gi"));
    validate(&tool, &dir, "flags.yaml", &text).unwrap();

    // A plan with a data file beside it: both in the ConfigMap, mounted at /plan.
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/users.csv"), "id\n1\n2\n").unwrap();
    let plan = dir.join("shop.yaml");
    std::fs::write(
        &plan,
        "target: http://shop.internal\ndata:\n  users: { file: data/users.csv, order: unique }\nload: { vus: 10, duration: 1m }\nscenarios:\n  - steps:\n      - get: /u/{{ users.id }}\n",
    )
    .unwrap();
    let (text, docs) = rendered(&["--workers", "3", plan.to_str().unwrap(), "-z", "30s"]);
    let args = check_run(&text, &docs, 3);
    assert_eq!(args[..4], ["run", "/plan/shop.yaml", "-z", "30s"]);
    let map = kind(&docs, "ConfigMap", "belier-plan");
    assert!(map["data"]["plan"]
        .as_str()
        .unwrap()
        .contains("shop.internal"));
    assert_eq!(map["data"]["file-0"].as_str(), Some("id\n1\n2\n"));
    validate(&tool, &dir, "plan.yaml", &text).unwrap();

    // The validator is strict: a field the API does not have fails it.
    let bad = text.replace(
        "completionMode: Indexed",
        "completionMode: Indexed\n  shards: 3",
    );
    assert!(validate(&tool, &dir, "bad.yaml", &bad).is_err());
}

#[test]
fn an_existing_secret_replaces_the_generated_one() {
    let (text, docs) = rendered(&[
        "--workers",
        "2",
        "--token-secret",
        "team-token",
        "--run-name",
        "nightly",
        "http://127.0.0.1/",
    ]);
    assert!(!text.contains("kind: Secret"));
    let job = kind(&docs, "Job", "nightly-worker");
    let from = &env(
        &job["spec"]["template"]["spec"]["containers"][0],
        "BELIER_WORKER_TOKEN",
    )["valueFrom"]["secretKeyRef"];
    assert_eq!(from["name"].as_str(), Some("team-token"));
    // Without --image, the image scripts/package makes from this checkout (same version).
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["image"].as_str(),
        Some(concat!("ghcr.io/belier/belier:", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn bad_input_and_a_missing_kubectl_exit_2() {
    for (args, says) in [
        (vec!["http://127.0.0.1/"], "--workers"),
        (
            vec!["--workers", "0", "http://127.0.0.1/"],
            "at least one worker",
        ),
        (
            vec!["--workers", "2", "--cpu", "lots", "http://127.0.0.1/"],
            "--cpu",
        ),
        (
            vec![
                "--workers",
                "2",
                "--run-name",
                "Nightly",
                "http://127.0.0.1/",
            ],
            "--run-name",
        ),
        (
            vec!["--workers", "2", "http://127.0.0.1/", "--rate", "x"],
            "the run's flags",
        ),
    ] {
        let out = belier()
            .args(["k8s", "render"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let empty = temp_dir("no-kubectl");
    let out = belier()
        .args(["k8s", "run", "--workers", "2", "http://127.0.0.1/"])
        .env("PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kubectl is not on PATH"));
}

#[test]
fn wait_reports_who_never_accepted() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let up = listener.local_addr().unwrap().to_string();
    let out = belier().args(["k8s", "wait", &up]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    // A port nothing listens on: taken, then freed.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let out = belier()
        .args(["k8s", "wait", "--timeout", "1s", &format!("{up},{down}")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("not accepting connections: {down}")),
        "{err}"
    );
}
