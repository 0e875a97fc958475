//! A Prometheus Pushgateway: the text format PUT to `/metrics/job/belier/instance/RUN`, so
//! each push replaces the run's group with its latest totals.

use base64::Engine as _;

use crate::labels::RunLabels;
use crate::queue::{Batch, Failure, Sink};
use crate::spec::Spec;
use crate::text;
use crate::transport::Http;

/// Pushes to one Pushgateway.
pub struct Pushgateway {
    http: Http,
    url: String,
    common: Vec<(String, String)>,
}

impl Pushgateway {
    /// A pusher to `spec`'s gateway, grouping by the run's name.
    pub fn new(spec: &Spec, labels: &RunLabels) -> Pushgateway {
        Pushgateway {
            http: Http::new(None),
            url: format!(
                "{}/metrics/job/belier/{}",
                spec.url.as_str().trim_end_matches('/'),
                grouping("instance", &labels.run)
            ),
            common: labels.pairs(),
        }
    }
}

/// A grouping-key element: `NAME/VALUE`, or `NAME@base64/VALUE` for a value the path could not
/// carry as it is.
fn grouping(name: &str, value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    if plain {
        format!("{name}/{value}")
    } else if value.is_empty() {
        format!("{name}@base64/=")
    } else {
        format!(
            "{name}@base64/{}",
            base64::engine::general_purpose::URL_SAFE.encode(value)
        )
    }
}

impl Sink for Pushgateway {
    fn deliver(&mut self, batch: &Batch) -> Result<(), Failure> {
        let body = text::render(&batch.families, &self.common);
        self.http.send(
            "PUT",
            &self.url,
            &[("Content-Type", "text/plain; version=0.0.4")],
            body.as_bytes(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::grouping;

    #[test]
    fn a_value_the_path_cannot_carry_is_base64() {
        assert_eq!(grouping("instance", "nightly-1"), "instance/nightly-1");
        assert_eq!(grouping("instance", "a/b"), "instance@base64/YS9i");
        assert_eq!(grouping("instance", ""), "instance@base64/=");
    }
}
