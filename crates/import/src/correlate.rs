//! Correlation: a value the server issued in one response (a token in a JSON body, a CSRF
//! header) and sent back by the client in a later request becomes an extraction on that
//! response and a `{{ name }}` template in the later requests, so a replay carries the value
//! its own run was issued instead of the recorded, long-expired one.

use super::draft::{DraftRequest, Extract};

/// Shortest value taken for a token: shorter ones (ids such as `42`, words such as `true`)
/// turn up in later requests by coincidence too often to be worth a guess.
const MIN_TOKEN_LEN: usize = 8;

/// Response headers that carry no token a client sends back (or that the cookie jar and the
/// HTTP cache handle), so they are never taken as one.
const NOT_TOKEN_HEADERS: &[&str] = &[
    "date",
    "expires",
    "last-modified",
    "etag",
    "age",
    "server",
    "via",
    "vary",
    "content-type",
    "content-length",
    "content-encoding",
    "content-language",
    "cache-control",
    "pragma",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "set-cookie",
    "location",
    "accept-ranges",
    "strict-transport-security",
    "content-security-policy",
];

/// What a recorded response said, as far as correlation needs.
#[derive(Clone, Debug, Default)]
pub struct Response {
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body as text, when it was recorded and is text.
    pub body: Option<String>,
}

/// A request and the response it got.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The request, as a step.
    pub request: DraftRequest,
    /// What the server answered.
    pub response: Response,
}

/// One extraction made, for the summary: the variable, the request step (from 0) whose
/// response gives it, where, and the request steps that use it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Correlation {
    /// The variable.
    pub var: String,
    /// The request step whose response gives it (from 0).
    pub from_step: usize,
    /// Where in that response.
    pub source: Extract,
    /// Request steps that send it.
    pub used_by: Vec<usize>,
}

/// Finds server-issued values sent back later, adds the extractions and puts the templates in
/// place. Values are taken longest first, so a token is never cut by a shorter one inside it.
pub(crate) fn correlate(exchanges: &mut [Exchange]) -> Vec<Correlation> {
    let raw: Vec<String> = exchanges.iter().map(|e| texts(&e.request)).collect();
    let mut found: Vec<(String, Correlation)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for j in 0..exchanges.len() {
        let mut candidates = candidates(&exchanges[j].response);
        candidates.sort_by_key(|c| std::cmp::Reverse(c.0.len()));
        for (value, source, base) in candidates {
            let known_to_client = raw[..=j].iter().any(|t| t.contains(&value));
            let already = found.iter().any(|(v, _)| *v == value);
            if known_to_client || already {
                continue;
            }
            let used_by: Vec<usize> = (j + 1..exchanges.len())
                .filter(|&i| raw[i].contains(&value))
                .collect();
            if used_by.is_empty() {
                continue;
            }
            let var = unique_name(&base, &mut names);
            exchanges[j]
                .request
                .extract
                .push((var.clone(), source.clone()));
            found.push((
                value,
                Correlation {
                    var,
                    from_step: j,
                    source,
                    used_by,
                },
            ));
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0.len()));
    for (value, c) in &found {
        let template = format!("{{{{ {} }}}}", c.var);
        for &i in &c.used_by {
            substitute(&mut exchanges[i].request, value, &template);
        }
    }
    let mut out: Vec<Correlation> = found.into_iter().map(|(_, c)| c).collect();
    out.sort_by_key(|c| c.from_step);
    out
}

/// Every text of a request a value could be sent in, joined.
fn texts(r: &DraftRequest) -> String {
    let mut all = r.path.clone();
    for (n, v) in &r.headers {
        all.push('\n');
        all.push_str(n);
        all.push_str(": ");
        all.push_str(v);
    }
    if let Some(b) = &r.body {
        all.push('\n');
        all.push_str(b);
    }
    all
}

fn substitute(r: &mut DraftRequest, value: &str, template: &str) {
    r.path = r.path.replace(value, template);
    for (_, v) in &mut r.headers {
        *v = v.replace(value, template);
    }
    if let Some(b) = &mut r.body {
        *b = b.replace(value, template);
    }
}

/// A value looks like a token: long enough, one word, and with a digit (session ids, JWTs,
/// UUIDs and random strings nearly always have one; words such as `application/json`, which
/// a later request may send for reasons of its own, do not).
fn is_token(value: &str) -> bool {
    value.len() >= MIN_TOKEN_LEN
        && !value.chars().any(char::is_whitespace)
        && value.bytes().any(|b| b.is_ascii_digit())
        && !value.contains("{{")
}

/// Token-like values of a response: JSON body strings (and long numbers) with their paths,
/// and header values; each with a name for its variable.
fn candidates(response: &Response) -> Vec<(String, Extract, String)> {
    let mut out = Vec::new();
    if let Some(json) = response
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok())
    {
        walk(&json, "$".to_string(), "value", &mut out);
    }
    for (name, value) in &response.headers {
        let lower = name.to_ascii_lowercase();
        if NOT_TOKEN_HEADERS.contains(&lower.as_str()) || lower.starts_with("access-control-") {
            continue;
        }
        let value = value.trim();
        if is_token(value) {
            out.push((value.to_string(), Extract::Header(name.clone()), lower));
        }
    }
    out
}

fn walk(
    value: &serde_json::Value,
    path: String,
    name: &str,
    out: &mut Vec<(String, Extract, String)>,
) {
    use serde_json::Value;
    match value {
        Value::String(s) if is_token(s) => {
            out.push((s.clone(), Extract::Json(path), name.to_string()));
        }
        Value::Number(n) if is_token(&n.to_string()) => {
            out.push((n.to_string(), Extract::Json(path), name.to_string()));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), name, out);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                walk(item, format!("{path}{}", member(key)), key, out);
            }
        }
        _ => {}
    }
}

/// A JSONPath member selector: `.key` for plain names, `['key']` otherwise (RFC 9535).
fn member(key: &str) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        format!(".{key}")
    } else {
        let escaped = key.replace('\\', "\\\\").replace('\'', "\\'");
        format!("['{escaped}']")
    }
}

/// A variable name from `base` (a JSON key or header name): lower case letters, digits and
/// `_`, starting with a letter, not a built-in, and not taken yet (`token_2`).
fn unique_name(base: &str, taken: &mut Vec<String>) -> String {
    let mut name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let name_trimmed = name.trim_matches('_').to_string();
    name = name_trimmed;
    if !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        name = format!("v_{name}");
    }
    if matches!(name.as_str(), "vu" | "iteration" | "uuid") {
        name.push_str("_value");
    }
    let mut candidate = name.clone();
    let mut n = 2;
    while taken.contains(&candidate) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    taken.push(candidate.clone());
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exchange(path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Exchange {
        Exchange {
            request: DraftRequest {
                method: "GET".into(),
                origin: None,
                path: path.into(),
                headers: headers
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
                body: body.map(str::to_string),
                body_file: None,
                extract: vec![],
            },
            response: Response::default(),
        }
    }

    #[test]
    fn token_in_a_json_body_becomes_an_extraction_and_templates() {
        let mut flow = vec![
            exchange(
                "/login",
                &[],
                Some(r#"{"user":"ann","password":"pw123456"}"#),
            ),
            exchange(
                "/items",
                &[("Authorization", "Bearer eyJ0eXAi.x9.sig")],
                None,
            ),
            exchange(
                "/items/7?session=abc-123-def",
                &[("Authorization", "Bearer eyJ0eXAi.x9.sig")],
                None,
            ),
        ];
        flow[0].response.body = Some(
            r#"{"auth":{"access-token":"eyJ0eXAi.x9.sig"},"user":"ann","echo":"pw123456","type":"application/json"}"#
                .into(),
        );
        flow[1].response.headers = vec![
            ("X-Session".into(), "abc-123-def".into()),
            ("Date".into(), "Wed, 25 Nov 2026 19:30:00 GMT".into()),
        ];
        let found = correlate(&mut flow);
        assert_eq!(
            flow[0].request.extract,
            vec![(
                "access_token".into(),
                Extract::Json("$.auth['access-token']".into())
            )]
        );
        assert_eq!(
            flow[1].request.extract,
            vec![("x_session".into(), Extract::Header("X-Session".into()))]
        );
        assert_eq!(flow[1].request.headers[0].1, "Bearer {{ access_token }}");
        assert_eq!(flow[2].request.path, "/items/7?session={{ x_session }}");
        assert_eq!(flow[2].request.headers[0].1, "Bearer {{ access_token }}");
        // The password the client sent itself is not a server-issued value.
        assert_eq!(
            flow[0].request.body.as_deref(),
            Some(r#"{"user":"ann","password":"pw123456"}"#)
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].used_by, vec![1, 2]);
    }

    #[test]
    fn names_are_identifiers_and_unique() {
        let mut taken = vec![];
        assert_eq!(unique_name("token", &mut taken), "token");
        assert_eq!(unique_name("token", &mut taken), "token_2");
        assert_eq!(unique_name("X-CSRF-Token", &mut taken), "x_csrf_token");
        assert_eq!(unique_name("0", &mut taken), "v_0");
        assert_eq!(unique_name("uuid", &mut taken), "uuid_value");
    }

    #[test]
    fn members_are_quoted_when_not_plain() {
        assert_eq!(member("token"), ".token");
        assert_eq!(member("a-b"), "['a-b']");
        assert_eq!(member("it's"), "['it\\'s']");
    }
}
