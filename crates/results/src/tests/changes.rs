//! Change lines: written as they are made, read back, merged across shards, windowed; files
//! without them read as runs that were not steered.

use super::*;
use crate::ChangeKind;

fn change(at_s: f64, what: ChangeKind, from: f64, level: f64) -> Change {
    Change {
        at_s,
        what,
        level,
        from,
    }
}

/// Four intervals of one request each, with `changes` written after the interval each names.
fn steered(name: &str, changes: &[(u64, Change)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = ResultsWriter::new(&mut out, &header(name)).unwrap();
    for i in 0..4 {
        w.interval(&settled(i, recorder_with(&[(100 * (i + 1), 0)])))
            .unwrap();
        for (_, c) in changes.iter().filter(|(after, _)| *after == i) {
            w.change(c).unwrap();
        }
    }
    w.end(&end(4.0)).unwrap();
    out
}

#[test]
fn changes_are_lines_of_their_own_and_read_back() {
    let rate = change(1.5, ChangeKind::Rate, 50.0, 55.0);
    let pause = change(2.25, ChangeKind::Pause, 55.0, 0.0);
    let file = steered("s", &[(1, rate), (2, pause)]);
    let text = String::from_utf8(file.clone()).unwrap();
    let line = text.lines().nth(3).unwrap();
    assert_eq!(
        line,
        r#"{"change":{"at_s":1.5,"what":"rate","level":55.0,"from":50.0}}"#
    );
    let run = read(vec![file], None, None).unwrap();
    assert_eq!(run.changes, [rate, pause]);
    // The records are what they would have been without the changes.
    let plain = read(vec![steered("s", &[])], None, None).unwrap();
    assert_eq!(run.totals.requests(), plain.totals.requests());
    assert_eq!(
        run.totals.latency_summary().max_us,
        plain.totals.latency_summary().max_us
    );
    assert_eq!(run.series.points().len(), 4);
    assert!(plain.changes.is_empty());
}

#[test]
fn a_file_from_before_change_lines_reads_without_changes() {
    // What this build writes for a run that was not steered is what version 2 always wrote.
    let file = write(
        &header("old"),
        &[settled(0, recorder_with(&[(100, 0)]))],
        Some(&end(1.0)),
    );
    let text = String::from_utf8(file.clone()).unwrap();
    assert!(!text.contains("change"));
    let run = read(vec![file], None, None).unwrap();
    assert!(run.changes.is_empty());
    assert_eq!(run.totals.requests(), 1);
}

#[test]
fn a_killed_run_keeps_the_changes_written_before() {
    let rate = change(0.5, ChangeKind::Rate, 50.0, 55.0);
    let mut out = Vec::new();
    let mut w = ResultsWriter::new(&mut out, &header("k")).unwrap();
    w.interval(&settled(0, recorder_with(&[(100, 0)]))).unwrap();
    w.change(&rate).unwrap();
    drop(w);
    let run = read(vec![out], None, None).unwrap();
    assert_eq!(run.changes, [rate]);
    assert_eq!(run.notes.len(), 1, "no end line");
}

#[test]
fn shards_keep_their_own_changes_in_time_order() {
    let a1 = change(0.5, ChangeKind::Rate, 50.0, 55.0);
    let a2 = change(3.0, ChangeKind::Resume, 0.0, 55.0);
    let b1 = change(1.0, ChangeKind::Connections, 10.0, 12.0);
    let b2 = change(2.0, ChangeKind::Pause, 12.0, 0.0);
    let run = read(
        vec![
            steered("m", &[(0, a1), (2, a2)]),
            steered("m", &[(0, b1), (1, b2)]),
        ],
        None,
        None,
    )
    .unwrap();
    assert_eq!(run.changes, [a1, b1, b2, a2]);
}

#[test]
fn a_window_keeps_the_changes_made_within_it() {
    let at = |s| change(s, ChangeKind::Rate, 50.0, 55.0);
    let file = steered(
        "w",
        &[(0, at(0.5)), (1, at(1.0)), (2, at(2.5)), (3, at(3.0))],
    );
    let run = read(
        vec![file],
        Some(Duration::from_secs(1)),
        Some(Duration::from_secs(3)),
    )
    .unwrap();
    assert_eq!(run.changes, [at(1.0), at(2.5)]);
}

#[test]
fn a_bad_change_line_names_the_line() {
    let mut text = String::from_utf8(write(&header("b"), &[], None)).unwrap();
    text.push_str("{\"change\":{\"at_s\":-1.0,\"what\":\"rate\",\"level\":5.0,\"from\":1.0}}\n");
    let err = read(vec![text.clone().into_bytes()], None, None).unwrap_err();
    assert_eq!(err.0, "mem:2: at_s -1 is not a number of seconds");
    let unknown = text.replace("\"rate\"", "\"faster\"");
    let err = read(vec![unknown.into_bytes()], None, None).unwrap_err();
    assert!(
        err.0.starts_with("mem:2: not a belier results line"),
        "{}",
        err.0
    );
}
