//! What HTTP/2 and HTTP/3 do alike with a response whose head `http` parsed: keep its head in
//! HTTP/1.1's textual form for a user who reads it, copy the server's timing header, and take
//! its body piece by piece — kept, decoded (`--compressed`), cut into messages (`--stream`) —
//! then finish it. Each protocol reads the pieces its own way (h2's DATA frames, h3's).
//!
//! A run that asks for none of these pays one test per piece: [`Body::wanted`] is read once,
//! when the head comes.

use std::time::Instant;

use crate::connection::{decoder, finish_body, split_body, Failure, Progress};
use crate::decode::{BodyDecoder, Coding};

/// Reads what the run asks of the response's `head`: its text kept (a probe, a scripted user),
/// its status line starting with `version` (`HTTP/2 `), and the server's timing header.
pub(crate) fn read_head(head: &http::response::Parts, version: &[u8], p: &mut Progress) {
    if let Some(kept) = &mut p.head {
        write_head(kept, version, head);
    }
    if let Some(timing) = &mut p.timing {
        for value in head.headers.get_all(timing.header.name()) {
            timing.keep(value.as_bytes());
        }
    }
}

/// Appends `head` to `out` in HTTP/1.1's textual form (`version` and the status, then one
/// `name: value` line per field, then an empty line), so that a scripted user reads the
/// headers of every protocol the same way.
pub(crate) fn write_head(out: &mut Vec<u8>, version: &[u8], head: &http::response::Parts) {
    out.extend_from_slice(version);
    out.extend_from_slice(head.status.as_str().as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &head.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A response body as it is read: what its pieces go to.
pub(crate) struct Body {
    /// With `--compressed`: decodes the body in its `Content-Encoding`.
    decoder: Option<BodyDecoder>,
    /// Whether anything wants the pieces (a kept body, the decoder, the splitter).
    wanted: bool,
}

impl Body {
    /// The body of the response whose head is `head`, read as `p` asks.
    pub(crate) fn new(head: &http::response::Parts, p: &mut Progress) -> Result<Body, Failure> {
        let decoder = match p.compressed {
            true => {
                let coding = head
                    .headers
                    .get(http::header::CONTENT_ENCODING)
                    .map_or(Coding::Identity, |v| Coding::parse(v.as_bytes()));
                Some(decoder(p, coding)?)
            }
            false => None,
        };
        let wanted = decoder.is_some() || p.body.is_some() || p.split.is_some();
        Ok(Body { decoder, wanted })
    }

    /// Whether the body's pieces must be handed to [`Body::take`]; when not, they are only
    /// counted (as the connection's bytes).
    pub(crate) fn wanted(&self) -> bool {
        self.wanted
    }

    /// Hands a piece of the body, read now, to what wants it: the kept body, the decoder,
    /// the splitter (which stamps its complete messages with the clock read here).
    pub(crate) fn take(&mut self, p: &mut Progress, piece: &[u8]) -> Result<(), Failure> {
        if let Some(kept) = &mut p.body {
            crate::body::keep_body(kept, &mut p.body_truncated, piece);
        }
        if let Some(d) = &mut self.decoder {
            d.feed(piece)?;
        }
        if p.split.is_some() {
            split_body(p, piece, Instant::now())?;
        }
        Ok(())
    }

    /// Ends the body: counts its decoded bytes (a kept body is the decoded one).
    pub(crate) fn finish(self, p: &mut Progress) -> Result<(), Failure> {
        finish_body(p, self.decoder)
    }
}
