//! `form:` and `multipart:` of a request step compiled: field templates checked against the
//! variables defined so far, files read now.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use crate::compiler::Compiler;
use crate::error::Result;
use crate::form::{Form, Multipart, Part};
use crate::yaml::{Kind, Node};

/// Keys of a file part of `multipart:`.
const FILE_KEYS: &[&str] = &["file", "content_type", "filename"];
/// Content type of a file part that names none.
const DEFAULT_FILE_TYPE: &str = "application/octet-stream";

/// `form: { name: value, tags: [a, b], … }`: a list repeats the field, as a form's
/// multiple-choice inputs do.
pub(super) fn form(
    c: &Compiler<'_>,
    node: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Form> {
    let mut fields = Vec::new();
    for (name, _, value) in c.rd.map(node, "form fields (name: value)", &[])?.iter() {
        for value in c.rd.strings(value, "a form field value")? {
            let value = c.template(value, "a form field value", defined, feeders)?;
            fields.push((name.to_string(), value));
        }
    }
    Ok(Form { fields })
}

/// `multipart: { field: value, upload: { file: PATH, content_type: TYPE, filename: NAME } }`.
pub(super) fn multipart(
    c: &Compiler<'_>,
    node: &Node,
    defined: &HashSet<usize>,
    feeders: &mut Vec<usize>,
) -> Result<Multipart> {
    let rd = c.rd;
    let mut parts = Vec::new();
    let entries = rd.map(
        node,
        "multipart parts (name: value, or name: { file: PATH })",
        &[],
    )?;
    for (name, _, value) in entries.iter() {
        let part = match &value.kind {
            Kind::Map(_) => {
                let f = rd.map(value, "a file part", FILE_KEYS)?;
                let Some(file) = f.get("file") else {
                    return Err(rd.err(
                        value,
                        format!("file part `{name}` needs `file:` (a path relative to the plan)"),
                    ));
                };
                let path = c.file(rd.str(file, "a file path")?);
                let bytes =
                    crate::files::read(&path, crate::files::MOST_BODY_BYTES).map_err(|e| {
                        let path = path.display();
                        rd.err(file, format!("cannot read multipart file `{path}`: {e}"))
                    })?;
                let content_type = match f.get("content_type") {
                    Some(n) => header_value(c, n, "a content type")?,
                    None => DEFAULT_FILE_TYPE.to_string(),
                };
                let filename = match f.get("filename") {
                    Some(n) => rd.str(n, "a file name")?.to_string(),
                    None => Path::new(rd.str(file, "a file path")?)
                        .file_name()
                        .map_or_else(|| name.to_string(), |n| n.to_string_lossy().into_owned()),
                };
                Part::File {
                    name: name.to_string(),
                    filename,
                    content_type,
                    bytes: Arc::from(bytes),
                }
            }
            _ => {
                for value in c.rd.strings(value, "a multipart field value")? {
                    parts.push(Part::Field {
                        name: name.to_string(),
                        value: c.template(value, "a multipart field value", defined, feeders)?,
                    });
                }
                continue;
            }
        };
        parts.push(part);
    }
    if parts.is_empty() {
        return Err(rd.err(node, "expected at least one multipart part"));
    }
    Ok(Multipart::new(parts, &mut fastrand::Rng::new()))
}

/// A value that goes into a part's header line: no CR or LF.
fn header_value(c: &Compiler<'_>, node: &Node, what: &str) -> Result<String> {
    let text = c.rd.str(node, what)?;
    if text.contains(['\r', '\n']) {
        return Err(c.rd.err(node, format!("{what} cannot span lines")));
    }
    Ok(text.to_string())
}
