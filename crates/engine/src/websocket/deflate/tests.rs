use super::*;

/// The longest message a socket reads.
const MOST_MESSAGE_BYTES: usize = 1 << 20;

fn agreed(answer: &str) -> Result<Option<Agreed>, &'static str> {
    Agreed::from_answer([answer.as_bytes()])
}

const WIDEST: Agreed = Agreed {
    client_window_bits: 15,
    server_window_bits: 15,
    client_no_context_takeover: false,
    server_no_context_takeover: false,
};

#[test]
fn the_answers_of_real_servers_read_as_their_parameters() {
    assert_eq!(agreed("permessage-deflate"), Ok(Some(WIDEST)));
    // gorilla/websocket's answer.
    let gorilla =
        agreed("permessage-deflate; server_no_context_takeover; client_no_context_takeover");
    let gorilla = gorilla.unwrap().unwrap();
    assert!(gorilla.client_no_context_takeover && gorilla.server_no_context_takeover);
    assert_eq!(
        gorilla.label(),
        "permessage-deflate; client_no_context_takeover; server_no_context_takeover"
    );
    // Python websockets' answer to our offer.
    let python = agreed("permessage-deflate; server_max_window_bits=12; client_max_window_bits=12");
    let python = python.unwrap().unwrap();
    assert_eq!(
        (python.client_window_bits, python.server_window_bits),
        (12, 12)
    );
    assert_eq!(
        python.label(),
        "permessage-deflate; client_max_window_bits=12; server_max_window_bits=12"
    );
    assert_eq!(
        agreed(r#"permessage-deflate;client_max_window_bits="10""#)
            .map(|a| a.unwrap().client_window_bits),
        Ok(10)
    );
    assert_eq!(Agreed::from_answer([]), Ok(None), "no header: declined");
    assert_eq!(agreed(""), Ok(None));
}

#[test]
fn an_answer_we_cannot_take_fails_naming_why() {
    for answer in [
        "x-webkit-deflate-frame",
        "permessage-deflate; client_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=7",
        "permessage-deflate; server_max_window_bits=012",
        "permessage-deflate; server_max_window_bits",
        "permessage-deflate; client_no_context_takeover=1",
        "permessage-deflate; mystery",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate, permessage-deflate",
    ] {
        assert!(agreed(answer).is_err(), "{answer}");
    }
}

/// One server frame through `inflater`: what tungstenite reads.
fn inflate(inflater: &mut Inflater, frame: &[u8], no_takeover: bool) -> Result<Vec<u8>, Broken> {
    let head = Head::read(frame).expect("a whole header");
    let mut out = Vec::new();
    inflater.frame(&head, &frame[head.len..], no_takeover, &mut out)?;
    Ok(out)
}

#[test]
fn the_rfcs_examples_inflate_to_hello() {
    // RFC 7692 §7.2.3.1: "Hello" compressed in one frame, RSV1 set, the tail taken off.
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    let hello = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
    assert_eq!(
        inflate(&mut inflater, &hello, false).unwrap(),
        b"\x81\x05Hello"
    );
    // §7.2.3.2: the same message again, with the first one's context.
    let again = [0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00, 0x00];
    assert_eq!(
        inflate(&mut inflater, &again, false).unwrap(),
        b"\x81\x05Hello"
    );
    // Without it, the second does not say "Hello".
    let mut fresh = Inflater::new(MOST_MESSAGE_BYTES);
    assert_ne!(
        inflate(&mut fresh, &again, false).ok(),
        Some(b"\x81\x05Hello".to_vec())
    );
}

#[test]
fn a_fragmented_compressed_message_inflates_frame_by_frame_and_a_ping_between_passes() {
    // RFC 7692 §7.2.3.1's fragmented "Hello": RSV1 on the first frame only.
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    let first = inflate(&mut inflater, &[0x41, 0x03, 0xf2, 0x48, 0xcd], false).unwrap();
    let ping = inflate(&mut inflater, &[0x89, 0x02, b'h', b'i'], false).unwrap();
    let last = inflate(&mut inflater, &[0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00], false).unwrap();
    assert_eq!(ping, [0x89, 0x02, b'h', b'i'], "a control frame as it came");
    assert_eq!(
        (first[0], last[0]),
        (0x01, 0x80),
        "RSV1 cleared, FIN on the last"
    );
    let text: Vec<u8> = [&first[2..], &last[2..]].concat();
    assert_eq!(
        (first[1] as usize, last[1] as usize),
        (first.len() - 2, last.len() - 2)
    );
    assert_eq!(text, b"Hello");
}

#[test]
fn uncompressed_messages_and_rsv1_out_of_place_pass_as_they_came() {
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    let plain = [0x81, 0x02, b'o', b'k'];
    assert_eq!(inflate(&mut inflater, &plain, false).unwrap(), plain);
    // RSV1 on a continuation: left for tungstenite to refuse.
    let odd = [0xc0, 0x01, 0x00];
    assert_eq!(inflate(&mut inflater, &odd, false).unwrap(), odd);
}

#[test]
fn what_does_not_inflate_or_inflates_too_far_is_broken() {
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    let garbage = [0xc1, 0x04, 0xff, 0xff, 0xff, 0xff];
    assert_eq!(
        inflate(&mut inflater, &garbage, false),
        Err(Broken::Inflate)
    );
    // 2 MiB of zeros compress to a few kilobytes, and inflate past the limit.
    let mut bomb = Compress::new(Compression::best(), false);
    let mut packed = Vec::with_capacity(64 * 1024);
    deflate_into(&mut bomb, &vec![0u8; 2 << 20], &mut packed).unwrap();
    packed.truncate(packed.len() - TAIL.len());
    let mut frame = Vec::new();
    write_head(&mut frame, 0xc2, None, packed.len());
    frame.extend_from_slice(&packed);
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    assert_eq!(inflate(&mut inflater, &frame, false), Err(Broken::TooLong));
}

#[test]
fn a_message_ending_in_a_final_block_inflates_and_the_next_starts_anew() {
    let mut inflater = Inflater::new(MOST_MESSAGE_BYTES);
    for _ in 0..2 {
        let mut whole = Compress::new(Compression::default(), false);
        let mut packed = Vec::with_capacity(256);
        whole
            .compress_vec(b"Hello", &mut packed, FlushCompress::Finish)
            .unwrap();
        let mut frame = Vec::new();
        write_head(&mut frame, 0xc1, None, packed.len());
        frame.extend_from_slice(&packed);
        assert_eq!(
            inflate(&mut inflater, &frame, false).unwrap(),
            b"\x81\x05Hello"
        );
    }
}

/// One of our frames (text, `message`, masked) through `deflater`: what goes on the wire.
fn deflate(deflater: &mut Deflater, message: &[u8], no_takeover: bool) -> Vec<u8> {
    let mask = [1, 2, 3, 4];
    let mut masked = message.to_vec();
    apply_mask(&mut masked, mask);
    let mut frame = Vec::new();
    write_head(&mut frame, 0x81, Some(mask), masked.len());
    frame.extend_from_slice(&masked);
    let head = Head::read(&frame).unwrap();
    let mut out = Vec::new();
    deflater
        .frame(&head, &frame[head.len..], no_takeover, &mut out)
        .unwrap();
    out
}

/// What a server reads of our frame: its payload unmasked, the tail put back, inflated by
/// `inflate`.
fn server_reads(inflate: &mut Decompress, frame: &[u8]) -> Vec<u8> {
    let head = Head::read(frame).unwrap();
    assert_eq!(head.first, 0x81 | RSV1, "RSV1 on a compressed message");
    let mask = head.mask.expect("a client's frame is masked");
    assert_eq!(mask, [1, 2, 3, 4], "masked with the key tungstenite chose");
    let mut payload = frame[head.len..].to_vec();
    assert_eq!(payload.len() as u64, head.payload);
    apply_mask(&mut payload, mask);
    assert!(!payload.ends_with(&TAIL), "the tail is taken off");
    payload.extend_from_slice(&TAIL);
    let mut out = Vec::with_capacity(4096);
    inflate_into(inflate, &payload, &mut out, MOST_MESSAGE_BYTES).unwrap();
    out
}

const MESSAGE: &[u8] = br#"{"symbol":"BELR","bid":101.25,"ask":101.50,"venue":"loopback"}"#;

#[test]
fn our_messages_compress_with_context_taken_over_from_one_to_the_next() {
    let mut deflater = Deflater::new(15);
    let mut server = Decompress::new(false);
    let first = deflate(&mut deflater, MESSAGE, false);
    let second = deflate(&mut deflater, MESSAGE, false);
    assert_eq!(server_reads(&mut server, &first), MESSAGE);
    assert_eq!(server_reads(&mut server, &second), MESSAGE);
    assert!(
        second.len() < first.len() && second.len() < 16,
        "the second refers to the first: {} then {} octets",
        first.len(),
        second.len()
    );
    // Without the first, a server cannot read the second.
    let mut fresh = Decompress::new(false);
    let mut payload = second[6..].to_vec();
    apply_mask(&mut payload, [1, 2, 3, 4]);
    payload.extend_from_slice(&TAIL);
    let mut out = Vec::with_capacity(4096);
    let alone = inflate_into(&mut fresh, &payload, &mut out, MOST_MESSAGE_BYTES);
    assert!(alone.is_err() || out != MESSAGE);
}

#[test]
fn without_context_takeover_each_message_compresses_alone() {
    let mut deflater = Deflater::new(12);
    let first = deflate(&mut deflater, MESSAGE, true);
    let second = deflate(&mut deflater, MESSAGE, true);
    assert_eq!(first, second);
    assert_eq!(server_reads(&mut Decompress::new(false), &second), MESSAGE);
}

#[test]
fn an_eight_bit_window_sends_uncompressed_and_control_frames_pass() {
    let mut narrow = Deflater::new(8);
    let out = deflate(&mut narrow, b"hi", false);
    assert_eq!(out[0], 0x81, "no RSV1");
    let mut deflater = Deflater::new(15);
    let mut ping = Vec::new();
    write_head(&mut ping, 0x89, Some([0; 4]), 1);
    ping.push(b'x');
    let head = Head::read(&ping).unwrap();
    let mut out = Vec::new();
    deflater
        .frame(&head, &ping[head.len..], false, &mut out)
        .unwrap();
    assert_eq!(out, ping);
}

#[test]
fn headers_read_and_write_each_length_form() {
    for len in [0, 125, 126, 0xffff, 0x10000] {
        let mut out = Vec::new();
        write_head(&mut out, 0x82, Some([9, 8, 7, 6]), len);
        let head = Head::read(&out).unwrap();
        assert_eq!(
            (head.payload, head.len, head.mask),
            (len as u64, out.len(), Some([9, 8, 7, 6]))
        );
        assert_eq!(
            Head::read(&out[..out.len() - 1]),
            None,
            "a header cut short"
        );
    }
}
