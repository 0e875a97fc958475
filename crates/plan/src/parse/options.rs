//! The plan's run-wide options: headers, timeout, TLS files, HTTP/2, keep-alive, cookies,
//! compression and redirects, with the meanings of the CLI flags of the same names.

use std::path::PathBuf;

use crate::compiler::Compiler;
use crate::error::Result;
use crate::model::Options;
use crate::yaml;

/// Most redirects a plan's `follow:` (and the CLI's `--follow`) takes.
pub const MAX_FOLLOW: u64 = 20;

pub(super) fn options(c: &Compiler<'_>, top: &yaml::Fields<'_>) -> Result<Options> {
    let rd = c.rd;
    let flag = |key: &str, default: bool| -> Result<bool> {
        top.get(key).map_or(Ok(default), |n| rd.bool(n, key))
    };
    let file = |key: &str| -> Result<Option<PathBuf>> {
        top.get(key)
            .map(|n| rd.str(n, "a file path").map(|p| c.file(p)))
            .transpose()
    };
    // The headers as written (their templates were compiled, and checked, before).
    let mut headers = Vec::new();
    if let Some(n) = top.get("headers") {
        for (name, _, value) in rd.map(n, "headers", &[])?.iter() {
            headers.push((name.to_string(), value.scalar().unwrap_or("").to_string()));
        }
    }
    let cert = file("cert")?;
    let key = file("key")?;
    if cert.is_some() != key.is_some() {
        let at = top.get("cert").or(top.get("key")).unwrap_or(top.node);
        return Err(rd.err(at, "`cert` and `key` go together: give both or neither"));
    }
    let max_streams = match top.get("max_streams") {
        Some(n) => match rd.u64(n, "max_streams")? {
            0 => return Err(rd.err(n, "expected max_streams ≥ 1")),
            v => Some(usize::try_from(v).unwrap_or(usize::MAX)),
        },
        None => None,
    };
    Ok(Options {
        headers,
        timeout: top
            .get("timeout")
            .map(|n| rd.duration(n, "timeout"))
            .transpose()?,
        insecure: flag("insecure", false)?,
        cacert: file("cacert")?,
        cert,
        key,
        sni: top
            .get("sni")
            .map(|n| rd.str(n, "sni").map(str::to_string))
            .transpose()?,
        http2: flag("http2", false)?,
        http3: http3(c, top)?,
        quic_0rtt: quic_0rtt(c, top)?,
        max_streams,
        // A socket, not a file the plan reads.
        unix_socket: top
            .get("unix_socket")
            .map(|n| rd.str(n, "a file path").map(|p| c.relative(p)))
            .transpose()?,
        keepalive: flag("keepalive", true)?,
        cookies: flag("cookies", true)?,
        compressed: flag("compressed", false)?,
        follow: match top.get("follow") {
            Some(n) => match rd.u64(n, "follow")? {
                v @ 0..=MAX_FOLLOW => v as usize,
                v => {
                    return Err(rd.err(
                        n,
                        format!("expected at most {MAX_FOLLOW} redirects to follow, found {v}"),
                    ))
                }
            },
            None => 0,
        },
        server_timing: server_timing(c, top)?,
        connections_per_host: connections_per_host(c, top)?,
        per_iteration: per_iteration(c, top)?,
    })
}

/// `server_timing: true` (the `Server-Timing` header), `false`, or the name of a header of one
/// figure (`X-Response-Time`), which must be an HTTP token.
fn server_timing(
    c: &Compiler<'_>,
    top: &yaml::Fields<'_>,
) -> Result<Option<belier_engine::ServerTimingHeader>> {
    use belier_engine::ServerTimingHeader;
    let Some(n) = top.get("server_timing") else {
        return Ok(None);
    };
    if let Ok(on) = c.rd.bool(n, "server_timing") {
        return Ok(on.then_some(ServerTimingHeader::ServerTiming));
    }
    let name = c.rd.str(n, "server_timing")?;
    if name.eq_ignore_ascii_case("server-timing") {
        return Ok(Some(ServerTimingHeader::ServerTiming));
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(belier_engine::request::rules::is_token_byte)
    {
        return Err(c.rd.err(
            n,
            format!("expected server_timing: true, false or a header name, found {name:?}"),
        ));
    }
    Ok(Some(ServerTimingHeader::Figure(name.to_ascii_lowercase())))
}

/// Most connections a user opens to one host for a parallel group unless the plan says.
pub const DEFAULT_CONNECTIONS_PER_HOST: usize = belier_engine::user::DEFAULT_CONNECTIONS_PER_HOST;

/// Most `connections_per_host` a plan may ask for.
pub const MAX_CONNECTIONS_PER_HOST: u64 = 256;

/// `connections_per_host: N`, 1 to [`MAX_CONNECTIONS_PER_HOST`].
fn connections_per_host(c: &Compiler<'_>, top: &yaml::Fields<'_>) -> Result<usize> {
    let Some(n) = top.get("connections_per_host") else {
        return Ok(DEFAULT_CONNECTIONS_PER_HOST);
    };
    match c.rd.u64(n, "connections_per_host")? {
        v @ 1..=MAX_CONNECTIONS_PER_HOST => Ok(v as usize),
        v => Err(c.rd.err(
            n,
            format!(
                "expected connections_per_host from 1 to {MAX_CONNECTIONS_PER_HOST}, found {v}"
            ),
        )),
    }
}

/// `http3: true`: HTTP/3 over QUIC, which leaves no room for `http2: true`.
fn http3(c: &Compiler<'_>, top: &yaml::Fields<'_>) -> Result<bool> {
    let rd = c.rd;
    let Some(n) = top.get("http3") else {
        return Ok(false);
    };
    let on = rd.bool(n, "http3")?;
    let http2 = top.get("http2").map(|h| rd.bool(h, "http2")).transpose()?;
    if on && http2 == Some(true) {
        return Err(rd.err(n, "`http3: true` or `http2: true`, not both"));
    }
    Ok(on)
}

/// `quic_0rtt: true`: 0-RTT early data, which is QUIC's (it needs `http3: true`).
fn quic_0rtt(c: &Compiler<'_>, top: &yaml::Fields<'_>) -> Result<bool> {
    let rd = c.rd;
    let Some(n) = top.get("quic_0rtt") else {
        return Ok(false);
    };
    let on = rd.bool(n, "quic_0rtt")?;
    let http3 = top.get("http3").map(|h| rd.bool(h, "http3")).transpose()?;
    if on && http3 != Some(true) {
        return Err(rd.err(n, "quic_0rtt needs `http3: true`: 0-RTT is QUIC's"));
    }
    Ok(on)
}

/// `connection: reuse` (the default) or `per-iteration`; per-iteration needs HTTP/1.1 and
/// keep-alive (over HTTP/2 the users share connections; without keep-alive every request has
/// a new one already).
fn per_iteration(c: &Compiler<'_>, top: &yaml::Fields<'_>) -> Result<bool> {
    let rd = c.rd;
    let Some(n) = top.get("connection") else {
        return Ok(false);
    };
    match rd.str(n, "`connection: reuse` or `connection: per-iteration`")? {
        "reuse" => Ok(false),
        "per-iteration" => {
            for multiplexed in ["http2", "http3"] {
                if top
                    .get(multiplexed)
                    .is_some_and(|h| rd.bool(h, multiplexed).unwrap_or(false))
                {
                    return Err(rd.err(
                        n,
                        format!("`connection: per-iteration` needs HTTP/1.1: with `{multiplexed}: true` the users share their connections"),
                    ));
                }
            }
            Ok(true)
        }
        other => Err(rd.err(
            n,
            format!("expected `connection: reuse` or `connection: per-iteration`, found `{other}`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use belier_engine::ServerTimingHeader;

    fn server_timing(value: &str) -> Result<Option<ServerTimingHeader>, String> {
        let text =
            format!("target: http://127.0.0.1:1\n{value}scenarios:\n  - steps: [ {{ get: / }} ]\n");
        crate::parse::plan(&text, Path::new("p.yaml"), &|_| {
            Err(std::env::VarError::NotPresent)
        })
        .map(|p| p.options.server_timing)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn server_timing_is_on_off_or_a_header_of_one_figure() {
        let figure = |name: &str| Ok(Some(ServerTimingHeader::Figure(name.into())));
        assert_eq!(server_timing(""), Ok(None));
        assert_eq!(server_timing("server_timing: false\n"), Ok(None));
        assert_eq!(
            server_timing("server_timing: true\n"),
            Ok(Some(ServerTimingHeader::ServerTiming))
        );
        assert_eq!(
            server_timing("server_timing: X-Response-Time\n"),
            figure("x-response-time")
        );
        let e = server_timing("server_timing: \"X Response\"\n").unwrap_err();
        assert!(
            e.starts_with("p.yaml:2:") && e.contains("a header name"),
            "{e}"
        );
    }
}
