//! Manifests (built as JSON values) written as YAML documents.

use serde_json::Value;
use yaml_rust2::{Yaml, YamlEmitter};

/// `docs` as one multi-document YAML stream, each document starting with `---`.
pub(crate) fn documents(docs: &[Value]) -> String {
    let mut out = String::new();
    for doc in docs {
        let mut text = String::new();
        let mut emitter = YamlEmitter::new(&mut text);
        // Multi-line strings (a plan, a data file) as literal blocks, readable as written.
        emitter.multiline_strings(true);
        emitter
            .dump(&to_yaml(doc))
            .expect("writing to a String cannot fail");
        out.push_str(&text);
        out.push('\n');
    }
    out
}

fn to_yaml(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Array(items.iter().map(to_yaml).collect()),
        Value::Object(map) => Yaml::Hash(
            map.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), to_yaml(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_read_back_as_the_values() {
        let docs = [
            json!({"kind": "A", "n": 3, "on": true, "list": ["x", "0.5", "yes"], "text": "a\nb: c\n"}),
            json!({"kind": "B", "empty": {}}),
        ];
        let text = documents(&docs);
        assert_eq!(text.matches("---").count(), 2, "{text}");
        let back = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0]["n"].as_i64(), Some(3));
        assert_eq!(back[0]["on"].as_bool(), Some(true));
        // Strings that look like other things stay strings.
        assert_eq!(back[0]["list"][1].as_str(), Some("0.5"));
        assert_eq!(back[0]["list"][2].as_str(), Some("yes"));
        assert_eq!(back[0]["text"].as_str(), Some("a\nb: c\n"));
        assert_eq!(back[1]["kind"].as_str(), Some("B"));
    }
}
