//! The objects of one run, as JSON values in the shape of the Kubernetes API (core `v1` and
//! `batch/v1`).

use base64::Engine as _;
use serde_json::{json, Value};

use crate::error::RenderError;
use crate::run::{Run, Token, Workload, PLAN_DIR, RUN_AS_USER, TOKEN_ENV, TOKEN_KEY};

/// Longest run name: a worker pod's host name, `NAME-worker-INDEX`, must stay a DNS label
/// (63 characters) for any index up to 99,999.
const MAX_NAME: usize = 45;
/// How long the coordinator's init container waits for every worker to accept connections.
const WORKERS_TIMEOUT: &str = "10m";
/// How long finished Jobs (and their pods' logs) are kept.
const KEEP_FINISHED_S: u64 = 3600;

/// The names the coordinator dials, `RUN-worker-I.RUN-workers:PORT`, in shard order.
pub fn worker_addresses(run: &Run) -> Vec<String> {
    (0..run.workers)
        .map(|i| {
            format!(
                "{}-{i}.{}:{}",
                worker_job(&run.name),
                service(&run.name),
                run.port
            )
        })
        .collect()
}

pub(crate) fn worker_job(name: &str) -> String {
    format!("{name}-worker")
}

pub(crate) fn service(name: &str) -> String {
    format!("{name}-workers")
}

pub(crate) fn coordinator_job(name: &str) -> String {
    format!("{name}-coordinator")
}

fn secret(run: &Run) -> String {
    match &run.token {
        Token::Secret(name) => name.clone(),
        Token::Generated(_) => format!("{}-token", run.name),
    }
}

fn config_map(name: &str) -> String {
    format!("{name}-plan")
}

/// The run's objects, in the order they should be applied.
pub fn render_documents(run: &Run) -> Result<Vec<Value>, RenderError> {
    check(run)?;
    let mut docs = Vec::new();
    if let Token::Generated(token) = &run.token {
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata(run, &secret(run), None),
            "type": "Opaque",
            "data": { TOKEN_KEY: base64::engine::general_purpose::STANDARD.encode(token) },
        }));
    }
    if let Workload::Plan { text, files, .. } = &run.workload {
        // ConfigMap keys cannot hold a `/`: each file gets a key, and `items` puts it back at
        // its path under /plan.
        let mut data = serde_json::Map::new();
        data.insert("plan".into(), json!(text));
        for (i, (_, contents)) in files.iter().enumerate() {
            data.insert(format!("file-{i}"), json!(contents));
        }
        docs.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(run, &config_map(&run.name), None),
            "data": data,
        }));
    }
    docs.push(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(run, &service(&run.name), Some("worker")),
        "spec": {
            // Headless: a DNS name per worker pod (its host name under this subdomain), which
            // the coordinator dials; no load balancing in between.
            "clusterIP": "None",
            // Workers have no readiness probe; their names resolve as soon as they run.
            "publishNotReadyAddresses": true,
            "selector": selector(run, "worker"),
            "ports": [{ "name": "control", "port": run.port, "targetPort": run.port }],
        },
    }));
    docs.push(workers(run));
    docs.push(coordinator(run));
    Ok(docs)
}

fn workers(run: &Run) -> Value {
    let mut container = json!({
        "name": "worker",
        "image": run.image,
        "args": ["worker", "--listen", format!("0.0.0.0:{}", run.port)],
        "env": [
            token_env(run),
            {
                // The pod's completion index, which is also its shard: the coordinator dials
                // worker I as the I-th of --workers and gives it shard I.
                "name": "BELIER_SHARD_INDEX",
                "valueFrom": { "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                } },
            },
        ],
        "ports": [{ "name": "control", "containerPort": run.port }],
        "securityContext": container_security(),
        "volumeMounts": mounts(run),
    });
    if let Some(resources) = resources(run) {
        container["resources"] = resources;
    }
    let n = run.workers;
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(run, &worker_job(&run.name), Some("worker")),
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            // A lost worker is the coordinator's to report; a replacement would join late.
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": KEEP_FINISHED_S,
            "template": {
                "metadata": { "labels": selector(run, "worker") },
                "spec": {
                    "subdomain": service(&run.name),
                    "restartPolicy": "Never",
                    "securityContext": pod_security(),
                    "containers": [container],
                    "volumes": volumes(run),
                },
            },
        },
    })
}

fn coordinator(run: &Run) -> Value {
    let list = worker_addresses(run).join(",");
    let mut args: Vec<String> = match &run.workload {
        Workload::Flags(args) => args.clone(),
        Workload::Plan { file, args, .. } => {
            let mut all = vec!["run".to_string(), format!("{PLAN_DIR}/{file}")];
            all.extend(args.iter().cloned());
            all
        }
    };
    args.extend(["--workers".to_string(), list.clone()]);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(run, &coordinator_job(&run.name), Some("coordinator")),
        "spec": {
            // A run is not replayed: its exit code is the run's verdict.
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": KEEP_FINISHED_S,
            "template": {
                "metadata": { "labels": selector(run, "coordinator") },
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": pod_security(),
                    // The workers may still be starting: the run begins once all accept
                    // connections, checked by the same image (no shell in it).
                    "initContainers": [{
                        "name": "wait-for-workers",
                        "image": run.image,
                        "args": ["k8s", "wait", "--timeout", WORKERS_TIMEOUT, list],
                        "securityContext": container_security(),
                    }],
                    "containers": [{
                        "name": "coordinator",
                        "image": run.image,
                        "args": args,
                        "env": [token_env(run)],
                        "securityContext": container_security(),
                        "volumeMounts": mounts(run),
                    }],
                    "volumes": volumes(run),
                },
            },
        },
    })
}

fn metadata(run: &Run, name: &str, component: Option<&str>) -> Value {
    let mut labels = json!({
        "app.kubernetes.io/name": "belier",
        "app.kubernetes.io/instance": run.name,
    });
    if let Some(c) = component {
        labels["app.kubernetes.io/component"] = json!(c);
    }
    let mut meta = json!({ "name": name, "labels": labels });
    if let Some(ns) = &run.namespace {
        meta["namespace"] = json!(ns);
    }
    meta
}

fn selector(run: &Run, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "belier",
        "app.kubernetes.io/instance": run.name,
        "app.kubernetes.io/component": component,
    })
}

/// The token, from its Secret: never written in a Job's spec.
fn token_env(run: &Run) -> Value {
    json!({
        "name": TOKEN_ENV,
        "valueFrom": { "secretKeyRef": { "name": secret(run), "key": TOKEN_KEY } },
    })
}

fn pod_security() -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": RUN_AS_USER,
        "runAsGroup": RUN_AS_USER,
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

fn container_security() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "readOnlyRootFilesystem": true,
        "capabilities": { "drop": ["ALL"] },
    })
}

/// Requests equal to limits: the worker gets what it asked for (Guaranteed QoS when both are
/// given), so a shard's load is not throttled by its neighbours.
fn resources(run: &Run) -> Option<Value> {
    let mut amounts = serde_json::Map::new();
    if let Some(cpu) = &run.cpu {
        amounts.insert("cpu".into(), json!(cpu));
    }
    if let Some(memory) = &run.memory {
        amounts.insert("memory".into(), json!(memory));
    }
    (!amounts.is_empty()).then(|| json!({ "requests": amounts, "limits": amounts }))
}

/// A writable /tmp (the root file system is read-only: workers keep their results files
/// there), and the plan under /plan for plan runs.
fn mounts(run: &Run) -> Value {
    let mut m = vec![json!({ "name": "tmp", "mountPath": "/tmp" })];
    if matches!(run.workload, Workload::Plan { .. }) {
        m.push(json!({ "name": "plan", "mountPath": PLAN_DIR, "readOnly": true }));
    }
    Value::Array(m)
}

fn volumes(run: &Run) -> Value {
    let mut v = vec![json!({ "name": "tmp", "emptyDir": {} })];
    if let Workload::Plan { file, files, .. } = &run.workload {
        let mut items = vec![json!({ "key": "plan", "path": file })];
        for (i, (path, _)) in files.iter().enumerate() {
            items.push(json!({ "key": format!("file-{i}"), "path": path }));
        }
        v.push(json!({
            "name": "plan",
            "configMap": { "name": config_map(&run.name), "items": items },
        }));
    }
    Value::Array(v)
}

fn check(run: &Run) -> Result<(), RenderError> {
    if run.workers == 0 {
        return Err(RenderError::NoWorkers);
    }
    label("--run-name", &run.name, MAX_NAME)?;
    if let Some(ns) = &run.namespace {
        label("--namespace", ns, 63)?;
    }
    if let Token::Secret(name) = &run.token {
        label("--token-secret", name, 253)?;
    }
    for (what, value) in [("--cpu", &run.cpu), ("--memory", &run.memory)] {
        if let Some(v) = value {
            if !quantity(v) {
                return Err(RenderError::Quantity {
                    what,
                    value: v.clone(),
                });
            }
        }
    }
    if let Workload::Plan { file, files, .. } = &run.workload {
        for path in std::iter::once(file).chain(files.iter().map(|(p, _)| p)) {
            if path.is_empty()
                || path.starts_with('/')
                || path.split('/').any(|part| part == ".." || part.is_empty())
            {
                return Err(RenderError::Name {
                    what: "plan file",
                    value: path.clone(),
                    why: "must be a path below the plan's directory (no `..`, not absolute)",
                });
            }
        }
    }
    Ok(())
}

/// A DNS label (lower-case letters, digits and `-`, starting and ending with a letter or
/// digit) of at most `max` characters.
fn label(what: &'static str, value: &str, max: usize) -> Result<(), RenderError> {
    let bad = |why| {
        Err(RenderError::Name {
            what,
            value: value.to_string(),
            why,
        })
    };
    if value.is_empty() || value.len() > max {
        return bad("must be 1 to 45 characters (63 for a namespace)");
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return bad("may hold only lower-case letters, digits and `-`");
    }
    if value.starts_with('-') || value.ends_with('-') {
        return bad("must start and end with a letter or digit");
    }
    Ok(())
}

/// A Kubernetes quantity as people write them: a number, optionally with a decimal part, and
/// a suffix (`m`, `k`, `M`, `G`, `T`, `P`, `E`, `Ki` … `Ei`).
fn quantity(s: &str) -> bool {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(digits_end);
    let number_ok = !number.is_empty()
        && number.matches('.').count() <= 1
        && !number.starts_with('.')
        && !number.ends_with('.');
    let suffixes = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    number_ok && suffixes.contains(&suffix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_PORT;

    fn run(workload: Workload) -> Run {
        Run {
            name: "r42".into(),
            namespace: Some("load".into()),
            image: "registry.example/belier:1".into(),
            workers: 3,
            port: DEFAULT_PORT,
            cpu: Some("2".into()),
            memory: Some("1Gi".into()),
            token: Token::Generated("s3cret-token".into()),
            workload,
        }
    }

    #[test]
    fn a_flag_run_has_a_secret_service_workers_and_coordinator() {
        let r = run(Workload::Flags(vec![
            "http://api/".into(),
            "--rate".into(),
            "400".into(),
        ]));
        let docs = render_documents(&r).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Secret", "Service", "Job", "Job"]);
        let workers = &docs[2]["spec"];
        assert_eq!(workers["completionMode"], "Indexed");
        assert_eq!(workers["completions"], 3);
        assert_eq!(workers["parallelism"], 3);
        assert_eq!(workers["template"]["spec"]["subdomain"], "r42-workers");
        let args = &docs[3]["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(
            args,
            &json!([
                "http://api/",
                "--rate",
                "400",
                "--workers",
                "r42-worker-0.r42-workers:7979,r42-worker-1.r42-workers:7979,r42-worker-2.r42-workers:7979"
            ])
        );
        // The token only in the Secret, encoded.
        let text = crate::render(&r).unwrap();
        assert_eq!(text.matches("s3cret-token").count(), 0);
        assert_eq!(docs[0]["data"]["token"], "czNjcmV0LXRva2Vu");
    }

    #[test]
    fn a_plan_run_mounts_its_plan_and_files_and_an_existing_secret_is_used() {
        let mut r = run(Workload::Plan {
            file: "shop.yaml".into(),
            text: "target: http://shop\n".into(),
            files: vec![("data/users.csv".into(), "id\n1\n".into())],
            args: vec!["-z".into(), "5m".into()],
        });
        r.token = Token::Secret("shared-token".into());
        let docs = render_documents(&r).unwrap();
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["ConfigMap", "Service", "Job", "Job"]);
        let spec = &docs[3]["spec"]["template"]["spec"];
        assert_eq!(spec["containers"][0]["args"][0], "run");
        assert_eq!(spec["containers"][0]["args"][1], "/plan/shop.yaml");
        assert_eq!(spec["containers"][0]["args"][2], "-z");
        assert_eq!(
            spec["containers"][0]["env"][0]["valueFrom"]["secretKeyRef"]["name"],
            "shared-token"
        );
        assert_eq!(
            spec["volumes"][1]["configMap"]["items"][1],
            json!({"key": "file-0", "path": "data/users.csv"})
        );
    }

    #[test]
    fn bad_names_and_quantities_are_refused() {
        let flags = || run(Workload::Flags(vec!["http://api/".into()]));
        for (edit, what) in [
            (
                Box::new(|r: &mut Run| r.name = "Big".into()) as Box<dyn Fn(&mut Run)>,
                "--run-name",
            ),
            (
                Box::new(|r: &mut Run| r.name = "a".repeat(46)),
                "--run-name",
            ),
            (
                Box::new(|r: &mut Run| r.namespace = Some("-x".into())),
                "--namespace",
            ),
            (Box::new(|r: &mut Run| r.cpu = Some("two".into())), "--cpu"),
            (
                Box::new(|r: &mut Run| r.memory = Some("1GB".into())),
                "--memory",
            ),
        ] {
            let mut r = flags();
            edit(&mut r);
            let err = render_documents(&r).unwrap_err().to_string();
            assert!(err.starts_with(what), "{err}");
        }
        let mut r = flags();
        r.workers = 0;
        assert_eq!(render_documents(&r), Err(RenderError::NoWorkers));
        for ok in ["2", "500m", "1.5", "1Gi", "512Mi"] {
            assert!(quantity(ok), "{ok}");
        }
    }
}
