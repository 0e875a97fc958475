//! `--metrics-out KIND=URL`: the flag's values validated into the outputs crate's specs, and
//! the outputs started for a run. The sending itself lives in crates/outputs.

use belier_outputs::{Credential, Kind, Outputs, RunLabels, Spec};

use crate::settings::{InputError, Settings};

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

/// Starts the outputs `settings` asks for (none: `None`), and says on standard error which
/// endpoints cannot be reached now; those warnings are returned for the report too.
pub fn start(settings: &Settings) -> anyhow::Result<(Option<Outputs>, Vec<String>)> {
    let specs = &settings.output.metrics_out;
    if specs.is_empty() {
        return Ok((None, Vec::new()));
    }
    let labels = RunLabels {
        run: settings.output.name.clone(),
        method: settings
            .plan
            .is_none()
            .then(|| settings.engine.request.method.clone()),
    };
    let (outputs, warnings) = Outputs::start(specs, &labels)
        .map_err(|e| anyhow::anyhow!("--metrics-out: cannot start an output: {e}"))?;
    for w in &warnings {
        eprintln!("belier: warning: {w}");
    }
    Ok((Some(outputs), warnings))
}
