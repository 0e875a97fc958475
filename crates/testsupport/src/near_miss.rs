//! Near misses: valid input with one or a few small mutations, the kind a person makes (a
//! digit too many, a wrong unit, a dropped operator, a pasted character, a line cut short).
//! Pure noise is refused at the first byte; a near miss gets deep into a parser, where the
//! panics hide.
//!
//! Shared by the parser property tests of several crates.

use proptest::prelude::*;
use proptest::sample::Index;

/// Numbers that sit on a boundary: overflow of u64, i64 seconds or f64, zero, negative,
/// not-a-number, exponents.
pub const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e19",
    "1e400",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775808",
    "99999999999999999999999999999",
    "0.0000000001",
    "1.",
    ".5",
    "NaN",
    "inf",
    "-inf",
    "1e-400",
    "4294967296",
];

/// Units of durations, rates and shares, and near-units that are not.
pub const UNITS: &[&str] = &[
    "us", "µs", "ms", "s", "m", "min", "h", "d", "ns", "y", "%", "/s", "mss", "S", "", " ",
];

/// Characters that break assumptions: multi-byte, control, direction overrides, quotes,
/// brackets and the separators parsers split on.
pub const CHARS: &[char] = &[
    'é', 'µ', '∞', '😀', '\u{0}', '\u{202e}', '\u{feff}', '\n', '\r', '\t', ' ', '"', '\'', '{',
    '}', '[', ']', '%', ':', ',', '<', '>', '=', '.', '-', '+', '#', '&', '*', '|', '\\',
];

/// Characters whose loss changes the meaning: operators and separators.
const OPERATORS: &[char] = &['<', '>', '=', ':', ',', '.', '%', '/', '-', '+', ' '];

/// One mutation; the indices choose where and with what, whatever the text's length.
#[derive(Clone, Debug)]
pub enum Mutation {
    /// Cut the text short.
    Truncate(Index),
    /// Replace a run of digits with a boundary number.
    Number(Index, Index),
    /// Replace a unit (or a letter run after a digit) with another.
    Unit(Index, Index),
    /// Remove an operator or separator.
    DropOperator(Index),
    /// Insert a character.
    Insert(Index, Index),
    /// Remove a character.
    Delete(Index),
    /// Repeat a stretch of the text.
    Repeat(Index, Index),
}

/// Any one mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::Truncate),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Number(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Unit(a, b)),
        any::<Index>().prop_map(Mutation::DropOperator),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Insert(a, b)),
        any::<Index>().prop_map(Mutation::Delete),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Repeat(a, b)),
    ]
}

/// One of `seeds`, mutated one to three times.
pub fn near_miss(seeds: &'static [&'static str]) -> impl Strategy<Value = String> {
    (
        prop::sample::select(seeds),
        prop::collection::vec(mutation(), 1..=3),
    )
        .prop_map(|(seed, mutations)| mutate(seed, &mutations))
}

/// `text` with `mutations` applied in order.
pub fn mutate(text: &str, mutations: &[Mutation]) -> String {
    mutations
        .iter()
        .fold(text.to_string(), |text, m| apply(&text, m))
}

/// Byte offsets of every char boundary of `text`, its end included.
fn boundaries(text: &str) -> Vec<usize> {
    text.char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect()
}

/// Byte ranges of the maximal runs of characters matching `is`.
fn runs(text: &str, is: impl Fn(char) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), '\0')]) {
        match (start, is(c) && i < text.len()) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn splice(text: &str, (from, to): (usize, usize), with: &str) -> String {
    format!("{}{with}{}", &text[..from], &text[to..])
}

/// One mutation of `text`; a mutation with nothing to act on (no digit, no operator) leaves
/// the text as it is.
pub fn apply(text: &str, m: &Mutation) -> String {
    let cuts = boundaries(text);
    match m {
        Mutation::Truncate(at) => text[..*at.get(&cuts)].to_string(),
        Mutation::Number(which, with) => match runs(text, |c| c.is_ascii_digit()) {
            r if r.is_empty() => text.to_string(),
            r => splice(text, *which.get(&r), NUMBERS[with.index(NUMBERS.len())]),
        },
        Mutation::Unit(which, with) => {
            // A unit is the letters (or `%`, `/s`, `µ`) right after a digit.
            let units: Vec<(usize, usize)> = runs(text, |c| {
                c.is_alphabetic() || c == '%' || c == '/' || c == 'µ'
            })
            .into_iter()
            .filter(|&(s, _)| text[..s].ends_with(|c: char| c.is_ascii_digit()))
            .collect();
            match units {
                u if u.is_empty() => text.to_string(),
                u => splice(text, *which.get(&u), UNITS[with.index(UNITS.len())]),
            }
        }
        Mutation::DropOperator(which) => {
            let ops: Vec<(usize, usize)> = text
                .char_indices()
                .filter(|(_, c)| OPERATORS.contains(c))
                .map(|(i, c)| (i, i + c.len_utf8()))
                .collect();
            match ops {
                o if o.is_empty() => text.to_string(),
                o => splice(text, *which.get(&o), ""),
            }
        }
        Mutation::Insert(at, c) => {
            let at = *at.get(&cuts);
            splice(text, (at, at), &c.get(CHARS).to_string())
        }
        Mutation::Delete(at) => match cuts.len() {
            1 => String::new(),
            n => {
                let i = at.index(n - 1);
                splice(text, (cuts[i], cuts[i + 1]), "")
            }
        },
        Mutation::Repeat(a, b) => {
            let (a, b) = (*a.get(&cuts), *b.get(&cuts));
            let (from, to) = (a.min(b), a.max(b));
            splice(text, (to, to), &text[from..to])
        }
    }
}

/// JSON values of every type, on the boundaries of the numbers a reader converts.
pub fn json_values() -> Vec<serde_json::Value> {
    use serde_json::json;
    vec![
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(0.5),
        json!(1e300),
        json!(-1e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(18_446_744_073_709_551_616.0),
        json!(""),
        json!("x"),
        json!("1s"),
        json!([]),
        json!([null]),
        json!({}),
        json!({"a": 1}),
    ]
}

/// `doc` with one node below the root (`node`, in document order) replaced by one of
/// [`json_values`] (`with`), or removed when `with` falls past them.
pub fn retype_json(doc: &serde_json::Value, node: Index, with: Index) -> serde_json::Value {
    use serde_json::Value;
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    /// Acts on the `target`th node below `v`; `seen` counts the nodes passed so far.
    fn walk(v: &mut Value, target: usize, seen: &mut usize, with: &Option<Value>) -> bool {
        let children: Vec<String> = match v {
            Value::Array(a) => (0..a.len()).map(|i| i.to_string()).collect(),
            Value::Object(o) => o.keys().cloned().collect(),
            _ => return false,
        };
        for key in children {
            *seen += 1;
            let index = key.parse::<usize>().unwrap_or(0);
            if *seen == target {
                match (with, &mut *v) {
                    (Some(new), Value::Array(a)) => a[index] = new.clone(),
                    (Some(new), Value::Object(o)) => drop(o.insert(key, new.clone())),
                    (None, Value::Array(a)) => drop(a.remove(index)),
                    (None, Value::Object(o)) => drop(o.remove(&key)),
                    _ => {}
                }
                return true;
            }
            let child = match v {
                Value::Array(a) => &mut a[index],
                Value::Object(o) => o.get_mut(&key).expect("a key just listed"),
                _ => return false,
            };
            if walk(child, target, seen, with) {
                return true;
            }
        }
        false
    }
    let mut out = doc.clone();
    let below_root = count(doc) - 1;
    if below_root == 0 {
        return out;
    }
    let values = json_values();
    let pick = with.index(values.len() + 1);
    walk(
        &mut out,
        node.index(below_root) + 1,
        &mut 0,
        &values.get(pick).cloned(),
    );
    out
}
