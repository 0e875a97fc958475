//! Rates as people write them: `900/s`, or a bare number per second.

/// A text that is not a rate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a rate such as `900/s`")]
pub struct RateError {
    /// The text as given.
    pub text: String,
    /// Its number, without the `/s`.
    pub number: String,
}

/// Parses `NUMBER/s` or `NUMBER`, a finite number of at least 0, per second.
pub fn parse(text: &str) -> Result<f64, RateError> {
    let number = text.strip_suffix("/s").unwrap_or(text).trim();
    number
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= 0.0)
        .ok_or_else(|| RateError {
            text: text.to_string(),
            number: number.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        for (text, want) in [
            ("900/s", 900.0),
            ("900", 900.0),
            ("1200.5 /s", 1200.5),
            ("0", 0.0),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
        for bad in ["fast", "-1/s", "1e999", "NaN/s", "/s", ""] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let e = parse("fast/s").unwrap_err();
        assert_eq!(
            (e.number.as_str(), e.to_string().as_str()),
            ("fast", "`fast/s` is not a rate such as `900/s`")
        );
    }
}
