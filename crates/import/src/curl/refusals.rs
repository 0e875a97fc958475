//! What a curl command may not carry into a plan (or belier's flags): a header or method that
//! would split the request, a `Content-Length` or `Transfer-Encoding` that contradicts the
//! body. Each is refused at the argument that holds it.

use belier_engine::request::{rules, InvalidRequest};

use super::request::{header, CurlBody, INPUT};
use crate::error::ImportError;
use crate::headers::check_header;

/// What option `opt` (argument `arg`) makes of `value` must be what a plan and belier's flags
/// can hold: a method that is a token, a header (`-H`, `-A`, `-e`, `-b`) with no CR, LF or NUL
/// and a token for a name. Refused at the argument otherwise.
pub(super) fn check_option(opt: &str, arg: usize, value: &str) -> Result<(), ImportError> {
    let refuse = |why: String| {
        ImportError::new(
            INPUT,
            format!("argument {arg} (`{opt}` `{}`): {why}", shown(value)),
        )
    };
    let header = match opt {
        "-X" | "--request" => {
            return rules::check_method(value)
                .map_err(|p| refuse(InvalidRequest::Method(value.into(), p).to_string()))
        }
        // A malformed -H is `header`'s to name.
        "-H" | "--header" => header(value).ok(),
        "-A" | "--user-agent" => Some(("User-Agent".into(), value.into())),
        "-e" | "--referer" => Some(("Referer".into(), value.into())),
        "-b" | "--cookie" => Some(("Cookie".into(), value.into())),
        _ => None,
    };
    match header {
        Some((name, v)) => check_header(&name, &v).map_err(|(_, why)| refuse(why)),
        None => Ok(()),
    }
}

/// `headers` (the first ones from -H, given at `header_args`) against the body: a
/// `Content-Length` or `Transfer-Encoding` that contradicts it is refused at its argument, as
/// belier would refuse the flags. With a body file (not read here) neither is taken: belier
/// writes the file's length.
pub(super) fn framing(
    headers: &[(String, String)],
    header_args: &[usize],
    body: Option<&CurlBody>,
) -> Result<(), ImportError> {
    let is_framing = |n: &str| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    };
    let Some(i) = headers.iter().position(|(n, _)| is_framing(n)) else {
        return Ok(());
    };
    let (name, value) = &headers[i];
    let at = |why: &str| {
        let arg = header_args
            .get(i)
            .map_or(String::new(), |a| format!("argument {a} "));
        ImportError::new(INPUT, format!("{arg}(`-H` `{name}: {value}`): {why}"))
    };
    match body {
        Some(CurlBody::File(path)) => Err(at(&format!(
            "a body file ({}) goes with the length belier writes; leave `{name}` out",
            path.display()
        ))),
        Some(CurlBody::Text(text)) => {
            rules::check_framing(headers, text.as_bytes()).map_err(|e| at(&e.to_string()))
        }
        None => rules::check_framing(headers, b"").map_err(|e| at(&e.to_string())),
    }
}

/// `text` for a message: control characters escaped, cut after 60 characters.
pub(super) fn shown(text: &str) -> String {
    let mut out: String = text.chars().take(60).flat_map(char::escape_debug).collect();
    if text.chars().nth(60).is_some() {
        out.push('…');
    }
    out
}
