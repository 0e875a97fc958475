//! The plan's YAML as a tree of nodes that remember where they are.
//!
//! serde-based YAML crates lose the position of a value once it is deserialised, and plan
//! errors must point at the value that is wrong (a bad duration, an unknown key, a template
//! naming an undefined variable). So the document is read at the event level with yaml-rust2,
//! built into this small tree, and walked by hand in `parse`, which also lets unknown keys be
//! reported with the closest valid one.

use std::collections::HashMap;
use std::path::Path;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::error::{PlanError, Pos, Result};

/// Deepest nesting accepted: plans are shallow, and the tree is walked recursively.
const MAX_DEPTH: usize = 64;
/// Most nodes after expanding aliases, so `&a [*b, *b]` chains cannot blow up memory.
const MAX_NODES: usize = 200_000;

/// A YAML node and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub pos: Pos,
    pub kind: Kind,
}

/// What a node holds.
#[derive(Clone, Debug)]
pub(crate) enum Kind {
    /// A scalar; `plain` when unquoted (only plain scalars can be null, booleans or numbers).
    Scalar {
        text: String,
        plain: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// What this node is, for messages.
    pub fn describe(&self) -> &'static str {
        match &self.kind {
            Kind::Scalar { .. } if self.is_null() => "nothing (null)",
            Kind::Scalar { .. } => "a scalar",
            Kind::Seq(_) => "a list",
            Kind::Map(_) => "a mapping",
        }
    }

    /// A plain `~`, `null` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar { text, plain: true } if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// The scalar's text.
    pub fn scalar(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } if !self.is_null() => Some(text),
            _ => None,
        }
    }

    /// The node as JSON: plain scalars become null, booleans or numbers when they read as such.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.kind {
            Kind::Scalar { text, plain } => {
                if !plain {
                    return Value::String(text.clone());
                }
                if self.is_null() {
                    return Value::Null;
                }
                match text.as_str() {
                    "true" | "True" | "TRUE" => return Value::Bool(true),
                    "false" | "False" | "FALSE" => return Value::Bool(false),
                    _ => {}
                }
                if let Ok(i) = text.parse::<i64>() {
                    return Value::from(i);
                }
                if let Ok(f) = text.parse::<f64>() {
                    if let Some(n) = serde_json::Number::from_f64(f) {
                        return Value::Number(n);
                    }
                }
                Value::String(text.clone())
            }
            Kind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Kind::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.scalar().unwrap_or_default().to_string(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Parses `text` into its single document (an empty document is a null scalar).
pub(crate) fn parse(text: &str, file: &Path) -> Result<Node> {
    let mut builder = Builder {
        stack: Vec::new(),
        anchors: HashMap::new(),
        root: None,
        error: None,
        nodes: 0,
        documents: 0,
    };
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut builder, true) {
        let m = e.marker();
        return Err(PlanError::new(
            file,
            Pos {
                line: m.line().max(1),
                col: m.col() + 1,
            },
            format!("YAML syntax: {}", e.info()),
        ));
    }
    if let Some((pos, message)) = builder.error {
        return Err(PlanError::new(file, pos, message));
    }
    Ok(builder.root.unwrap_or(Node {
        pos: Pos { line: 1, col: 1 },
        kind: Kind::Scalar {
            text: String::new(),
            plain: true,
        },
    }))
}

/// A collection under construction: its node, and for a mapping a key waiting for its value.
struct Open {
    node: Node,
    anchor: usize,
    key: Option<Node>,
}

struct Builder {
    stack: Vec<Open>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    error: Option<(Pos, String)>,
    nodes: usize,
    documents: usize,
}

fn pos_of(mark: &Marker) -> Pos {
    Pos {
        line: mark.line().max(1),
        col: mark.col() + 1,
    }
}

fn count_nodes(node: &Node) -> usize {
    match &node.kind {
        Kind::Scalar { .. } => 1,
        Kind::Seq(items) => 1 + items.iter().map(count_nodes).sum::<usize>(),
        Kind::Map(entries) => {
            1 + entries
                .iter()
                .map(|(k, v)| count_nodes(k) + count_nodes(v))
                .sum::<usize>()
        }
    }
}

impl Builder {
    fn fail(&mut self, pos: Pos, message: &str) {
        if self.error.is_none() {
            self.error = Some((pos, message.to_string()));
        }
        self.stack.clear();
    }

    /// Hangs a finished node on its parent (or makes it the root).
    fn attach(&mut self, node: Node, anchor: usize) {
        if anchor > 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => {
                if self.root.is_none() {
                    self.root = Some(node);
                }
            }
            Some(open) => match &mut open.node.kind {
                Kind::Seq(items) => items.push(node),
                Kind::Map(entries) => match open.key.take() {
                    None => open.key = Some(node),
                    Some(key) => entries.push((key, node)),
                },
                Kind::Scalar { .. } => {}
            },
        }
    }

    fn open(&mut self, kind: Kind, anchor: usize, pos: Pos) {
        if self.stack.len() >= MAX_DEPTH {
            self.fail(pos, "nesting too deep for a plan");
            return;
        }
        self.stack.push(Open {
            node: Node { pos, kind },
            anchor,
            key: None,
        });
    }

    fn close(&mut self) {
        if let Some(mut open) = self.stack.pop() {
            // A block collection's start event is marked where its first entry's token ends;
            // its first entry is where a reader sees it start.
            let first = match &open.node.kind {
                Kind::Map(entries) => entries.first().map(|(k, _)| k.pos),
                Kind::Seq(items) => items.first().map(|i| i.pos),
                Kind::Scalar { .. } => None,
            };
            if let Some(first) = first {
                if (first.line, first.col) < (open.node.pos.line, open.node.pos.col) {
                    open.node.pos = first;
                }
            }
            self.attach(open.node, open.anchor);
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        if self.error.is_some() {
            return;
        }
        let pos = pos_of(&mark);
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            self.fail(pos, "document too large for a plan");
            return;
        }
        match ev {
            Event::DocumentStart => {
                self.documents += 1;
                if self.documents > 1 {
                    self.fail(pos, "expected one YAML document, found another");
                }
            }
            Event::Scalar(text, style, anchor, _tag) => {
                let plain = style == TScalarStyle::Plain;
                self.attach(
                    Node {
                        pos,
                        kind: Kind::Scalar { text, plain },
                    },
                    anchor,
                );
            }
            Event::SequenceStart(anchor, _) => self.open(Kind::Seq(Vec::new()), anchor, pos),
            Event::MappingStart(anchor, _) => self.open(Kind::Map(Vec::new()), anchor, pos),
            Event::SequenceEnd | Event::MappingEnd => self.close(),
            Event::Alias(id) => match self.anchors.get(&id) {
                Some(node) => {
                    let mut node = node.clone();
                    self.nodes += count_nodes(&node);
                    if self.nodes > MAX_NODES {
                        self.fail(pos, "document too large for a plan (aliases)");
                        return;
                    }
                    node.pos = pos;
                    self.attach(node, 0);
                }
                None => self.fail(pos, "alias to an unknown anchor"),
            },
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
    }
}

/// Edit distance, for suggesting the closest valid key.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(cur).min(row[j])
            };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The valid key closest to `key`, if close enough to be a likely typo.
pub(crate) fn closest<'a>(key: &str, valid: &[&'a str]) -> Option<&'a str> {
    valid
        .iter()
        .map(|v| (distance(key, v), *v))
        .filter(|(d, v)| *d <= 2.max(v.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// Reads nodes into values, with errors located in the plan file.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'p> {
    pub file: &'p Path,
}

/// A mapping whose keys were checked against the valid ones.
pub(crate) struct Fields<'n> {
    pub node: &'n Node,
    entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, v)| *v)
    }

    /// The key node of `key`, for errors about the key itself.
    pub fn key_node(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, k, _)| *k)
    }

    /// All entries in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'n str, &'n Node, &'n Node)> + '_ {
        self.entries.iter().copied()
    }
}

impl<'p> Reader<'p> {
    /// An error at `node`.
    pub fn err(&self, node: &Node, message: impl Into<String>) -> PlanError {
        PlanError::new(self.file, node.pos, message)
    }

    /// An error at `pos`.
    pub fn err_at(&self, pos: Pos, message: impl Into<String>) -> PlanError {
        PlanError::new(self.file, pos, message)
    }

    /// A mapping with string keys, each one of `valid` (or any key when `valid` is empty),
    /// none repeated.
    pub fn map<'n>(&self, node: &'n Node, what: &str, valid: &[&str]) -> Result<Fields<'n>> {
        let Kind::Map(entries) = &node.kind else {
            return Err(self.err(
                node,
                format!("expected {what} (a mapping), found {}", node.describe()),
            ));
        };
        let mut out: Vec<(&'n str, &'n Node, &'n Node)> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let Some(key) = k.scalar() else {
                return Err(self.err(
                    k,
                    format!("expected a key in {what}, found {}", k.describe()),
                ));
            };
            if !valid.is_empty() && !valid.contains(&key) {
                let mut message = format!("unknown key `{key}` in {what}");
                match closest(key, valid) {
                    Some(near) => message.push_str(&format!("; did you mean `{near}`?")),
                    None => message.push_str(&format!("; expected one of: {}", valid.join(", "))),
                }
                return Err(self.err(k, message));
            }
            if out.iter().any(|(seen, _, _)| *seen == key) {
                return Err(self.err(k, format!("duplicate key `{key}` in {what}")));
            }
            out.push((key, k, v));
        }
        Ok(Fields { node, entries: out })
    }

    /// A list.
    pub fn seq<'n>(&self, node: &'n Node, what: &str) -> Result<&'n [Node]> {
        match &node.kind {
            Kind::Seq(items) => Ok(items),
            _ => Err(self.err(
                node,
                format!("expected {what} (a list), found {}", node.describe()),
            )),
        }
    }

    /// A string (any non-null scalar; numbers and booleans are taken as written).
    pub fn str<'n>(&self, node: &'n Node, what: &str) -> Result<&'n str> {
        node.scalar().ok_or_else(|| {
            self.err(
                node,
                format!("expected {what} (a string), found {}", node.describe()),
            )
        })
    }

    /// One or several strings: a list, or one string standing for a list of one.
    pub fn strings<'n>(&self, node: &'n Node, what: &str) -> Result<Vec<&'n Node>> {
        match &node.kind {
            Kind::Seq(items) => Ok(items.iter().collect()),
            _ => {
                self.str(node, what)?;
                Ok(vec![node])
            }
        }
    }

    /// A whole number.
    pub fn u64(&self, node: &Node, what: &str) -> Result<u64> {
        let text = self.str(node, what)?;
        text.trim().replace('_', "").parse::<u64>().map_err(|_| {
            self.err(
                node,
                format!("expected {what} (a whole number ≥ 0), found `{text}`"),
            )
        })
    }

    /// A finite number.
    pub fn f64(&self, node: &Node, what: &str) -> Result<f64> {
        let text = self.str(node, what)?;
        match text.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.err(node, format!("expected {what} (a number), found `{text}`"))),
        }
    }

    /// `true` or `false`.
    pub fn bool(&self, node: &Node, what: &str) -> Result<bool> {
        match node.scalar() {
            Some("true" | "True" | "TRUE" | "yes") => Ok(true),
            Some("false" | "False" | "FALSE" | "no") => Ok(false),
            _ => Err(self.err(
                node,
                format!("expected {what} (true or false), found {}", shown(node)),
            )),
        }
    }

    /// A duration: `250ms`, `2s`, `1m30s`, `1h`, or a number of seconds.
    pub fn duration(&self, node: &Node, what: &str) -> Result<std::time::Duration> {
        let text = self.str(node, what)?;
        crate::duration::parse(text).map_err(|why| {
            self.err(
                node,
                format!("expected {what} (a duration such as `250ms`, `2s`, `1m30s`), found `{text}`: {why}"),
            )
        })
    }
}

/// A node as quoted in messages.
pub(crate) fn shown(node: &Node) -> String {
    match node.scalar() {
        Some(text) => format!("`{text}`"),
        None => node.describe().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_keys_only() {
        let keys = ["pause", "path", "thresholds", "timeout"];
        assert_eq!(closest("pauze", &keys), Some("pause"));
        assert_eq!(closest("threshold", &keys), Some("thresholds"));
        assert_eq!(closest("timout", &keys), Some("timeout"));
        assert_eq!(closest("zebra", &keys), None);
    }

    #[test]
    fn nodes_know_where_they_start() {
        let root = parse("a: 1\nb:\n  - x\n  - { c: 'q' }\n", Path::new("p.yaml")).unwrap();
        let Kind::Map(entries) = &root.kind else {
            panic!("{root:?}")
        };
        assert_eq!((root.pos.line, root.pos.col), (1, 1));
        let (b, list) = &entries[1];
        assert_eq!((b.pos.line, b.pos.col), (2, 1));
        let Kind::Seq(items) = &list.kind else {
            panic!("{list:?}")
        };
        assert_eq!((items[0].pos.line, items[0].pos.col), (3, 5));
        assert_eq!((items[1].pos.line, items[1].pos.col), (4, 5));
        assert_eq!(items[1].to_json(), serde_json::json!({"c": "q"}));
        let err = parse("a: [1\n", Path::new("p.yaml")).unwrap_err();
        assert!(
            err.to_string().starts_with("p.yaml:2:1: YAML syntax"),
            "{err}"
        );
        let err = parse("a: 1\n---\nb: 2\n", Path::new("p.yaml")).unwrap_err();
        assert!(err.to_string().contains("one YAML document"), "{err}");
    }
}
