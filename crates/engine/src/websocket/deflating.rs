//! A socket's stream below tungstenite, which compresses and inflates its messages when
//! permessage-deflate was agreed ([`super::deflate`] does the framing maths).
//!
//! Why a layer below tungstenite rather than another WebSocket crate: tungstenite (0.29, and
//! 0.30) refuses frames with RSV1 set and has no extension hook, and `yawc`, which has
//! permessage-deflate, wants a `Send + 'static` stream and spawns hyper for its handshake,
//! where belier's streams are `!Send` (thread-per-core, `Rc`-shared counters). Below
//! tungstenite, everything a socket had stays as it was: the engine's own connection, its
//! wire byte counts (the [`Counted`](crate::connection::counted::Counted) stream is under
//! this one, so bytes in and out are the compressed ones on the wire), its kernel receive
//! stamps (the read that completed a frame is still the last read), tungstenite's framing
//! rules, its limits (on the inflated messages it reads) and its error kinds; a socket that
//! did not offer the extension passes through untouched, at the cost of one branch.
//!
//! Frames are rewritten whole: the server's, read in full (at most the socket's longest
//! message each), go up inflated with RSV1 cleared;
//! ours, as tungstenite writes them (masked), go down compressed with RSV1 set on a message's
//! first frame, masked again with the same key.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::deflate::{Agreed, Broken, Deflater, Head, Inflater};

/// A socket's stream, compressing its messages once the server agreed to.
pub(crate) struct Deflating<S> {
    inner: S,
    /// `None`: the socket did not offer permessage-deflate, or the server declined and
    /// nothing read before it answered is left to hand up: the stream passes through.
    codec: Option<Box<Codec>>,
}

/// Where the handshake is, and the compression state once the server agreed.
enum Phase {
    /// Reading the server's answer to the Upgrade: bytes go up until its head ends, those
    /// after it wait for [`Deflating::agree`] (frames may follow the head at once).
    Answer { matched: usize },
    /// The head read, the answer not yet taken.
    Agreeing,
    /// The server declined: what was read after its head goes up as it is.
    Declined,
    /// The server agreed.
    Agreed(Agreed, Inflater, Deflater),
}

struct Codec {
    phase: Phase,
    /// Read from the connection, not yet handed up.
    raw: Vec<u8>,
    /// Ready for tungstenite to read, from `up_at`.
    up: Vec<u8>,
    up_at: usize,
    /// Written by tungstenite, not yet a whole frame.
    down_raw: Vec<u8>,
    /// Ready for the connection, from `down_at`.
    down: Vec<u8>,
    down_at: usize,
    /// The longest frame, and message inflated, the socket reads.
    most: usize,
}

/// The end of a response head.
const HEAD_END: &[u8] = b"\r\n\r\n";

/// How much compressed output may wait for the connection before a write waits.
const MOST_WAITING: usize = 64 * 1024;

impl<S> Deflating<S> {
    /// `inner`, offering permessage-deflate (`offered`) or not; where the server agrees, its
    /// frames and inflated messages are read up to `most` octets long.
    pub(crate) fn new(inner: S, offered: bool, most: usize) -> Self {
        let codec = offered.then(|| {
            Box::new(Codec {
                phase: Phase::Answer { matched: 0 },
                raw: Vec::new(),
                up: Vec::new(),
                up_at: 0,
                down_raw: Vec::new(),
                down: Vec::new(),
                down_at: 0,
                most,
            })
        });
        Deflating { inner, codec }
    }

    /// The stream inside.
    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }

    /// What the server answered to the offer (`None`: it declined), once its answer to the
    /// Upgrade was read.
    pub(crate) fn agree(&mut self, agreed: Option<Agreed>) {
        if let Some(codec) = &mut self.codec {
            codec.phase = match agreed {
                Some(a) => Phase::Agreed(
                    a,
                    Inflater::new(codec.most),
                    Deflater::new(a.client_window_bits),
                ),
                None => Phase::Declined,
            };
        }
    }

    /// What the server agreed to, if it did.
    pub(crate) fn agreed(&self) -> Option<Agreed> {
        match self.codec.as_deref().map(|c| &c.phase) {
            Some(Phase::Agreed(a, ..)) => Some(*a),
            _ => None,
        }
    }
}

impl Codec {
    /// Moves what `raw` holds that can go up to `up`.
    fn take_raw(&mut self) -> io::Result<()> {
        match &mut self.phase {
            Phase::Answer { matched } => {
                let end = head_end(&self.raw, matched);
                let end = end.unwrap_or(self.raw.len());
                if *matched == HEAD_END.len() {
                    self.phase = Phase::Agreeing;
                }
                self.up.extend(self.raw.drain(..end));
            }
            Phase::Agreeing => {}
            Phase::Declined => self.up.append(&mut self.raw),
            Phase::Agreed(agreed, inflater, _) => {
                let no_takeover = agreed.server_no_context_takeover;
                let up = &mut self.up;
                whole_frames(&mut self.raw, Some(self.most), |head, payload| {
                    inflater.frame(head, payload, no_takeover, up)
                })?;
            }
        }
        Ok(())
    }

    /// Moves the whole frames `down_raw` holds to `down`, compressed.
    fn take_down_raw(&mut self) -> io::Result<()> {
        let Phase::Agreed(agreed, _, deflater) = &mut self.phase else {
            self.down.append(&mut self.down_raw);
            return Ok(());
        };
        let no_takeover = agreed.client_no_context_takeover;
        let down = &mut self.down;
        whole_frames(&mut self.down_raw, None, |head, payload| {
            deflater.frame(head, payload, no_takeover, down)
        })
    }

    /// Whether the connection waits for nothing of ours.
    fn down_empty(&self) -> bool {
        self.down_at == self.down.len()
    }
}

/// Hands each whole frame at the start of `bytes` to `each`, and takes it off; a frame of more
/// than `most` octets fails.
fn whole_frames(
    bytes: &mut Vec<u8>,
    most: Option<usize>,
    mut each: impl FnMut(&Head, &[u8]) -> Result<(), Broken>,
) -> io::Result<()> {
    let mut at = 0;
    while let Some(head) = Head::read(&bytes[at..]) {
        if most.is_some_and(|most| head.payload > most as u64) {
            return Err(Broken::FrameTooLong.into_io());
        }
        let end = usize::try_from(head.payload)
            .ok()
            .and_then(|payload| (at + head.len).checked_add(payload))
            .ok_or_else(|| Broken::FrameTooLong.into_io())?;
        if end > bytes.len() {
            break;
        }
        each(&head, &bytes[at + head.len..end]).map_err(Broken::into_io)?;
        at = end;
    }
    bytes.drain(..at);
    Ok(())
}

/// Where `HEAD_END` ends in `bytes` (just past it), `matched` octets of it having ended what
/// came before; `None` while it has not come, `matched` then what ends `bytes`.
fn head_end(bytes: &[u8], matched: &mut usize) -> Option<usize> {
    for (i, &b) in bytes.iter().enumerate() {
        *matched = match b == HEAD_END[*matched] {
            true => *matched + 1,
            false if b == HEAD_END[0] => 1,
            false => 0,
        };
        if *matched == HEAD_END.len() {
            return Some(i + 1);
        }
    }
    None
}

impl<S: AsyncRead + Unpin> AsyncRead for Deflating<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(codec) = this.codec.as_deref_mut() else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        loop {
            if codec.up_at == codec.up.len() && !codec.raw.is_empty() {
                // What came with the answer's head waits for the agreement; from there on,
                // what is left of a frame.
                codec.take_raw()?;
            }
            if codec.up_at < codec.up.len() {
                let n = buf.remaining().min(codec.up.len() - codec.up_at);
                buf.put_slice(&codec.up[codec.up_at..codec.up_at + n]);
                codec.up_at += n;
                if codec.up_at == codec.up.len() {
                    codec.up.clear();
                    codec.up_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if matches!(codec.phase, Phase::Declined) && codec.raw.is_empty() {
                // Nothing left of the handshake's reads: from here on, straight through.
                if codec.down_empty() && codec.down_raw.is_empty() {
                    this.codec = None;
                }
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            let mut chunk = [0u8; 4096];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                // The connection ended; a frame cut short is tungstenite's to see as such.
                codec.up.append(&mut codec.raw);
                if codec.up.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            codec.raw.extend_from_slice(read.filled());
        }
    }
}

impl<S: AsyncWrite + Unpin> Deflating<S> {
    /// Writes what waits in `down` to the connection, as far as it takes it.
    fn poll_down(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let Some(codec) = self.codec.as_deref_mut() else {
            return Poll::Ready(Ok(()));
        };
        while !codec.down_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &codec.down[codec.down_at..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            codec.down_at += n;
        }
        codec.down.clear();
        codec.down_at = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deflating<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let passing = match this.codec.as_deref() {
            None => true,
            Some(codec) => !matches!(codec.phase, Phase::Agreed(..)) && codec.down_empty(),
        };
        if passing {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        if this.poll_down(cx)?.is_pending() {
            let codec = this.codec.as_deref().expect("a codec");
            if codec.down.len() - codec.down_at >= MOST_WAITING {
                return Poll::Pending;
            }
        }
        let codec = this.codec.as_deref_mut().expect("a codec");
        codec.down_raw.extend_from_slice(buf);
        codec.take_down_raw()?;
        // The connection's own wake-up, if it is full, comes with the flush that follows.
        let _ = this.poll_down(cx)?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_down(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_down(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    const ANSWER: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    /// RFC 7692 §7.2.3.1's "Hello", compressed.
    const HELLO: &[u8] = &[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];

    #[test]
    fn a_frame_in_the_answers_last_read_waits_for_the_agreement_and_inflates() {
        let wire = [ANSWER, HELLO].concat();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut stream = Deflating::new(&wire[..], true, 1 << 20);
            let mut head = vec![0; 1024];
            let n = stream.read(&mut head).await.unwrap();
            assert_eq!(&head[..n], ANSWER, "the head alone goes up");
            stream.agree(Agreed::from_answer([&b"permessage-deflate"[..]]).unwrap());
            let mut rest = Vec::new();
            stream.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, b"\x81\x05Hello");
        });
    }

    #[test]
    fn a_declined_offer_hands_up_what_followed_the_answer_as_it_came() {
        let plain = [0x81, 0x02, b'o', b'k'];
        let wire = [ANSWER, &plain].concat();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut stream = Deflating::new(&wire[..], true, 1 << 20);
            let mut head = vec![0; 1024];
            let n = stream.read(&mut head).await.unwrap();
            assert_eq!(&head[..n], ANSWER);
            stream.agree(None);
            let mut rest = Vec::new();
            stream.read_to_end(&mut rest).await.unwrap();
            assert_eq!(rest, plain);
        });
    }

    #[test]
    fn the_heads_end_is_found_across_reads() {
        let mut matched = 0;
        assert_eq!(head_end(b"HTTP/1.1 101\r\n\r", &mut matched), None);
        assert_eq!(matched, 3);
        assert_eq!(head_end(b"\nrest", &mut matched), Some(1));
        let mut matched = 0;
        assert_eq!(head_end(b"a\r\n\r\r\n\r\nb", &mut matched), Some(8));
    }
}
