use super::*;
use std::path::Path;

fn files(path: &str) -> std::io::Result<Vec<u8>> {
    match path {
        "body.json" => Ok(b"{\"a\": 1,\n \"b\": 2}\n".to_vec()),
        "blob.bin" => Ok(vec![0, 159, 146, 150]),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "No such file",
        )),
    }
}

fn import(command: &str) -> Result<CurlImport, ImportError> {
    from_curl(command, &mut files)
}

fn h(name: &str, value: &str) -> (String, String) {
    (name.to_string(), value.to_string())
}

#[test]
fn a_copied_browser_request() {
    let i = import(
        "curl 'https://api.test/v1/orders?x=1' \\\n  -H 'accept: application/json' \\\n  -H 'content-type: application/json' \\\n  --data-raw '{\"item\":7}' \\\n  --compressed",
    )
    .unwrap();
    assert_eq!(i.request.method, "POST");
    assert_eq!(i.request.url, "https://api.test/v1/orders?x=1");
    assert_eq!(
        i.request.headers,
        vec![
            h("accept", "application/json"),
            h("content-type", "application/json"),
            h("Accept-Encoding", "gzip, deflate, br, zstd"),
        ]
    );
    assert_eq!(i.request.body, Some(CurlBody::Text("{\"item\":7}".into())));
    assert_eq!(
        i.flags,
        [
            "https://api.test/v1/orders?x=1",
            "-m",
            "POST",
            "-H",
            "accept: application/json",
            "-H",
            "content-type: application/json",
            "-H",
            "Accept-Encoding: gzip, deflate, br, zstd",
            "-d",
            "{\"item\":7}",
            "--compressed",
        ]
    );
    let yaml = i.draft.to_yaml("t");
    let plan = belier_plan::parse(&yaml, std::path::Path::new("curl.yaml")).unwrap();
    assert_eq!(plan.target.url(), "https://api.test:443");
}

#[test]
fn grouped_short_options_and_values_in_the_same_word() {
    let i = import("curl -sSLk -XPUT -HX-Trace:abc -uann:pw -A agent/1 -e http://ref/ -b 'a=1; b=2' http://h:81/p").unwrap();
    assert_eq!(i.request.method, "PUT");
    assert!(i.request.insecure);
    assert_eq!(
        i.request.headers,
        vec![
            h("X-Trace", "abc"),
            h("Authorization", "Basic YW5uOnB3"),
            h("User-Agent", "agent/1"),
            h("Referer", "http://ref/"),
            h("Cookie", "a=1; b=2"),
        ]
    );
    assert_eq!(i.notes.len(), 1, "-L is noted");
    assert!(i.draft.insecure);
    assert!(i.request.follow && i.request.cookies && !i.request.compressed);
    let tail: Vec<&str> = i
        .flags
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(String::as_str)
        .collect();
    // -L follows (to belier's most), -b keeps the cookies the server sets, as curl's engine.
    assert_eq!(tail, ["--follow", "20", "--cookies", "-k"]);
    assert!(i.flags.contains(&"Cookie: a=1; b=2".to_string()));
}

#[test]
fn data_forms() {
    // -d joins with &, reads @file without its newlines, defaults to a form's type and POST.
    let i = import("curl http://h/ -d a=1 -d @body.json").unwrap();
    assert_eq!(i.request.method, "POST");
    assert_eq!(
        i.request.body,
        Some(CurlBody::Text("a=1&{\"a\": 1, \"b\": 2}".into()))
    );
    assert!(i
        .request
        .headers
        .contains(&h("Content-Type", "application/x-www-form-urlencoded")));
    // --data-raw keeps a leading @.
    let i = import("curl http://h/ --data-raw @body.json").unwrap();
    assert_eq!(i.request.body, Some(CurlBody::Text("@body.json".into())));
    // --data-binary @file alone stays a file.
    let i = import("curl http://h/ --data-binary @blob.bin").unwrap();
    assert_eq!(i.request.body, Some(CurlBody::File("blob.bin".into())));
    assert_eq!(i.flags[i.flags.len() - 2..], ["-D", "blob.bin"]);
    // --json: body, both JSON headers, POST.
    let i = import("curl --json @body.json --url http://h/j").unwrap();
    assert_eq!(i.request.method, "POST");
    assert_eq!(i.request.body, Some(CurlBody::File("body.json".into())));
    assert_eq!(
        i.request.headers,
        vec![
            h("Content-Type", "application/json"),
            h("Accept", "application/json")
        ]
    );
    // -G moves the data to the query.
    let i = import("curl -G http://h/s?x=1 -d q=a+b --data-urlencode 'name=j d&c'").unwrap();
    assert_eq!(i.request.method, "GET");
    assert_eq!(i.request.url, "http://h/s?x=1&q=a+b&name=j+d%26c");
    assert_eq!(i.request.body, None);
    // -I is HEAD; a URL without a scheme is http.
    let i = import("curl -I h.test/x").unwrap();
    assert_eq!(
        (i.request.method.as_str(), i.request.url.as_str()),
        ("HEAD", "http://h.test/x")
    );
}

#[test]
fn bad_commands_name_what_is_wrong() {
    let cases = [
        (
            "curl --frobnicate http://h/",
            "unknown curl option `--frobnicate`",
        ),
        ("curl -Z http://h/", "unknown curl option `-Z`"),
        ("curl -sZ http://h/", "unknown curl option `-Z`"),
        ("curl --data=x http://h/", "unknown curl option `--data=x`"),
        ("curl http://h/ -H", "option `-H` expects a value"),
        (
            "curl http://h/ -H nocolon",
            "expects 'Name: value', found `nocolon`",
        ),
        ("curl http://h/ -u ann", "expects USER:PASSWORD"),
        ("curl http://h/ -b cookies.txt", "names a cookie file"),
        (
            "curl http://h/ -d @missing.txt",
            "cannot read the data file `missing.txt`",
        ),
        ("curl http://h/ -d @blob.bin", "not UTF-8 text"),
        ("curl 'http://h/", "cannot be split"),
        ("wget http://h/", "starting with `curl`"),
        ("curl -s", "expected a URL, found none"),
        ("curl http://a/ http://b/", "expected one URL, found 2"),
        ("curl ftp://h/", "expected an http or https URL"),
        ("curl http://h/ -d '{{x}}'", "holds `{{`"),
        ("curl http://h/ --data-raw $'{\\n}'", "bash ANSI-C quoting"),
    ];
    for (command, expected) in cases {
        let e = import(command).unwrap_err();
        assert_eq!(e.input, "curl command");
        assert!(e.message.contains(expected), "{command}: {e}");
    }
}

/// What a plan (and belier's flags) cannot hold is refused at the argument that holds it:
/// nothing of it reaches a plan or the printed flags.
#[test]
fn what_a_plan_cannot_hold_is_refused_at_its_argument() {
    let cases = [
        (
            "curl http://h/ -H 'X-A: a\r\nX-Injected: 1'",
            "argument 2 (`-H` `X-A: a\\r\\nX-Injected: 1`): the value of header `X-A` holds a line break (CR, \\r)",
        ),
        (
            "curl http://h/ -H 'X-A: a\nX-Injected: 1'",
            "argument 2 (`-H` `X-A: a\\nX-Injected: 1`): the value of header `X-A` holds a line break (LF, \\n)",
        ),
        (
            "curl -H 'X Y: 1' http://h/",
            "argument 1 (`-H` `X Y: 1`): the header name `X Y` holds a space",
        ),
        (
            "curl -X 'GET / HTTP/1.1' http://h/",
            "argument 1 (`-X` `GET / HTTP/1.1`): the method `GET / HTTP/1.1` holds a space",
        ),
        (
            "curl -A 'me\r\nX: 1' http://h/",
            "argument 1 (`-A` `me\\r\\nX: 1`): the value of header `User-Agent` holds a line break",
        ),
        (
            "curl -b 'a=1\nX: 1' http://h/",
            "argument 1 (`-b` `a=1\\nX: 1`): the value of header `Cookie` holds a line break",
        ),
        (
            "curl 'http://h/a\r\nX: 1'",
            "the URL `http://h/a\\r\\nX: 1` holds a line break",
        ),
        (
            "curl http://h/ -H 'Content-Length: 100' -d hello",
            "argument 2 (`-H` `Content-Length: 100`): `Content-Length: 100` does not match the body, which is 5 bytes",
        ),
        (
            "curl http://h/ -H 'Transfer-Encoding: chunked' -d hello",
            "argument 2 (`-H` `Transfer-Encoding: chunked`): `Transfer-Encoding: chunked` with a body of 5 bytes",
        ),
        (
            "curl http://h/ -H 'Content-Length: 9' --data-binary @body.json",
            "argument 2 (`-H` `Content-Length: 9`): a body file (body.json) goes with the length belier writes",
        ),
    ];
    for (command, expected) in cases {
        let e = import(command).unwrap_err();
        assert!(
            e.message.starts_with(expected),
            "{command:?}: {e}\nexpected: {expected}"
        );
    }
    // A Content-Length that is the body's length is kept.
    let i = import("curl http://h/ -H 'Content-Length: 5' -d hello").unwrap();
    assert!(i.flags.contains(&"Content-Length: 5".to_string()));
}

proptest::proptest! {
    /// Whatever the words, a curl import answers with a request or an error, never a panic.
    #[test]
    fn any_command_never_panics(words in proptest::collection::vec(
        "(-[a-zA-Z#]{1,3}|--[a-z-]{1,12}|@?[a-z./:=&{}]{0,10}|'[^']{0,8}'|\"|\\\\|http://h/[a-z]{0,3})",
        0..8,
    )) {
        let command = format!("curl {}", words.join(" "));
        let _ = import(&command);
    }
}

#[test]
fn unix_socket_cacert_and_insecure_go_to_the_flags_and_the_plan() {
    let i = import(
        "curl --unix-socket /run/app.sock --cacert ca.pem -k https://app.test/health --url-query x=1",
    );
    // --url-query is not known: the whole command is refused, naming it.
    assert!(i.unwrap_err().to_string().contains("--url-query"));
    let i = import("curl --unix-socket /run/app.sock --cacert ca.pem -k https://app.test/health")
        .unwrap();
    assert_eq!(
        i.request.unix_socket.as_deref(),
        Some(Path::new("/run/app.sock"))
    );
    assert_eq!(i.request.cacert.as_deref(), Some(Path::new("ca.pem")));
    assert_eq!(
        i.flags,
        [
            "https://app.test/health",
            "-k",
            "--cacert",
            "ca.pem",
            "--unix-socket",
            "/run/app.sock",
        ]
    );
    let yaml = i.draft.to_yaml("t");
    assert!(yaml.contains("unix_socket: /run/app.sock"), "{yaml}");
    assert!(yaml.contains("cacert: ca.pem"), "{yaml}");
    let plan = belier_plan::parse(&yaml, Path::new("/plans/curl.yaml")).unwrap();
    assert_eq!(
        plan.options.unix_socket.as_deref(),
        Some(Path::new("/run/app.sock"))
    );
    assert_eq!(
        plan.options.cacert.as_deref(),
        Some(Path::new("/plans/ca.pem"))
    );
    assert!(plan.options.insecure);
    // Each takes a value: a missing one is named.
    for option in ["--unix-socket", "--cacert"] {
        let e = import(&format!("curl http://a.test/ {option}")).unwrap_err();
        assert!(e.to_string().contains(option), "{e}");
    }
}
