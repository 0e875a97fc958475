//! Where requests go: a scheme, and an origin (scheme, host and port), shared by plans and
//! targets files.

/// `http` or `https`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

/// Scheme, host and port of a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// Host name or address literal (IPv6 without brackets).
    pub host: String,
    /// TCP port (the scheme's default when the URL has none).
    pub port: u16,
}

impl Origin {
    /// `scheme://host:port`, IPv6 literals in brackets.
    pub fn url(&self) -> String {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        if self.host.contains(':') {
            format!("{scheme}://[{}]:{}", self.host, self.port)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }
}
