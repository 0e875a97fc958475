//! Tests of the targets' users: order, rows, hosts, streams.
use std::path::Path;

use super::*;
use crate::targets::Format;

fn targets(text: &str) -> Targets {
    let mut r = Reader::new(text.as_bytes(), Path::new("t"), ".".into(), None);
    let mut targets = Vec::new();
    while let Some(t) = r.next_target().unwrap() {
        targets.push(t);
    }
    Targets {
        file: "t".into(),
        format: Format::Http,
        targets,
    }
}

fn paths(user: &mut dyn User, n: usize) -> Vec<(usize, String)> {
    (0..n)
        .map(|_| match user.next() {
            Action::Send(o) => {
                assert_eq!(user.next(), Action::EndIteration);
                (o.step, o.path_and_query)
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

const THREE: &str =
    "GET http://h:1/a\n\nPOST http://h:1/b\n\nGET http://h:1/a\n\nGET http://h:1/c\n";

#[test]
fn in_turn_across_users_with_a_row_per_method_and_url() {
    let users = TargetUsers::from_file(targets(THREE), Order::InTurn).unwrap();
    assert_eq!(
        users.steps(),
        ["GET http://h:1/a", "POST http://h:1/b", "GET http://h:1/c"]
    );
    let (mut u0, mut u1) = (users.user(0), users.user(1));
    let mut got = paths(u0.as_mut(), 2);
    got.extend(paths(u1.as_mut(), 3));
    assert_eq!(
        got,
        [
            (0, "/a".into()),
            (1, "/b".into()),
            (0, "/a".into()),
            (2, "/c".into()),
            (0, "/a".into())
        ]
    );
}

#[test]
fn random_order_repeats_with_its_seed() {
    let draw = |seed| {
        let users = TargetUsers::from_file(targets(THREE), Order::Random { seed }).unwrap();
        paths(users.user(3).as_mut(), 40)
    };
    assert_eq!(draw(7), draw(7));
    assert_ne!(draw(7), draw(8));
    let all = draw(7);
    assert!((0..3).all(|step| all.iter().any(|(s, _)| *s == step)));
}

#[test]
fn each_host_has_its_origin_whatever_its_scheme() {
    let users = TargetUsers::from_file(
        targets("GET http://h:1/a\n\nGET http://g:1/b\n\nGET http://h:2/c\n\nGET http://h:1/d\n"),
        Order::InTurn,
    )
    .unwrap();
    assert_eq!(
        users.origins().iter().map(Origin::url).collect::<Vec<_>>(),
        ["http://h:1", "http://g:1", "http://h:2"]
    );
    let mut user = users.user(0);
    let sent: Vec<usize> = (0..4)
        .map(|_| match (user.next(), user.next()) {
            (Action::Send(o), Action::EndIteration) => o.origin,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(sent, [0, 1, 2, 0]);
    // http and https hosts mix: each is a host of its own.
    let users = TargetUsers::from_file(
        targets("GET http://h:1/a\n\nGET https://h:1/b\n"),
        Order::InTurn,
    )
    .unwrap();
    assert_eq!(
        users.origins().iter().map(Origin::url).collect::<Vec<_>>(),
        ["http://h:1", "https://h:1"]
    );
}

#[test]
fn a_stream_sends_each_target_once_then_stops() {
    let text = "GET http://h:1/a\n\nGET http://h:1/b\n\nGET http://h:1/a\n";
    let mut reader = Reader::new(text.as_bytes(), Path::new("-"), ".".into(), None);
    let first = reader.next_target().unwrap().unwrap();
    let users = TargetUsers::from_stream(first, reader);
    let mut user = users.user(0);
    let mut got = Vec::new();
    loop {
        match user.next() {
            Action::Send(o) => got.push((o.step, o.path_and_query)),
            Action::EndIteration
            | Action::Pause(_)
            | Action::Parallel { .. }
            | Action::Socket(_) => {}
            Action::Stop => break,
        }
    }
    assert_eq!(got, [(0, "/a".into()), (1, "/b".into()), (0, "/a".into())]);
    assert_eq!(users.rows().len(), 2);
    assert!(users.stream_error().is_none());
    assert!(users.finished());
}

#[test]
fn a_stream_error_ends_the_stream_and_is_kept() {
    let text = "GET http://h:1/a\n\nGET http://h:1/b\nbroken\n";
    let mut reader = Reader::new(text.as_bytes(), Path::new("-"), ".".into(), None);
    let first = reader.next_target().unwrap().unwrap();
    let users = TargetUsers::from_stream(first, reader);
    let mut user = users.user(0);
    let mut sent = 0;
    while user.next() != Action::Stop {
        sent += 1;
    }
    assert!(sent >= 1);
    let e = users.stream_error().expect("the error");
    assert_eq!(e.pos.line, 4);
}

#[test]
fn rows_past_the_cap_share_the_last() {
    let mut rows = Rows::default();
    let t = |p: &str| targets(&format!("GET http://h:1/{p}\n")).targets.remove(0);
    assert_eq!(rows.of(&t("a"), 3), 0);
    assert_eq!(rows.of(&t("b"), 3), 1);
    assert_eq!(rows.of(&t("c"), 3), 2);
    assert_eq!(rows.of(&t("d"), 3), 2);
    assert_eq!(rows.of(&t("a"), 3), 0);
    assert_eq!(rows.keys.len(), 3);
    assert_eq!(rows.keys[2].1, OTHER_TARGETS);
}
