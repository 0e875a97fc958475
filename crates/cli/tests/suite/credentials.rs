//! `user:pass@` in a URL: sent as Basic auth (as curl does), and shown nowhere — not in the
//! report of any format, the results file, nor on standard error. Checked from the server's
//! side with belier's test server, which records every request.

use std::path::Path;

use belier_testserver::{Config, Server};
use serde_json::Value;

belier_testsupport::binary!(BELIER);

fn server() -> Server {
    Server::start(Config {
        record_requests: 1000,
        ..Config::default()
    })
    .expect("test server starts")
}

/// base64("alice:s3cr+t")
const BASIC: &str = "Basic YWxpY2U6czNjcit0";

#[test]
fn credentials_in_the_url_go_as_basic_auth_and_are_never_shown() {
    let s = server();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cred-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (save, html) = (dir.join("run.jsonl"), dir.join("run.html"));
    let url = s.url("/private").replace("http://", "http://alice:s3cr+t@");
    let (save_arg, html_arg) = (save.to_str().unwrap(), html.to_str().unwrap());
    let out = BELIER.ok(&[
        &url, "-n", "20", "-c", "2", "--output", "json", "--save", save_arg, "--html", html_arg,
    ]);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 20);
    assert!(seen
        .iter()
        .all(|r| r.header("Authorization") == Some(BASIC)));
    assert!(seen.iter().all(|r| r.target == "/private"));

    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["run"]["url"], s.url("/private"));
    let shown = [
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        std::fs::read_to_string(&save).unwrap(),
        std::fs::read_to_string(&html).unwrap(),
    ];
    for text in &shown {
        assert!(!text.contains("s3cr"), "the password shows");
        assert!(!text.contains("alice"), "the user shows");
        assert!(!text.contains("YWxpY2U6"), "the header shows");
    }

    // An Authorization header given with -H wins, as with curl.
    let s = server();
    let url = s.url("/").replace("http://", "http://alice:s3cr+t@");
    BELIER.ok(&[
        &url,
        "-n",
        "3",
        "-c",
        "1",
        "-H",
        "Authorization: Bearer xyz",
    ]);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 3);
    for r in &seen {
        let auth: Vec<_> = r
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            .collect();
        assert_eq!(auth.len(), 1, "{r:?}");
        assert_eq!(auth[0].1, "Bearer xyz");
    }
}

/// `--cookies`: each connection sends back the cookie its previous response set. The test
/// server's `token` knob sets `session=t<C>-<K>` (connection C, request K on it), so every
/// request but a connection's first must carry the token of the one before it.
#[test]
fn cookies_go_back_to_the_server_that_set_them() {
    let s = server();
    let url = s.url("/login?token=1");
    BELIER.ok(&[&url, "-n", "30", "-c", "3", "-t", "1", "--cookies"]);
    let seen = s.recent_requests();
    assert_eq!(seen.len(), 30);
    let mut index = std::collections::HashMap::new();
    for r in &seen {
        let k = index.entry(r.connection).or_insert(0u64);
        let want = (*k > 0).then(|| format!("session=t{}-{}", r.connection, *k - 1));
        assert_eq!(r.header("Cookie").map(str::to_string), want, "{r:?}");
        *k += 1;
    }
    assert!(seen.iter().filter(|r| r.header("Cookie").is_some()).count() >= 27);

    // Without --cookies, none goes back.
    let s = server();
    BELIER.ok(&[&s.url("/login?token=1"), "-n", "5", "-c", "1"]);
    assert!(s
        .recent_requests()
        .iter()
        .all(|r| r.header("Cookie").is_none()));
}
