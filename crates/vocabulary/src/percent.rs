//! Percentages as people write them: `1%`, `0.5 %`; and shares, written either way (`5%` or
//! `0.05`).

/// Why a text is not a percentage.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PercentError {
    /// No `%` at the end.
    #[error("`{0}` is not a percentage: it ends in `%`, like `1%`")]
    NoPercentSign(String),
    /// What precedes the `%` (given) is no finite number.
    #[error("`{0}` is not a number")]
    NotANumber(String),
    /// A number outside 0–100 (the text as given).
    #[error("`{0}` is not a percentage from 0% to 100%")]
    OutOfRange(String),
}

/// Parses `NUMBER%`, a number from 0 to 100 (spaces allowed before the `%`), into that number
/// of percent: `"0.5%"` is `0.5`.
pub fn parse(text: &str) -> Result<f64, PercentError> {
    let number = text
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| PercentError::NoPercentSign(text.to_string()))?
        .trim();
    let value = number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| PercentError::NotANumber(number.to_string()))?;
    if !(0.0..=100.0).contains(&value) {
        return Err(PercentError::OutOfRange(text.to_string()));
    }
    Ok(value)
}

/// A share written as a percentage (`5%`) or as a fraction (`0.05`), as a fraction. Any
/// number f64 reads; the caller bounds it.
pub fn share(text: &str) -> Result<f64, ShareError> {
    let (number, scale) = match text.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (text.trim(), 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .map(|v| v / scale)
        .map_err(|_| ShareError(text.to_string()))
}

/// A text that is not a share.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected a share such as 5% or 0.05, not '{0}'")]
pub struct ShareError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages() {
        for (text, want) in [("1%", 1.0), ("0.5 %", 0.5), (" 100%", 100.0), ("0%", 0.0)] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
        for (text, want) in [
            ("1", PercentError::NoPercentSign("1".into())),
            ("nan%", PercentError::NotANumber("nan".into())),
            ("inf%", PercentError::NotANumber("inf".into())),
            ("x %", PercentError::NotANumber("x".into())),
            ("101%", PercentError::OutOfRange("101%".into())),
            ("-1%", PercentError::OutOfRange("-1%".into())),
        ] {
            assert_eq!(parse(text), Err(want), "{text}");
        }
        assert!(parse("101%").unwrap_err().to_string().contains("`101%`"));
    }

    #[test]
    fn shares() {
        for (text, want) in [("5%", 0.05), ("0.05", 0.05), (" 2 % ", 0.02), ("1", 1.0)] {
            assert_eq!(share(text), Ok(want), "{text}");
        }
        assert_eq!(
            share("lots").unwrap_err().to_string(),
            "expected a share such as 5% or 0.05, not 'lots'"
        );
    }
}
