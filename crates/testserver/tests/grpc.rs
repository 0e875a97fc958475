//! The target's gRPC service seen from a plain HTTP/2 client (h2c): each method's replies and
//! status, and the messages counted on the server's side.

use belier_testserver::{Config, Counts, Server, TARGET_PROTO};
use bytes::{BufMut, Bytes, BytesMut};
use http::HeaderMap;
use prost_reflect::DynamicMessage;

/// The service as target.proto declares it, compiled by belier-grpc as `belier grpc --proto`
/// does: the messages below are built and read from the .proto, so the test fails if it
/// does not describe what the server speaks.
fn schema() -> &'static belier_grpc::Schema {
    static SCHEMA: std::sync::OnceLock<belier_grpc::Schema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("belier-target-proto-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("target.proto");
        std::fs::write(&path, TARGET_PROTO).unwrap();
        belier_grpc::Schema::from_proto_files(&[path], &[]).expect("target.proto compiles")
    })
}

/// A request message of `method`, from JSON.
fn ask(method: &str, json: &str) -> Vec<u8> {
    let method = schema()
        .method(&format!("belier.target.Target/{method}"))
        .unwrap();
    belier_grpc::call::message_from_json(&method.input(), json).unwrap()
}

/// A reply, as the fields the tests read: message, payload length, index.
#[derive(Debug)]
struct Reply {
    message: String,
    payload: usize,
    index: u32,
}

fn reply(bytes: &[u8]) -> Reply {
    let desc = schema()
        .pool()
        .get_message_by_name("belier.target.Reply")
        .unwrap();
    let m = DynamicMessage::decode(desc, bytes).expect("a belier.target.Reply");
    let field = |name: &str| m.get_field_by_name(name).unwrap().into_owned();
    Reply {
        message: field("message").as_str().unwrap().to_owned(),
        payload: field("payload").as_bytes().unwrap().len(),
        index: field("index").as_u32().unwrap(),
    }
}

/// What a call got back: its replies and the status code, from the trailers or, for a
/// trailers-only response, from the head.
#[derive(Debug)]
struct Answer {
    replies: Vec<Reply>,
    code: u32,
    trailers_only: bool,
}

fn frame(bytes: &[u8]) -> Bytes {
    let mut out = BytesMut::new();
    out.put_u8(0);
    out.put_u32(bytes.len() as u32);
    out.put_slice(bytes);
    out.freeze()
}

fn code(headers: &HeaderMap) -> u32 {
    headers["grpc-status"].to_str().unwrap().parse().unwrap()
}

/// Sends `messages` (already encoded) to `method` and reads the whole answer.
async fn call(server: &Server, method: &str, messages: &[Vec<u8>]) -> Answer {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let request = http::Request::post(format!("http://127.0.0.1/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut send) = client
        .ready()
        .await
        .unwrap()
        .send_request(request, false)
        .unwrap();
    for m in messages {
        send.send_data(frame(m), false).unwrap();
    }
    send.send_data(Bytes::new(), true).unwrap();
    let (head, mut body) = response.await.unwrap().into_parts();
    if head.headers.contains_key("grpc-status") {
        assert!(body.is_end_stream(), "a trailers-only response has no body");
        return Answer {
            replies: Vec::new(),
            code: code(&head.headers),
            trailers_only: true,
        };
    }
    let mut bytes = Vec::new();
    while let Some(data) = body.data().await {
        let data = data.unwrap();
        let _ = body.flow_control().release_capacity(data.len());
        bytes.extend_from_slice(&data);
    }
    let trailers = body
        .trailers()
        .await
        .unwrap()
        .expect("trailers end the call");
    let mut replies = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        replies.push(reply(&rest[5..5 + len]));
        rest = &rest[5 + len..];
    }
    Answer {
        replies,
        code: code(&trailers),
        trailers_only: false,
    }
}

fn server() -> Server {
    Server::start(Config {
        http2: true,
        ..Config::default()
    })
    .unwrap()
}

fn indexes(answer: &Answer) -> Vec<u32> {
    answer.replies.iter().map(|r| r.index).collect()
}

#[tokio::test]
async fn a_server_stream_sends_its_count_of_replies_then_ok() {
    let server = server();
    let asked = ask(
        "ServerStream",
        r#"{"count": 5, "size": 3, "gapMs": 1, "message": "s"}"#,
    );
    let answer = call(&server, "belier.target.Target/ServerStream", &[asked]).await;
    assert_eq!(indexes(&answer), [0, 1, 2, 3, 4]);
    assert!(answer
        .replies
        .iter()
        .all(|r| r.message == "s" && r.payload == 3));
    assert_eq!((answer.code, answer.trailers_only), (0, false));
    let counts = server.counts();
    assert_eq!(
        (counts.grpc_messages_received, counts.grpc_messages_sent),
        (1, 5)
    );
    assert_eq!((counts.requests, counts.responses), (1, 1));
}

#[tokio::test]
async fn a_client_stream_is_answered_once_with_how_many_came_and_bidi_answers_each() {
    let server = server();
    let three = vec![ask("ClientStream", "{}"); 3];
    let answer = call(&server, "belier.target.Target/ClientStream", &three).await;
    assert_eq!((indexes(&answer), answer.code), (vec![3], 0));
    let four = vec![ask("Bidi", "{}"); 4];
    let answer = call(&server, "belier.target.Target/Bidi", &four).await;
    assert_eq!((indexes(&answer), answer.code), (vec![0, 1, 2, 3], 0));
    let counts = server.counts();
    assert_eq!(
        (counts.grpc_messages_received, counts.grpc_messages_sent),
        (7, 5)
    );
}

#[tokio::test]
async fn codes_end_calls_and_what_the_service_cannot_take_has_grpcs_status() {
    let server = server();
    let refused = ask("Unary", r#"{"code": 8}"#);
    let answer = call(&server, "belier.target.Target/Unary", &[refused]).await;
    assert_eq!((answer.code, answer.trailers_only), (8, true));
    // A stream ends with the code after its replies.
    let failing = ask("ServerStream", r#"{"code": 14, "count": 2}"#);
    let answer = call(&server, "belier.target.Target/ServerStream", &[failing]).await;
    assert_eq!((indexes(&answer), answer.code), (vec![0, 1], 14));
    let answer = call(&server, "belier.target.Target/Nothing", &[]).await;
    assert_eq!(
        (answer.code, answer.trailers_only),
        (12, true),
        "UNIMPLEMENTED"
    );
    let garbage = vec![0xff, 0xff, 0xff];
    let answer = call(&server, "belier.target.Target/Unary", &[garbage]).await;
    assert_eq!(
        (answer.code, answer.trailers_only),
        (3, true),
        "INVALID_ARGUMENT"
    );
    let Counts {
        requests,
        responses,
        ..
    } = server.counts();
    assert_eq!((requests, responses), (4, 4));
}
