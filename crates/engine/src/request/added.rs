//! Header lines added to the run's request for one request of it. The run's HTTP/1.1 request
//! is encoded once and written as it is; a request that carries a header of its own (a
//! sampled trace's `traceparent`, an SSE reconnection's `Last-Event-ID`) is a copy of it with
//! those lines added at the end of its head, into a buffer its task reuses. The others are
//! not copied.

/// Where the header lines of an encoded HTTP/1.1 request end: the offset of the empty line
/// that ends its head (added lines go there). Requests belier encodes always have one.
pub(crate) fn head_end(request: &[u8]) -> usize {
    request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(request.len(), |at| at + 2)
}

/// Copies `request` into `out` (cleared first) with `lines` (each a whole header line, its
/// `\r\n` included) added in turn at `head_end` (see [`head_end`]).
pub(crate) fn with_lines<'a>(
    out: &mut Vec<u8>,
    request: &[u8],
    head_end: usize,
    lines: impl IntoIterator<Item = &'a [u8]>,
) {
    out.clear();
    out.extend_from_slice(&request[..head_end]);
    for line in lines {
        out.extend_from_slice(line);
    }
    out.extend_from_slice(&request[head_end..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_go_in_turn_at_the_end_of_the_head_before_the_body() {
        let request = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody";
        let at = head_end(request);
        assert_eq!(&request[at..], b"\r\nbody");
        let mut out = b"left over".to_vec();
        with_lines(&mut out, request, at, [&b"A: 1\r\n"[..], b"B: 2\r\n"]);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nA: 1\r\nB: 2\r\n\r\nbody"
        );
        with_lines(&mut out, request, at, []);
        assert_eq!(out, request);
    }
}
