//! Headless Chromium driven over WebDriver (W3C, JSON over HTTP) by Debian's chromedriver
//! (`chromium-driver`, installed by scripts/install-chromium). The protocol is a handful of
//! JSON requests, sent with the ureq the CLI already uses. Without chromium or chromedriver
//! the test says it skipped, except under CI (`CI=true`), where that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::missing::missing;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// W3C WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// Longest a browser command may take (a debug belier and Chromium on a busy machine).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A chromedriver with one headless Chromium session; both end on drop.
pub struct Browser {
    driver: Child,
    session: String,
    base: String,
    profile: PathBuf,
    agent: ureq::Agent,
}

impl Browser {
    /// Starts chromedriver and a session, or `None` (after saying why) when either program is
    /// missing outside CI.
    pub fn start(name: &str) -> Option<Browser> {
        for program in [CHROMIUM, CHROMEDRIVER] {
            if !Path::new(program).exists() {
                missing(
                    &format!("{program} is not installed"),
                    "run scripts/install-chromium",
                );
                return None;
            }
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .args([format!("--port={port}"), "--allowed-ips=127.0.0.1".into()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = std::env::temp_dir().join(format!(
            "belier-{name}-chromium-{}-{port}",
            std::process::id()
        ));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(COMMAND_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        let mut browser = Browser {
            driver,
            session: String::new(),
            base: format!("http://127.0.0.1:{port}"),
            profile,
            agent,
        };
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        while !browser.ready() {
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,1000",
        ]
        .map(String::from)
        .into_iter()
        .chain([format!("--user-data-dir={}", browser.profile.display())])
        .collect::<Vec<_>>();
        let created = browser.command(
            "POST",
            "/session",
            &json!({"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
            }}}),
        );
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {created}"))
            .to_string();
        Some(browser)
    }

    fn ready(&self) -> bool {
        self.agent
            .get(format!("{}/status", self.base))
            .call()
            .ok()
            .and_then(|mut r| r.body_mut().read_to_string().ok())
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|v| v["value"]["ready"] == true)
    }

    /// Sends a WebDriver command and returns its `value`; panics on a WebDriver error.
    fn command(&self, method: &str, path: &str, body: &Value) -> Value {
        let url = format!("{}{path}", self.base);
        let response = if method == "GET" {
            self.agent.get(&url).call()
        } else if method == "DELETE" {
            self.agent.delete(&url).call()
        } else {
            self.agent
                .post(&url)
                .header("Content-Type", "application/json")
                .send(body.to_string())
        };
        let mut response = response.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .expect("WebDriver's answer");
        let v: Value = serde_json::from_str(&text).expect("WebDriver's JSON");
        assert!(status.is_success(), "{method} {path}: {status}: {v}");
        v["value"].clone()
    }

    fn session(&self, method: &str, path: &str, body: &Value) -> Value {
        self.command(method, &format!("/session/{}{path}", self.session), body)
    }

    /// Opens `url`.
    pub fn goto(&self, url: &str) {
        self.session("POST", "/url", &json!({ "url": url }));
    }

    fn element(&self, css: &str) -> String {
        let v = self.session(
            "POST",
            "/element",
            &json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Clears the field `css` and types `text` into it.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.session("POST", &format!("/element/{id}/clear"), &json!({}));
        self.session(
            "POST",
            &format!("/element/{id}/value"),
            &json!({ "text": text }),
        );
    }

    /// Clicks `css`.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.session("POST", &format!("/element/{id}/click"), &json!({}));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page and returns its
    /// result.
    pub fn script(&self, script: &str, args: &[Value]) -> Value {
        self.session(
            "POST",
            "/execute/sync",
            &json!({ "script": script, "args": args }),
        )
    }

    /// The text of `css`.
    pub fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.session("GET", &format!("/element/{id}/text"), &json!({}))
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Waits (bounded) until `done` holds for the page.
    pub fn wait_until(
        &self,
        what: &str,
        timeout: Duration,
        mut done: impl FnMut(&Browser) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        while !done(self) {
            if Instant::now() >= deadline {
                let text = self.script("return document.body.innerText;", &[]);
                panic!(
                    "the page never showed {what}; it shows:\n{}",
                    text.as_str().unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Saves a PNG of the window at `path`.
    pub fn screenshot(&self, path: &Path) {
        let png = self.session("GET", "/screenshot", &json!({}));
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64"))
            .expect("a PNG in base64");
        std::fs::write(path, bytes).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .agent
                .delete(format!("{}/session/{}", self.base, self.session))
                .call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
