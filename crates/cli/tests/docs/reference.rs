//! The book's flag reference, generated from belier's clap definition (`belier_cli::args::Cli`):
//! an index (`reference/commands.md`), one page per command (`belier` itself and each
//! subcommand, nested ones too) with its `--help` as the binary prints it, and their lines in
//! SUMMARY.md. The pages are committed so the book builds without running belier; the tests
//! here fail when they differ from what this generator writes, and rewrite them under
//! `BELIER_BLESS=1`.

use clap::CommandFactory as _;

use belier_cli::args::Cli;

/// The command that rewrites the generated pages.
pub const BLESS: &str = "BELIER_BLESS=1 cargo test -p belier-cli --test docs reference";

/// The width the pages' help is wrapped to: an 80-column terminal's, which fits the book's
/// text column. The binary wraps to `COLUMNS` when its output is no terminal, so the test
/// runs it with `COLUMNS` set to this.
pub const HELP_WIDTH: usize = 80;

/// One command's page: its words after `belier`, where it goes under docs/src, and its text.
pub struct Page {
    pub words: Vec<String>,
    pub path: String,
    pub text: String,
}

/// A command of the tree with the words that name it (`["k8s", "render"]`).
struct Named<'a> {
    words: Vec<String>,
    command: &'a clap::Command,
}

/// `belier`, built as the binary builds it, at the tests' width.
fn cli() -> clap::Command {
    let mut cli = Cli::command().term_width(HELP_WIDTH);
    cli.build();
    cli
}

/// Every command a user can run, `belier` first, each before its subcommands.
fn commands(cli: &clap::Command) -> Vec<Named<'_>> {
    let mut all = vec![];
    let mut stack = vec![Named {
        words: vec![],
        command: cli,
    }];
    while let Some(named) = stack.pop() {
        let mut children: Vec<Named> = named
            .command
            .get_subcommands()
            .filter(|c| c.get_name() != "help" && !c.is_hide_set())
            .map(|c| Named {
                words: [named.words.clone(), vec![c.get_name().to_string()]].concat(),
                command: c,
            })
            .collect();
        children.reverse();
        all.push(named);
        stack.extend(children);
    }
    all
}

/// The page of the command named by `words`, relative to docs/src.
fn page_path(words: &[String]) -> String {
    match words {
        [] => "reference/commands/belier.md".to_string(),
        _ => format!("reference/commands/{}.md", words.join("-")),
    }
}

/// `belier WORDS…`.
fn title(words: &[String]) -> String {
    std::iter::once("belier")
        .chain(words.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first sentence clap shows for a command, as Markdown.
fn about(command: &clap::Command) -> String {
    let about = command
        .get_about()
        .map(|a| a.to_string())
        .unwrap_or_default();
    escape(&about)
}

/// `text` with the characters Markdown would take for markup escaped (and `-`, which mdBook's
/// smart punctuation would turn `--flag` into a dash with), except inside code spans (`…`),
/// which clap's help uses for commands and stay code.
fn escape(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in text.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code && matches!(c, '\\' | '<' | '>' | '*' | '_' | '[' | ']' | '-') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

const GENERATED: &str = "<!-- Generated from belier's clap definition by \
crates/cli/tests/docs/reference.rs; do not edit: `BELIER_BLESS=1 cargo test -p belier-cli \
--test docs reference` rewrites it. -->";

/// One command's page.
fn page(named: &Named, root: &clap::Command) -> Page {
    let Named { words, command } = named;
    let mut text = format!(
        "# `{}`\n\n{GENERATED}\n\n{}\n\n",
        title(words),
        about(command)
    );
    let children: Vec<_> = commands(command)
        .into_iter()
        .skip(1)
        .filter(|c| c.words.len() == 1)
        .collect();
    if !children.is_empty() && !words.is_empty() {
        text.push_str("Its subcommands:\n\n");
        for child in &children {
            let full = [words.clone(), child.words.clone()].concat();
            text.push_str(&format!(
                "- [`{}`]({}): {}\n",
                title(&full),
                file_name(&full),
                about(child.command)
            ));
        }
        text.push('\n');
    }
    if words.is_empty() {
        text.push_str(
            "Without a subcommand, belier load-tests a URL; the [index](../commands.md) lists \
             the subcommands, each with a page of its own.\n\n",
        );
    }
    text.push_str(&format!(
        "`{} --help` prints:\n\n```text\n{}```\n",
        title(words),
        help(root, words)
    ));
    Page {
        words: words.clone(),
        path: page_path(words),
        text,
    }
}

/// The page's file name, for links between command pages.
fn file_name(words: &[String]) -> String {
    page_path(words)
        .trim_start_matches("reference/commands/")
        .to_string()
}

/// `belier WORDS… --help` as the binary prints it: clap's answer to that command line.
fn help(root: &clap::Command, words: &[String]) -> String {
    let argv = std::iter::once("belier")
        .chain(words.iter().map(String::as_str))
        .chain(["--help"]);
    let help = match root.clone().try_get_matches_from(argv) {
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.render().to_string(),
        other => panic!("belier {words:?} --help: not clap's help: {other:?}"),
    };
    let trimmed: Vec<&str> = help.lines().map(str::trim_end).collect();
    format!("{}\n", trimmed.join("\n").trim_end())
}

/// The index page: every command with what it does.
fn index(all: &[Named]) -> Page {
    let mut text = format!(
        "# Commands and flags\n\n{GENERATED}\n\n\
         Every command of belier and every flag, as `--help` prints them: these pages are \
         generated from the same definition the binary parses its command line with, and a \
         test fails when they differ from the binary's own `--help`. The exit codes are \
         explained in [Exit codes](exit-codes.md); `belier man` prints the same as a man page \
         and `belier completions SHELL` a completion script.\n\n\
         | command | what it does |\n|---|---|\n"
    );
    for named in all {
        let about = match named.words.as_slice() {
            [] => "load-test a URL".to_string(),
            _ => about(named.command),
        };
        text.push_str(&format!(
            "| [`{}`]({}) | {} |\n",
            title(&named.words),
            page_path(&named.words).trim_start_matches("reference/"),
            about.replace('|', "\\|")
        ));
    }
    Page {
        words: vec![],
        path: "reference/commands.md".to_string(),
        text,
    }
}

/// The index and every command's page.
pub fn pages() -> Vec<Page> {
    let cli = cli();
    let all = commands(&cli);
    let mut pages = vec![index(&all)];
    pages.extend(all.iter().map(|named| page(named, &cli)));
    pages
}

/// The lines of SUMMARY.md for the index and the command pages, nested as the commands are.
pub fn summary_lines() -> Vec<String> {
    let cli = cli();
    let mut lines = vec!["- [Commands and flags](reference/commands.md)".to_string()];
    for named in commands(&cli) {
        let indent = "  ".repeat(named.words.len().max(1));
        lines.push(format!(
            "{indent}- [{}]({})",
            title(&named.words),
            page_path(&named.words)
        ));
    }
    lines
}

/// The text of a page's `--help` block.
pub fn help_block(page: &str) -> Option<&str> {
    let start = page.find("```text\n")? + "```text\n".len();
    let end = page[start..].find("```\n")?;
    Some(&page[start..start + end])
}
