//! The fuzzing finds of issue #28 on stored histograms, each as it was found: a length field
//! altered, the precision raised, a zlib bomb, a cut; each an error in words, sized by nothing
//! the file claims.

use std::io::Write as _;

use flate2::write::ZlibEncoder;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer, V2Serializer};

use super::*;

fn histogram(digits: u8) -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, belier_stats::HISTOGRAM_MAX_US, digits).unwrap();
    for v in [120, 950, 1_000, 33_000] {
        h.record(v).unwrap();
    }
    h
}

fn plain(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new().serialize(h, &mut out).unwrap();
    out
}

/// `plain` compressed as V2DeflateSerializer does: cookie, length, zlib stream.
fn compressed(plain: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(plain).unwrap();
    let stream = z.finish().unwrap();
    let mut out = V2_COMPRESSED_COOKIE.to_be_bytes().to_vec();
    out.extend_from_slice(&(stream.len() as u32).to_be_bytes());
    out.extend_from_slice(&stream);
    out
}

fn decoded(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    decode(&mut Deserializer::new(), &BASE64.encode(bytes), "latency")
}

#[test]
fn what_belier_writes_reads_back() {
    let h = histogram(3);
    let mut written = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&h, &mut written)
        .unwrap();
    assert_eq!(decoded(&written).unwrap(), h);
    assert_eq!(decoded(&compressed(&plain(&h))).unwrap(), h);
    assert_eq!(decoded(&plain(&h)).unwrap(), h);
}

/// The find: the compressed form's length field set to 4,000,000,000.
#[test]
fn a_compressed_length_beyond_the_bytes_is_refused_in_words() {
    let mut bytes = compressed(&plain(&histogram(3)));
    let has = bytes.len() - 8;
    bytes[4..8].copy_from_slice(&4_000_000_000u32.to_be_bytes());
    assert_eq!(
        decoded(&bytes).unwrap_err(),
        format!(
            "field `latency`: histogram payload claims 4,000,000,000 bytes, more than its {has} encoded bytes"
        )
    );
}

/// The length inside the compressed stream is what sized HdrHistogram's buffer (2–4 GiB).
#[test]
fn a_payload_length_beyond_the_inflated_bytes_is_refused() {
    let mut inner = plain(&histogram(3));
    let has = inner.len() - V2_HEADER;
    inner[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    let want = format!(
        "field `latency`: histogram payload claims 4,294,967,295 bytes, more than the {has} it has"
    );
    assert_eq!(decoded(&compressed(&inner)).unwrap_err(), want);
    assert_eq!(decoded(&inner).unwrap_err(), want);
}

#[test]
fn more_digits_than_belier_writes_are_refused() {
    let bytes = compressed(&plain(&histogram(5)));
    assert_eq!(
        decoded(&bytes).unwrap_err(),
        "field `latency`: histogram keeps 5 significant digits, more than the 3 belier writes"
    );
}

#[test]
fn a_zlib_bomb_is_cut_at_its_cap() {
    let mut bomb = plain(&histogram(3));
    bomb.resize(MOST_INFLATED * 8, 0);
    let bytes = compressed(&bomb);
    assert!(bytes.len() < 20_000, "{}", bytes.len());
    assert_eq!(
        decoded(&bytes).unwrap_err(),
        "field `latency`: histogram inflates to more than 1,048,576 bytes"
    );
}

/// A cut histogram said `IoError(Error { kind: UnexpectedEof, … })`.
#[test]
fn cut_or_foreign_bytes_are_told_in_words() {
    let whole = plain(&histogram(3));
    for cut in [0, 3, 6, 39, 40, whole.len() - 1] {
        let e = decoded(&whole[..cut]).unwrap_err();
        assert!(e.starts_with("field `latency`: histogram "), "{e}");
        assert!(!e.contains("Error {") && !e.contains("kind:"), "{e}");
    }
    let mut short = whole.clone();
    let n = short.len();
    short.truncate(n - 2);
    // The header's length now claims two bytes more than there are.
    assert!(decoded(&short).unwrap_err().contains("payload claims"));
    let mut cut_stream = compressed(&whole);
    cut_stream.truncate(cut_stream.len() - 5);
    let e = decoded(&cut_stream).unwrap_err();
    assert!(e.contains("more than its"), "{e}");
    assert_eq!(
        decode(&mut Deserializer::new(), "not base64!", "lag").unwrap_err(),
        "field `lag`: histogram is not base64: Invalid symbol 32, offset 3."
    );
    assert_eq!(
        decoded(b"HIST....").unwrap_err(),
        "field `latency`: histogram is not in HdrHistogram's V2 encoding"
    );
}
