//! The tokens of belier's listeners (the web console, the Prometheus exporter, the recording
//! proxy, the worker): made on request, and off the loopback long enough that nobody guesses
//! one. The rule itself ([`token_problem`]) lives with the worker's protocol, whose
//! coordinator checks the token it is given by the same rule.

use std::net::SocketAddr;

use belier_cluster::protocol::token_problem;

use crate::settings::InputError;

/// The token value that asks belier to make one.
pub const GENERATE: &str = "generate";

/// A token settled: given, or made here (then the caller prints it, once).
pub struct Token {
    /// The token.
    pub value: String,
    /// Made here from [`GENERATE`].
    pub generated: bool,
}

/// Makes a token if `given` is [`GENERATE`], and refuses one shorter than [`belier_cluster::protocol::MIN_TOKEN_CHARS`] for
/// a listener at `addr` off the loopback, naming `flag`.
pub fn settle(
    given: Option<String>,
    addr: SocketAddr,
    flag: &'static str,
) -> Result<Option<Token>, InputError> {
    let Some(value) = given else { return Ok(None) };
    if value == GENERATE {
        let value = generate()
            .map_err(|e| InputError::new(flag, GENERATE, format!("cannot make a token: {e}")))?;
        return Ok(Some(Token {
            value,
            generated: true,
        }));
    }
    if let Some(why) = token_problem(&value, !addr.ip().is_loopback()) {
        return Err(InputError::new(
            flag,
            format!("<{} characters>", value.chars().count()),
            format!(
                "{why}; '{} {GENERATE}' makes one",
                flag.split(' ').next().unwrap_or(flag)
            ),
        ));
    }
    Ok(Some(Token {
        value,
        generated: false,
    }))
}

/// 256 random bits from the system's generator, in hex.
pub fn generate() -> anyhow::Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("the system's random generator failed"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_the_loopback_tokens_are_long_or_made_here() {
        let remote: SocketAddr = "0.0.0.0:9".parse().unwrap();
        let local: SocketAddr = "[::1]:9".parse().unwrap();
        let e = settle(Some("s3cret".into()), remote, "--metrics-token <TOKEN>")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("'--metrics-token <TOKEN>'")
                && e.contains("at least 16 characters")
                && e.contains("--metrics-token generate")
                && !e.contains("s3cret"),
            "{e}"
        );
        let long = "0123456789abcdef";
        assert_eq!(
            settle(Some(long.into()), remote, "--t")
                .unwrap()
                .unwrap()
                .value,
            long
        );
        assert!(settle(Some(long[1..].into()), remote, "--t").is_err());
        assert!(settle(Some("a".into()), local, "--t").unwrap().is_some());
        let made = settle(Some(GENERATE.into()), remote, "--t")
            .unwrap()
            .unwrap();
        assert!(made.generated && made.value.len() == 64);
        assert!(made.value.bytes().all(|b| b.is_ascii_hexdigit()));
        assert!(settle(None, remote, "--t").unwrap().is_none());
    }
}
