//! A plan as data, as importers build it, and its YAML text.

use std::time::Duration;

use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter};

/// A plan an importer made: one scenario, run once by one user unless the user's flags say
/// otherwise (`belier run plan.yaml -u 20 -z 1m`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Draft {
    /// The origin every step is sent to: `scheme://host[:port]`.
    pub origin: String,
    /// The scenario's name.
    pub scenario: String,
    /// Headers every request sends (the plan's top-level `headers`).
    pub headers: Vec<(String, String)>,
    /// https: do not verify the certificate.
    pub insecure: bool,
    /// https: verify certificates against these PEM CA certificates (the plan's `cacert:`; a
    /// relative path is read from the plan's directory).
    pub cacert: Option<std::path::PathBuf>,
    /// Connect to this Unix domain socket instead of over TCP (the plan's `unix_socket:`; a
    /// relative path is read from the plan's directory).
    pub unix_socket: Option<std::path::PathBuf>,
    /// Redirects each step follows (the plan's `follow:`; 0: none).
    pub follow: usize,
    /// Ask for compressed answers and decode them (the plan's `compressed:`).
    pub compressed: bool,
    /// The steps, in order.
    pub steps: Vec<DraftStep>,
}

/// A step of a [`Draft`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DraftStep {
    /// A request.
    Request(DraftRequest),
    /// Think time.
    Pause(Duration),
}

/// A request step: its texts may hold `{{ name }}` templates of earlier extractions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraftRequest {
    /// HTTP method.
    pub method: String,
    /// The origin (`scheme://host[:port]`) this request goes to when it is not the plan's
    /// target: the step is written with an absolute `url:`. `None`: the target's.
    pub origin: Option<String>,
    /// Path and query, from `/`.
    pub path: String,
    /// Headers of this step, in order.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: Option<String>,
    /// A file sent as the body, as it is (`body_file`; a relative path is read from the
    /// plan's directory).
    pub body_file: Option<std::path::PathBuf>,
    /// Values this step's response gives to later steps: variable name and where it is.
    pub extract: Vec<(String, Extract)>,
}

/// Where an extracted value is in a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extract {
    /// A JSONPath into the JSON body (`$.token`).
    Json(String),
    /// A response header, by name.
    Header(String),
}

impl DraftRequest {
    /// Why a plan cannot hold this request as it is (its method, path or a header breaks the
    /// rules of what may go on the wire), if it cannot.
    pub fn problem(&self) -> Option<String> {
        use belier_engine::request::{rules, InvalidRequest};
        if let Err(p) = rules::check_method(&self.method) {
            return Some(InvalidRequest::Method(self.method.clone(), p).to_string());
        }
        if let Err(p) = rules::check_target(&self.path) {
            return Some(InvalidRequest::Target(self.path.clone(), p).to_string());
        }
        self.headers
            .iter()
            .find_map(|(n, v)| super::headers::check_header(n, v).err())
            .map(|(_, why)| why)
    }
}

impl Draft {
    /// Replaces the value of every credential header (`Authorization`, `X-Api-Key`,
    /// `X-Auth-Token`) that is not made from an earlier response by `{{ env.BELIER_NAME }}`
    /// ([`super::secret_variable`]), so the plan keeps no secret and reads it where it runs.
    /// Returns the variables the plan now needs, sorted.
    pub fn hide_credentials(&mut self) -> Vec<String> {
        let mut needed = Vec::new();
        let requests = self.steps.iter_mut().filter_map(|s| match s {
            DraftStep::Request(r) => Some(&mut r.headers),
            DraftStep::Pause(_) => None,
        });
        for headers in std::iter::once(&mut self.headers).chain(requests) {
            for (name, value) in headers.iter_mut() {
                // A token carried from an earlier response is the server's, not the user's.
                if value.contains("{{") {
                    continue;
                }
                if let Some(variable) = super::secret_variable(name) {
                    *value = format!("{{{{ env.{variable} }}}}");
                    if !needed.contains(&variable) {
                        needed.push(variable);
                    }
                }
            }
        }
        needed.sort();
        needed
    }

    /// The request steps, in order.
    pub fn requests(&self) -> impl Iterator<Item = &DraftRequest> {
        self.steps.iter().filter_map(|s| match s {
            DraftStep::Request(r) => Some(r),
            DraftStep::Pause(_) => None,
        })
    }

    /// Moves headers that every request sends with the same value to the plan-wide `headers`,
    /// so the steps show only what differs between them.
    pub fn hoist_common_headers(&mut self) {
        let mut requests = self.steps.iter().filter_map(|s| match s {
            DraftStep::Request(r) => Some(r),
            DraftStep::Pause(_) => None,
        });
        let Some(first) = requests.next() else {
            return;
        };
        let others: Vec<&DraftRequest> = requests.collect();
        if others.is_empty() {
            return;
        }
        let common: Vec<(String, String)> = first
            .headers
            .iter()
            .filter(|(name, value)| {
                others.iter().all(|r| {
                    r.headers
                        .iter()
                        .any(|(n, v)| n.eq_ignore_ascii_case(name) && v == value)
                })
            })
            .cloned()
            .collect();
        for step in &mut self.steps {
            if let DraftStep::Request(r) = step {
                r.headers
                    .retain(|(n, _)| !common.iter().any(|(c, _)| c.eq_ignore_ascii_case(n)));
            }
        }
        self.headers.extend(common);
    }

    /// The plan as YAML, after `comment` lines (each written as `# line`).
    pub fn to_yaml(&self, comment: &str) -> String {
        let mut plan = Hash::new();
        plan.insert(s("target"), s(&self.origin));
        if self.insecure {
            plan.insert(s("insecure"), Yaml::Boolean(true));
        }
        if let Some(file) = &self.cacert {
            plan.insert(s("cacert"), s(&file.to_string_lossy()));
        }
        if let Some(path) = &self.unix_socket {
            plan.insert(s("unix_socket"), s(&path.to_string_lossy()));
        }
        if self.compressed {
            plan.insert(s("compressed"), Yaml::Boolean(true));
        }
        if self.follow > 0 {
            plan.insert(s("follow"), Yaml::Integer(self.follow as i64));
        }
        if !self.headers.is_empty() {
            plan.insert(s("headers"), pairs(&self.headers));
        }
        let mut load = Hash::new();
        load.insert(s("vus"), Yaml::Integer(1));
        load.insert(s("iterations"), Yaml::Integer(1));
        plan.insert(s("load"), Yaml::Hash(load));
        let mut scenario = Hash::new();
        scenario.insert(s("name"), s(&self.scenario));
        scenario.insert(
            s("steps"),
            Yaml::Array(self.steps.iter().map(step).collect()),
        );
        plan.insert(s("scenarios"), Yaml::Array(vec![Yaml::Hash(scenario)]));

        let mut text = String::new();
        for line in comment.lines() {
            text.push_str("# ");
            text.push_str(line);
            text.push('\n');
        }
        let mut emitted = String::new();
        // Writing into a String cannot fail, and every node here is a string, number,
        // boolean, list or mapping, which the emitter always writes.
        let _ = YamlEmitter::new(&mut emitted).dump(&Yaml::Hash(plan));
        text.push_str(&emitted);
        text.push('\n');
        text
    }
}

fn s(text: &str) -> Yaml {
    Yaml::String(text.to_string())
}

fn pairs(list: &[(String, String)]) -> Yaml {
    let mut map = Hash::new();
    for (k, v) in list {
        map.insert(s(k), s(v));
    }
    Yaml::Hash(map)
}

fn step(step: &DraftStep) -> Yaml {
    let mut map = Hash::new();
    match step {
        DraftStep::Pause(d) => {
            map.insert(s("pause"), s(&format!("{}ms", d.as_millis())));
        }
        DraftStep::Request(r) => {
            map.insert(s("method"), s(&r.method));
            match &r.origin {
                Some(origin) => map.insert(s("url"), s(&format!("{origin}{}", r.path))),
                None => map.insert(s("path"), s(&r.path)),
            };
            if !r.headers.is_empty() {
                map.insert(s("headers"), pairs(&r.headers));
            }
            if let Some(body) = &r.body {
                map.insert(s("body"), s(body));
            }
            if let Some(file) = &r.body_file {
                map.insert(s("body_file"), s(&file.to_string_lossy()));
            }
            if !r.extract.is_empty() {
                let mut extract = Hash::new();
                for (var, how) in &r.extract {
                    let mut source = Hash::new();
                    match how {
                        Extract::Json(path) => source.insert(s("json"), s(path)),
                        Extract::Header(name) => source.insert(s("header"), s(name)),
                    };
                    extract.insert(s(var), Yaml::Hash(source));
                }
                map.insert(s("extract"), Yaml::Hash(extract));
            }
        }
    }
    Yaml::Hash(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use belier_plan::{Copies, Environment};
    use std::collections::BTreeMap;

    fn request(method: &str, path: &str, headers: &[(&str, &str)]) -> DraftStep {
        DraftStep::Request(DraftRequest {
            method: method.into(),
            path: path.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            ..DraftRequest::default()
        })
    }

    #[test]
    fn yaml_reads_back_as_the_same_plan() {
        let mut draft = Draft {
            origin: "http://127.0.0.1:8080".into(),
            scenario: "recorded".into(),
            headers: vec![],
            insecure: false,
            cacert: None,
            unix_socket: None,
            follow: 3,
            compressed: true,
            steps: vec![
                request("POST", "/login", &[("Accept", "*/*"), ("X-Mode", "a: b")]),
                DraftStep::Pause(Duration::from_millis(1500)),
                request(
                    "GET",
                    "/items?q=1&r=yes",
                    &[("Accept", "*/*"), ("Authorization", "Bearer {{ token }}")],
                ),
            ],
        };
        if let DraftStep::Request(r) = &mut draft.steps[0] {
            r.body = Some("{\"user\": \"ann\", \"n\": 1}\nline two".into());
            r.extract
                .push(("token".into(), Extract::Json("$.token".into())));
        }
        draft.hoist_common_headers();
        assert_eq!(draft.headers, vec![("Accept".into(), "*/*".into())]);
        let yaml = draft.to_yaml("made by a test\nsecond line");
        assert!(
            yaml.starts_with("# made by a test\n# second line\n"),
            "{yaml}"
        );
        let plan = belier_plan::parse(&yaml, std::path::Path::new("imported.yaml"))
            .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        let described = plan.describe();
        assert!(described.contains("POST /login"), "{described}");
        assert!(described.contains("pause 1500ms"), "{described}");
        assert_eq!(plan.options.headers, vec![("Accept".into(), "*/*".into())]);
        assert_eq!(plan.load.iterations, Some(1));
        assert_eq!((plan.options.follow, plan.options.compressed), (3, true));
    }

    #[test]
    fn credentials_become_environment_variables_unless_made_from_a_response() {
        let mut draft = Draft {
            origin: "http://127.0.0.1:8080".into(),
            scenario: "recorded".into(),
            headers: vec![("X-Api-Key".into(), "k-123".into())],
            insecure: false,
            cacert: None,
            unix_socket: None,
            follow: 0,
            compressed: false,
            steps: vec![
                request(
                    "GET",
                    "/a",
                    &[("Authorization", "Basic YW5uOnB3"), ("Accept", "*/*")],
                ),
                request("GET", "/b", &[("authorization", "Bearer {{ token }}")]),
            ],
        };
        if let DraftStep::Request(r) = &mut draft.steps[0] {
            r.extract
                .push(("token".into(), Extract::Json("$.token".into())));
        }
        assert_eq!(
            draft.hide_credentials(),
            ["BELIER_AUTHORIZATION", "BELIER_X_API_KEY"]
        );
        let yaml = draft.to_yaml("t");
        for secret in ["k-123", "YW5uOnB3"] {
            assert!(!yaml.contains(secret), "{yaml}");
        }
        assert!(yaml.contains("{{ env.BELIER_AUTHORIZATION }}"), "{yaml}");
        assert!(yaml.contains("Bearer {{ token }}"), "{yaml}");
        // The plan names what it needs where it runs.
        let dir = std::env::temp_dir().join(format!("belier-import-draft-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("recorded.yaml");
        std::fs::write(&path, &yaml).unwrap();
        let load = |env: &BTreeMap<String, Option<String>>| {
            belier_plan::load_with(&path, &Copies::new(), Environment::Only(env))
        };
        let set = ["BELIER_AUTHORIZATION", "BELIER_X_API_KEY"]
            .map(|name| (name.to_string(), Some("secret".to_string())));
        load(&BTreeMap::from(set)).unwrap();
        let e = load(&BTreeMap::new()).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.message
                .starts_with("environment variable `BELIER_X_API_KEY` is not set"),
            "{e}"
        );
    }

    #[test]
    fn a_request_a_plan_cannot_hold_says_why() {
        let DraftStep::Request(mut r) = request("GET", "/a", &[("X-A", "1")]) else {
            unreachable!()
        };
        assert_eq!(r.problem(), None);
        r.headers.push(("X-B".into(), "a\r\nX: 1".into()));
        assert!(r
            .problem()
            .unwrap()
            .contains("header `X-B` holds a line break"));
        r.path = "/a b".into();
        assert!(r
            .problem()
            .unwrap()
            .starts_with("the path `/a b` holds a space"));
    }
}
