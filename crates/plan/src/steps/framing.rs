//! A request step's framing headers: a `Content-Length` or `Transfer-Encoding` the plan gives
//! must agree with the body, or the server would read the next request from inside this one.

use belier_engine::request::rules;

use crate::compiler::Compiler;
use crate::error::Result;
use crate::model::Body;
use crate::template::Template;
use crate::yaml::Fields;

/// A step's (or the plan's) `Content-Length` or `Transfer-Encoding` against its body: fixed
/// text both, and agreeing (the rules the engine sends by). Without them belier writes the
/// body's length itself, per request.
pub(super) fn check(
    c: &Compiler<'_>,
    f: &Fields<'_>,
    headers: &[(String, Template)],
    body: &Body,
) -> Result<()> {
    let is_framing = |h: &str| {
        h.eq_ignore_ascii_case("content-length") || h.eq_ignore_ascii_case("transfer-encoding")
    };
    let Some((name, _)) = headers.iter().find(|(h, _)| is_framing(h)) else {
        return Ok(());
    };
    // The step's own header, or (from the plan's `headers`) the step.
    let place = f
        .get("headers")
        .and_then(|n| c.rd.map(n, "headers", &[]).ok())
        .and_then(|m| m.iter().find(|(h, _, _)| is_framing(h)).map(|(_, _, v)| v))
        .unwrap_or(f.node);
    let mut fixed = Vec::new();
    for (h, t) in headers.iter().filter(|(h, _)| is_framing(h)) {
        let Some(text) = t.as_literal() else {
            return Err(c.rd.err(
                place,
                format!("`{h}` must be fixed text (leave Content-Length out: belier writes the body's length)"),
            ));
        };
        fixed.push((h.clone(), text));
    }
    let bytes: &[u8] = match body {
        Body::None => &[],
        Body::Bytes(bytes, _) => bytes,
        Body::Text(_) | Body::Json(_) | Body::Form(_) | Body::Multipart(_) => {
            return Err(c.rd.err(
                place,
                format!("`{name}` with a body that changes per request cannot match it; leave it out: belier writes the length of each body"),
            ))
        }
    };
    rules::check_framing(&fixed, bytes).map_err(|e| c.rd.err(place, e.to_string()))
}
