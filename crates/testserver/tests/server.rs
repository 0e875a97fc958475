//! The server observed from raw sockets, byte for byte.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use belier_testserver::{Behaviour, Config, Counts, Fault, Server, JSON_BODY, MAX_HEAD_BYTES};

/// Long enough never to fire on a healthy run; it only turns a hang into a failure.
const SAFETY_TIMEOUT: Duration = Duration::from_secs(10);

fn start() -> Server {
    Server::start(Config::default()).expect("start test server")
}

fn connect(server: &Server) -> TcpStream {
    let socket = TcpStream::connect(server.addr()).expect("connect");
    socket.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
    socket
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n")
}

/// Everything until the server closes.
fn read_all(socket: &mut TcpStream) -> Vec<u8> {
    let mut bytes = Vec::new();
    socket.read_to_end(&mut bytes).expect("read to end");
    bytes
}

#[derive(Debug)]
struct Response {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Reads one response framed by Content-Length or chunked encoding (`head_only` for HEAD).
fn read_response(reader: &mut impl BufRead, head_only: bool) -> Response {
    let mut head = String::new();
    loop {
        let before = head.len();
        reader.read_line(&mut head).expect("read head line");
        assert!(head.len() > before, "EOF inside head: {head:?}");
        if head.ends_with("\r\n\r\n") {
            break;
        }
    }
    let status = head[9..12].parse().expect("status code");
    let mut response = Response {
        status,
        head,
        body: Vec::new(),
    };
    if head_only {
        return response;
    }
    if response.header("transfer-encoding") == Some("chunked") {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim_end(), 16).expect("chunk size");
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            assert_eq!(&chunk[size..], b"\r\n");
            if size == 0 {
                break;
            }
            response.body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = response.header("content-length") {
        let mut body = vec![0; len.parse().unwrap()];
        reader.read_exact(&mut body).expect("read body");
        response.body = body;
    }
    response
}

fn request(server: &Server, raw: &str) -> Response {
    let mut socket = connect(server);
    socket.write_all(raw.as_bytes()).unwrap();
    read_response(&mut BufReader::new(socket), false)
}

#[test]
fn default_response_is_exact() {
    let server = start();
    let mut socket = connect(&server);
    socket.write_all(get("/").as_bytes()).unwrap();
    let want = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello\n";
    let mut got = vec![0; want.len()];
    socket.read_exact(&mut got).unwrap();
    assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(want));

    socket
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let got = read_all(&mut socket);
    let want = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
    assert_eq!(String::from_utf8_lossy(&got), want);
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    for _ in 0..3 {
        reader.get_mut().write_all(get("/").as_bytes()).unwrap();
        let response = read_response(&mut reader, false);
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"hello\n");
    }
    let want = Counts {
        requests: 3,
        connections: 1,
        responses: 3,
        body_bytes_received: 0,
        tls_handshakes: 0,
        tls_failures: 0,
        grpc_messages_received: 0,
        grpc_messages_sent: 0,
    };
    assert_eq!(server.counts(), want);
}

#[test]
fn pipelined_requests_in_one_write() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    let burst = format!("{}{}{}", get("/"), get("/?status=201"), get("/?size=3"));
    reader.get_mut().write_all(burst.as_bytes()).unwrap();
    let statuses: Vec<(u16, Vec<u8>)> = (0..3)
        .map(|_| {
            let r = read_response(&mut reader, false);
            (r.status, r.body)
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (200, b"hello\n".to_vec()),
            (201, b"hello\n".to_vec()),
            (200, b"xxx".to_vec())
        ]
    );
    assert_eq!(server.counts().requests, 3);
}

#[test]
fn token_knob_numbers_tokens_by_connection_and_request() {
    let server = Server::start(Config {
        record_requests: 16,
        ..Config::default()
    })
    .unwrap();
    for connection in 1..=2 {
        let mut reader = BufReader::new(connect(&server));
        // The first request on the connection is not a login: indexes count every request.
        reader.get_mut().write_all(get("/").as_bytes()).unwrap();
        read_response(&mut reader, false);
        for index in 1..=2 {
            reader
                .get_mut()
                .write_all(get("/login?token=1").as_bytes())
                .unwrap();
            let r = read_response(&mut reader, false);
            let token = format!("t{connection}-{index}");
            assert_eq!(r.status, 200);
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(
                r.header("set-cookie"),
                Some(format!("session={token}; Path=/").as_str())
            );
            assert_eq!(
                String::from_utf8(r.body).unwrap(),
                format!(r#"{{"token":"{token}","user":{index}}}"#)
            );
        }
    }
    // Recomputable from what the server recorded.
    let seen = server.recent_requests();
    assert_eq!(seen.len(), 6);
    assert!(seen[..3].iter().all(|r| r.connection == 1));
    assert!(seen[3..].iter().all(|r| r.connection == 2));
}

#[test]
fn json_knob_sends_a_small_json_body() {
    let server = start();
    let r = request(&server, &get("/items?json=1&status=201&size=5"));
    assert_eq!(r.status, 201);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("set-cookie"), None);
    assert_eq!(r.body, JSON_BODY.as_bytes());
    // HEAD: the head announces the length, no body follows.
    let mut socket = connect(&server);
    socket
        .write_all(b"HEAD /?json=1 HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        .unwrap();
    let raw = String::from_utf8(read_all(&mut socket)).unwrap();
    assert!(raw.ends_with("Connection: close\r\n\r\n"), "{raw:?}");
}

#[test]
fn fault_reset_resets_the_connection() {
    let server = start();
    let mut socket = connect(&server);
    socket.write_all(get("/?fault=reset").as_bytes()).unwrap();
    let mut buf = [0; 64];
    let err = socket.read(&mut buf).expect_err("a reset, not data or EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset);
    assert_eq!(server.counts().requests, 1);
    assert_eq!(server.counts().responses, 0);
}

#[test]
fn fault_close_before_headers_ends_the_stream() {
    let server = start();
    let mut socket = connect(&server);
    socket
        .write_all(get("/?fault=close-before-headers").as_bytes())
        .unwrap();
    let mut buf = [0; 64];
    assert_eq!(socket.read(&mut buf).unwrap(), 0);
    assert_eq!(server.counts().requests, 1);
}

#[test]
fn fault_close_mid_body_sends_half_the_announced_body() {
    let server = start();
    for (query, announced) in [
        ("fault=close-mid-body&size=100", 100),
        ("fault=close-mid-body", 1000),
    ] {
        let mut socket = connect(&server);
        socket
            .write_all(get(&format!("/?{query}")).as_bytes())
            .unwrap();
        let got = read_all(&mut socket);
        let text = String::from_utf8_lossy(&got);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\n\r\n");
        assert!(text.starts_with(&head), "{query}: {text:?}");
        assert_eq!(got.len() - head.len(), announced / 2, "{query}");
    }
    assert_eq!(server.counts().responses, 0);
}

#[test]
fn fault_malformed_sends_an_unparsable_status_line() {
    let server = start();
    let mut socket = connect(&server);
    socket
        .write_all(get("/?fault=malformed").as_bytes())
        .unwrap();
    let got = read_all(&mut socket);
    let mut headers = [httparse::EMPTY_HEADER; 8];
    assert!(
        httparse::Response::new(&mut headers).parse(&got).is_err(),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn fault_stall_never_answers() {
    let server = start();
    let mut socket = connect(&server);
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    socket.write_all(get("/?fault=stall").as_bytes()).unwrap();
    let mut buf = [0; 64];
    let err = socket.read(&mut buf).expect_err("no answer");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert_eq!(server.counts().requests, 1);
    assert_eq!(server.open_connections(), 1);
    drop(socket);
    assert!(
        server.wait_idle(SAFETY_TIMEOUT),
        "stalled connection not closed"
    );
}

#[test]
fn delay_holds_the_response_back() {
    let server = start();
    let sent = Instant::now();
    let response = request(&server, &get("/?delay=50ms"));
    assert!(
        sent.elapsed() >= Duration::from_millis(50),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(response.status, 200);
}

#[test]
fn status_knob() {
    let server = start();
    let response = request(&server, &get("/?status=503"));
    assert_eq!(response.status, 503);
    assert!(response
        .head
        .starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
    assert_eq!(response.body, b"hello\n");
}

#[test]
fn head_and_bodiless_statuses_have_no_body() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    let requests = format!(
        "HEAD /?size=10 HTTP/1.1\r\nHost: t\r\n\r\n{}{}",
        get("/?status=204"),
        get("/?status=304")
    );
    reader.get_mut().write_all(requests.as_bytes()).unwrap();
    let head = read_response(&mut reader, true);
    assert_eq!(head.header("content-length"), Some("10"));
    let no_content = read_response(&mut reader, true);
    assert_eq!(no_content.head, "HTTP/1.1 204 No Content\r\n\r\n");
    let not_modified = read_response(&mut reader, true);
    assert_eq!(not_modified.head, "HTTP/1.1 304 Not Modified\r\n\r\n");
    // Had any of them carried a body, it would show up here instead of this response.
    reader.get_mut().write_all(get("/").as_bytes()).unwrap();
    assert_eq!(read_response(&mut reader, false).body, b"hello\n");
}

#[test]
fn sized_and_chunked_response_bodies() {
    let server = start();
    let big = request(&server, &get("/?size=200000"));
    assert_eq!(big.body.len(), 200_000);
    assert!(big.body.iter().all(|&b| b == b'x'));

    let mut socket = connect(&server);
    socket
        .write_all(get("/?chunked=1&size=10&close=1").as_bytes())
        .unwrap();
    let raw = String::from_utf8(read_all(&mut socket)).unwrap();
    let want = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
                4\r\nxxxx\r\n4\r\nxxxx\r\n2\r\nxx\r\n0\r\n\r\n";
    assert_eq!(raw, want);

    let default_body = request(&server, &get("/?chunked"));
    assert_eq!(default_body.body, b"hello\n");
}

#[test]
fn request_bodies_are_counted_and_recorded() {
    let server = Server::start(Config {
        record_requests: 2,
        ..Config::default()
    })
    .unwrap();
    let mut reader = BufReader::new(connect(&server));
    let requests = "GET /first HTTP/1.1\r\nHost: t\r\n\r\n\
                    POST /chunked HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                    5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nTrailer: x\r\n\r\n\
                    PUT /sized?status=201 HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nX-Test: yes\r\n\r\nabcd";
    reader.get_mut().write_all(requests.as_bytes()).unwrap();
    for want in [200, 200, 201] {
        assert_eq!(read_response(&mut reader, false).status, want);
    }
    assert_eq!(server.counts().body_bytes_received, 11 + 4);

    let seen = server.recent_requests();
    assert_eq!(seen.len(), 2, "ring keeps only the last two");
    assert_eq!(
        (seen[0].method.as_str(), seen[0].target.as_str()),
        ("POST", "/chunked")
    );
    assert_eq!(seen[0].body, b"hello world");
    assert_eq!(seen[0].header("transfer-encoding"), Some("chunked"));
    assert_eq!(
        (seen[1].method.as_str(), seen[1].target.as_str()),
        ("PUT", "/sized?status=201")
    );
    assert_eq!(seen[1].body, b"abcd");
    assert_eq!(seen[1].header("x-test"), Some("yes"));
    assert_eq!(seen[1].headers[0], ("Host".to_owned(), "t".to_owned()));
    assert_eq!((seen[0].connection, seen[1].connection), (1, 1));
    assert!(seen[0].arrived <= seen[1].arrived);
}

#[test]
fn expect_continue_gets_an_interim_response() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    reader
        .get_mut()
        .write_all(
            b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n",
        )
        .unwrap();
    let interim = read_response(&mut reader, true);
    assert_eq!(interim.head, "HTTP/1.1 100 Continue\r\n\r\n");
    reader.get_mut().write_all(b"abc").unwrap();
    assert_eq!(read_response(&mut reader, false).status, 200);
    assert_eq!(server.counts().body_bytes_received, 3);
}

#[test]
fn bad_knob_is_a_400_naming_it_and_keeps_the_connection() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    reader
        .get_mut()
        .write_all(get("/?delay=soon").as_bytes())
        .unwrap();
    let response = read_response(&mut reader, false);
    assert_eq!(response.status, 400);
    let body = String::from_utf8(response.body).unwrap();
    assert!(body.contains("delay"), "{body}");

    reader
        .get_mut()
        .write_all(get("/?q=unknown-keys-are-ignored").as_bytes())
        .unwrap();
    assert_eq!(read_response(&mut reader, false).status, 200);
    assert_eq!(server.counts().responses, 2);
}

#[test]
fn unparsable_or_oversized_heads_get_400_and_close() {
    let server = start();
    let mut socket = connect(&server);
    socket.write_all(b"NOT HTTP AT ALL\r\n\r\n").unwrap();
    let got = String::from_utf8(read_all(&mut socket)).unwrap();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(got.contains("Connection: close\r\n"), "{got}");

    let mut socket = connect(&server);
    let huge = format!(
        "GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(MAX_HEAD_BYTES)
    );
    // The server may close before it has read all of this; that is the point.
    let _ = socket.write_all(huge.as_bytes());
    let mut got = Vec::new();
    let _ = socket.read_to_end(&mut got);
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert_eq!(server.counts().requests, 0);

    // A bad body is noticed after the head was counted as a request.
    let mut socket = connect(&server);
    socket
        .write_all(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        .unwrap();
    let got = String::from_utf8(read_all(&mut socket)).unwrap();
    assert!(got.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{got}");
    assert!(got.ends_with("bad chunk size\n"), "{got}");
    assert_eq!(server.counts().requests, 1);
}

#[test]
fn http10_clients_never_get_chunked_bodies() {
    let server = start();
    let mut socket = connect(&server);
    socket
        .write_all(b"GET /?chunked=1&size=2 HTTP/1.0\r\n\r\n")
        .unwrap();
    let got = String::from_utf8(read_all(&mut socket)).unwrap();
    assert_eq!(
        got,
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nxx"
    );
}

#[test]
fn connection_close_and_http10() {
    let server = start();
    let cases = [
        ("GET / HTTP/1.1\r\nConnection: close\r\n\r\n", true),
        ("GET /?close=1 HTTP/1.1\r\n\r\n", true),
        ("GET / HTTP/1.0\r\n\r\n", true),
        ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", false),
    ];
    for (raw, closes) in cases {
        let mut reader = BufReader::new(connect(&server));
        reader.get_mut().write_all(raw.as_bytes()).unwrap();
        let response = read_response(&mut reader, false);
        assert_eq!(response.body, b"hello\n", "{raw:?}");
        let want = if closes { "close" } else { "keep-alive" };
        assert_eq!(response.header("connection"), Some(want), "{raw:?}");
        if closes {
            let mut rest = Vec::new();
            reader.read_to_end(&mut rest).unwrap();
            assert!(rest.is_empty(), "{raw:?}");
        } else {
            reader.get_mut().write_all(raw.as_bytes()).unwrap();
            assert_eq!(read_response(&mut reader, false).status, 200, "{raw:?}");
        }
    }
}

#[test]
fn defaults_apply_and_query_overrides_them() {
    let server = Server::start(Config {
        defaults: Behaviour {
            status: 202,
            body_size: Some(3),
            ..Behaviour::default()
        },
        ..Config::default()
    })
    .unwrap();
    let mut socket = connect(&server);
    socket
        .write_all(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let raw = String::from_utf8(read_all(&mut socket)).unwrap();
    assert_eq!(
        raw,
        "HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\nConnection: close\r\n\r\nxxx"
    );
    let overridden = request(&server, &get("/?size=1"));
    assert_eq!((overridden.status, overridden.body), (202, b"x".to_vec()));

    let behaviour = Behaviour {
        status: 418,
        fault: None,
        ..Behaviour::default()
    };
    let response = request(&server, &get(&format!("/?{behaviour}")));
    assert_eq!(response.status, 418);
    assert_eq!(
        response.body, b"xxx",
        "knobs not in the query keep their defaults"
    );
}

fn assert_closed(socket: &mut TcpStream) {
    let mut buf = [0; 64];
    match socket.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!("unexpected {n} bytes"),
        Err(err) => assert!(
            matches!(
                err.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            ),
            "{err:?}"
        ),
    }
}

#[test]
fn stop_closes_open_connections_and_the_listener() {
    for threads in [1, 3] {
        let server = Server::start(Config {
            threads,
            ..Config::default()
        })
        .unwrap();
        let addr = server.addr();
        let mut idle = BufReader::new(connect(&server));
        idle.get_mut().write_all(get("/").as_bytes()).unwrap();
        read_response(&mut idle, false);
        let mut stalled = connect(&server);
        stalled.write_all(get("/?fault=stall").as_bytes()).unwrap();
        assert!(server.wait_for(SAFETY_TIMEOUT, |c| c.requests == 2));

        server.stop();
        assert_closed(idle.get_mut());
        assert_closed(&mut stalled);
        let refused = TcpStream::connect(addr).expect_err("listener closed");
        assert_eq!(
            refused.kind(),
            ErrorKind::ConnectionRefused,
            "threads {threads}"
        );
    }
}

#[test]
fn drop_stops_the_server() {
    let server = start();
    let addr = server.addr();
    let mut socket = connect(&server);
    assert!(server.wait_for(SAFETY_TIMEOUT, |c| c.connections == 1));
    drop(server);
    assert_closed(&mut socket);
    assert!(TcpStream::connect(addr).is_err());
}

#[test]
fn binding_a_busy_address_fails_synchronously() {
    let server = start();
    let err = Server::start(Config {
        listen: server.addr(),
        ..Config::default()
    })
    .expect_err("address in use");
    assert_eq!(err.kind(), ErrorKind::AddrInUse);
    let err = Server::start(Config {
        threads: 0,
        ..Config::default()
    })
    .expect_err("zero threads");
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[test]
fn idle_once_clients_close() {
    let server = Server::start(Config {
        threads: 2,
        ..Config::default()
    })
    .unwrap();
    let sockets: Vec<TcpStream> = (0..5).map(|_| connect(&server)).collect();
    assert!(server.wait_for(SAFETY_TIMEOUT, |c| c.connections == 5));
    assert_eq!(server.open_connections(), 5);
    drop(sockets);
    assert!(server.wait_idle(SAFETY_TIMEOUT));
}

#[test]
fn url_and_faults_from_config() {
    let server = Server::start(Config {
        defaults: Behaviour {
            fault: Some(Fault::CloseBeforeHeaders),
            ..Behaviour::default()
        },
        ..Config::default()
    })
    .unwrap();
    assert_eq!(
        server.url("/a?b=c"),
        format!("http://{}/a?b=c", server.addr())
    );
    assert_eq!(server.url("x"), format!("http://{}/x", server.addr()));
    let mut socket = connect(&server);
    socket.write_all(get("/").as_bytes()).unwrap();
    assert_closed(&mut socket);
}

#[test]
fn client_half_close_still_gets_the_response() -> io::Result<()> {
    let server = start();
    let mut socket = connect(&server);
    socket.write_all(get("/").as_bytes())?;
    socket.shutdown(std::net::Shutdown::Write)?;
    let got = read_all(&mut socket);
    assert!(
        got.ends_with(b"hello\n"),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
    Ok(())
}

#[test]
fn redirect_chains_count_down_to_the_answer_on_one_connection() {
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    let mut target = "/chain?redirect=3&size=5".to_string();
    let mut hops = Vec::new();
    loop {
        reader.get_mut().write_all(get(&target).as_bytes()).unwrap();
        let response = read_response(&mut reader, false);
        hops.push(response.status);
        match response.header("location") {
            Some(next) => {
                assert_eq!(response.body, b"");
                target = next.to_string();
            }
            None => {
                assert_eq!(response.body.len(), 5);
                break;
            }
        }
    }
    assert_eq!(hops, [302, 302, 302, 200]);
    assert_eq!(target, "/chain?size=5");
    assert_eq!(server.counts().connections, 1);
    // A redirect status asked for is the one sent.
    let response = request(&server, &get("/x?redirect=1&status=307"));
    assert_eq!(response.status, 307);
    assert_eq!(response.header("location"), Some("/x?status=307"));
}

#[test]
fn bodies_go_gzip_compressed_to_clients_that_accept_it() {
    use std::io::Read as _;
    let server = start();
    let mut reader = BufReader::new(connect(&server));
    let ask = |path: &str, encoding: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: test\r\nAccept-Encoding: {encoding}\r\n\r\n")
    };
    for (path, plain) in [
        ("/?size=10000", vec![b'x'; 10_000]),
        ("/", b"hello\n".to_vec()),
    ] {
        reader
            .get_mut()
            .write_all(ask(path, "br;q=1.0, gzip;q=0.8").as_bytes())
            .unwrap();
        let response = read_response(&mut reader, false);
        assert_eq!(response.header("content-encoding"), Some("gzip"));
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&response.body[..])
            .read_to_end(&mut decoded)
            .unwrap();
        assert_eq!(decoded, plain, "{path}");
    }
    // 10,000 bytes of one letter go in far fewer.
    reader
        .get_mut()
        .write_all(ask("/?size=10000", "gzip").as_bytes())
        .unwrap();
    let response = read_response(&mut reader, false);
    assert!(response.body.len() < 200, "{}", response.body.len());
    // Without gzip among the codings, the body goes as it is, on the same connection.
    reader
        .get_mut()
        .write_all(ask("/?size=100", "br, zstd").as_bytes())
        .unwrap();
    let response = read_response(&mut reader, false);
    assert_eq!(response.header("content-encoding"), None);
    assert_eq!(response.body, vec![b'x'; 100]);
    assert_eq!(server.counts().connections, 1);
}
