//! The files a plan reads: named once each in `Plan::files`, as the plan resolves them, and
//! read from local copies by `load_with` (a worker's copies of its coordinator's files).

use std::path::{Path, PathBuf};

use belier_plan::Copies;
use belier_testsupport::temp_dir as dir;

const PLAN: &str = "\
target: https://127.0.0.1:9443
cacert: ca.pem
data:
  users: { file: users.csv }
scenarios:
  - name: buy
    steps:
      - post: /orders
        body_file: order.json
        after_response: { file: hook.rhai }
      - post: /again
        body_file: order.json
";

fn write_files(at: &Path, rows: &str) {
    std::fs::write(at.join("ca.pem"), "not read when the plan loads").unwrap();
    std::fs::write(at.join("users.csv"), rows).unwrap();
    std::fs::write(at.join("order.json"), "{}").unwrap();
    std::fs::write(at.join("hook.rhai"), "counter(\"seen\");").unwrap();
}

#[test]
fn a_plan_names_each_file_it_reads_once_resolved_against_its_directory() {
    let here = dir("named");
    write_files(&here, "email\na@x\n");
    let plan_path = here.join("plan.yaml");
    std::fs::write(&plan_path, PLAN).unwrap();
    let plan = belier_plan::load(&plan_path).unwrap();
    let names: Vec<PathBuf> = ["users.csv", "ca.pem", "order.json", "hook.rhai"]
        .iter()
        .map(|f| here.join(f))
        .collect();
    assert_eq!(plan.files, names);
    let _ = std::fs::remove_dir_all(here);
}

#[test]
fn copies_are_read_in_place_of_the_files_the_plan_names() {
    let (origin, elsewhere) = (dir("origin"), dir("copies"));
    let plan_path = origin.join("plan.yaml");
    // The plan and its files exist only as copies under other names; the plan's own directory
    // is empty.
    write_files(&elsewhere, "email\na@x\nb@x\nc@x\n");
    let mut copies = Copies::new();
    for f in ["ca.pem", "users.csv", "order.json", "hook.rhai"] {
        let copy = elsewhere.join(format!("copy-of-{f}"));
        std::fs::rename(elsewhere.join(f), &copy).unwrap();
        copies.insert(origin.join(f), copy);
    }
    let plan_copy = elsewhere.join("copy-of-plan.yaml");
    std::fs::write(&plan_copy, PLAN).unwrap();
    copies.insert(plan_path.clone(), plan_copy);

    assert!(belier_plan::load(&plan_path).is_err());
    let plan =
        belier_plan::load_with(&plan_path, &copies, belier_plan::Environment::Process).unwrap();
    assert_eq!(plan.file, plan_path, "the plan keeps its own name");
    assert_eq!(plan.feeders()[0].len(), 3, "the rows of the copy");
    assert_eq!(plan.files.len(), 4);
    assert!(plan.files.iter().all(|f| f.starts_with(&origin)));

    // A file without a copy is looked for where the plan names it, and its error says so.
    copies.remove(&origin.join("order.json"));
    let e =
        belier_plan::load_with(&plan_path, &copies, belier_plan::Environment::Process).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("cannot read body file") && text.contains("order.json"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(origin);
    let _ = std::fs::remove_dir_all(elsewhere);
}
