//! The server over TLS, observed through a rustls client on raw sockets.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use belier_testserver::{Config, Counts, Server, TlsConfig};
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// Long enough never to fire on a healthy run; it only turns a hang into a failure.
const SAFETY_TIMEOUT: Duration = Duration::from_secs(10);

const NAMES: [&str; 2] = ["localhost", "127.0.0.1"];

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A TLS server for [`NAMES`] and the CA certificate to trust.
fn tls_server(config: Config) -> (Server, String) {
    let (tls, ca_pem) = TlsConfig::self_signed(&NAMES);
    let server = Server::start(Config {
        tls: Some(tls),
        ..config
    })
    .expect("start TLS test server");
    (server, ca_pem)
}

fn roots(ca_pem: &str) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    roots
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client trusting `ca_pem`, offering ALPN `http/1.1`, without a client certificate.
fn client(ca_pem: &str) -> ClientConfig {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(ca_pem))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

/// A TLS stream to the server; the handshake happens on first use.
fn connect_as(server: &Server, config: ClientConfig, name: &str) -> Tls {
    let socket = TcpStream::connect(server.addr()).expect("connect");
    socket.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let conn = ClientConnection::new(Arc::new(config), name).expect("client connection");
    StreamOwned::new(conn, socket)
}

fn connect(server: &Server, config: ClientConfig) -> Tls {
    connect_as(server, config, "localhost")
}

/// Drives the handshake to its end on the client's side.
fn handshake(stream: &mut Tls) -> io::Result<()> {
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(())
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")
}

fn get_close(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
}

/// Reads until the stream ends: the bytes, and `Ok` for a clean end (`close_notify` then EOF)
/// or the error that ended it.
fn read_until_end(stream: &mut impl Read) -> (Vec<u8>, io::Result<()>) {
    let mut bytes = Vec::new();
    let mut buf = [0; 16 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return (bytes, Ok(())),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            Err(err) => return (bytes, Err(err)),
        }
    }
}

/// One response framed by Content-Length or chunked encoding: the head and the body.
fn read_response(reader: &mut impl BufRead) -> (String, Vec<u8>) {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        let before = head.len();
        reader.read_line(&mut head).expect("read head line");
        assert!(head.len() > before, "EOF inside head: {head:?}");
    }
    let header = |name: &str| {
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    };
    let mut body = Vec::new();
    if header("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let size = usize::from_str_radix(line.trim_end(), 16).expect("chunk size");
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = header("content-length") {
        body = vec![0; len.parse().unwrap()];
        reader.read_exact(&mut body).expect("read body");
    }
    (head, body)
}

fn wait_counts(server: &Server, done: impl FnMut(&Counts) -> bool) {
    assert!(
        server.wait_for(SAFETY_TIMEOUT, done),
        "counts never got there: {:?}",
        server.counts()
    );
}

#[test]
fn get_over_tls_trusting_the_ca() {
    let (server, ca) = tls_server(Config::default());
    assert_eq!(server.url("/x"), format!("https://{}/x", server.addr()));
    for name in NAMES {
        let mut stream = connect_as(&server, client(&ca), name);
        stream.write_all(get_close("/").as_bytes()).unwrap();
        let (got, end) = read_until_end(&mut stream);
        end.expect("close_notify, then EOF");
        let want = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n";
        assert_eq!(String::from_utf8_lossy(&got), want, "{name}");
        assert_eq!(stream.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    }
    let counts = server.counts();
    assert_eq!((counts.requests, counts.responses), (2, 2));
    assert_eq!((counts.tls_handshakes, counts.tls_failures), (2, 0));
}

#[test]
fn tls12_is_served_too() {
    let (server, ca) = tls_server(Config::default());
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS12])
        .unwrap()
        .with_root_certificates(roots(&ca))
        .with_no_client_auth();
    let mut stream = connect(&server, config);
    stream.write_all(get_close("/").as_bytes()).unwrap();
    let (got, end) = read_until_end(&mut stream);
    end.unwrap();
    assert!(got.ends_with(b"\r\n\r\nhello\n"), "{got:?}");
    assert_eq!(
        stream.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    assert_eq!(server.counts().tls_handshakes, 1);
}

#[test]
fn keep_alive_is_one_handshake_for_many_requests() {
    let (server, ca) = tls_server(Config::default());
    let mut reader = BufReader::new(connect(&server, client(&ca)));
    for _ in 0..3 {
        reader.get_mut().write_all(get("/").as_bytes()).unwrap();
        let (head, body) = read_response(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head:?}");
        assert_eq!(body, b"hello\n");
    }
    let want = Counts {
        requests: 3,
        connections: 1,
        responses: 3,
        body_bytes_received: 0,
        tls_handshakes: 1,
        tls_failures: 0,
        grpc_messages_received: 0,
        grpc_messages_sent: 0,
    };
    assert_eq!(server.counts(), want);
}

#[test]
fn knobs_and_bodies_over_tls() {
    let (server, ca) = tls_server(Config::default());
    let mut reader = BufReader::new(connect(&server, client(&ca)));
    // Larger than the server's output buffer, so it is written in several flushes.
    for path in ["/?size=300000", "/?size=300000&chunked=1"] {
        reader.get_mut().write_all(get(path).as_bytes()).unwrap();
        let (head, body) = read_response(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{path}: {head:?}");
        assert_eq!(body.len(), 300_000, "{path}");
    }
    let post = "POST /?status=503 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nabcde";
    reader.get_mut().write_all(post.as_bytes()).unwrap();
    let (head, _) = read_response(&mut reader);
    assert!(head.starts_with("HTTP/1.1 503 "), "{head:?}");
    let counts = server.counts();
    assert_eq!((counts.requests, counts.responses), (3, 3));
    assert_eq!(counts.body_bytes_received, 5);
    assert_eq!(counts.tls_handshakes, 1);
}

#[test]
fn fault_reset_resets_the_tcp_connection() {
    let (server, ca) = tls_server(Config::default());
    let mut stream = connect(&server, client(&ca));
    stream.write_all(get("/?fault=reset").as_bytes()).unwrap();
    let mut buf = [0; 64];
    let err = stream.read(&mut buf).expect_err("a reset, not data or EOF");
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err:?}");
    assert_eq!(server.counts().requests, 1);
    assert_eq!(server.counts().responses, 0);
}

#[test]
fn fault_close_before_headers_ends_tcp_without_close_notify() {
    let (server, ca) = tls_server(Config::default());
    let mut stream = connect(&server, client(&ca));
    stream
        .write_all(get("/?fault=close-before-headers").as_bytes())
        .unwrap();
    let (got, end) = read_until_end(&mut stream);
    assert!(got.is_empty(), "{got:?}");
    // The FIN goes on the TCP socket as if the server had died, so no close_notify: the
    // rustls client reports the end of the stream as unexpected.
    let err = end.expect_err("EOF without close_notify");
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof, "{err:?}");
    assert_eq!(server.counts().requests, 1);
}

#[test]
fn fault_close_mid_body_sends_half_the_announced_body() {
    let (server, ca) = tls_server(Config::default());
    for (query, announced) in [
        ("fault=close-mid-body&size=100", 100),
        ("fault=close-mid-body&size=200000", 200_000),
        ("fault=close-mid-body", 1000),
    ] {
        let mut stream = connect(&server, client(&ca));
        stream
            .write_all(get(&format!("/?{query}")).as_bytes())
            .unwrap();
        let (got, end) = read_until_end(&mut stream);
        let err = end.expect_err("EOF without close_notify");
        assert_eq!(err.kind(), ErrorKind::UnexpectedEof, "{query}: {err:?}");
        let text = String::from_utf8_lossy(&got);
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {announced}\r\n\r\n");
        assert!(text.starts_with(&head), "{query}: {text:?}");
        assert_eq!(got.len() - head.len(), announced / 2, "{query}");
    }
    assert_eq!(server.counts().responses, 0);
}

#[test]
fn fault_malformed_sends_an_unparsable_status_line() {
    let (server, ca) = tls_server(Config::default());
    let mut stream = connect(&server, client(&ca));
    stream
        .write_all(get("/?fault=malformed").as_bytes())
        .unwrap();
    let (got, end) = read_until_end(&mut stream);
    end.expect("a graceful TLS close after the garbage");
    assert!(!got.is_empty());
    let mut headers = [httparse::EMPTY_HEADER; 8];
    assert!(
        httparse::Response::new(&mut headers).parse(&got).is_err(),
        "{:?}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn fault_stall_never_answers() {
    let (server, ca) = tls_server(Config::default());
    let mut stream = connect(&server, client(&ca));
    stream.write_all(get("/?fault=stall").as_bytes()).unwrap();
    wait_counts(&server, |c| c.requests == 1);
    stream
        .sock
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut buf = [0; 64];
    let err = stream.read(&mut buf).expect_err("no answer");
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert_eq!(server.open_connections(), 1);
    drop(stream);
    assert!(
        server.wait_idle(SAFETY_TIMEOUT),
        "stalled connection not closed"
    );
}

#[test]
fn client_not_trusting_the_ca_fails_the_handshake() {
    let (server, _) = tls_server(Config::default());
    let (_, other_ca) = TlsConfig::self_signed(&NAMES);
    let mut stream = connect(&server, client(&other_ca));
    let err = handshake(&mut stream).expect_err("unknown issuer");
    let inner = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>());
    assert!(
        matches!(inner, Some(rustls::Error::InvalidCertificate(_))),
        "{err:?}"
    );
    wait_counts(&server, |c| c.tls_failures == 1);
    assert_eq!(server.counts().tls_handshakes, 0);
    drop(stream);
    assert!(server.wait_idle(SAFETY_TIMEOUT));
}

#[test]
fn wrong_name_fails_the_handshake() {
    let (server, ca) = tls_server(Config::default());
    let mut stream = connect_as(&server, client(&ca), "example.com");
    handshake(&mut stream).expect_err("name not in the certificate");
    wait_counts(&server, |c| c.tls_failures == 1);
}

#[test]
fn plain_http_to_the_tls_port_is_a_tls_failure() {
    let (server, _) = tls_server(Config::default());
    let mut socket = TcpStream::connect(server.addr()).unwrap();
    socket.set_read_timeout(Some(SAFETY_TIMEOUT)).unwrap();
    socket.write_all(get("/").as_bytes()).unwrap();
    let (got, end) = read_until_end(&mut socket);
    // The server closes with FIN, after at most a TLS alert record (content type 21).
    end.expect("the server closes the connection");
    assert!(got.is_empty() || got[0] == 21, "{got:?}");
    wait_counts(&server, |c| c.tls_failures == 1);
    let counts = server.counts();
    assert_eq!((counts.tls_handshakes, counts.requests), (0, 0));
    drop(socket);
    assert!(server.wait_idle(SAFETY_TIMEOUT));
}

/// A CA and a client certificate signed by it: (CA PEM, client chain, client key).
fn client_identity() -> (
    String,
    Vec<CertificateDer<'static>>,
    PrivatePkcs8KeyDer<'static>,
) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let ca = Issuer::new(ca_params, ca_key);
    let mut params = CertificateParams::new(Vec::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "belier client");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let key = PrivatePkcs8KeyDer::from(key.serialize_der());
    (ca_cert.pem(), vec![cert.der().clone()], key)
}

#[test]
fn client_certificates_when_required() {
    let (client_ca, chain, key) = client_identity();
    let (mut tls, ca) = TlsConfig::self_signed(&NAMES);
    tls.client_ca_pem = Some(client_ca);
    let server = Server::start(Config {
        tls: Some(tls),
        ..Config::default()
    })
    .unwrap();

    // Without a certificate. With TLS 1.3 the client is done with its handshake before the
    // server has checked anything, so the refusal may only show on the first read.
    let mut stream = connect(&server, client(&ca));
    let _ = stream.write_all(get("/").as_bytes());
    let (got, end) = read_until_end(&mut stream);
    assert!(got.is_empty(), "{got:?}");
    end.expect_err("the server refuses the handshake");
    wait_counts(&server, |c| c.tls_failures == 1);
    assert_eq!(server.counts().tls_handshakes, 0);

    // With one signed by a CA the server does not trust.
    let (_, other_chain, other_key) = client_identity();
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(&ca))
        .with_client_auth_cert(other_chain, other_key.into())
        .unwrap();
    let mut stream = connect(&server, config);
    let _ = stream.write_all(get("/").as_bytes());
    read_until_end(&mut stream)
        .1
        .expect_err("the server refuses the handshake");
    wait_counts(&server, |c| c.tls_failures == 2);

    // With one signed by the right CA.
    let config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots(&ca))
        .with_client_auth_cert(chain, key.into())
        .unwrap();
    let mut stream = connect(&server, config);
    stream.write_all(get_close("/").as_bytes()).unwrap();
    let (got, end) = read_until_end(&mut stream);
    end.unwrap();
    assert!(got.ends_with(b"\r\n\r\nhello\n"), "{got:?}");
    let counts = server.counts();
    assert_eq!((counts.tls_handshakes, counts.tls_failures), (1, 2));
    assert_eq!(counts.requests, 1);
}

#[test]
fn unusable_tls_configurations_fail_to_start() {
    let (good, _) = TlsConfig::self_signed(&NAMES);
    let (other, _) = TlsConfig::self_signed(&NAMES);
    let cases = [
        TlsConfig {
            cert_chain_pem: String::new(),
            ..good.clone()
        },
        TlsConfig {
            key_pem: "not a key".to_owned(),
            ..good.clone()
        },
        TlsConfig {
            key_pem: other.key_pem,
            ..good.clone()
        },
        TlsConfig {
            client_ca_pem: Some("no certificate here".to_owned()),
            ..good.clone()
        },
    ];
    for tls in cases {
        let err = Server::start(Config {
            tls: Some(tls.clone()),
            ..Config::default()
        })
        .expect_err("invalid TLS configuration");
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{tls:?}: {err}");
    }
    assert!(!format!("{good:?}").contains("PRIVATE KEY"));
}
