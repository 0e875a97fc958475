//! The labels every series of the run carries, whatever the output.

/// The labels every series of the run carries.
#[derive(Clone, Debug, Default)]
pub struct RunLabels {
    /// The run's name (`--name`): label `run`.
    pub run: String,
    /// The request method of a flag run (label `method`); none for a plan.
    pub method: Option<String>,
}

impl RunLabels {
    /// The labels as key and value, in order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = vec![("run".to_string(), self.run.clone())];
        if let Some(m) = &self.method {
            out.push(("method".to_string(), m.clone()));
        }
        out
    }
}
