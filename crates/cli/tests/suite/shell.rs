//! `belier completions SHELL` and `belier man`: generated from the flags, so every subcommand
//! and flag is there; the bash script completes in a real bash, the man page renders in groff.

use std::process::{Command, Output, Stdio};

belier_testsupport::binary!(BELIER);

/// The subcommands a user types after `belier`.
const SUBCOMMANDS: [&str; 11] = [
    "target",
    "demo",
    "report",
    "compare",
    "probe",
    "run",
    "check",
    "capacity",
    "completions",
    "man",
    "help",
];

fn belier(args: &[&str]) -> String {
    String::from_utf8(BELIER.ok(args).stdout).unwrap()
}

/// Runs `script` in bash after loading belier's completions; its output.
fn bash(completions: &str, script: &str) -> Output {
    Command::new("bash")
        .args(["--norc", "--noprofile", "-c"])
        .arg(format!("{completions}\n{script}"))
        .stdin(Stdio::null())
        .output()
        .expect("bash runs")
}

/// What bash offers for the words typed so far (the last one being completed).
fn complete(completions: &str, words: &[&str]) -> Vec<String> {
    let words_list = words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let out = bash(
        completions,
        &format!(
            "COMP_WORDS=({words_list}); COMP_CWORD={cword}; COMP_LINE='{line}'; \
             COMP_POINT=${{#COMP_LINE}}; _belier belier '{cur}' '{prev}'; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            line = words.join(" "),
            cur = words[cword],
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_subcommands_and_their_flags() {
    let script = belier(&["completions", "bash"]);
    for sub in SUBCOMMANDS {
        assert!(script.contains(&format!("belier,{sub})")), "{sub}");
    }
    // The script registers itself, and bash completes with it.
    let out = bash(&script, "complete -p belier");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("-F _belier"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offered = complete(&script, &["belier", ""]);
    for sub in SUBCOMMANDS {
        assert!(offered.iter().any(|w| w == sub), "{sub} not in {offered:?}");
    }
    assert_eq!(complete(&script, &["belier", "rep"]), ["report"]);
    let flags = complete(&script, &["belier", "report", "--ty"]);
    assert_eq!(flags, ["--type"]);
    let types = complete(&script, &["belier", "report", "--type", ""]);
    for t in ["text", "json", "csv", "csv-stats", "hdr", "html", "junit"] {
        assert!(types.iter().any(|w| w == t), "{t} not in {types:?}");
    }
    let load = complete(&script, &["belier", "--ra"]);
    assert!(load.iter().any(|w| w == "--rate"), "{load:?}");
}

#[test]
fn zsh_and_fish_scripts_name_every_subcommand() {
    let zsh = belier(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef belier"), "{zsh}");
    let fish = belier(&["completions", "fish"]);
    for sub in SUBCOMMANDS {
        assert!(zsh.contains(&format!("'{sub}:")), "zsh: {sub}");
        assert!(fish.contains(&format!("-a \"{sub}\"")), "fish: {sub}");
    }
    assert!(fish.contains("complete -c belier"), "{fish}");
}

#[test]
fn the_man_page_renders_with_every_subcommand_and_flag() {
    let page = belier(&["man"]);
    assert!(page.contains(".TH belier 1"), "{page}");
    // groff (Debian's groff-base, which man itself uses) renders it without a warning.
    let Ok(mut groff) = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    else {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("groff is not installed, and CI must render the man page (apt-get install -y groff-base)");
        }
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: groff not installed (apt-get install -y groff-base)\n",
        );
        return;
    };
    std::io::Write::write_all(groff.stdin.as_mut().unwrap(), page.as_bytes()).unwrap();
    let out = groff.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "groff warnings");
    let text = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-P-c", "-P-b", "-P-u"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut g| {
            std::io::Write::write_all(g.stdin.as_mut().unwrap(), page.as_bytes())?;
            g.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for want in [
        "NAME",
        "SYNOPSIS",
        "--rate",
        "--no-keepalive",
        "SUBCOMMANDS",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    for sub in SUBCOMMANDS {
        assert!(
            text.contains(&format!("belier-{sub}(1)")),
            "{sub} in\n{text}"
        );
    }
}
