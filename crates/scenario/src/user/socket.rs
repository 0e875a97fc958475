//! A user's `ws:` steps: each rendered into an action on its WebSocket, and the messages it
//! awaits told apart from the others as they come.

use belier_engine::user::{SocketAction, SocketOp};
use belier_plan::program::{WsMatch, WsStep};

use super::*;

impl Local {
    /// Renders `ws:` step `index` into its action.
    pub(super) fn render_socket(&mut self, shared: &Shared, index: usize) -> Action {
        let program = &shared.program;
        let request = &program.requests[index];
        let step = request.ws.as_ref().expect("a ws step");
        let mut env = self.env(program);
        let mut missing = false;
        let mut path = String::new();
        let mut text = String::new();
        let mut headers = Vec::new();
        if let WsStep::Connect { .. } = step {
            missing |= request
                .path
                .render_with(&mut env, &mut path, escape_path)
                .is_err();
            for (name, template) in &request.headers {
                let mut value = String::new();
                missing |= template
                    .render_with(&mut env, &mut value, escape_header)
                    .is_err();
                headers.push((name.clone(), value));
            }
        }
        if let Body::Text(t) = &request.body {
            missing |= t.render(&mut env, &mut text).is_err();
        }
        let awaited = match step {
            WsStep::Send { reply, .. } => reply.as_ref(),
            WsStep::Receive(awaited) => Some(awaited),
            _ => None,
        };
        let mut wanted = Vec::new();
        match awaited.map(|a| &a.matching) {
            Some(WsMatch::Echo) => wanted = text.as_bytes().to_vec(),
            Some(WsMatch::Contains(t) | WsMatch::Json(_, _, t)) => {
                let mut out = String::new();
                missing |= t.render(&mut env, &mut out).is_err();
                wanted = out.into_bytes();
            }
            Some(WsMatch::Any) | None => {}
        }
        self.awaiting = Some(Awaiting {
            request: index,
            text: wanted,
        });
        self.pending = Some(Pending {
            request: index,
            origin: request.origin,
            path: path.clone(),
            missing_var: missing,
        });
        let count = awaited.map_or(0, |a| a.count);
        let op = match step {
            WsStep::Connect {
                subprotocols,
                deflate,
            } => SocketOp::Open {
                path_and_query: path,
                headers,
                subprotocols: subprotocols.clone(),
                deflate: *deflate,
            },
            WsStep::Send { binary, .. } => SocketOp::Send {
                message: text.into_bytes(),
                binary: *binary,
                awaited: count,
            },
            WsStep::Receive(_) => SocketOp::Receive { awaited: count },
            WsStep::Ping => SocketOp::Ping(text.into_bytes()),
            WsStep::Close { code, reason } => SocketOp::Close {
                code: *code,
                reason: reason.clone(),
            },
        };
        Action::Socket(SocketAction {
            step: request.step,
            origin: request.origin,
            timeout: request.timeout,
            op,
        })
    }

    /// Whether `message` is one the step under way awaits.
    pub(super) fn awaits(&self, shared: &Shared, message: &[u8]) -> bool {
        let Some(awaiting) = &self.awaiting else {
            return true;
        };
        let request = &shared.program.requests[awaiting.request];
        let matching = match &request.ws {
            Some(WsStep::Send {
                reply: Some(awaited),
                ..
            })
            | Some(WsStep::Receive(awaited)) => &awaited.matching,
            _ => return true,
        };
        let wanted = awaiting.text.as_slice();
        match matching {
            WsMatch::Any => true,
            WsMatch::Echo => message == wanted,
            WsMatch::Contains(_) => {
                wanted.is_empty() || message.windows(wanted.len()).any(|w| w == wanted)
            }
            WsMatch::Json(path, _, _) => json_reads(message, path, wanted),
        }
    }
}

/// Whether the JSON document `message` holds, at `path`, a value that reads as `wanted` (a
/// string as it is, any other value as JSON text).
fn json_reads(message: &[u8], path: &serde_json_path::JsonPath, wanted: &[u8]) -> bool {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(message) else {
        return false;
    };
    path.query(&value).all().into_iter().any(|v| match v {
        serde_json::Value::String(s) => s.as_bytes() == wanted,
        other => other.to_string().as_bytes() == wanted,
    })
}

#[cfg(test)]
mod tests {
    use super::json_reads;

    #[test]
    fn a_json_message_matches_by_the_value_at_its_path() {
        let path = serde_json_path::JsonPath::parse("$.id").unwrap();
        assert!(json_reads(br#"{"id":"7"}"#, &path, b"7"));
        assert!(json_reads(br#"{"id":7}"#, &path, b"7"));
        assert!(!json_reads(br#"{"id":8}"#, &path, b"7"));
        assert!(!json_reads(br#"{"other":7}"#, &path, b"7"));
        assert!(!json_reads(b"not json", &path, b"7"));
        let nested = serde_json_path::JsonPath::parse("$.items[*].k").unwrap();
        assert!(json_reads(
            br#"{"items":[{"k":1},{"k":true}]}"#,
            &nested,
            b"true"
        ));
    }
}
