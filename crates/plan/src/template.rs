//! `{{ name }}` templates, compiled once when the plan is loaded.
//!
//! The language is tiny (variables, feeder columns and five built-ins, no logic), so a
//! template is a list of literal and dynamic segments resolved to slot numbers at load time;
//! rendering is a walk that appends strings, with no parsing, lookup by name or template
//! engine on the request path. A general template engine crate would cost more per request and
//! accept far more than a plan should.
//!
//! `{{ env.NAME }}` (with an optional `| default("x")`) is read from the environment once, when
//! the plan loads, and kept as a `Segment::Value`: no lookup on the request path.

use crate::feeder::Feeder;

/// Longest `random_string(n)` accepted.
const MAX_RANDOM_STRING: usize = 65_536;

/// One piece of a template.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Segment {
    Literal(String),
    /// A value fixed when the plan loaded (an environment variable): escaped like any
    /// substituted value, never shown by `describe`.
    Value(String),
    /// A variable, by slot.
    Var(usize),
    /// The virtual user's number (from 0).
    Vu,
    /// The user's iteration number (from 0).
    Iteration,
    /// A random UUID (version 4).
    Uuid,
    /// A uniform integer in `[low, high]`.
    RandomInt(i64, i64),
    /// `n` random letters and digits.
    RandomString(usize),
    /// A column of the row the user drew from a feeder this iteration.
    Column {
        feeder: usize,
        column: usize,
    },
}

/// What a `{{ … }}` names, before it is resolved against the plan's names.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Reference<'t> {
    Builtin(Segment),
    Variable(&'t str),
    Column(&'t str, &'t str),
    /// `env.NAME`, with the default given by `| default("…")`.
    Env(&'t str, Option<&'t str>),
}

/// A compiled template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    segments: Vec<Segment>,
}

/// Why a template does not compile: the byte offset in its text, and the message.
pub(crate) type CompileError = (usize, String);

/// Values a template is rendered with.
pub struct Env<'a> {
    /// The user's variables, by slot.
    pub vars: &'a [Option<String>],
    /// The plan's data sources.
    pub feeders: &'a [Feeder],
    /// The row each feeder gave this iteration.
    pub rows: &'a [Option<usize>],
    /// The virtual user's number.
    pub vu: u64,
    /// The user's iteration number.
    pub iteration: u64,
    /// The user's random numbers.
    pub rng: &'a mut fastrand::Rng,
}

impl Template {
    /// Compiles `text`; `resolve` turns each reference into a segment or says why it cannot.
    pub(crate) fn compile(
        text: &str,
        resolve: &mut dyn FnMut(Reference<'_>) -> Result<Segment, String>,
    ) -> Result<Template, CompileError> {
        let mut segments = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                segments.push(Segment::Literal(rest[..open].to_string()));
            }
            let inner_start = open + 2;
            let Some(close) = rest[inner_start..].find("}}") else {
                return Err((offset + open, "`{{` without a closing `}}`".into()));
            };
            let inner = &rest[inner_start..inner_start + close];
            let reference = reference(inner).map_err(|m| (offset + open, m))?;
            let segment = match reference {
                Reference::Builtin(s) => s,
                other => resolve(other).map_err(|m| (offset + open, m))?,
            };
            segments.push(segment);
            let consumed = inner_start + close + 2;
            offset += consumed;
            rest = &rest[consumed..];
        }
        if !rest.is_empty() {
            segments.push(Segment::Literal(rest.to_string()));
        }
        Ok(Template { segments })
    }

    /// A template that is just `text`.
    pub fn literal(text: &str) -> Template {
        Template {
            segments: vec![Segment::Literal(text.to_string())],
        }
    }

    /// The same template after a literal `prefix`.
    pub fn with_prefix(mut self, prefix: &str) -> Template {
        if !prefix.is_empty() {
            self.segments
                .insert(0, Segment::Literal(prefix.to_string()));
        }
        self
    }

    /// The text when the template has nothing that changes per request (literals and values
    /// fixed at load), so a caller can render it once.
    pub fn as_literal(&self) -> Option<String> {
        self.segments
            .iter()
            .map(|s| match s {
                Segment::Literal(t) | Segment::Value(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(|parts| parts.concat())
    }

    /// The template's own text, between its `{{ … }}`.
    pub fn literals(&self) -> impl Iterator<Item = &str> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Literal(text) => Some(text.as_str()),
            _ => None,
        })
    }

    /// The values fixed when the plan loaded (`{{ env.NAME }}`).
    pub fn values(&self) -> impl Iterator<Item = &str> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Value(text) => Some(text.as_str()),
            _ => None,
        })
    }

    /// Variable slots the template reads.
    pub fn vars(&self) -> impl Iterator<Item = usize> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Var(slot) => Some(*slot),
            _ => None,
        })
    }

    /// Feeders the template reads.
    pub fn feeders(&self) -> impl Iterator<Item = usize> + '_ {
        self.segments.iter().filter_map(|s| match s {
            Segment::Column { feeder, .. } => Some(*feeder),
            _ => None,
        })
    }

    /// Appends the rendered text to `out`, passing dynamic parts through `escape`. A variable
    /// with no value yet renders empty and its slot is returned as the error (after the whole
    /// template is rendered).
    pub fn render_with(
        &self,
        env: &mut Env<'_>,
        out: &mut String,
        escape: fn(&str, &mut String),
    ) -> Result<(), usize> {
        let mut missing = None;
        let mut scratch = String::new();
        for segment in &self.segments {
            scratch.clear();
            let dynamic: &str = match segment {
                Segment::Literal(text) => {
                    out.push_str(text);
                    continue;
                }
                Segment::Value(value) => value,
                Segment::Var(slot) => match env.vars.get(*slot).and_then(|v| v.as_deref()) {
                    Some(value) => value,
                    None => {
                        missing.get_or_insert(*slot);
                        continue;
                    }
                },
                Segment::Vu => {
                    scratch.push_str(&env.vu.to_string());
                    &scratch
                }
                Segment::Iteration => {
                    scratch.push_str(&env.iteration.to_string());
                    &scratch
                }
                Segment::Uuid => {
                    uuid_v4(env.rng, &mut scratch);
                    &scratch
                }
                Segment::RandomInt(low, high) => {
                    scratch.push_str(&env.rng.i64(*low..=*high).to_string());
                    &scratch
                }
                Segment::RandomString(n) => {
                    scratch.extend((0..*n).map(|_| env.rng.alphanumeric()));
                    &scratch
                }
                Segment::Column { feeder, column } => {
                    let row = env.rows.get(*feeder).copied().flatten();
                    match row.and_then(|r| env.feeders.get(*feeder)?.value(r, *column)) {
                        Some(value) => value,
                        None => continue,
                    }
                }
            };
            escape(dynamic, out);
        }
        match missing {
            Some(slot) => Err(slot),
            None => Ok(()),
        }
    }

    /// [`Template::render_with`] without escaping.
    pub fn render(&self, env: &mut Env<'_>, out: &mut String) -> Result<(), usize> {
        self.render_with(env, out, |s, out| out.push_str(s))
    }
}

/// Percent-encodes what may not appear raw in a request target (spaces, controls, quotes,
/// non-ASCII, `#`…); `/`, `?`, `&`, `=` and `%` pass, so values may carry query syntax.
pub fn escape_path(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

/// Drops CR and LF, which would end a header line early, and NUL: a value that comes per
/// request (an extracted one, a data column) is cleaned rather than refused.
pub fn escape_header(value: &str, out: &mut String) {
    out.extend(value.chars().filter(|c| !matches!(c, '\r' | '\n' | '\0')));
}

fn uuid_v4(rng: &mut fastrand::Rng, out: &mut String) {
    let mut bytes = rng.u128(..).to_be_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
}

pub(crate) fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// What the inside of `{{ … }}` names.
fn reference(inner: &str) -> Result<Reference<'_>, String> {
    let inner = inner.trim();
    if let Some(rest) = inner.strip_prefix("env.") {
        return env_reference(rest);
    }
    if inner.contains('|') {
        return Err(format!(
            "`{{{{ {inner} }}}}`: only `env.NAME` takes a `| default(\"…\")`"
        ));
    }
    if let Some((func, args)) = inner.split_once('(') {
        let Some(args) = args.trim_end().strip_suffix(')') else {
            return Err(format!("`{inner}`: missing `)`"));
        };
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        return match (func.trim(), args.as_slice()) {
            ("random_int", [low, high]) => {
                let parse = |a: &str| {
                    a.parse::<i64>()
                        .map_err(|_| format!("random_int: `{a}` is not a whole number"))
                };
                let (low, high) = (parse(low)?, parse(high)?);
                if low > high {
                    return Err(format!(
                        "random_int({low}, {high}): the low bound is above the high one"
                    ));
                }
                Ok(Reference::Builtin(Segment::RandomInt(low, high)))
            }
            ("random_string", [n]) => match n.parse::<usize>() {
                Ok(n) if n <= MAX_RANDOM_STRING => Ok(Reference::Builtin(Segment::RandomString(n))),
                _ => Err(format!(
                    "random_string: expected a length from 0 to {MAX_RANDOM_STRING}, found `{n}`"
                )),
            },
            ("random_int", _) => {
                Err("random_int takes two whole numbers: random_int(1, 100)".into())
            }
            ("random_string", _) => Err("random_string takes one length: random_string(8)".into()),
            (other, _) => Err(format!(
                "unknown function `{other}` (expected random_int or random_string)"
            )),
        };
    }
    match inner {
        "vu" => return Ok(Reference::Builtin(Segment::Vu)),
        "iteration" => return Ok(Reference::Builtin(Segment::Iteration)),
        "uuid" => return Ok(Reference::Builtin(Segment::Uuid)),
        _ => {}
    }
    if let Some((feeder, column)) = inner.split_once('.') {
        if is_name(feeder) && !column.trim().is_empty() {
            return Ok(Reference::Column(feeder, column.trim()));
        }
    }
    if is_name(inner) {
        return Ok(Reference::Variable(inner));
    }
    Err(format!(
        "`{{{{ {inner} }}}}` is not a variable, `data.column` or built-in (vu, iteration, uuid, random_int(a, b), random_string(n))"
    ))
}

/// `NAME` or `NAME | default("x")` after `env.`.
fn env_reference(rest: &str) -> Result<Reference<'_>, String> {
    let (name, filter) = match rest.split_once('|') {
        Some((name, filter)) => (name.trim(), Some(filter.trim())),
        None => (rest.trim(), None),
    };
    if !is_env_name(name) {
        return Err(format!(
            "`env.{name}`: an environment variable name is letters, digits and `_`, not starting with a digit"
        ));
    }
    let Some(filter) = filter else {
        return Ok(Reference::Env(name, None));
    };
    let quoted = filter
        .strip_prefix("default(")
        .and_then(|f| f.strip_suffix(')'))
        .map(str::trim)
        .and_then(|arg| {
            let quote = arg.chars().next().filter(|q| matches!(q, '"' | '\''))?;
            let inner = arg.strip_prefix(quote)?.strip_suffix(quote)?;
            (!inner.contains(quote)).then_some(inner)
        });
    match quoted {
        Some(default) => Ok(Reference::Env(name, Some(default))),
        None => Err(format!(
            "`env.{name} | {filter}`: expected `| default(\"value\")` (a quoted string)"
        )),
    }
}

fn is_env_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<Template, CompileError> {
        Template::compile(text, &mut |r| match r {
            Reference::Variable("token") => Ok(Segment::Var(0)),
            Reference::Variable("user") => Ok(Segment::Var(1)),
            Reference::Variable(name) => Err(format!("undefined variable `{name}`")),
            Reference::Column(_, _) => Err("no data".into()),
            Reference::Env("HOST", _) => Ok(Segment::Value("h st".into())),
            Reference::Env(_, Some(default)) => Ok(Segment::Value(default.into())),
            Reference::Env(name, None) => Err(format!("`{name}` is not set")),
            Reference::Builtin(s) => Ok(s),
        })
    }

    #[test]
    fn env_references_and_defaults() {
        assert_eq!(reference(" env.HOST "), Ok(Reference::Env("HOST", None)));
        assert_eq!(
            reference("env.PORT | default(\"8080\")"),
            Ok(Reference::Env("PORT", Some("8080")))
        );
        assert_eq!(
            reference("env.A_1|default('x y')"),
            Ok(Reference::Env("A_1", Some("x y")))
        );
        assert_eq!(
            reference("env.E | default(\"\")"),
            Ok(Reference::Env("E", Some("")))
        );
        for bad in [
            "env.",
            "env.1X",
            "env.A-B",
            "env.A | default(x)",
            "env.A | default(\"x')",
            "env.A | default(\"x\"",
            "env.A | upper",
            "token | default(\"x\")",
        ] {
            assert!(reference(bad).is_err(), "{bad} should not parse");
        }
        // Values fixed at load render through the escape like any substituted value, and a
        // template of only literals and such values is fixed text.
        let t = compile("/a/{{ env.HOST }}/{{ env.MISSING | default(\"d\") }}").unwrap();
        assert_eq!(t.as_literal().as_deref(), Some("/a/h st/d"));
        let mut rng = fastrand::Rng::with_seed(1);
        let mut env = Env {
            vars: &[],
            feeders: &[],
            rows: &[],
            vu: 0,
            iteration: 0,
            rng: &mut rng,
        };
        let mut out = String::new();
        t.render_with(&mut env, &mut out, escape_path).unwrap();
        assert_eq!(out, "/a/h%20st/d");
        assert_eq!(
            compile("x{{ env.NOPE }}").unwrap_err(),
            (1, "`NOPE` is not set".into())
        );
        assert!(compile("{{ token }}").unwrap().as_literal().is_none());
    }

    fn render(t: &Template, vars: &[Option<String>]) -> (String, Result<(), usize>) {
        let mut rng = fastrand::Rng::with_seed(1);
        let mut env = Env {
            vars,
            feeders: &[],
            rows: &[],
            vu: 7,
            iteration: 3,
            rng: &mut rng,
        };
        let mut out = String::new();
        let r = t.render(&mut env, &mut out);
        (out, r)
    }

    #[test]
    fn compiles_literals_and_names() {
        let t = compile("Bearer {{ token }}").unwrap();
        assert_eq!(
            t.segments,
            vec![Segment::Literal("Bearer ".into()), Segment::Var(0)]
        );
        assert_eq!(
            compile("plain").unwrap().as_literal().as_deref(),
            Some("plain")
        );
        let (out, r) = render(&t, &[Some("abc".into())]);
        assert_eq!((out.as_str(), r), ("Bearer abc", Ok(())));
        let (out, r) = render(
            &compile("/u/{{user}}/{{ vu }}-{{iteration}}").unwrap(),
            &[None, Some("x".into())],
        );
        assert_eq!((out.as_str(), r), ("/u/x/7-3", Ok(())));
    }

    #[test]
    fn missing_values_are_reported() {
        let (out, r) = render(&compile("a{{token}}b").unwrap(), &[None]);
        assert_eq!((out.as_str(), r), ("ab", Err(0)));
    }

    #[test]
    fn builtins_render_in_range() {
        let t = compile("{{ random_int(5, 9) }}|{{ random_string(8) }}|{{ uuid }}").unwrap();
        for _ in 0..50 {
            let (out, _) = render(&t, &[]);
            let parts: Vec<&str> = out.split('|').collect();
            let n: i64 = parts[0].parse().unwrap();
            assert!((5..=9).contains(&n));
            assert_eq!(parts[1].len(), 8);
            assert!(parts[1].chars().all(|c| c.is_ascii_alphanumeric()));
            let uuid = parts[2];
            assert_eq!(uuid.len(), 36);
            assert_eq!(&uuid[14..15], "4");
            assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"));
        }
    }

    #[test]
    fn errors_point_at_the_braces() {
        assert_eq!(
            compile("ab{{ nope }}").unwrap_err(),
            (2, "undefined variable `nope`".into())
        );
        assert_eq!(compile("x{{ token").unwrap_err().0, 1);
        assert!(compile("{{ random_int(9, 1) }}").is_err());
        assert!(compile("{{ random_string(x) }}").is_err());
        assert!(compile("{{ shout() }}").is_err());
        assert!(compile("{{ 1bad }}").is_err());
        assert!(compile("{{ }}").is_err());
    }

    #[test]
    fn escaping() {
        let mut out = String::new();
        escape_path("a b/é?x=1#", &mut out);
        assert_eq!(out, "a%20b/%C3%A9?x=1%23");
        let mut out = String::new();
        escape_header("a\r\nX-Injected: 1\0", &mut out);
        assert_eq!(out, "aX-Injected: 1");
    }
}
