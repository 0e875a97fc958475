//! `--metrics-out KIND=URL`: the flag's values validated into the outputs crate's specs (the
//! outputs are started by the run's feed, `load::feed`). The sending lives in crates/outputs.

use belier_outputs::{Credential, Kind, Spec};

use crate::settings::InputError;

/// Where an InfluxDB token is read from when the URL carries none: unlike a URL, the
/// environment does not show in `ps` or a shell's history.
pub const INFLUX_TOKEN_VARIABLE: &str = "BELIER_INFLUX_TOKEN";

/// Validates each `--metrics-out` value.
pub fn specs(raw: &[String]) -> Result<Vec<Spec>, InputError> {
    raw.iter()
        .map(|value| {
            let mut spec = Spec::parse(value)
                .map_err(|e| InputError::new("--metrics-out <KIND=URL>", e.value, e.why))?;
            if spec.kind == Kind::Influx && spec.credential.is_none() {
                spec.credential = std::env::var(INFLUX_TOKEN_VARIABLE)
                    .ok()
                    .filter(|t| !t.is_empty())
                    .map(Credential::Token);
            }
            Ok(spec)
        })
        .collect()
}
