//! A virtual user's cookie jar: `Set-Cookie` in, `Cookie` out (RFC 6265's storage model,
//! narrowed to one origin: the domain attribute is not needed, path and expiry are honoured).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use belier_plan::extract::name_value;

/// One stored cookie.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cookie {
    name: String,
    value: String,
    path: String,
    expires: Option<SystemTime>,
}

/// Cookies of one user.
#[derive(Clone, Debug, Default)]
pub(crate) struct Jar {
    cookies: Vec<Cookie>,
}

/// The jar of host `origin` among a user's `jars`, made empty the first time.
pub(crate) fn jar_at(jars: &mut Vec<Jar>, origin: usize) -> &mut Jar {
    if jars.len() <= origin {
        jars.resize_with(origin + 1, Jar::default);
    }
    &mut jars[origin]
}

impl Jar {
    /// Applies one `Set-Cookie` header received for a request to `request_path`.
    pub fn store(&mut self, set_cookie: &str, request_path: &str, now: SystemTime) {
        let Some((name, value)) = name_value(set_cookie) else {
            return;
        };
        let mut path = None;
        let mut max_age: Option<i64> = None;
        let mut expires = None;
        for attribute in set_cookie.split(';').skip(1) {
            let (key, val) = attribute.split_once('=').unwrap_or((attribute, ""));
            let (key, val) = (key.trim(), val.trim());
            if key.eq_ignore_ascii_case("path") && val.starts_with('/') {
                path = Some(val.to_string());
            } else if key.eq_ignore_ascii_case("max-age") {
                max_age = val.parse().ok().or(max_age);
            } else if key.eq_ignore_ascii_case("expires") {
                expires = http_date(val).or(expires);
            }
        }
        // Max-Age wins over Expires (RFC 6265 §5.3 step 3).
        let expires = match max_age {
            Some(secs) if secs <= 0 => Some(UNIX_EPOCH),
            Some(secs) => now.checked_add(Duration::from_secs(secs.unsigned_abs())),
            None => expires,
        };
        let path = path.unwrap_or_else(|| default_path(request_path));
        self.cookies.retain(|c| !(c.name == name && c.path == path));
        if expires.is_some_and(|e| e <= now) {
            return; // an expiry in the past deletes the cookie
        }
        self.cookies.push(Cookie {
            name: name.to_string(),
            value: value.to_string(),
            path,
            expires,
        });
    }

    /// The `Cookie` header value for a request to `request_path`, if any cookie applies;
    /// longer paths first, as RFC 6265 §5.4 recommends.
    pub fn header(&self, request_path: &str, now: SystemTime) -> Option<String> {
        let path = request_path.split(['?', '#']).next().unwrap_or("/");
        let mut matching: Vec<&Cookie> = self
            .cookies
            .iter()
            .filter(|c| c.expires.is_none_or(|e| e > now) && path_matches(&c.path, path))
            .collect();
        if matching.is_empty() {
            return None;
        }
        matching.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        let pairs: Vec<String> = matching
            .iter()
            .map(|c| format!("{}={}", c.name, c.value))
            .collect();
        Some(pairs.join("; "))
    }

    /// Adds the cookies that apply to a request to `request_path` to its `headers`: to its own
    /// `Cookie` header if it has one, else as a new one.
    pub fn add_to(&self, headers: &mut Vec<(String, String)>, request_path: &str, now: SystemTime) {
        let Some(cookies) = self.header(request_path, now) else {
            return;
        };
        match headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case("cookie"))
        {
            Some((_, existing)) => {
                existing.push_str("; ");
                existing.push_str(&cookies);
            }
            None => headers.push(("Cookie".to_string(), cookies)),
        }
    }

    /// Stores every `Set-Cookie` of a response to a request to `request_path`.
    pub fn store_all<'a>(
        &mut self,
        headers: impl Iterator<Item = (&'a str, &'a [u8])>,
        request_path: &str,
        now: SystemTime,
    ) {
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("set-cookie") {
                self.store(&String::from_utf8_lossy(value), request_path, now);
            }
        }
    }

    /// The value of a live cookie named `name`.
    pub fn get(&self, name: &str, now: SystemTime) -> Option<&str> {
        self.cookies
            .iter()
            .rev()
            .find(|c| c.name == name && c.expires.is_none_or(|e| e > now))
            .map(|c| c.value.as_str())
    }
}

/// RFC 6265 §5.1.4: the request path up to its last `/`.
fn default_path(request_path: &str) -> String {
    let path = request_path.split(['?', '#']).next().unwrap_or("");
    match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    }
}

/// RFC 6265 §5.1.4 path-match.
fn path_matches(cookie_path: &str, request_path: &str) -> bool {
    request_path == cookie_path
        || (request_path.starts_with(cookie_path)
            && (cookie_path.ends_with('/')
                || request_path.as_bytes().get(cookie_path.len()) == Some(&b'/')))
}

/// An HTTP date (`Thu, 01 Jan 1970 00:00:00 GMT`, dashes accepted between the date parts).
fn http_date(text: &str) -> Option<SystemTime> {
    let text = text.split_once(',').map_or(text, |(_, rest)| rest);
    let parts: Vec<&str> = text.split([' ', '-']).filter(|p| !p.is_empty()).collect();
    let [day, month, year, time, ..] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let month = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ]
    .iter()
    .position(|m| month.len() >= 3 && month[..3].eq_ignore_ascii_case(m))? as u32
        + 1;
    let mut year: i64 = year.parse().ok()?;
    if year < 100 {
        year += if year < 70 { 2000 } else { 1900 };
    }
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    if !(1601..=9999).contains(&year) || !(1..=31).contains(&day) || *h > 23 || *m > 59 || *s > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + (*h * 3600 + *m * 60 + *s) as i64;
    if secs <= 0 {
        return Some(UNIX_EPOCH);
    }
    UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = month as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    #[test]
    fn set_then_send() {
        let mut jar = Jar::default();
        jar.store("session=abc; Path=/; HttpOnly", "/login", now());
        jar.store("pref=dark", "/account/settings", now());
        assert_eq!(jar.header("/", now()).as_deref(), Some("session=abc"));
        assert_eq!(
            jar.header("/account/settings?x=1", now()).as_deref(),
            Some("pref=dark; session=abc")
        );
        assert_eq!(
            jar.header("/accounting", now()).as_deref(),
            Some("session=abc")
        );
        assert_eq!(jar.get("session", now()), Some("abc"));
        jar.store("session=def; Path=/", "/", now());
        assert_eq!(jar.header("/", now()).as_deref(), Some("session=def"));
    }

    #[test]
    fn a_cookie_with_a_control_character_is_ignored() {
        let mut jar = Jar::default();
        jar.store("a=1\0X; Path=/", "/", now());
        jar.store("b\r\nX-Injected: 1=2", "/", now());
        jar.store("c=3", "/", now());
        assert_eq!(jar.header("/", now()).as_deref(), Some("c=3"));
    }

    #[test]
    fn expiry_deletes() {
        let mut jar = Jar::default();
        jar.store("a=1; Path=/", "/", now());
        jar.store("b=2; Path=/; Max-Age=60", "/", now());
        jar.store("a=; Path=/; Max-Age=0", "/", now());
        assert_eq!(jar.header("/", now()).as_deref(), Some("b=2"));
        assert_eq!(jar.header("/", now() + Duration::from_secs(61)), None);
        jar.store("c=3; Path=/", "/", now());
        jar.store(
            "c=x; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT",
            "/",
            now(),
        );
        assert_eq!(jar.get("c", now()), None);
        jar.store("d=4; Expires=Wed, 21 Oct 2099 07:28:00 GMT", "/", now());
        assert_eq!(jar.get("d", now()), Some("4"));
        // Absurd lifetimes neither overflow nor expire.
        jar.store("e=5; Max-Age=9223372036854775807", "/", now());
        jar.store(
            "f=6; Expires=Wed, 21 Oct 99999999999 07:28:00 GMT",
            "/",
            now(),
        );
        assert_eq!(jar.get("f", now()), Some("6"));
    }

    #[test]
    fn dates() {
        assert_eq!(
            http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
        assert_eq!(
            http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(784_111_777))
        );
        assert_eq!(http_date("garbage"), None);
        assert_eq!(default_path("/a/b/c?x"), "/a/b");
        assert_eq!(default_path("/a"), "/");
    }
}
