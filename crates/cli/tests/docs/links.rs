//! Offline link check of the README, the book's pages (their includes expanded, links taken
//! from where the page is) and the files the book includes (links taken from where the file
//! is, as GitHub shows it): a relative link names a file that exists, a `#anchor` a heading
//! of its page, and a book page's link stays inside the book's sources and names a chapter
//! SUMMARY.md lists (mdBook renders nothing else). Links with a scheme are not followed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::markdown::{self, normal, Link};

/// What a document is, for its links: its text as a reader gets it, and whether it is a page
/// of the book.
struct Doc {
    path: PathBuf,
    text: String,
    in_book: bool,
}

fn doc(path: &Path) -> Doc {
    let raw = markdown::read(path);
    let in_book = path.starts_with(markdown::book_src());
    let text = if in_book {
        markdown::expanded(path, &raw)
    } else {
        raw
    };
    Doc {
        path: path.to_path_buf(),
        text,
        in_book,
    }
}

/// Every broken link, as `FILE:LINE: LINK: why`.
pub fn broken() -> Vec<String> {
    let chapters = chapters();
    let mut broken = Vec::new();
    for path in markdown::documents() {
        let doc = doc(&path);
        for link in markdown::links(&doc.text) {
            if let Err(why) = check(&doc, &link, &chapters) {
                broken.push(format!(
                    "{}:{}: {}: {why}",
                    markdown::shown(&doc.path),
                    link.line,
                    link.dest
                ));
            }
        }
    }
    broken
}

/// The chapters SUMMARY.md lists.
fn chapters() -> HashSet<PathBuf> {
    let summary = markdown::book_src().join("SUMMARY.md");
    markdown::links(&markdown::read(&summary))
        .into_iter()
        .map(|l| normal(&markdown::book_src().join(l.dest)))
        .collect()
}

fn check(doc: &Doc, link: &Link, chapters: &HashSet<PathBuf>) -> Result<(), String> {
    if link.undefined {
        return Err("a reference link to a label the file does not define".into());
    }
    let dest = link.dest.as_str();
    if dest.contains("://") || dest.starts_with("mailto:") {
        return Ok(());
    }
    let (file, fragment) = dest.split_once('#').unwrap_or((dest, ""));
    if file.starts_with('/') {
        return Err("an absolute path: links are relative to the file".into());
    }
    let target = if file.is_empty() {
        doc.path.clone()
    } else {
        normal(&doc.path.parent().expect("a directory").join(file))
    };
    if !target.exists() {
        return Err(format!("{} does not exist", markdown::shown(&target)));
    }
    if doc.in_book && !target.starts_with(normal(&markdown::book_src())) {
        return Err(
            "leaves the book's sources, which mdBook does not copy: link to the \
                    repository's address instead"
                .into(),
        );
    }
    let is_markdown = target.extension().is_some_and(|e| e == "md");
    if doc.in_book && is_markdown && !file.is_empty() && !chapters.contains(&target) {
        return Err("a page SUMMARY.md does not list, which mdBook does not render".into());
    }
    if fragment.is_empty() {
        return Ok(());
    }
    if !is_markdown {
        return Err("an anchor in a file that is not Markdown".into());
    }
    let text = if file.is_empty() {
        doc.text.clone()
    } else {
        self::doc(&target).text
    };
    if markdown::anchors(&text).contains(fragment) {
        Ok(())
    } else {
        Err(format!(
            "{} has no heading with the id {fragment}",
            markdown::shown(&target)
        ))
    }
}
