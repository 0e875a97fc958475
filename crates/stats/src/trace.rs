//! The W3C trace context of a sampled request (`--trace-sample`): the trace it belongs to and
//! its own span, as its `traceparent` header carries them
//! (<https://www.w3.org/TR/trace-context/>), so that a slow request can be found in the
//! server's traces and logs.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A trace's id: 16 bytes, never all zero (the spec's invalid value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TraceId(pub u128);

/// A span's id: 8 bytes, never all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpanId(pub u64);

/// A sampled request's place in a trace: its trace, and the span that is the request. A
/// scripted user's iteration is one trace; each of its requests is a span of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Trace {
    /// The trace the request belongs to.
    pub trace_id: TraceId,
    /// The request's own span: the `parent-id` the server sees.
    pub span_id: SpanId,
}

/// Length of a `traceparent` value: `00-` 32 hex digits `-` 16 hex digits `-01`.
pub const TRACEPARENT_LEN: usize = 55;

impl Trace {
    /// The `traceparent` header's value: version 00, the ids in lower-case hex, the sampled
    /// flag set (belier records every request it traces).
    pub fn traceparent(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = [0u8; TRACEPARENT_LEN];
        out[..3].copy_from_slice(b"00-");
        hex_into(&mut out[3..35], &self.trace_id.0.to_be_bytes());
        out[35] = b'-';
        hex_into(&mut out[36..52], &self.span_id.0.to_be_bytes());
        out[52..].copy_from_slice(b"-01");
        out
    }

    /// Reads a `traceparent` value of version 00 (what a server logged, in tests and
    /// tools); `None` unless it is well formed with ids that are not zero.
    pub fn parse_traceparent(value: &str) -> Option<(Trace, bool)> {
        let value = value.trim();
        let mut parts = value.split('-');
        let (version, trace, span, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || version != "00" {
            return None;
        }
        let lower_hex = |s: &str, len| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !lower_hex(trace, 32) || !lower_hex(span, 16) || !lower_hex(flags, 2) {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok()?;
        let span_id = u64::from_str_radix(span, 16).ok()?;
        let flags = u8::from_str_radix(flags, 16).ok()?;
        (trace_id != 0 && span_id != 0).then_some((
            Trace {
                trace_id: TraceId(trace_id),
                span_id: SpanId(span_id),
            },
            flags & 1 == 1,
        ))
    }
}

fn hex_into(out: &mut [u8], bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 0xf)];
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Ids are stored as the lower-case hex strings every tracing tool shows.
impl Serialize for TraceId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TraceId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match u128::from_str_radix(&text, 16) {
            Ok(id) if text.len() == 32 && id != 0 => Ok(TraceId(id)),
            _ => Err(serde::de::Error::custom(format!(
                "{text:?} is not a trace id (32 hex digits, not all zero)"
            ))),
        }
    }
}

impl Serialize for SpanId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SpanId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        match u64::from_str_radix(&text, 16) {
            Ok(id) if text.len() == 16 && id != 0 => Ok(SpanId(id)),
            _ => Err(serde::de::Error::custom(format!(
                "{text:?} is not a span id (16 hex digits, not all zero)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_writes_and_reads_back() {
        let t = Trace {
            trace_id: TraceId(0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736),
            span_id: SpanId(0x00f0_67aa_0ba9_02b7),
        };
        let value = t.traceparent();
        let text = std::str::from_utf8(&value).unwrap();
        assert_eq!(
            text,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(Trace::parse_traceparent(text), Some((t, true)));
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert_eq!(Trace::parse_traceparent(unsampled), Some((t, false)));
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "",
        ] {
            assert_eq!(Trace::parse_traceparent(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_store_as_hex_and_refuse_what_is_not_one() {
        let json = serde_json::to_string(&(TraceId(1), SpanId(2))).unwrap();
        assert_eq!(
            json,
            r#"["00000000000000000000000000000001","0000000000000002"]"#
        );
        let back: (TraceId, SpanId) = serde_json::from_str(&json).unwrap();
        assert_eq!(back, (TraceId(1), SpanId(2)));
        assert!(serde_json::from_str::<TraceId>(r#""00""#).is_err());
        assert!(serde_json::from_str::<SpanId>(r#""0000000000000000""#).is_err());
    }
}
