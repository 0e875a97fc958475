//! A call's outcome: one of the 17 status codes (the gRPC spec's `statuscodes.md`) and an
//! optional message, sent by the server as `grpc-status` and `grpc-message` in the response's
//! trailers, or in its headers when the response is trailers-only (no messages; the server's
//! usual way of failing a call at once).

use http::{HeaderMap, HeaderName};

/// A gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Code {
    /// Not an error.
    Ok = 0,
    /// The call was cancelled, typically by the caller.
    Cancelled = 1,
    /// An unknown error (also a status value outside this list).
    Unknown = 2,
    /// The client gave an invalid argument.
    InvalidArgument = 3,
    /// The deadline expired before the call completed.
    DeadlineExceeded = 4,
    /// A requested entity was not found.
    NotFound = 5,
    /// The entity the client tried to create already exists.
    AlreadyExists = 6,
    /// The caller may not do this.
    PermissionDenied = 7,
    /// A resource (a quota, the file system) is exhausted.
    ResourceExhausted = 8,
    /// The system is not in the state the call needs.
    FailedPrecondition = 9,
    /// The call was aborted (a concurrency conflict).
    Aborted = 10,
    /// The call went past the valid range.
    OutOfRange = 11,
    /// The method is not implemented or not supported.
    Unimplemented = 12,
    /// An internal error: an invariant the system expects is broken.
    Internal = 13,
    /// The service is currently unavailable; trying again may succeed.
    Unavailable = 14,
    /// Unrecoverable data loss or corruption.
    DataLoss = 15,
    /// The call has no valid authentication credentials.
    Unauthenticated = 16,
}

/// Every code, by number.
pub const CODES: [Code; 17] = [
    Code::Ok,
    Code::Cancelled,
    Code::Unknown,
    Code::InvalidArgument,
    Code::DeadlineExceeded,
    Code::NotFound,
    Code::AlreadyExists,
    Code::PermissionDenied,
    Code::ResourceExhausted,
    Code::FailedPrecondition,
    Code::Aborted,
    Code::OutOfRange,
    Code::Unimplemented,
    Code::Internal,
    Code::Unavailable,
    Code::DataLoss,
    Code::Unauthenticated,
];

impl Code {
    /// The code numbered `n`; a number outside the list is [`Code::Unknown`], as the spec
    /// asks of clients.
    pub fn from_number(n: u32) -> Code {
        CODES.get(n as usize).copied().unwrap_or(Code::Unknown)
    }

    /// Its number on the wire.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// Its name as the spec writes it (`RESOURCE_EXHAUSTED`): the one table every report
    /// labels recorded codes with.
    pub fn name(self) -> &'static str {
        belier_stats::grpc_code_name(self.number())
    }

    /// The code a response with HTTP status `status` and no `grpc-status` stands for (the
    /// spec's `http-grpc-status-mapping.md`): a proxy or a server that is not gRPC answered.
    pub fn of_http_status(status: u16) -> Code {
        match status {
            400 => Code::Internal,
            401 => Code::Unauthenticated,
            403 => Code::PermissionDenied,
            404 => Code::Unimplemented,
            429 | 502 | 503 | 504 => Code::Unavailable,
            _ => Code::Unknown,
        }
    }

    /// The code of a response: its trailers' `grpc-status`, else its headers' (trailers-only),
    /// else what its HTTP status stands for. A 200 without any `grpc-status` is
    /// [`Code::Internal`] (the server broke the protocol, as grpc-go reads it), and so is a
    /// value that is not a number. Reads no message and allocates nothing: what a run counts.
    pub fn of_response(
        http_status: u16,
        headers: &HeaderMap,
        trailers: Option<&HeaderMap>,
    ) -> Code {
        let value = trailers
            .and_then(|t| t.get(&STATUS_NAME))
            .or_else(|| headers.get(&STATUS_NAME));
        match value {
            Some(v) => parse_number(v.as_bytes()).map_or(Code::Internal, Code::from_number),
            None if http_status == 200 => Code::Internal,
            None => Code::of_http_status(http_status),
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The header naming the status.
pub const GRPC_STATUS: &str = "grpc-status";
/// [`GRPC_STATUS`] as a name made once: looked up by it, a map hashes it as it is, where a
/// `&str` is first checked and folded to lower case, on every call of a run.
static STATUS_NAME: HeaderName = HeaderName::from_static(GRPC_STATUS);
/// The header carrying the status's message, percent-encoded.
pub const GRPC_MESSAGE: &str = "grpc-message";

/// A call's status: its code, and the server's message if it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The code.
    pub code: Code,
    /// `grpc-message`, percent-decoded (invalid UTF-8 replaced); empty if none.
    pub message: String,
}

impl Status {
    /// The status of a response (see [`Code::of_response`]), with its message: from the
    /// same place the code came from, or a description of the HTTP status when the server
    /// gave no `grpc-status`.
    pub fn of_response(
        http_status: u16,
        headers: &HeaderMap,
        trailers: Option<&HeaderMap>,
    ) -> Status {
        let code = Code::of_response(http_status, headers, trailers);
        let from = match trailers {
            Some(t) if t.contains_key(GRPC_STATUS) => Some(t),
            _ if headers.contains_key(GRPC_STATUS) => Some(headers),
            _ => None,
        };
        let message = match from {
            Some(map) => map
                .get(GRPC_MESSAGE)
                .map(|m| percent_decode(m.as_bytes()))
                .unwrap_or_default(),
            None => format!("no grpc-status in a response with HTTP status {http_status}"),
        };
        Status { code, message }
    }
}

/// A decimal number of at most 10 digits; `None` for anything else.
fn parse_number(bytes: &[u8]) -> Option<u32> {
    if bytes.is_empty() || bytes.len() > 10 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// `grpc-message` decoded: `%XX` is the byte XX; a `%` not followed by two hex digits is kept
/// as it is (the spec asks receivers to be lenient).
fn percent_decode(bytes: &[u8]) -> String {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let decoded = match bytes[i..] {
            [b'%', h, l, ..] => hex(h).zip(hex(l)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match decoded {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fields: &[(&'static str, &'static str)]) -> HeaderMap {
        fields
            .iter()
            .map(|(n, v)| (http::HeaderName::from_static(n), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn the_17_codes_have_their_numbers_and_names() {
        for (n, code) in CODES.iter().enumerate() {
            assert_eq!(code.number() as usize, n);
            assert_eq!(Code::from_number(n as u32), *code);
        }
        assert_eq!(Code::ResourceExhausted.name(), "RESOURCE_EXHAUSTED");
        assert_eq!(Code::DeadlineExceeded.to_string(), "DEADLINE_EXCEEDED");
        assert_eq!(Code::Unauthenticated.number(), 16);
        assert_eq!(Code::from_number(17), Code::Unknown);
        assert_eq!(Code::from_number(u32::MAX), Code::Unknown);
    }

    #[test]
    fn the_status_is_read_from_the_trailers() {
        let headers = map(&[("content-type", "application/grpc")]);
        let trailers = map(&[
            ("grpc-status", "8"),
            ("grpc-message", "quota%20used%3A%2010%"),
        ]);
        let status = Status::of_response(200, &headers, Some(&trailers));
        assert_eq!(status.code, Code::ResourceExhausted);
        assert_eq!(status.message, "quota used: 10%");
        let ok = map(&[("grpc-status", "0")]);
        assert_eq!(Code::of_response(200, &headers, Some(&ok)), Code::Ok);
    }

    #[test]
    fn a_trailers_only_response_has_its_status_in_its_headers() {
        let headers = map(&[
            ("content-type", "application/grpc"),
            ("grpc-status", "12"),
            ("grpc-message", "unknown method"),
        ]);
        let status = Status::of_response(200, &headers, None);
        assert_eq!(status.code, Code::Unimplemented);
        assert_eq!(status.message, "unknown method");
        // Trailers without a status leave the headers' one.
        let empty = HeaderMap::new();
        assert_eq!(
            Code::of_response(200, &headers, Some(&empty)),
            Code::Unimplemented
        );
    }

    #[test]
    fn without_a_grpc_status_the_http_status_speaks() {
        let none = HeaderMap::new();
        for (http_status, code) in [
            (200, Code::Internal),
            (400, Code::Internal),
            (401, Code::Unauthenticated),
            (403, Code::PermissionDenied),
            (404, Code::Unimplemented),
            (429, Code::Unavailable),
            (502, Code::Unavailable),
            (503, Code::Unavailable),
            (504, Code::Unavailable),
            (500, Code::Unknown),
        ] {
            assert_eq!(
                Code::of_response(http_status, &none, None),
                code,
                "{http_status}"
            );
        }
        let status = Status::of_response(503, &none, Some(&none));
        assert_eq!(
            status.message,
            "no grpc-status in a response with HTTP status 503"
        );
    }

    #[test]
    fn a_status_that_is_not_a_number_is_internal_and_one_out_of_range_unknown() {
        let none = HeaderMap::new();
        for (value, code) in [
            ("x", Code::Internal),
            ("", Code::Internal),
            ("-1", Code::Internal),
            ("99999999999", Code::Internal),
            ("17", Code::Unknown),
            ("4", Code::DeadlineExceeded),
        ] {
            let mut trailers = HeaderMap::new();
            trailers.insert(GRPC_STATUS, value.parse().unwrap());
            assert_eq!(
                Code::of_response(200, &none, Some(&trailers)),
                code,
                "{value:?}"
            );
        }
    }

    #[test]
    fn percent_decoding_is_lenient() {
        assert_eq!(percent_decode(b"a%20b"), "a b");
        assert_eq!(percent_decode(b"100%"), "100%");
        assert_eq!(percent_decode(b"%zz%4"), "%zz%4");
        assert_eq!(percent_decode(b"caf%C3%A9"), "café");
    }
}
