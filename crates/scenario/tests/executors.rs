//! A plan whose scenarios have loads of their own: each executor's users run its scenarios
//! only (the executors themselves are read in `belier_plan`'s `parse/executors.rs`).

use std::path::Path;

use belier_engine::user::{Action, Reply, Users};
use belier_scenario::VirtualUsers;

/// Two scenarios with loads of their own and two sharing the plan's, in flow style.
const LOADS: &str = "\
target: http://127.0.0.1:1
load: { vus: 2 }
scenarios:
  - { name: browse, load: { vus: 10, duration: 5s }, steps: [ { get: /browse } ] }
  - { name: other, steps: [ { get: /other } ] }
  - { name: checkout, load: { rate: 20, duration: 5s, max_vus: 50 }, steps: [ { post: /checkout } ] }
  - { name: more, steps: [ { get: /more } ] }
";

#[test]
fn each_executors_users_run_its_scenarios_only() {
    let p = belier_plan::parse(LOADS, Path::new("p.yaml")).unwrap();
    let users = p.executor_users();
    assert_eq!(users.len(), 3);
    for (i, path) in [(0, "/browse"), (2, "/checkout")] {
        let mut user = users[i].user(0);
        for _ in 0..5 {
            match user.next() {
                Action::Send(out) => assert_eq!(out.path_and_query, path),
                other => panic!("expected a request, got {other:?}"),
            }
            let reply = Reply {
                status: 200,
                head: b"HTTP/1.1 200 OK\r\n",
                body: b"",
                body_truncated: false,
                latency: std::time::Duration::from_millis(1),
                grpc: None,
            };
            user.reply(&reply, &mut |_, _| {});
            assert_eq!(user.next(), Action::EndIteration);
        }
    }
}
