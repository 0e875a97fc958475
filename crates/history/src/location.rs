//! Where a history is kept: an SQLite file, or a PostgreSQL database named by its URL; and how
//! that place is shown in messages, without its password.

use std::path::{Path, PathBuf};

/// A history database: a file, or a PostgreSQL server's database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// An SQLite file, created if need be.
    File(PathBuf),
    /// A PostgreSQL connection URL (`postgres://user:password@host:port/database?…`).
    Postgres(String),
}

impl Location {
    /// `given` read as a location: a `postgres://` or `postgresql://` URL names a PostgreSQL
    /// database, anything else a file.
    pub fn parse(given: &str) -> Location {
        let lower = given.get(..13).unwrap_or(given).to_ascii_lowercase();
        match lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            true => Location::Postgres(given.to_string()),
            false => Location::File(PathBuf::from(given)),
        }
    }

    /// The location as messages show it: a file's path; a URL without its password (neither
    /// the one in its user part nor a `password=` parameter), so that it never lands in a log.
    pub fn shown(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Postgres(url) => without_password(url),
        }
    }

    /// The directory beside the database, for files kept with it (a file's directory; for a
    /// PostgreSQL database, `None`).
    pub fn directory(&self) -> Option<&Path> {
        match self {
            Location::File(path) => Some(path.parent().unwrap_or(Path::new("."))),
            Location::Postgres(_) => None,
        }
    }
}

/// How the connection to PostgreSQL is encrypted, as the URL's `sslmode` says (libpq's
/// words); `sslrootcert` names the certificates to trust for the verifying modes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PgTls {
    /// `disable`: never.
    Disable,
    /// `prefer` (the default): when the server offers it, without verifying its certificate.
    Prefer,
    /// `require`: always, without verifying the server's certificate (as libpq does).
    Require,
    /// `verify-ca` or `verify-full`: always, the certificate verified against `root` (PEM;
    /// the system's roots when `None`) and valid for the host's name.
    Verify {
        /// The certificates to trust.
        root: Option<PathBuf>,
    },
}

/// A PostgreSQL URL split into what the client library reads and the TLS settings belier
/// reads itself (`sslmode`, `sslrootcert`).
pub(crate) fn split_tls(url: &str) -> Result<(String, PgTls), String> {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let (mut mode, mut root) = (None, None);
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sslmode", v)) => mode = Some(v.to_string()),
            Some(("sslrootcert", v)) => root = Some(PathBuf::from(v)),
            _ => kept.push(pair),
        }
    }
    let tls = match mode.as_deref().unwrap_or("prefer") {
        "disable" => PgTls::Disable,
        "prefer" | "allow" => PgTls::Prefer,
        "require" => PgTls::Require,
        "verify-ca" | "verify-full" => PgTls::Verify { root },
        other => {
            return Err(format!(
                "sslmode={other}: expected disable, prefer, require, verify-ca or verify-full"
            ))
        }
    };
    let url = match kept.is_empty() {
        true => base.to_string(),
        false => format!("{base}?{}", kept.join("&")),
    };
    Ok((url, tls))
}

impl Location {
    /// How a PostgreSQL location's connection is encrypted (`None` for a file), or what is
    /// wrong with its `sslmode`.
    pub fn postgres_tls(&self) -> Result<Option<PgTls>, String> {
        match self {
            Location::File(_) => Ok(None),
            Location::Postgres(url) => split_tls(url).map(|(_, tls)| Some(tls)),
        }
    }
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Location {
        Location::File(path.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(path: &PathBuf) -> Location {
        Location::File(path.clone())
    }
}

impl From<&Location> for Location {
    fn from(location: &Location) -> Location {
        location.clone()
    }
}

/// `url` with its password removed: `postgres://ci:secret@db/x?password=y&sslmode=require`
/// shows as `postgres://ci@db/x?sslmode=require`. A URL that does not parse shows as its
/// scheme alone, since where its password is cannot be told.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "postgres://…".into();
    };
    // The user part ends at the last '@' (a password may hold '/', '?' or '@' unescaped);
    // an '@' further on, in a parameter, only hides more than needed.
    let (user, rest) = match rest.rsplit_once('@') {
        Some((userinfo, rest)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            (format!("{user}@"), rest)
        }
        None => (String::new(), rest),
    };
    let (place, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let mut shown = format!("{scheme}://{user}{place}");
    let kept: Vec<&str> = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter(|pair| {
            let key = pair.split_once('=').map_or(*pair, |(k, _)| k);
            !key.eq_ignore_ascii_case("password")
        })
        .collect();
    if !kept.is_empty() {
        shown.push('?');
        shown += &kept.join("&");
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_settings_are_taken_out_of_the_url() {
        let split = |u: &str| split_tls(u).unwrap();
        assert_eq!(
            split("postgres://h/d"),
            ("postgres://h/d".into(), PgTls::Prefer)
        );
        assert_eq!(
            split("postgres://h/d?sslmode=require&application_name=ci"),
            ("postgres://h/d?application_name=ci".into(), PgTls::Require)
        );
        assert_eq!(
            split("postgres://h/d?sslrootcert=/ca.pem&sslmode=verify-full"),
            (
                "postgres://h/d".into(),
                PgTls::Verify {
                    root: Some("/ca.pem".into())
                }
            )
        );
        assert_eq!(split("postgres://h/d?sslmode=disable").1, PgTls::Disable);
        let err = split_tls("postgres://h/d?sslmode=maybe").unwrap_err();
        assert!(err.starts_with("sslmode=maybe: expected"), "{err}");
    }

    #[test]
    fn a_postgres_url_is_shown_without_its_password() {
        let shown = |u: &str| Location::parse(u).shown();
        assert_eq!(
            shown("postgres://ci:s3cret@db:5432/runs"),
            "postgres://ci@db:5432/runs"
        );
        assert_eq!(
            shown("postgresql://ci:p%40ss@db/runs?password=x&sslmode=disable&PASSWORD=y"),
            "postgresql://ci@db/runs?sslmode=disable"
        );
        assert_eq!(shown("postgres://db/runs"), "postgres://db/runs");
        assert_eq!(shown("postgres://u:a/b?c@d@h/runs"), "postgres://u@h/runs");
        assert_eq!(shown("POSTGRES://a:b@h"), "POSTGRES://a@h");
        assert_eq!(shown("runs/history.db"), "runs/history.db");
        assert_eq!(
            Location::parse("history.db"),
            Location::File("history.db".into())
        );
        assert!(matches!(
            Location::parse("postgresql://h/d"),
            Location::Postgres(_)
        ));
    }
}
