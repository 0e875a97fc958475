//! `--metrics-out KIND=URL`: which output, where, and with which credentials, validated before
//! anything runs.

use std::fmt;

use url::Url;

/// The kinds of output, as named on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Prometheus remote-write 1.0: protobuf `WriteRequest`, snappy-compressed, POSTed.
    PrometheusRw,
    /// A Prometheus Pushgateway: the text format PUT to `/metrics/job/belier/instance/RUN`.
    Pushgateway,
    /// InfluxDB line protocol, to 1.x `/write?db=` or 2.x `/api/v2/write?org=&bucket=`.
    Influx,
    /// OpenTelemetry OTLP/HTTP, protobuf `ExportMetricsServiceRequest` to `/v1/metrics`.
    Otlp,
    /// StatsD over UDP (DogStatsD tags for the labels).
    Statsd,
}

impl Kind {
    /// Every kind, in the order help lists them.
    pub const ALL: [Kind; 5] = [
        Kind::PrometheusRw,
        Kind::Pushgateway,
        Kind::Influx,
        Kind::Otlp,
        Kind::Statsd,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Kind::PrometheusRw => "prometheus-rw",
            Kind::Pushgateway => "pushgateway",
            Kind::Influx => "influx",
            Kind::Otlp => "otlp",
            Kind::Statsd => "statsd",
        }
    }
}

/// A credential, kept out of `Debug` and every message.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// HTTP basic authentication (URL userinfo `user:password@`; InfluxDB 1.x).
    Basic {
        /// User name.
        user: String,
        /// Password.
        password: String,
    },
    /// `Authorization: Token TOKEN` (InfluxDB 2.x; URL userinfo `:TOKEN@` or the environment).
    Token(String),
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Credential(<redacted>)")
    }
}

/// One validated `--metrics-out`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The kind of output.
    pub kind: Kind,
    /// Where it sends, without credentials.
    pub url: Url,
    /// Its credential, if any.
    pub credential: Option<Credential>,
}

/// Why a `--metrics-out` value was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{why}")]
pub struct SpecError {
    /// The value, without any password or token in it.
    pub value: String,
    /// What is wrong.
    pub why: String,
}

impl Spec {
    /// Parses `KIND=URL`.
    pub fn parse(raw: &str) -> Result<Spec, SpecError> {
        let fail = |value: &str, why: String| SpecError {
            value: value.to_string(),
            why,
        };
        let kinds = || {
            Kind::ALL
                .iter()
                .map(|k| k.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((name, address)) = raw.split_once('=') else {
            return Err(fail(
                &redacted(raw),
                format!("expected KIND=URL, KIND one of {}", kinds()),
            ));
        };
        let Some(kind) = Kind::ALL.into_iter().find(|k| k.name() == name.trim()) else {
            return Err(fail(
                &redacted(raw),
                format!("unknown output '{name}': one of {}", kinds()),
            ));
        };
        let mut url = Url::parse(address.trim())
            .map_err(|e| fail(&format!("{name}=…"), format!("not a URL: {e}")))?;
        let credential = take_credential(&mut url);
        let shown = format!("{name}={url}");
        let scheme = if kind == Kind::Statsd { "udp" } else { "http" };
        if url.scheme() != scheme {
            return Err(fail(
                &shown,
                format!(
                    "{name} needs a {scheme}:// URL{}",
                    if url.scheme() == "https" {
                        " (https is not supported yet: put a local proxy in front)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(fail(&shown, "the URL has no host".into()));
        }
        if kind == Kind::Statsd && url.port().is_none() {
            return Err(fail(&shown, "statsd needs a port: udp://HOST:PORT".into()));
        }
        let root = url.path() == "/" || url.path().is_empty();
        match kind {
            Kind::PrometheusRw if root => {
                return Err(fail(
                    &shown,
                    "give the remote-write path, e.g. http://HOST:9090/api/v1/write".into(),
                ))
            }
            Kind::Influx => influx(&url).map_err(|why| fail(&shown, why))?,
            Kind::Otlp if root => url.set_path("/v1/metrics"),
            _ => {}
        }
        if credential.is_some() && kind != Kind::Influx {
            return Err(fail(
                &shown,
                format!("{name} takes no credentials in its URL"),
            ));
        }
        Ok(Spec {
            kind,
            url,
            credential,
        })
    }

    /// What reports call it: `KIND=URL`, without credentials.
    pub fn label(&self) -> String {
        format!("{}={}", self.kind.name(), self.url)
    }
}

/// `raw` as an error may show it: the URL after `KIND=` without its userinfo, or nothing of
/// what cannot be parsed but may hold one.
fn redacted(raw: &str) -> String {
    let (name, address) = raw.split_once('=').unwrap_or(("", raw));
    let address = match Url::parse(address.trim()) {
        Ok(mut url) => {
            take_credential(&mut url);
            url.to_string()
        }
        Err(_) if address.contains('@') => "…".to_string(),
        Err(_) => address.to_string(),
    };
    if name.is_empty() && !raw.contains('=') {
        address
    } else {
        format!("{name}={address}")
    }
}

/// An InfluxDB URL names its API: 1.x `/write?db=NAME` or 2.x `/api/v2/write?bucket=NAME`.
fn influx(url: &Url) -> Result<(), String> {
    let has = |key: &str| url.query_pairs().any(|(k, v)| k == key && !v.is_empty());
    if url.path().ends_with("/api/v2/write") {
        if !has("bucket") {
            return Err("InfluxDB 2.x: /api/v2/write needs ?org=ORG&bucket=BUCKET".into());
        }
    } else if url.path().ends_with("/write") {
        if !has("db") {
            return Err("InfluxDB 1.x: /write needs ?db=DATABASE".into());
        }
    } else {
        return Err(
            "give the write endpoint: http://HOST:8086/write?db=DATABASE (1.x) or \
             http://HOST:8086/api/v2/write?org=ORG&bucket=BUCKET (2.x)"
                .into(),
        );
    }
    Ok(())
}

/// Takes the userinfo out of `url`: `user:password@` is basic authentication, `:token@` a
/// token.
fn take_credential(url: &mut Url) -> Option<Credential> {
    let decode = |s: &str| {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    let user = decode(url.username());
    let password = url.password().map(decode);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    match (user.is_empty(), password) {
        (true, None) => None,
        (true, Some(token)) => Some(Credential::Token(token)),
        (false, password) => Some(Credential::Basic {
            user,
            password: password.unwrap_or_default(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_urls_are_checked() {
        let ok = Spec::parse("prometheus-rw=http://127.0.0.1:9090/api/v1/write").unwrap();
        assert_eq!(ok.kind, Kind::PrometheusRw);
        assert_eq!(
            Spec::parse("otlp=http://h:4318").unwrap().url.path(),
            "/v1/metrics"
        );
        assert_eq!(
            Spec::parse("pushgateway=http://h:9091").unwrap().kind,
            Kind::Pushgateway
        );
        assert_eq!(
            Spec::parse("statsd=udp://127.0.0.1:8125").unwrap().kind,
            Kind::Statsd
        );
        let why = |raw| Spec::parse(raw).unwrap_err().why;
        assert!(why("graphite=http://h").contains("unknown output 'graphite'"));
        assert!(why("prometheus-rw").contains("KIND=URL"));
        assert!(why("prometheus-rw=not a url").contains("not a URL"));
        assert!(why("prometheus-rw=http://h:9090").contains("remote-write path"));
        assert!(why("statsd=http://h:8125").contains("udp://"));
        assert!(why("statsd=udp://h").contains("port"));
        assert!(why("influx=http://h:8086").contains("write endpoint"));
        assert!(why("influx=http://h:8086/write").contains("?db="));
        assert!(why("influx=http://h:8086/api/v2/write?org=o").contains("bucket"));
        assert!(why("pushgateway=https://h").contains("https is not supported"));
    }

    #[test]
    fn credentials_leave_the_url_and_every_message() {
        let s = Spec::parse("influx=http://me:s%40cret@h:8086/write?db=d").unwrap();
        assert_eq!(
            s.credential,
            Some(Credential::Basic {
                user: "me".into(),
                password: "s@cret".into()
            })
        );
        assert!(!s.label().contains("cret"), "{}", s.label());
        assert!(!format!("{s:?}").contains("cret"));
        let t = Spec::parse("influx=http://:tok@h:8086/api/v2/write?org=o&bucket=b").unwrap();
        assert_eq!(t.credential, Some(Credential::Token("tok".into())));
        let e = Spec::parse("pushgateway=http://u:hidden@h:9091").unwrap_err();
        assert!(
            !e.value.contains("hidden") && !e.why.contains("hidden"),
            "{e:?}"
        );
    }

    proptest::proptest! {
        /// Any value near a valid one gives a spec or an error, and an error never shows
        /// the password it was given.
        #[test]
        fn parsing_never_panics_nor_shows_a_password(
            kind in proptest::sample::select(vec![
                "prometheus-rw", "pushgateway", "influx", "otlp", "statsd", "graphite",
            ]),
            scheme in proptest::sample::select(vec!["http", "https", "udp", "ftp", ""]),
            rest in "[a-z0-9:@%./?=&\\[\\] -]{0,30}",
        ) {
            let raw = format!("{kind}={scheme}://u:pw9secret@{rest}");
            match Spec::parse(&raw) {
                Ok(spec) => proptest::prop_assert!(!spec.label().contains("pw9secret")),
                Err(e) => proptest::prop_assert!(
                    !e.value.contains("pw9secret") && !e.why.contains("pw9secret"),
                    "{:?}", e
                ),
            }
        }
    }
}
