//! The JUnit reports validate against `schema/junit.xsd` with an independent validator
//! (libxml2's `xmllint`), and a failed threshold is a `<failure>`. The reports checked are the
//! golden files the renderer's unit tests compare its output with (a plan's thresholds, runs
//! without thresholds, a comparison), so what is validated is exactly what belier writes.
//!
//! xmllint is Debian's `libxml2-utils` (`scripts/install-test-deps`). Without it the test says
//! it skipped, except under CI (`CI=true`), where a missing validator is a failure.

use std::path::Path;
use std::process::Command;

const SCHEMA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/junit.xsd");
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

/// Whether xmllint is here to run the test; outside CI a missing one skips it (saying so),
/// under CI it fails it.
fn have_xmllint() -> bool {
    if Command::new("xmllint").arg("--version").output().is_ok() {
        return true;
    }
    belier_testsupport::missing(
        "xmllint is not installed",
        "apt-get install -y libxml2-utils, or scripts/install-test-deps",
    );
    false
}

/// Runs `xmllint --noout --schema junit.xsd` on `xml`; returns (exit success, stderr).
fn validate(name: &str, xml: &str) -> (bool, String) {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("junit-{}-{name}.xml", std::process::id()));
    std::fs::write(&file, xml).unwrap();
    let out = Command::new("xmllint")
        .args(["--noout", "--schema", SCHEMA])
        .arg(&file)
        .output()
        .expect("xmllint runs");
    let _ = std::fs::remove_file(&file);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn golden(name: &str) -> String {
    std::fs::read_to_string(Path::new(GOLDEN).join(name)).unwrap()
}

#[test]
fn junit_validates_with_xmllint_and_a_failed_threshold_is_a_failure() {
    if !have_xmllint() {
        return;
    }
    for name in [
        "report-steps.junit.xml",
        "report.junit.xml",
        "compare.junit.xml",
    ] {
        let xml = golden(name);
        let (valid, stderr) = validate(name, &xml);
        assert!(valid, "xmllint rejected {name}: {stderr}\n{xml}");
    }

    let xml = golden("report-steps.junit.xml");
    let failed = r#"<testcase classname="belier.thresholds" name="login: error_rate &lt; 1%" time="0">
      <failure message="actual 4.00 %, limit login: error_rate &lt; 1%" type="threshold">"#;
    assert!(xml.contains(failed), "{xml}");
    assert!(
        xml.contains(r#"<testcase classname="belier.thresholds" name="p99 &lt; 200ms" time="0"/>"#),
        "{xml}"
    );

    // The schema is not a formality: a suite without its counts is rejected.
    let broken = xml.replacen(r#" tests="2" failures="1" errors"#, " errors", 1);
    assert_ne!(broken, xml);
    let (valid, _) = validate("broken", &broken);
    assert!(
        !valid,
        "xmllint accepted a testsuite without tests and failures"
    );
}
