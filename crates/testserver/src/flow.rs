//! Writing on an HTTP/2 stream as flow control allows: what the HTTP answers and the gRPC
//! service both send their bodies with.

use bytes::Bytes;
use h2::SendStream;

/// Largest DATA frame payload written at once: the protocol's default frame size.
const DATA_PIECE: usize = 16 * 1024;

/// Sends `data` in pieces the peer's window has room for, so a large body waits for the
/// client to read rather than piling up in the server's memory.
pub(crate) async fn send_flow(
    send: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
) -> Result<(), h2::Error> {
    while !data.is_empty() {
        send.reserve_capacity(data.len().min(DATA_PIECE));
        let granted = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(granted) => granted?,
            None => return Ok(()),
        };
        if granted == 0 {
            continue;
        }
        let piece = data.split_to(granted.min(data.len()));
        send.send_data(piece, end && data.is_empty())?;
    }
    Ok(())
}
