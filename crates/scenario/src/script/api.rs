//! The Rhai engine every script runs in, one per worker thread, with belier's limits and
//! helper functions, and the per-thread sink where those functions leave custom metrics and
//! `end_iteration()` for the user to collect after the call.

use std::cell::RefCell;

use base64::Engine as _;
use rhai::{Dynamic, Engine, EvalAltResult, ImmutableString, Map};

/// What a metric call left in the sink.
#[derive(Debug, Clone)]
pub(crate) enum Mark {
    Count(ImmutableString, u64),
    Value(ImmutableString, f64),
}

/// What helper functions recorded during one call on this thread.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub marks: Vec<Mark>,
    pub end_iteration: bool,
}

thread_local! {
    static ENGINE: Engine = engine();
    pub(crate) static SINK: RefCell<Sink> = RefCell::default();
}

/// Runs `f` with this thread's engine.
pub(crate) fn with_engine<T>(f: impl FnOnce(&Engine) -> T) -> T {
    ENGINE.with(f)
}

/// A new engine with belier's limits ([`belier_plan::script::engine`]) and its helper
/// functions.
pub(crate) fn engine() -> Engine {
    let mut e = belier_plan::script::engine();
    e.register_fn("hmac_sha256_hex", |key: &str, msg: &str| {
        hex(hmac_sha256(key.as_bytes(), msg.as_bytes()).as_ref())
    });
    e.register_fn("hmac_sha256_base64", |key: &str, msg: &str| {
        base64::engine::general_purpose::STANDARD
            .encode(hmac_sha256(key.as_bytes(), msg.as_bytes()).as_ref())
    });
    e.register_fn("sha256_hex", |msg: &str| {
        hex(ring::digest::digest(&ring::digest::SHA256, msg.as_bytes()).as_ref())
    });
    e.register_fn("hex_encode", |text: &str| hex(text.as_bytes()));
    e.register_fn("base64_encode", |text: &str| {
        base64::engine::general_purpose::STANDARD.encode(text)
    });
    e.register_fn(
        "base64_decode",
        |text: &str| -> Result<String, Box<EvalAltResult>> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| format!("base64_decode: {e}"))?;
            String::from_utf8(bytes).map_err(|_| "base64_decode: not UTF-8 text".into())
        },
    );
    e.register_fn("json", |text: &str| json(text));
    e.register_fn("json", |response: &mut Map| {
        let body = response
            .get("body")
            .and_then(|b| b.clone().into_immutable_string().ok())
            .unwrap_or_default();
        json(&body)
    });
    e.register_fn(
        "counter",
        |name: ImmutableString, n: i64| -> Result<(), Box<EvalAltResult>> {
            let n = u64::try_from(n)
                .map_err(|_| format!("counter(\"{name}\", {n}): a counter only grows"))?;
            SINK.with(|s| s.borrow_mut().marks.push(Mark::Count(name, n)));
            Ok(())
        },
    );
    e.register_fn("counter", |name: ImmutableString| {
        SINK.with(|s| s.borrow_mut().marks.push(Mark::Count(name, 1)));
    });
    e.register_fn("trend", |name: ImmutableString, ms: f64| {
        SINK.with(|s| s.borrow_mut().marks.push(Mark::Value(name, ms)));
    });
    e.register_fn("trend", |name: ImmutableString, ms: i64| {
        SINK.with(|s| s.borrow_mut().marks.push(Mark::Value(name, ms as f64)));
    });
    e.register_fn("end_iteration", || {
        SINK.with(|s| s.borrow_mut().end_iteration = true);
    });
    e
}

fn hmac_sha256(key: &[u8], msg: &[u8]) -> ring::hmac::Tag {
    ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key), msg)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn json(text: &str) -> Result<Dynamic, Box<EvalAltResult>> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("json: not JSON ({e})"))?;
    rhai::serde::to_dynamic(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_match_known_digests() {
        let e = engine();
        // RFC 4231 test case 2.
        let mac: String = e
            .eval(r#"hmac_sha256_hex("Jefe", "what do ya want for nothing?")"#)
            .unwrap();
        assert_eq!(
            mac,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let b64: String = e
            .eval(r#"hmac_sha256_base64("Jefe", "what do ya want for nothing?")"#)
            .unwrap();
        assert_eq!(b64, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=");
        let sha: String = e.eval(r#"sha256_hex("abc")"#).unwrap();
        assert_eq!(
            sha,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let round: String = e
            .eval(r#"base64_decode(base64_encode("héllo")) + hex_encode("A")"#)
            .unwrap();
        assert_eq!(round, "héllo41");
        let n: i64 = e.eval(r#"json(`{"a": {"b": [1, 2, 3]}}`).a.b[2]"#).unwrap();
        assert_eq!(n, 3);
    }

    #[test]
    fn an_endless_loop_stops_at_the_operation_limit() {
        let e = engine();
        let err = e.run("loop { }").unwrap_err();
        assert!(matches!(*err, EvalAltResult::ErrorTooManyOperations(_)));
    }

    #[test]
    fn scripts_cannot_import_or_eval() {
        let e = engine();
        assert!(e.run(r#"import "x" as x;"#).is_err());
        assert!(e.compile(r#"eval("1")"#).is_err());
    }
}
