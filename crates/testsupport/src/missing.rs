//! The one rule for a real component a test needs and the machine lacks: outside CI the test
//! says so and is passed over; under CI (`CI=true`) it fails, so that a test cannot pass by
//! silently running nothing.

use std::path::PathBuf;

/// Says that the running test is passed over because `why`, and how to get what it needs
/// (`install`): `NAME: skipped: WHY (INSTALL)` on stderr, where cargo test shows it. Under CI
/// (`CI=true`) it fails the test instead. A test calls it, then returns.
#[allow(
    clippy::print_stderr,
    reason = "a skipped test must say so where cargo test shows it"
)]
pub fn missing(why: &str, install: &str) {
    let name = test_name();
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{name}: {why}, and CI must run this test ({install})"
    );
    eprintln!("{name}: skipped: {why} ({install})");
}

/// `program` on `PATH` or in /usr/local/bin, /usr/local/sbin, /usr/bin or /usr/sbin; when it is not there, `None` after
/// [`missing`] (which fails under CI) with `install`.
pub fn find_program(program: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/local/bin", "/usr/local/sbin", "/usr/bin", "/usr/sbin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file());
    if found.is_none() {
        missing(&format!("{program} is not installed"), install);
    }
    found
}

/// The running test's name: the test harness names each test's thread after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string()
}
