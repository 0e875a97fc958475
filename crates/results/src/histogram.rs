//! Histograms as a results file stores them (HdrHistogram's V2 compressed encoding, base64):
//! encoded, and decoded with every length they claim checked against the bytes they have
//! before anything is sized by it.
//!
//! HdrHistogram's deserializer trusts the payload length in the encoding's header and sizes
//! its buffer by it: one number altered in a results file made `report` and `compare`
//! allocate 2–4 GiB, and the error, when it came, was Rust Debug text. Here the compressed
//! form is inflated with a cap, the header's lengths and precision are checked against the
//! bytes at hand, and only then is the deserializer given the (now plain) encoding.

use std::io::{self, Read as _};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use belier_stats::{Row, RowCounts};
use belier_vocabulary::format::thousands;
use flate2::read::ZlibDecoder;
use hdrhistogram::serialization::{
    DeserializeError, Deserializer, Serializer as _, V2DeflateSerializer,
};
use hdrhistogram::Histogram;

/// HdrHistogram's V2 encoding, plain and compressed (a zlib stream of the plain one).
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The plain encoding's header: cookie, payload length, normalizing offset, significant
/// digits (4 bytes each), lowest and highest trackable value, integer-to-double ratio (8 each).
const V2_HEADER: usize = 40;
/// The compressed encoding's header: cookie and compressed length.
const COMPRESSED_HEADER: usize = 8;
/// Most significant digits a stored histogram may keep: belier writes 2 or 3. HdrHistogram
/// allows 5, whose counts array is 100 times larger (up to 50 MB for a 64-bit range).
const MOST_DIGITS: u32 = belier_stats::HISTOGRAM_SIGFIG as u32;
/// Most bytes a compressed histogram may inflate to. With at most 3 digits a histogram has
/// at most some 56,000 counts over the whole 64-bit range, 9 bytes each at worst: 0.5 MB.
const MOST_INFLATED: usize = 1 << 20;

/// Encodes histograms (V2 compressed, base64), reusing its buffers.
#[derive(Default)]
pub(crate) struct Encoder {
    serializer: V2DeflateSerializer,
    buf: Vec<u8>,
}

impl Encoder {
    /// Each row's histogram, by row number, encoded like the others: the steps' latencies
    /// or the custom metrics' values.
    pub(crate) fn encode_rows<C: RowCounts>(&mut self, rows: &[Row<C>]) -> io::Result<Vec<String>> {
        rows.iter()
            .map(|row| self.encode(row.values_us()))
            .collect()
    }

    /// Each row's histogram, by its key written out: the address rows' latencies.
    pub(crate) fn encode_keyed<K: ToString, C: RowCounts>(
        &mut self,
        rows: &std::collections::BTreeMap<K, Row<C>>,
    ) -> io::Result<std::collections::BTreeMap<String, String>> {
        rows.iter()
            .map(|(key, row)| Ok((key.to_string(), self.encode(row.values_us())?)))
            .collect()
    }

    /// `h` encoded, or `None` when it is empty (an optional histogram left out of the file).
    pub(crate) fn encode_some(&mut self, h: &Histogram<u64>) -> io::Result<Option<String>> {
        match h.is_empty() {
            true => Ok(None),
            false => self.encode(h).map(Some),
        }
    }

    pub(crate) fn encode(&mut self, h: &Histogram<u64>) -> io::Result<String> {
        self.buf.clear();
        self.serializer
            .serialize(h, &mut self.buf)
            .map_err(|e| io::Error::other(format!("cannot encode a histogram: {e:?}")))?;
        Ok(BASE64.encode(&self.buf))
    }
}

/// The histogram stored in `encoded` (base64 of the V2 encoding, either form); `field` names
/// it in errors (`latency`, `steps_latency` item 2, …).
pub(crate) fn decode(
    deserializer: &mut Deserializer,
    encoded: &str,
    field: &str,
) -> Result<Histogram<u64>, String> {
    let fail = |why: String| format!("field `{field}`: histogram {why}");
    let bytes = BASE64
        .decode(encoded)
        .map_err(|e| fail(format!("is not base64: {e}")))?;
    let plain = match cookie(&bytes) {
        Some(V2_COMPRESSED_COOKIE) => inflate(&bytes).map_err(fail)?,
        Some(V2_COOKIE) => bytes,
        _ => return Err(fail("is not in HdrHistogram's V2 encoding".into())),
    };
    check_plain(&plain).map_err(fail)?;
    deserializer
        .deserialize(&mut plain.as_slice())
        .map_err(|e| fail(in_words(&e)))
}

fn cookie(bytes: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// The 32-bit big-endian number at `at`, when `bytes` has it.
fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// The plain encoding inside a compressed one, inflated to at most [`MOST_INFLATED`] bytes.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let claimed = u32_at(bytes, 4).ok_or("is cut short in its header")? as usize;
    let has = bytes.len() - COMPRESSED_HEADER.min(bytes.len());
    if claimed > has {
        return Err(format!(
            "payload claims {} bytes, more than its {} encoded bytes",
            thousands(claimed as u64),
            thousands(has as u64)
        ));
    }
    let stream = &bytes[COMPRESSED_HEADER..COMPRESSED_HEADER + claimed];
    let mut plain = Vec::new();
    ZlibDecoder::new(stream)
        .take(MOST_INFLATED as u64 + 1)
        .read_to_end(&mut plain)
        .map_err(|e| format!("cannot be inflated: {e}"))?;
    if plain.len() > MOST_INFLATED {
        return Err(format!(
            "inflates to more than {} bytes",
            thousands(MOST_INFLATED as u64)
        ));
    }
    Ok(plain)
}

/// Checks a plain encoding's header against its bytes: the cookie, the payload length, the
/// precision (which sizes the counts array).
fn check_plain(plain: &[u8]) -> Result<(), String> {
    if plain.len() < V2_HEADER || cookie(plain) != Some(V2_COOKIE) {
        return Err("is not in HdrHistogram's V2 encoding (its header is cut short)".into());
    }
    let claimed = u32_at(plain, 4).unwrap_or(0) as usize;
    let has = plain.len() - V2_HEADER;
    if claimed > has {
        return Err(format!(
            "payload claims {} bytes, more than the {} it has",
            thousands(claimed as u64),
            thousands(has as u64)
        ));
    }
    let digits = u32_at(plain, 12).unwrap_or(0);
    if digits > MOST_DIGITS {
        return Err(format!(
            "keeps {digits} significant digits, more than the {MOST_DIGITS} belier writes"
        ));
    }
    Ok(())
}

/// What went wrong, in words (the deserializer's Debug text named Rust types).
fn in_words(e: &DeserializeError) -> String {
    match e {
        DeserializeError::IoError(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "is cut short".into()
        }
        DeserializeError::IoError(e) => format!("cannot be read: {e}"),
        DeserializeError::InvalidCookie => "is not in HdrHistogram's V2 encoding".into(),
        DeserializeError::UnsupportedFeature => {
            "uses an HdrHistogram feature belier does not read (a normalizing offset or a \
             ratio other than 1)"
                .into()
        }
        DeserializeError::UnsuitableCounterType => "holds a count beyond 64 bits".into(),
        DeserializeError::InvalidParameters => {
            "has an invalid range (lowest, highest value or significant digits)".into()
        }
        DeserializeError::UsizeTypeTooSmall => "is too large for this machine".into(),
        DeserializeError::EncodedArrayTooLong => "holds more counts than its range has".into(),
    }
}

#[cfg(test)]
mod tests;
