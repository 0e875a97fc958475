//! Random and garbled messages to the worker's protocol: its request checks
//! ([`worker::admit`]) and its message decoding never panic, and refuse cleanly, with a
//! reason, whatever a client sends.

use std::net::SocketAddr;

use axum::http::{HeaderMap, HeaderName, HeaderValue, Uri};
use belier_cluster::protocol::{
    decode, token_problem, ClockReading, Hello, Job, Note, Start, Steering,
};
use belier_cluster::worker::admit::{admit, host_allowed};
use proptest::prelude::*;

const TOKEN: &str = "property-token-0123";

/// A valid job, whose bytes the garbling starts from.
const JOB: &str = r#"{"args":["http://127.0.0.1:9/","-n","1"],"shard":{"index":1,"count":2},"plan":{"path":"p.yaml","text":"x"},"files":[{"path":"a","base64":"eA=="}]}"#;

fn listen() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        Just("127.0.0.1:7979".parse().unwrap()),
        Just("[::1]:7979".parse().unwrap()),
        Just("0.0.0.0:7979".parse().unwrap()),
        Just("10.1.2.3:7979".parse().unwrap()),
    ]
}

/// Header names a client may send, the ones the checks read among them.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("host".to_string()),
        Just("origin".to_string()),
        Just("authorization".to_string()),
        Just("content-type".to_string()),
        Just("sec-fetch-site".to_string()),
        Just("sec-fetch-mode".to_string()),
        "[a-z-]{1,20}",
    ]
}

/// Every decodable message, from `bytes`: each says why it does not read.
fn decode_all(bytes: &[u8]) {
    fn one<T: serde::de::DeserializeOwned>(bytes: &[u8]) {
        if let Err(e) = decode::<T>(bytes) {
            assert!(e.starts_with("cannot read the message: "), "{e}");
        }
    }
    one::<Job>(bytes);
    one::<Start>(bytes);
    one::<Hello>(bytes);
    one::<Steering>(bytes);
    one::<ClockReading>(bytes);
    let _ = Note::parse(bytes);
    if let Ok(start) = decode::<Start>(bytes) {
        let _ = start.check(0);
        let _ = start.check(i128::MIN);
        let _ = start.check(i128::MAX);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn random_heads_are_admitted_or_refused_with_a_reason(
        listen in listen(),
        authority in "[ -~]{0,40}",
        headers in proptest::collection::vec((name(), proptest::collection::vec(any::<u8>(), 0..40)), 0..8),
        token in "[ -~]{0,30}",
    ) {
        let mut map = HeaderMap::new();
        for (name, value) in &headers {
            if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::from_bytes(value)) {
                map.append(n, v);
            }
        }
        let uri = format!("http://{authority}/v1/prepare")
            .parse::<Uri>()
            .unwrap_or_else(|_| Uri::from_static("/v1/prepare"));
        let _ = host_allowed(&authority, listen);
        match admit(&uri, &map, listen, &token) {
            Ok(()) => {
                // Admitted: no browser's header, the token given, a JSON body.
                prop_assert!(!map.contains_key("origin"));
                prop_assert!(!map.keys().any(|n| n.as_str().starts_with("sec-fetch-")));
                prop_assert!(map.contains_key("authorization"));
            }
            Err(refused) => {
                prop_assert!([401, 403, 415].contains(&refused.status.as_u16()));
                prop_assert!(!refused.why.is_empty());
            }
        }
        let _ = token_problem(&token, true);
    }

    #[test]
    fn random_bytes_do_not_decode_into_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        decode_all(&bytes);
    }

    #[test]
    fn garbled_jobs_do_not_decode_into_a_panic(
        cuts in proptest::collection::vec((0..JOB.len(), any::<u8>()), 1..6),
        truncate in 0..=JOB.len(),
    ) {
        let mut bytes = JOB.as_bytes().to_vec();
        for (at, byte) in cuts {
            bytes[at] = byte;
        }
        decode_all(&bytes);
        decode_all(&JOB.as_bytes()[..truncate]);
    }

    #[test]
    fn any_start_is_checked_without_overflow(at_ns in any::<i128>(), offset_ns in any::<i128>(), now in any::<i128>()) {
        let start = Start { at_ns, offset_ns };
        let _ = start.local_ns();
        let _ = start.check(now);
    }
}

#[test]
fn the_coordinators_head_is_admitted_and_a_pages_is_not() {
    let listen: SocketAddr = "127.0.0.1:7979".parse().unwrap();
    let uri: Uri = "http://127.0.0.1:7979/v1/start".parse().unwrap();
    let mut head = HeaderMap::new();
    head.insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    head.insert("content-type", "application/json".parse().unwrap());
    assert_eq!(admit(&uri, &head, listen, TOKEN), Ok(()));
    let mut page = head.clone();
    page.insert("sec-fetch-mode", "no-cors".parse().unwrap());
    assert_eq!(admit(&uri, &page, listen, TOKEN).unwrap_err().status, 403);
    let far = Start {
        at_ns: 120_000_000_000,
        offset_ns: 0,
    };
    assert!(far.check(0).unwrap_err().contains("at most 60 s"));
    assert!(decode::<Job>(JOB.as_bytes()).is_ok());
}
