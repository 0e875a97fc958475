//! The book (docs/) and the README, checked against what belier really does:
//! - the flag reference is what the generator writes from belier's clap definition, and each
//!   command's page holds exactly what `belier … --help` prints;
//! - every fenced block marked `sh runnable` runs, against the built-in target
//!   (CONTRIBUTING.md, "Docs that run");
//! - every relative link points at a file that exists, and every `#anchor` at a heading;
//! - `mdbook build docs` passes.

mod links;
mod markdown;
mod reference;
mod runnable;

use std::process::Command;

use belier_testsupport::{find_program, temp_dir};

belier_testsupport::binary!(BELIER);

fn bless() -> bool {
    std::env::var_os("BELIER_BLESS").is_some()
}

/// The committed reference pages are what the generator writes from the clap definition; with
/// `BELIER_BLESS=1` it writes them (and drops pages of commands that are gone).
#[test]
fn reference_pages_are_generated_from_clap() {
    let src = markdown::book_src();
    let pages = reference::pages();
    let mut stale = Vec::new();
    for page in &pages {
        let path = src.join(&page.path);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != page.text {
            if bless() {
                std::fs::create_dir_all(path.parent().expect("a directory")).expect("mkdir");
                std::fs::write(&path, &page.text).expect("write a reference page");
            } else {
                stale.push(page.path.clone());
            }
        }
    }
    let wanted: Vec<_> = pages.iter().map(|p| src.join(&p.path)).collect();
    for file in markdown::markdown_under(&src.join("reference/commands")) {
        if !wanted.contains(&file) {
            if bless() {
                std::fs::remove_file(&file).expect("remove a page of a command that is gone");
            } else {
                stale.push(markdown::shown(&file));
            }
        }
    }
    stale.extend(summary_is_generated());
    assert!(
        stale.is_empty(),
        "the flag reference differs from belier's clap definition in {}: run `{}` and commit \
         the pages it writes",
        stale.join(", "),
        reference::BLESS
    );
}

/// SUMMARY.md lists the reference pages as the generator does; under bless it rewrites them.
fn summary_is_generated() -> Option<String> {
    let path = markdown::book_src().join("SUMMARY.md");
    let summary = markdown::read(&path);
    let lines: Vec<&str> = summary.lines().collect();
    let first = reference::summary_lines()[0].clone();
    let start = lines.iter().position(|l| *l == first)?;
    let end = start
        + 1
        + lines[start + 1..]
            .iter()
            .take_while(|l| l.starts_with("  "))
            .count();
    let want = reference::summary_lines();
    if lines[start..end] == want.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        return None;
    }
    if bless() {
        let mut out: Vec<String> = lines[..start].iter().map(|l| l.to_string()).collect();
        out.extend(want);
        out.extend(lines[end..].iter().map(|l| l.to_string()));
        std::fs::write(&path, out.join("\n") + "\n").expect("write SUMMARY.md");
        return None;
    }
    Some("docs/src/SUMMARY.md".to_string())
}

/// Each command's page shows exactly what the binary prints for `belier … --help`.
#[test]
fn reference_pages_equal_the_binarys_help() {
    let src = markdown::book_src();
    let mut differ = Vec::new();
    for page in reference::pages().iter().skip(1) {
        let committed = markdown::read(&src.join(&page.path));
        let block = reference::help_block(&committed).unwrap_or_default();
        let out = BELIER
            .command()
            .args(&page.words)
            .arg("--help")
            .env("COLUMNS", reference::HELP_WIDTH.to_string())
            .output()
            .expect("belier runs");
        assert_eq!(out.status.code(), Some(0), "belier {:?} --help", page.words);
        let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect();
        let printed = format!("{}\n", printed.join("\n").trim_end());
        if printed != block {
            differ.push(format!(
                "{}: the page's help is not `belier {} --help`'s output:\n--- page\n{block}--- \
                 binary\n{printed}",
                page.path,
                page.words.join(" ")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{}\nrun `{}` and commit the pages it writes",
        differ.join("\n"),
        reference::BLESS
    );
}

/// Every `sh runnable` block of the README and the book runs (see runnable.rs).
#[test]
fn runnable_examples_run() {
    runnable::run_all(BELIER.path());
}

/// Relative links of the README and the book point at files that exist, their anchors at
/// headings that exist.
#[test]
fn links_resolve() {
    let broken = links::broken();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `mdbook build docs` passes (CI installs mdbook through scripts/install-test-deps).
#[test]
fn the_book_builds() {
    let Some(mdbook) = find_program("mdbook", "scripts/install-test-deps installs it") else {
        return;
    };
    let out_dir = temp_dir("book");
    let out = Command::new(mdbook)
        .arg("build")
        .arg(markdown::root().join("docs"))
        .arg("--dest-dir")
        .arg(&out_dir)
        .output()
        .expect("mdbook runs");
    assert!(
        out.status.success(),
        "mdbook build docs failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for page in reference::pages() {
        let html = out_dir.join(page.path.replace(".md", ".html"));
        assert!(html.is_file(), "{} was not rendered", html.display());
    }
}

/// The exit codes page lists each code `belier --help` ends with, in its words.
#[test]
fn exit_codes_page_says_what_help_says() {
    let help = String::from_utf8(BELIER.ok(&["--help"]).stdout).expect("UTF-8");
    let codes = help
        .split("Exit codes:\n")
        .nth(1)
        .expect("belier --help ends with its exit codes");
    let page = markdown::read(&markdown::book_src().join("reference/exit-codes.md"));
    for line in codes.lines().filter(|l| !l.trim().is_empty()) {
        let (code, meaning) = line
            .trim()
            .split_once(char::is_whitespace)
            .expect("CODE TEXT");
        let row = format!("| {code} | {} |", meaning.trim());
        assert!(
            page.contains(&row),
            "reference/exit-codes.md has no row starting `{row}` (belier --help: {line:?})"
        );
    }
}

/// The metric families the metrics page's table names, with their types.
fn documented_metrics() -> Vec<(String, String)> {
    let page = markdown::read(&markdown::book_src().join("reference/metrics.md"));
    let mut families = Vec::new();
    for row in page.lines().filter(|l| l.starts_with("| `belier_")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        let names = cells[0].split('`').skip(1).step_by(2);
        // `a`, `b` | counter: both counters; `a`, `b` | histogram, gauge: one each.
        let kinds: Vec<&str> = cells[1].split(", ").map(str::trim).collect();
        for (i, name) in names.enumerate() {
            let family = name.split('{').next().expect("a name");
            let kind = kinds.get(i).or(kinds.last()).expect("a type");
            families.push((family.to_string(), kind.to_string()));
        }
    }
    families.sort();
    families.dedup();
    families
}

/// The families `belier ARGS --metrics-listen` serves once its run ended, with their types.
fn served_metrics(args: &[&str], dir: &std::path::Path) -> Vec<(String, String)> {
    let listen = format!("127.0.0.1:{}", belier_testsupport::free_port());
    let mut run = args.to_vec();
    run.extend(["--metrics-listen", &listen, "--metrics-linger", "30s"]);
    let mut belier = BELIER.spawn_in(dir, &run);
    belier.wait_for("serving the final metrics");
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_secs(5)))
        .build()
        .into();
    let page = agent
        .get(&format!("http://{listen}/metrics"))
        .call()
        .expect("the exporter answers")
        .body_mut()
        .read_to_string()
        .expect("a page");
    belier.interrupt();
    let _ = belier.finish();
    let mut families: Vec<(String, String)> = page
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').expect("# TYPE NAME KIND");
            (name.to_string(), kind.to_string())
        })
        .collect();
    families.sort();
    families.dedup();
    families
}

/// The families served for `belier grpc` on the built-in target's server-streaming method.
fn served_streaming_metrics(dir: &std::path::Path) -> Vec<(String, String)> {
    let grpc = belier_testserver::Server::start(belier_testserver::Config {
        http2: true,
        ..belier_testserver::Config::default()
    })
    .expect("the built-in target starts");
    let proto = BELIER.ok(&["target", "--print-proto"]).stdout;
    std::fs::write(dir.join("target.proto"), proto).expect("write the .proto");
    let target = grpc.addr().to_string();
    let call = [
        "grpc",
        &target,
        "--plaintext",
        "--call",
        "belier.target.Target/ServerStream",
        "--proto",
        "target.proto",
        "-d",
        r#"{"count": 3}"#,
        "-n",
        "10",
        "-t",
        "1",
    ];
    let served = served_metrics(&call, dir);
    grpc.stop();
    served
}

/// The metrics page names exactly the families the exporter serves for a flag run, a plan run,
/// a run of streaming gRPC calls, a WebSocket run, an LLM stream and a run over several
/// addresses together, with their types.
#[test]
fn metric_names_are_what_the_exporter_serves() {
    let server = belier_testserver::Server::start(belier_testserver::Config::default())
        .expect("the built-in target starts");
    let dir = temp_dir("metrics");
    let plan = format!(
        "target: {}\nload:\n  vus: 2\n  duration: 1s\nscenarios:\n  - name: browse\n    \
         steps:\n      - name: home\n        get: /\n",
        server.url("")
    );
    std::fs::write(dir.join("plan.yaml"), plan).expect("write the plan");
    let url = server.url("/");
    let mut served = served_metrics(&[&url, "--rate", "100", "-z", "1s", "-t", "1"], &dir);
    served.extend(served_metrics(&["run", "plan.yaml", "-t", "1"], &dir));
    served.extend(served_streaming_metrics(&dir));
    // A WebSocket run's and an LLM stream's messages have families named for them.
    let ws = server.url("/ws").replacen("http", "ws", 1);
    let socket = ["ws", &ws, "-n", "5", "--messages", "2", "-t", "1"];
    served.extend(served_metrics(&socket, &dir));
    let llm = server.url("/v1/chat/completions");
    let stream = [&llm, "--llm", "-d", "{}", "-n", "3", "-t", "1"];
    served.extend(served_metrics(&stream, &dir));
    // A run over two server addresses from two source addresses has families by address.
    let port = server.addr().port();
    let second = belier_testserver::Server::start(belier_testserver::Config {
        listen: std::net::SocketAddr::from(([127, 0, 0, 2], port)),
        ..belier_testserver::Config::default()
    })
    .expect("a second target on 127.0.0.2");
    let resolve = format!("two.test:{port}:127.0.0.1,127.0.0.2");
    let url = format!("http://two.test:{port}/");
    let spread = [
        url.as_str(),
        "--resolve",
        &resolve,
        "--dns-policy",
        "round-robin",
        "--local-address",
        "127.0.1.0/31",
        "-c",
        "2",
        "-n",
        "10",
        "-t",
        "1",
    ];
    served.extend(served_metrics(&spread, &dir));
    second.stop();
    let mut documented = documented_metrics();
    // A run over HTTP/3 has QUIC's families (quic-go's server; without Go, outside CI, the
    // test says it skipped them).
    match belier_testsupport::h3::QuicGo::start(&[]) {
        Some(h3) => {
            let url = h3.url("/");
            let quic = [url.as_str(), "--http3", "-k", "-n", "10", "-t", "1"];
            served.extend(served_metrics(&quic, &dir));
        }
        None => documented.retain(|(name, _)| !name.starts_with("belier_quic_")),
    }
    served.sort();
    served.dedup();
    assert_eq!(
        documented, served,
        "docs/src/reference/metrics.md's table (left) and the exporter's families (right) differ"
    );
    server.stop();
}
