//! The response body kept for a user to inspect, and its bound: shared by both protocols' reads
//! and the body decoder, below the users' interface that names the bound.

/// Most response-body bytes kept for a user to inspect; the rest is read and counted but not
/// kept ([`Reply::body_truncated`](crate::user::Reply::body_truncated)).
pub const MAX_KEPT_BODY_BYTES: usize = 1 << 20;

/// Appends `data` to a kept body, up to [`MAX_KEPT_BODY_BYTES`].
pub(crate) fn keep_body(body: &mut Vec<u8>, truncated: &mut bool, data: &[u8]) {
    let room = MAX_KEPT_BODY_BYTES.saturating_sub(body.len());
    if data.len() > room {
        *truncated = true;
    }
    body.extend_from_slice(&data[..data.len().min(room)]);
}
