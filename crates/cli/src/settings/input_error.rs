//! The error of input that cannot be used: the flag and value at fault and why, or a
//! file's own located message.

/// Input that cannot be used, with the flag and value it came from.
#[derive(Debug, PartialEq, Eq)]
pub struct InputError {
    flag: &'static str,
    value: String,
    pub(super) reason: String,
}

impl InputError {
    pub(crate) fn new(flag: &'static str, value: impl ToString, reason: impl Into<String>) -> Self {
        InputError {
            flag,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// Bad content of an input file, whose message already names the file and line
    /// (`run.jsonl:3: …`): shown as it is.
    pub(crate) fn in_file(reason: impl Into<String>) -> Self {
        InputError::new("", "", reason)
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.flag.is_empty() {
            f.write_str(&self.reason)
        } else if self.value.is_empty() {
            write!(f, "{} {}", self.flag, self.reason)
        } else {
            write!(
                f,
                "invalid value '{}' for '{}': {}",
                self.value, self.flag, self.reason
            )
        }
    }
}

impl std::error::Error for InputError {}
