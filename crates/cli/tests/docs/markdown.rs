//! The documents as mdBook reads them: which files, their `{{#include}}`s expanded, their
//! fenced blocks, links and heading ids (mdBook's algorithm, which is GitHub's in all that
//! matters here: lower case, spaces to `-`, other punctuation dropped, `-1`, `-2` for repeats).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{BrokenLink, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// The repository's root.
pub fn root() -> PathBuf {
    normal(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The book's sources.
pub fn book_src() -> PathBuf {
    root().join("docs/src")
}

/// `path` relative to the repository's root, for messages.
pub fn shown(path: &Path) -> String {
    let full = normal(path);
    full.strip_prefix(root())
        .unwrap_or(&full)
        .display()
        .to_string()
}

/// Every Markdown file under `dir`, sorted.
pub fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The documents a reader meets: the README, the book's pages, and the files the pages
/// include whole (CONTRIBUTING.md and the others that stay one file in the repository).
pub fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let pages = markdown_under(&book_src());
    let mut included: Vec<PathBuf> = pages
        .iter()
        .flat_map(|page| includes(page, &read(page)))
        .map(|(_, file, _)| file)
        .filter(|file| file.extension().is_some_and(|e| e == "md"))
        .collect();
    included.sort();
    included.dedup();
    docs.extend(pages);
    docs.extend(included);
    docs
}

/// The file's text; fails the test naming the file.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", shown(path)))
}

/// The `{{#include FILE}}` and `{{#include FILE:ANCHOR}}` directives of `text` (a file at
/// `path`): each one's text, the file it names and its anchor.
fn includes(path: &Path, text: &str) -> Vec<(String, PathBuf, Option<String>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{#include ") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let directive = &rest[start..start + len + 2];
        let arg = directive["{{#include ".len()..directive.len() - 2].trim();
        let (file, anchor) = match arg.rsplit_once(':') {
            Some((file, anchor)) => (file, Some(anchor.to_string())),
            None => (arg, None),
        };
        let dir = path.parent().expect("a file's directory");
        found.push((directive.to_string(), normal(&dir.join(file)), anchor));
        rest = &rest[start + len + 2..];
    }
    found
}

/// `text` (a book page at `path`) with its includes replaced by what they include, as mdBook
/// does: a whole file, or the lines between `ANCHOR: NAME` and `ANCHOR_END: NAME`; lines that
/// hold an anchor marker are left out.
pub fn expanded(path: &Path, text: &str) -> String {
    let mut out = text.to_string();
    for (directive, file, anchor) in includes(path, text) {
        let included = read(&file);
        let lines: Vec<&str> = match &anchor {
            None => included.lines().collect(),
            Some(name) => {
                let begin = format!("ANCHOR: {name}");
                let end = format!("ANCHOR_END: {name}");
                let from = included.lines().position(|l| l.contains(&begin));
                let to = included.lines().position(|l| l.contains(&end));
                match (from, to) {
                    (Some(from), Some(to)) if from < to => included
                        .lines()
                        .skip(from + 1)
                        .take(to - from - 1)
                        .collect(),
                    _ => panic!(
                        "{}: {directive}: {} has no ANCHOR: {name} … ANCHOR_END: {name}",
                        shown(path),
                        shown(&file)
                    ),
                }
            }
        };
        let body: Vec<&str> = lines
            .into_iter()
            .filter(|l| !l.contains("ANCHOR: ") && !l.contains("ANCHOR_END: "))
            .collect();
        out = out.replacen(&directive, &body.join("\n"), 1);
    }
    out
}

/// The parser options mdBook uses.
fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_HEADING_ATTRIBUTES
}

/// A fenced code block: its info string, the line its fence opens on, its text.
pub struct Block {
    pub info: String,
    pub line: usize,
    pub code: String,
}

/// The fenced code blocks of `text`.
pub fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) => {
                open = Some(Block {
                    info: info.to_string(),
                    line: line_of(text, range.start),
                    code: String::new(),
                });
            }
            Event::Text(t) => {
                if let Some(block) = open.as_mut() {
                    block.code.push_str(&t);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(open.take()),
            _ => {}
        }
    }
    blocks
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// A link or image of a document: where it points and the line it is on. A full reference
/// link to a label the document does not define has `dest` `[LABEL]` and `undefined` set.
pub struct Link {
    pub dest: String,
    pub line: usize,
    pub undefined: bool,
}

/// The links and images of `text`.
pub fn links(text: &str) -> Vec<Link> {
    let mut undefined = Vec::new();
    let mut callback = |broken: BrokenLink| {
        if broken.link_type == LinkType::Reference {
            undefined.push(Link {
                dest: format!("[{}]", broken.reference),
                line: line_of(text, broken.span.start),
                undefined: true,
            });
        }
        None
    };
    let mut found: Vec<Link> =
        Parser::new_with_broken_link_callback(text, options(), Some(&mut callback))
            .into_offset_iter()
            .filter_map(|(event, range)| match event {
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                    Some(Link {
                        dest: dest_url.to_string(),
                        line: line_of(text, range.start),
                        undefined: false,
                    })
                }
                _ => None,
            })
            .collect();
    found.extend(undefined);
    found
}

/// The ids a link's `#fragment` may name in `text`: its headings' (explicit `{#id}` or made
/// from the heading's text) and any `id="…"` or `name="…"` of its HTML.
pub fn anchors(text: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    let mut heading: Option<(Option<String>, String)> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((id.map(|i| i.to_string()), String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, content)) = heading.as_mut() {
                    content.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((explicit, content)) = heading.take() {
                    let id = explicit.unwrap_or_else(|| id_from_content(&content));
                    unique_id(&id, &mut ids);
                }
            }
            _ => {}
        }
    }
    for attribute in ["id=\"", "name=\""] {
        for (at, _) in text.match_indices(attribute) {
            let value = &text[at + attribute.len()..];
            if let Some(end) = value.find('"') {
                ids.insert(value[..end].to_string());
            }
        }
    }
    ids
}

/// mdBook's id for a heading's text.
fn id_from_content(content: &str) -> String {
    content
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                Some(c)
            } else if c.is_whitespace() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// Adds `id`, or `id-1`, `id-2` … when it is taken, as mdBook numbers repeated headings.
fn unique_id(id: &str, used: &mut HashSet<String>) {
    if used.insert(id.to_string()) {
        return;
    }
    let mut n = 1;
    while !used.insert(format!("{id}-{n}")) {
        n += 1;
    }
}

/// `path` with `.` and `..` resolved without touching the file system.
pub fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
