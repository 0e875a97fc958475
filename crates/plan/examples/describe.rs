//! Prints what `belier check` will show for a plan: `cargo run -p belier-plan --example describe -- PLAN.yaml`.
#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: describe PLAN.yaml");
        std::process::exit(2);
    };
    match belier_plan::load(std::path::Path::new(&path)) {
        Ok(plan) => print!("{}", plan.describe()),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
