//! Where a run's web console listens and the token it asks for (`--web`, `--web-token`,
//! `--web-linger`; `belier web --listen --token`), validated, and the console started there.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use belier_console::{Console, ConsoleError, Hub, Options};

use crate::settings::InputError;
use crate::token::GENERATE;

/// Where a token is read from when no flag gives one: unlike a flag, the environment does not
/// show in `ps` or a shell's history.
pub const TOKEN_VARIABLE: &str = "BELIER_WEB_TOKEN";

/// How long a `--web` console stays up after its run unless `--web-linger` says otherwise.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(60);

/// The console of a run, validated.
pub enum Web {
    /// `--web`: a console of its own, for this run.
    Serve(Listen),
    /// The console of `belier web` the run reports to.
    Attach(Arc<Hub>),
}

impl std::fmt::Debug for Web {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Web::Serve(l) => f.debug_tuple("Serve").field(l).finish(),
            Web::Attach(_) => f.write_str("Attach"),
        }
    }
}

/// Where a console listens and the token it asks for; `Debug` shows no token.
pub struct Listen {
    addr: SocketAddr,
    token: Option<String>,
    /// The token was made here, so it is printed with the console's address.
    generated: bool,
    /// How long a `--web` console stays up after its run.
    pub linger: Duration,
}

impl std::fmt::Debug for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listen")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("linger", &self.linger)
            .finish()
    }
}

/// Validates `--web`, `--web-token` (or [`TOKEN_VARIABLE`]) and `--web-linger`: an address off
/// the loopback needs a token.
pub fn listen(
    addr: Option<SocketAddr>,
    token: Option<String>,
    linger: Option<Duration>,
) -> Result<Option<Listen>, InputError> {
    let Some(addr) = addr else { return Ok(None) };
    listen_as(addr, token, "--web-token <TOKEN>", "--web=<ADDR>").map(|mut l| {
        l.linger = linger.unwrap_or(DEFAULT_LINGER);
        Some(l)
    })
}

pub fn listen_as(
    addr: SocketAddr,
    token: Option<String>,
    token_flag: &'static str,
    addr_flag: &'static str,
) -> Result<Listen, InputError> {
    let token = token.or_else(|| std::env::var(TOKEN_VARIABLE).ok().filter(|t| !t.is_empty()));
    // What a URL's query and a cookie carry as they are: `?token=` needs no escaping.
    if token.as_ref().is_some_and(|t| {
        t.is_empty()
            || !t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    }) {
        return Err(InputError::new(
            token_flag,
            "",
            "must be non-empty, of letters, digits and - . _ ~ only",
        ));
    }
    let token = crate::token::settle(token, addr, token_flag)?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(InputError::new(
            addr_flag,
            addr,
            format!(
                "not a loopback address: anything else needs a token ({token_flag}, \
                 {TOKEN_VARIABLE}, or {} {GENERATE} to make one)",
                token_flag.split(' ').next().unwrap_or(token_flag)
            ),
        ));
    }
    Ok(Listen {
        addr,
        generated: token.as_ref().is_some_and(|t| t.generated),
        token: token.map(|t| t.value),
        linger: DEFAULT_LINGER,
    })
}

/// Starts a console and says where it is (with the token to open it, if made here).
pub fn start(
    listen: &Listen,
    launcher: Option<Arc<dyn belier_console::Launcher>>,
) -> Result<Console, InputError> {
    let console = Console::start(Options {
        addr: listen.addr,
        token: listen.token.clone(),
        launcher,
    })
    .map_err(|e| match e {
        ConsoleError::TokenRequired => InputError::new("--web=<ADDR>", listen.addr, e.to_string()),
        ConsoleError::Server(e) => InputError::new("--web=<ADDR>", listen.addr, e.to_string()),
    })?;
    let url = format!("http://{}/", console.addr());
    match &listen.token {
        Some(t) if listen.generated => eprintln!("belier: web console at {url}?token={t}"),
        Some(_) => eprintln!("belier: web console at {url}?token=… (the token you gave)"),
        None => eprintln!("belier: web console at {url}"),
    }
    Ok(console)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(a: &str) -> SocketAddr {
        a.parse().unwrap()
    }

    #[test]
    fn off_the_loopback_a_token_is_required() {
        let e = listen_as(
            addr("0.0.0.0:5665"),
            None,
            "--token <TOKEN>",
            "--listen <ADDR>",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("'--listen <ADDR>'") && e.contains("--token generate"),
            "{e}"
        );
        let l = listen_as(
            addr("0.0.0.0:5665"),
            Some("generate".into()),
            "--token",
            "--listen",
        )
        .unwrap();
        let token = l.token.clone().unwrap();
        assert_eq!(token.len(), 64);
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()) && l.generated);
        assert!(!format!("{l:?}").contains(&token), "Debug shows no token");
        for bad in ["", "a b", "a;b", "a%20", "ü"] {
            assert!(
                listen_as(addr("127.0.0.1:1"), Some(bad.into()), "--token", "--listen").is_err(),
                "{bad:?}"
            );
        }
        let short = listen_as(addr("0.0.0.0:5665"), Some("s3cret".into()), "--t", "--l");
        assert!(short.is_err(), "a short token off the loopback");
        assert!(listen_as(addr("127.0.0.1:1"), Some("s3cret".into()), "--t", "--l").is_ok());
        let l = listen(Some(addr("127.0.0.1:1")), None, None)
            .unwrap()
            .unwrap();
        assert_eq!((l.token, l.linger), (None, DEFAULT_LINGER));
    }
}
