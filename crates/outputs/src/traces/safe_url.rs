//! A request's URL as a span may show it (`url.full`): without its credentials nor anything
//! secret its query may carry.
//!
//! "Query secrets" are taken to be every query value: tokens, signatures and API keys travel
//! under many names (`sig`, `token`, `X-Amz-Signature`, `api_key`, ...), and a list of known
//! names would miss the next one. So every value is replaced by `REDACTED` (the word
//! OpenTelemetry's conventions use) and the keys are kept, which still tells apart the
//! requests a plan makes. The user name and password are dropped; so is the fragment, which
//! no request sends.

/// `url` without its user name, password, fragment, nor its query's values; a text that is
/// not a URL keeps only what comes before any `?` or `#`, without what comes before an `@`.
pub fn safe_url(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return fallback(url);
    };
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    parsed.set_fragment(None);
    if let Some(query) = parsed.query().map(redact_query) {
        parsed.set_query(Some(&query));
    }
    parsed.to_string()
}

/// Each `key=value` of `query` as `key=REDACTED`; a key without a value is kept as it is.
fn redact_query(query: &str) -> String {
    query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) => format!("{key}=REDACTED"),
            None => pair.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// What is left of a text that does not parse as a URL.
fn fallback(text: &str) -> String {
    let end = text.find(['?', '#']).unwrap_or(text.len());
    let text = &text[..end];
    match (text.find("://"), text.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}{}", &text[..scheme + 3], &text[at + 1..])
        }
        (None, Some(at)) => text[at + 1..].to_string(),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::safe_url;

    #[test]
    fn credentials_fragment_and_query_values_are_gone_and_the_keys_stay() {
        let cases = [
            ("http://a.test/x", "http://a.test/x"),
            (
                "https://user:secret@a.test:8443/p/q?token=abc&page=2&flag#frag",
                "https://a.test:8443/p/q?token=REDACTED&page=REDACTED&flag",
            ),
            ("http://user@a.test/", "http://a.test/"),
            ("http://a.test/?sig=a%3Db=c", "http://a.test/?sig=REDACTED"),
            ("http://a.test/?", "http://a.test/?"),
            ("not a url?key=secret", "not a url"),
            ("//user:pw@host/path?x=1", "host/path"),
            ("relative/path#x", "relative/path"),
        ];
        for (url, want) in cases {
            assert_eq!(safe_url(url), want, "{url}");
        }
    }
}
