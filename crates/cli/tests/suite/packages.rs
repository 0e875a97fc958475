//! belier's packages as a user meets them: `scripts/package` makes the .deb, the release
//! archive and the OCI image from the binary under test, and each is installed and run here.
//! The .deb goes into a dpkg root of its own (the host's package database copied in, so its
//! Depends are checked against a real system and nothing of the host is touched), runs
//! `belier demo`, renders its man page, loads its bash completion and is removed without a
//! trace; the archive holds what it should and its checksums verify; the image, loaded from
//! its OCI archive, runs `belier demo` and a worker on the host's network that a coordinator on
//! the host drives, each load counted by the target on its own side.
//!
//! `cargo install --path crates/cli` runs in tests/install.rs.

#![allow(clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use belier_testserver::{Config, Server};
use belier_testsupport::{find_program, free_port, temp_dir, Belier};

belier_testsupport::binary!();

/// A version of its own, so the image the tests load and remove is never one a developer made.
const VERSION: &str = "0.0.0-packagetest";

/// `scripts/package`'s output directory, made once for all the tests; `None` when a tool it
/// needs is missing (said by [`find_program`]).
fn packages() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        find_program("dpkg-deb", "apt-get install dpkg")?;
        let out = temp_dir("packages");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/package");
        let run = command_ok(
            Command::new("bash")
                .arg(script)
                .arg("--binary")
                .arg(BELIER.path())
                .arg("--out")
                .arg(&out)
                .args(["--version", VERSION]),
        );
        eprintln!("{}", String::from_utf8_lossy(&run.stdout));
        // The image is tested from its OCI archive (loaded by the test that runs it), so the
        // one the script left behind goes now (without podman there is none).
        let _ = podman(&out).args(["rmi", "-f", &image_name()]).output();
        Some(out)
    })
    .as_deref()
}

/// The image's name: the one `belier k8s` of this version runs by default, but for the
/// version (a version of the tests' own, see [`VERSION`]).
fn image_name() -> String {
    let default = belier_k8s::DEFAULT_IMAGE;
    let repository = default.rsplit_once(':').map_or(default, |(r, _)| r);
    format!("{repository}:{VERSION}")
}

/// Runs `command`; fails the test with its output unless it exits 0.
fn command_ok(command: &mut Command) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} exited {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every file under `dir`, relative to it, but for dpkg's own database under var/.
fn files_outside_var(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().map(Result::unwrap) {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if rel.starts_with("var") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            }
            found.push(rel);
        }
    }
    found.sort();
    found
}

#[test]
fn the_deb_installs_runs_shows_its_man_page_and_completion_and_goes_away() {
    let Some(out) = packages() else { return };
    let (Some(dpkg), Some(man)) = (
        find_program("dpkg", "apt-get install dpkg"),
        find_program("man", "apt-get install man-db"),
    ) else {
        return;
    };
    let root = temp_dir("deb-root");
    let db = root.join("var/lib/dpkg");
    for dir in ["info", "updates"] {
        std::fs::create_dir_all(db.join(dir)).unwrap();
    }
    std::fs::write(db.join("available"), "").unwrap();
    // The host's installed packages, so that the .deb's Depends must really be met.
    std::fs::copy("/var/lib/dpkg/status", db.join("status")).unwrap();
    let root_arg = format!("--root={}", root.display());
    let deb = out.join(format!("belier_{VERSION}_amd64.deb"));
    command_ok(
        Command::new(&dpkg)
            .args([&root_arg, "--force-not-root", "-i"])
            .arg(&deb),
    );

    let installed = files_outside_var(&root);
    for file in [
        "usr/bin/belier",
        "usr/share/man/man1/belier.1.gz",
        "usr/share/bash-completion/completions/belier",
        "usr/share/zsh/vendor-completions/_belier",
        "usr/share/fish/vendor_completions.d/belier.fish",
        "usr/share/doc/belier/copyright",
    ] {
        assert!(
            installed.contains(&PathBuf::from(file)),
            "{file}: {installed:?}"
        );
    }
    let copyright = std::fs::read_to_string(root.join("usr/share/doc/belier/copyright")).unwrap();
    assert!(copyright.contains("License: MIT") && copyright.contains("License: Apache-2.0"));

    let demo =
        command_ok(Command::new(root.join("usr/bin/belier")).args(["demo", "-z", "1s", "-c", "2"]));
    belier_testsupport::demo::assert_counts_agree(&demo);

    let page = command_ok(
        Command::new(man)
            .arg("-l")
            .arg(root.join("usr/share/man/man1/belier.1.gz"))
            .envs([("MANPAGER", "cat"), ("MANWIDTH", "100"), ("LANG", "C")]),
    );
    let page = String::from_utf8_lossy(&page.stdout);
    for flag in [
        "--connections",
        "--duration",
        "--rate",
        "--workers",
        "--output",
    ] {
        assert!(page.contains(flag), "the man page lacks {flag}: {page}");
    }

    let completion = root.join("usr/share/bash-completion/completions/belier");
    let complete = command_ok(Command::new("bash").arg("-c").arg(format!(
        "source '{}' && complete -p belier",
        completion.display()
    )));
    let complete = String::from_utf8_lossy(&complete.stdout);
    assert!(complete.contains("-F _belier belier"), "{complete}");

    command_ok(Command::new(&dpkg).args([&root_arg, "--force-not-root", "-r", "belier"]));
    assert_eq!(
        files_outside_var(&root),
        Vec::<PathBuf>::new(),
        "left after dpkg -r"
    );
}

#[test]
fn the_archive_holds_the_binary_docs_and_licences_and_its_checksums_verify() {
    let Some(out) = packages() else { return };
    let name = format!("belier-{VERSION}-x86_64-linux");
    let list = command_ok(
        Command::new("tar")
            .arg("tzf")
            .arg(out.join(format!("{name}.tar.gz"))),
    );
    // Exactly these, nothing forgotten and nothing stray (tar lists in name order).
    let mut listed: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| l.strip_prefix(&format!("{name}/")).unwrap_or(l).to_string())
        .collect();
    listed.sort();
    let want = "|CHANGELOG.md|LICENSE-APACHE|LICENSE-MIT|README.md|belier|belier.1.gz|completions/\
                |completions/_belier|completions/belier.bash|completions/belier.fish";
    assert_eq!(listed.join("|"), want);
    let sums = std::fs::read_to_string(out.join("SHA256SUMS")).unwrap();
    assert!(sums.contains(&format!("{name}.tar.gz")), "{sums}");
    assert!(
        sums.contains(&format!("belier_{VERSION}_amd64.deb")),
        "{sums}"
    );
    command_ok(
        Command::new("sha256sum")
            .args(["--check", "--strict", "SHA256SUMS"])
            .current_dir(out),
    );
}

/// podman, with the runtime configuration `scripts/package` wrote when the default runtime
/// failed here.
fn podman(out: &Path) -> Command {
    let mut podman = Command::new("podman");
    let conf = out.join("containers.conf");
    if conf.is_file() {
        podman.env("CONTAINERS_CONF", conf);
    }
    podman
}

/// Removes the image when the test ends, whether it passed or not.
struct Image<'a> {
    out: &'a Path,
    name: String,
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        let _ = podman(self.out).args(["rmi", "-f", &self.name]).output();
    }
}

#[test]
fn the_image_runs_demo_and_a_worker_that_a_coordinator_on_the_host_drives() {
    let Some(out) = packages() else { return };
    if find_program("podman", "apt-get install podman runc").is_none() {
        return;
    }
    let archive = out.join(format!("belier-{VERSION}-oci.tar"));
    assert!(archive.is_file(), "scripts/package made no OCI archive");
    command_ok(podman(out).arg("load").arg("-i").arg(&archive));
    let image = Image {
        out,
        name: image_name(),
    };
    let size = command_ok(podman(out).args(["images", "--format", "{{.Size}}", &image.name]));
    eprintln!(
        "image {}: {}",
        image.name,
        String::from_utf8_lossy(&size.stdout).trim()
    );
    let user = command_ok(podman(out).args([
        "image",
        "inspect",
        "--format",
        "{{.Config.User}}",
        &image.name,
    ]));
    assert_eq!(String::from_utf8_lossy(&user.stdout).trim(), "65532:65532");

    let demo = command_ok(
        podman(out)
            .args(["run", "--rm", "--network", "none", &image.name])
            .args(["demo", "-z", "1s", "-c", "2"]),
    );
    belier_testsupport::demo::assert_counts_agree(&demo);

    // A worker in the container on the host's network, a coordinator and the target on the
    // host; nothing mounted: the worker keeps its results in the image's own /tmp.
    let listen = format!("127.0.0.1:{}", free_port());
    let token = "packages-test-token-0123456789";
    let name = format!("belier-packages-worker-{}", std::process::id());
    let mut worker = Belier::start(
        podman(out)
            .args(["run", "--rm", "--name", &name, "--network", "host"])
            .args([&image.name, "worker", "--listen", &listen, "--token", token]),
    );
    worker.wait_for("runs' results in");
    let server = Server::start(Config::default()).unwrap();
    let run = BELIER.ok(&[
        server.url("/").as_str(),
        "-n",
        "200",
        "--workers",
        &listen,
        "--worker-token",
        token,
        "--output",
        "json",
    ]);
    let _ = podman(out).args(["stop", "-t", "1", &name]).output();
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(server.counts().requests, 200, "the target's own count");
    assert_eq!(report["summary"]["requests"], 200, "{report}");
}
