//! Plan errors: every one names a file, a line and a column, and says what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

/// A position in a file: line and column, both counted from 1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// Line, from 1.
    pub line: usize,
    /// Column (in characters), from 1.
    pub col: usize,
}

/// Why a plan cannot be used. Its `Display` is `FILE:LINE:COL: what was expected`, the form
/// editors and terminals turn into a link.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct PlanError {
    /// The file at fault: the plan, or a data or body file it names.
    pub file: PathBuf,
    /// Where in that file.
    pub pos: Pos,
    /// What is wrong, or what was expected.
    pub message: String,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file.display(),
            self.pos.line,
            self.pos.col,
            self.message
        )
    }
}

impl PlanError {
    /// An error at `pos` of `file`.
    pub fn new(file: &Path, pos: Pos, message: impl Into<String>) -> Self {
        PlanError {
            file: file.to_path_buf(),
            pos,
            message: message.into(),
        }
    }
}

/// Result of parsing a plan.
pub type Result<T, E = PlanError> = std::result::Result<T, E>;
