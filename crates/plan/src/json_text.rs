//! A JSON document given whole as text (`belier grpc -d`'s message), its strings compiled as
//! templates of the built-ins a plan's values have (`{{ vu }}`, `{{ iteration }}`,
//! `{{ uuid }}`, `{{ random_int(a, b) }}`, `{{ random_string(n) }}`, `{{ env.NAME }}`), so
//! that a flag run's calls can differ as a plan's do. A flag run has no variables and no
//! data files: a name that would need them is an error naming it.

use crate::compiler::env_value;
use crate::model::JsonTemplate;
use crate::template::{Reference, Segment, Template};

/// Why a JSON text's template does not compile: the string it is in, and the reason.
#[derive(Debug, thiserror::Error)]
#[error("the template `{text}`: {why}")]
pub struct JsonTextError {
    /// The JSON string that holds the template, as written.
    pub text: String,
    /// Why it does not compile.
    pub why: String,
}

/// `value` with each of its strings that holds `{{` compiled as a template; `None` when none
/// does (the document is sent as it is). `{{ env.NAME }}` is read now, from the process's
/// environment.
pub fn templates(value: &serde_json::Value) -> Result<Option<JsonTemplate>, JsonTextError> {
    let compiled = compile(value)?;
    Ok((!is_fixed(&compiled)).then_some(compiled))
}

fn compile(value: &serde_json::Value) -> Result<JsonTemplate, JsonTextError> {
    use serde_json::Value;
    Ok(match value {
        Value::String(text) if text.contains("{{") => {
            let t = Template::compile(text, &mut resolve).map_err(|(_, why)| JsonTextError {
                text: text.clone(),
                why,
            })?;
            match t.as_literal() {
                // Only `{{ env.NAME }}`: fixed from now on.
                Some(text) => JsonTemplate::Fixed(Value::String(text)),
                None => JsonTemplate::Text(t),
            }
        }
        Value::Array(items) => {
            JsonTemplate::Array(items.iter().map(compile).collect::<Result<_, _>>()?)
        }
        Value::Object(entries) => JsonTemplate::Object(
            entries
                .iter()
                .map(|(k, v)| Ok((k.clone(), compile(v)?)))
                .collect::<Result<_, _>>()?,
        ),
        other => JsonTemplate::Fixed(other.clone()),
    })
}

/// Whether no part of `j` is rendered per request.
fn is_fixed(j: &JsonTemplate) -> bool {
    match j {
        JsonTemplate::Fixed(_) => true,
        JsonTemplate::Text(_) => false,
        JsonTemplate::Array(items) => items.iter().all(is_fixed),
        JsonTemplate::Object(entries) => entries.iter().all(|(_, v)| is_fixed(v)),
    }
}

/// The built-ins as they are; the environment read once; no variables or data columns.
fn resolve(r: Reference<'_>) -> Result<Segment, String> {
    match r {
        Reference::Builtin(s) => Ok(s),
        Reference::Env(name, default) => {
            env_value(&|n: &str| std::env::var(n), name, default).map(Segment::Value)
        }
        Reference::Variable(name) => Err(format!(
            "`{name}` is not a built-in (vu, iteration, uuid, random_int(a, b), random_string(n), env.NAME): a flag's message has no variables, a plan's steps have"
        )),
        Reference::Column(data, column) => Err(format!(
            "`{data}.{column}` names a data file's column: a flag's message reads none, a plan's steps do"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Env;

    fn render(j: &JsonTemplate, vu: u64, iteration: u64) -> serde_json::Value {
        let mut rng = fastrand::Rng::with_seed(iteration);
        let mut env = Env {
            vars: &[],
            feeders: &[],
            rows: &[],
            vu,
            iteration,
            rng: &mut rng,
        };
        let mut missing = false;
        let value = j.render(&mut env, &mut missing);
        assert!(!missing);
        value
    }

    #[test]
    fn strings_with_templates_render_per_call_and_the_rest_stays() {
        let doc = serde_json::json!({
            "name": "user-{{ vu }}-{{ iteration }}",
            "times": 3,
            "tags": ["a", "{{ random_int(5, 5) }}"],
            "id": "{{ uuid }}",
        });
        let j = templates(&doc).unwrap().expect("it has templates");
        let v = render(&j, 4, 9);
        assert_eq!(v["name"], "user-4-9");
        assert_eq!(v["times"], 3);
        assert_eq!(v["tags"], serde_json::json!(["a", "5"]));
        assert_eq!(v["id"].as_str().unwrap().len(), 36);
        assert_ne!(render(&j, 4, 9)["id"], render(&j, 4, 10)["id"]);
    }

    #[test]
    fn a_document_without_templates_is_sent_as_it_is() {
        let doc = serde_json::json!({"name": "ada", "braces": "{ not one }"});
        assert!(templates(&doc).unwrap().is_none());
    }

    #[test]
    fn what_a_flag_run_cannot_resolve_is_named() {
        for (text, words) in [
            ("{{ user }}", "`user` is not a built-in"),
            (
                "{{ people.name }}",
                "`people.name` names a data file's column",
            ),
            (
                "{{ env.BELIER_JSON_TEXT_UNSET }}",
                "`BELIER_JSON_TEXT_UNSET` is not set",
            ),
            ("{{ uuid", "the template `{{ uuid`"),
        ] {
            let e = templates(&serde_json::json!({ "name": text })).unwrap_err();
            let e = e.to_string();
            assert!(e.contains(words), "{text}: {e}");
        }
    }
}
