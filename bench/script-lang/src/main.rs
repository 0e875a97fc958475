//! One small hook, as a plan would run it before every request: sign the request's body with
//! HMAC-SHA256 and a secret variable, set a header, count a custom metric. The same hook in
//! Rhai and in Lua 5.4 (mlua), the host functions backed by the same Rust (ring), each
//! interpreter made once and the script compiled once, as belier does per worker thread.
//! Prints nanoseconds per call for each; `cargo run --release`.

use std::time::Instant;

const CALLS: u32 = 200_000;
const BODY: &str = r#"{"order":42,"items":[1,2,3],"note":"a small JSON body of a signed API"}"#;

fn hmac_hex(key: &str, msg: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.as_bytes());
    let tag = ring::hmac::sign(&key, msg.as_bytes());
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn rhai_ns() -> (f64, f64) {
    let mut engine = rhai::Engine::new();
    engine.set_max_operations(100_000);
    engine.register_fn("hmac_sha256_hex", |k: &str, m: &str| hmac_hex(k, m));
    let ast = engine
        .compile(
            r#"
            let sig = hmac_sha256_hex(vars.secret, request.body);
            request.headers["X-Signature"] = sig;
            metrics.signed += 1;
            "#,
        )
        .unwrap();
    let empty = engine.compile("").unwrap();
    let mut scope = rhai::Scope::new();
    let mut vars = rhai::Map::new();
    vars.insert("secret".into(), "s3cret".into());
    let mut request = rhai::Map::new();
    request.insert("body".into(), BODY.into());
    request.insert("headers".into(), rhai::Map::new().into());
    let mut metrics = rhai::Map::new();
    metrics.insert("signed".into(), rhai::Dynamic::from(0_i64));
    scope.push("vars", vars);
    scope.push("request", request);
    scope.push("metrics", metrics);
    let time = |ast: &rhai::AST, scope: &mut rhai::Scope| {
        let start = Instant::now();
        let len = scope.len();
        for _ in 0..CALLS {
            engine.run_ast_with_scope(scope, ast).unwrap();
            // A script's `let`s stay in the scope after the run: drop them, as belier does.
            scope.rewind(len);
        }
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    };
    let hook = time(&ast, &mut scope);
    let nothing = time(&empty, &mut scope);
    let m = scope.get_value::<rhai::Map>("metrics").unwrap();
    assert_eq!(m["signed"].as_int().unwrap(), i64::from(CALLS));
    (hook, nothing)
}

fn lua_ns() -> (f64, f64) {
    let lua = mlua::Lua::new();
    let f = lua
        .create_function(|_, (k, m): (String, String)| Ok(hmac_hex(&k, &m)))
        .unwrap();
    lua.globals().set("hmac_sha256_hex", f).unwrap();
    let vars = lua.create_table().unwrap();
    vars.set("secret", "s3cret").unwrap();
    let request = lua.create_table().unwrap();
    request.set("body", BODY).unwrap();
    request.set("headers", lua.create_table().unwrap()).unwrap();
    let metrics = lua.create_table().unwrap();
    metrics.set("signed", 0).unwrap();
    lua.globals().set("vars", vars).unwrap();
    lua.globals().set("request", request).unwrap();
    lua.globals().set("metrics", metrics.clone()).unwrap();
    let hook = lua
        .load(
            r#"
            local sig = hmac_sha256_hex(vars.secret, request.body)
            request.headers["X-Signature"] = sig
            metrics.signed = metrics.signed + 1
            "#,
        )
        .into_function()
        .unwrap();
    let empty = lua.load("").into_function().unwrap();
    let time = |f: &mlua::Function| {
        let start = Instant::now();
        for _ in 0..CALLS {
            f.call::<()>(()).unwrap();
        }
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    };
    let h = time(&hook);
    let n = time(&empty);
    assert_eq!(metrics.get::<i64>("signed").unwrap(), i64::from(CALLS));
    (h, n)
}

fn main() {
    let native = {
        let start = Instant::now();
        let mut n = 0;
        for _ in 0..CALLS {
            n += hmac_hex(std::hint::black_box("s3cret"), BODY).len();
        }
        assert!(n > 0);
        start.elapsed().as_nanos() as f64 / f64::from(CALLS)
    };
    let (rh, re) = rhai_ns();
    let (lh, le) = lua_ns();
    println!("{CALLS} calls each, ns per call");
    println!("native HMAC alone      {native:8.0}");
    println!("rhai   hook {rh:8.0}   empty script {re:6.0}");
    println!("lua    hook {lh:8.0}   empty script {le:6.0}");
    println!("rhai/lua hook ratio {:.2}", rh / lh);
}
