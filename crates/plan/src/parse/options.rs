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
    })
}
