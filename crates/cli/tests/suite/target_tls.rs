//! `belier target --tls`: the built-in target serves HTTPS with a certificate generated at
//! start, prints its SHA-256 fingerprint and the CA file, and belier trusts it with --cacert.
//! The fingerprint is checked against what OpenSSL's client reads off the wire (Debian's
//! `openssl`; the check says it skipped without it, and fails under CI).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

belier_testsupport::binary!(BELIER);

struct Target(Child);

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fingerprint OpenSSL computes for the certificate `port` presents.
fn openssl_fingerprint(port: u16) -> Option<String> {
    let hello = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}")])
        .args(["-servername", "localhost"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let hello = match hello {
        Ok(out) => out.stdout,
        Err(e) => {
            assert!(
                std::env::var("CI").map_or(true, |v| v != "true"),
                "openssl is not installed, and CI must check the fingerprint: {e}"
            );
            let _ = writeln!(
                std::io::stderr(),
                "skipped: the fingerprint check needs openssl ({e}; apt-get install -y openssl)"
            );
            return None;
        }
    };
    let mut x509 = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    x509.stdin.take().unwrap().write_all(&hello).unwrap();
    let out = x509.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.trim()
            .split_once('=')
            .expect("a fingerprint line")
            .1
            .to_string(),
    )
}

#[test]
fn the_target_serves_https_with_a_generated_certificate_whose_fingerprint_it_prints() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_belier"))
        .args(["target", "--tls", "--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut target = Target(child);
    let mut lines = BufReader::new(stderr).lines();
    let (mut url, mut fingerprint, mut ca) = (None, None, None);
    while ca.is_none() {
        let line = lines.next().expect("the target's banner").unwrap();
        if let Some(u) = line.strip_prefix("belier target listening on ") {
            url = Some(u.to_string());
        } else if let Some(f) = line.split_once("SHA-256 fingerprint ") {
            fingerprint = Some(f.1.to_string());
        } else if let Some(rest) = line.trim().strip_prefix("clients trust it with --cacert ") {
            ca = Some(rest.split_whitespace().next().unwrap().to_string());
        }
    }
    let (url, fingerprint, ca) = (url.unwrap(), fingerprint.unwrap(), ca.unwrap());
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    assert_eq!(fingerprint.len(), 32 * 3 - 1, "{fingerprint}");

    let out = BELIER.ok(&[
        &url, "-n", "5", "-c", "1", "--cacert", &ca, "--output", "json",
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status_codes"]["200"], 5, "{doc}");

    let port: u16 = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    if let Some(seen) = openssl_fingerprint(port) {
        assert_eq!(seen, fingerprint);
    }

    // Ctrl-C stops it, and the CA file goes with the certificate it was for.
    assert!(std::path::Path::new(&ca).exists(), "{ca}");
    let pid = target.0.id().to_string();
    let interrupted = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(interrupted.success());
    let status = target.0.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(!std::path::Path::new(&ca).exists(), "{ca} left behind");
}

#[test]
fn the_demo_over_tls_trusts_the_generated_certificate() {
    let out = BELIER.ok(&["demo", "--tls", "-z", "1s", "-c", "2"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stderr.contains("SHA-256 fingerprint"), "{stderr}");
    assert!(stdout.contains("https://127.0.0.1:"), "{stdout}");
    // Every request was answered: the report's count is the target's, and no error.
    let counted: u64 = stdout
        .split("The target counted ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("the target's count");
    assert!(counted > 0);
    assert!(stdout.contains("Errors\n  none"), "{stdout}");
    // The CA file the demo trusted is gone with its target.
    let port = stdout
        .split("https://127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .expect("the target's port");
    let ca = std::env::temp_dir().join(format!("belier-target-{port}-ca.pem"));
    assert!(!ca.exists(), "{} left behind", ca.display());
}
