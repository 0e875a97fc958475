//! Why an import failed: the input named (a file, or "the curl command"), where in it, and what
//! was expected.

use std::fmt;

/// A HAR file or curl command that cannot become a plan. Its `Display` names the input and,
/// where known, the line and column, then the entry and what was expected:
/// `flow.har:12:7: entry 2 (log.entries[2].request): missing field `url``.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ImportError {
    /// The input at fault: a file path, or `curl command`.
    pub input: String,
    /// Line and column (from 1) in the input, when known.
    pub pos: Option<(usize, usize)>,
    /// What is wrong, or what was expected (with the entry or option at fault).
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pos {
            Some((line, col)) => write!(f, "{}:{line}:{col}: {}", self.input, self.message),
            None => write!(f, "{}: {}", self.input, self.message),
        }
    }
}

impl ImportError {
    /// An error in `input`.
    pub fn new(input: impl Into<String>, message: impl Into<String>) -> Self {
        ImportError {
            input: input.into(),
            pos: None,
            message: message.into(),
        }
    }

    /// The same error at `line` and `col` of the input.
    pub fn at(mut self, line: usize, col: usize) -> Self {
        self.pos = Some((line, col));
        self
    }
}
