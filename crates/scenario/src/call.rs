//! A flag run's one gRPC call whose message is templated (`belier grpc -d` with `{{ … }}`):
//! each user's iteration renders the message, encodes it as the method's input and sends it,
//! one request per iteration, all under one statistics row named for the method. A call
//! whose status is not OK is a failed step, as a plan's `grpc:` step with no `check` has it.

use std::sync::Arc;

use belier_engine::user::{Action, ErrorKind, Outgoing, Reply, User, Users, Verdict};
use belier_grpc::Method;
use belier_plan::program::JsonTemplate;
use belier_plan::template::Env;

/// The users of a templated call.
pub struct CallUsers {
    call: Arc<Call>,
    /// The one row: the method's name.
    steps: Vec<String>,
    seed: u64,
}

/// What every call shares: where it goes and how its message is made.
struct Call {
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    message: JsonTemplate,
}

impl CallUsers {
    /// Users calling `method` at `path` with `headers`, each call's message rendered from
    /// `message`; `seed` seeds each user's random values (with its number).
    pub fn new(
        method: Method,
        path: String,
        headers: Vec<(String, String)>,
        message: JsonTemplate,
        seed: u64,
    ) -> CallUsers {
        let steps = vec![method.name()];
        CallUsers {
            call: Arc::new(Call {
                method,
                path,
                headers,
                message,
            }),
            steps,
            seed,
        }
    }
}

impl Users for CallUsers {
    fn steps(&self) -> &[String] {
        &self.steps
    }

    fn checks(&self) -> &[String] {
        &[]
    }

    fn user(&self, vu: u64) -> Box<dyn User> {
        Box::new(CallUser {
            call: Arc::clone(&self.call),
            vu,
            iteration: 0,
            rng: fastrand::Rng::with_seed(self.seed ^ vu.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            sent: false,
        })
    }
}

/// One user: a call per iteration.
struct CallUser {
    call: Arc<Call>,
    vu: u64,
    iteration: u64,
    rng: fastrand::Rng,
    /// The iteration's call went; the next step ends the iteration.
    sent: bool,
}

impl CallUser {
    /// This iteration's message, framed as the method's input. A message its values do not
    /// fit (a number field given `abc`) goes empty: the server refuses it, and the call
    /// fails under its status, as a plan's step does.
    fn body(&mut self) -> Vec<u8> {
        let mut env = Env {
            vars: &[],
            feeders: &[],
            rows: &[],
            vu: self.vu,
            iteration: self.iteration,
            rng: &mut self.rng,
        };
        let mut missing = false;
        let value = self.call.message.render(&mut env, &mut missing);
        self.call
            .method
            .frame(&value.to_string())
            .map(|framed| framed.to_vec())
            .unwrap_or_default()
    }
}

impl User for CallUser {
    fn next(&mut self) -> Action {
        if self.sent {
            self.sent = false;
            self.iteration += 1;
            return Action::EndIteration;
        }
        self.sent = true;
        Action::Send(Outgoing {
            step: 0,
            origin: 0,
            method: "POST".into(),
            path_and_query: self.call.path.clone(),
            headers: self.call.headers.clone(),
            body: self.body(),
            keep_body: false,
            timeout: None,
            stream: None,
        })
    }

    fn reply(&mut self, reply: &Reply<'_>, _tally: &mut dyn FnMut(usize, bool)) -> Verdict {
        Verdict {
            failed: reply.grpc != Some(0),
        }
    }

    fn failed(&mut self, _kind: ErrorKind) -> Verdict {
        Verdict { failed: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROTO: &str = r#"syntax = "proto3";
package t;
service S { rpc M (Req) returns (Rep) {} }
message Req { string name = 1; int32 n = 2; }
message Rep { string message = 1; }
"#;

    fn users() -> CallUsers {
        let dir = std::env::temp_dir().join(format!("belier-call-users-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.proto");
        std::fs::write(&file, PROTO).unwrap();
        let schema = belier_grpc::Schema::from_proto_files(&[file], &[]).unwrap();
        let method = Method::new(schema.method("t.S/M").unwrap());
        let doc = serde_json::json!({"name": "u{{ vu }}-{{ iteration }}", "n": 7});
        let message = belier_plan::json_text::templates(&doc).unwrap().unwrap();
        let headers = vec![("content-type".into(), "application/grpc".into())];
        CallUsers::new(method, "/t.S/M".into(), headers, message, 1)
    }

    fn sent(user: &mut dyn User) -> Outgoing {
        match user.next() {
            Action::Send(o) => o,
            other => panic!("expected a call, got {other:?}"),
        }
    }

    #[test]
    fn each_iteration_sends_its_own_message_then_ends() {
        let users = users();
        assert_eq!(users.steps(), ["t.S/M"]);
        let mut user = users.user(3);
        let first = sent(&mut *user);
        assert_eq!(first.path_and_query, "/t.S/M");
        assert_eq!(first.method, "POST");
        // Framed: no compression, a 4-byte length, then the message, whose name field
        // holds the rendered text.
        assert_eq!(first.body[0], 0);
        assert!(
            first.body.windows(5).any(|w| w == b"u3-0\x10"),
            "{:?}",
            first.body
        );
        let reply = Reply {
            status: 200,
            head: b"",
            body: b"",
            body_truncated: false,
            latency: std::time::Duration::ZERO,
            grpc: Some(8),
        };
        assert!(
            user.reply(&reply, &mut |_, _| {}).failed,
            "RESOURCE_EXHAUSTED failed"
        );
        assert_eq!(user.next(), Action::EndIteration);
        let second = sent(&mut *user);
        assert!(second.body.windows(4).any(|w| w == b"u3-1"));
        let ok = Reply {
            grpc: Some(0),
            ..reply
        };
        assert!(!user.reply(&ok, &mut |_, _| {}).failed);
    }
}
