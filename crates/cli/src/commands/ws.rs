//! `belier ws ws://HOST/PATH …`: a WebSocket load test. Each request of the run is one
//! socket's life (the engine's [`belier_engine::WebSocket`]): `-n` sockets in all, `-c` open
//! at once (or `-r` of them opened per second), each upgraded, sending its --messages (paced
//! by --message-rate, else back to back) and closing with 1000. The run is then a load test
//! like any other (the same settings, live loop, watchers and report): a socket's latency is
//! its lifetime, its upgrade the time to first byte, and its messages are counted and timed
//! as a streaming call's (round trips, time to the first reply, gaps), which every output
//! shows already.

use std::time::Duration;

use belier_engine::{Frames, Matching, WebSocket};
use belier_plan::files;

use crate::args::{LoadArgs, WsArgs, WsMessageArgs};
use crate::settings::{self, InputError, Settings};
use crate::signals::Signals;

/// The reply timeout when --reply-timeout is not given.
const DEFAULT_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

/// The message when neither --message nor --message-file is given.
const DEFAULT_MESSAGE: &str = "hello";

/// The longest message a ping carries with --hold (a control frame's 125 bytes, less room
/// for each `{{id}}`'s number).
const MOST_PING_MESSAGE: usize = 105;

/// Validates `args`, runs the sockets (here, or over workers: `--workers`, `--spawn`) and
/// writes the report.
pub fn run(args: WsArgs, signals: &Signals, cores: usize) -> anyhow::Result<u8> {
    let cluster = args.load.cluster.clone();
    let settings = settings(args, cores)?;
    crate::cluster::run_here_or_over(&settings, &cluster, signals)
}

/// The run's settings: the upgrade request from the URL and headers, the messages, then the
/// load and outputs as a load test reads them.
pub(crate) fn settings(mut args: WsArgs, cores: usize) -> anyhow::Result<Settings> {
    refuse_http_only(&args.load)?;
    let url = args.load.request.url.take().ok_or_else(|| {
        InputError::new("<URL>", "", "is required: the WebSocket endpoint (ws://…)")
    })?;
    args.load.request.url = Some(http_url(&url)?);
    let (mut engine, _) = settings::request_config(&args.load.request)?;
    let until_end = args.load.pace.duration.is_some();
    // The request timeout (--timeout) bounds each socket's connect, TLS and upgrade.
    engine.websocket = Some(websocket(&args.ws, until_end)?);
    Ok(settings::with_request(args.load, cores, engine, url, None)?)
}

/// The sockets' messages as the flags say.
fn websocket(args: &WsMessageArgs, until_end: bool) -> Result<WebSocket, InputError> {
    let message = match (&args.message, &args.message_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => {
            let bytes = files::read(path, files::MOST_BODY_BYTES).map_err(|e| {
                InputError::new(
                    "--message-file <FILE>",
                    path.display(),
                    settings::read_error(&e),
                )
            })?;
            String::from_utf8(bytes).map_err(|_| {
                InputError::new("--message-file <FILE>", path.display(), "is not UTF-8 text")
            })?
        }
        (None, None) => DEFAULT_MESSAGE.into(),
    };
    if message.len() > belier_engine::MOST_WS_MESSAGE_BYTES {
        let flag = match args.message {
            Some(_) => "--message <TEXT>",
            None => "--message-file <FILE>",
        };
        return Err(InputError::new(
            flag,
            message.len(),
            "bytes: a message is at most 1 MiB (the most a socket reads back of one)",
        ));
    }
    if args.hold && message.len() > MOST_PING_MESSAGE {
        return Err(InputError::new(
            "--message <TEXT>",
            message.len(),
            "bytes: a held socket's pings carry at most 105 bytes",
        ));
    }
    let interval = match args.message_rate {
        None => None,
        Some(rate) if rate.is_finite() && rate > 0.0 && rate <= 1e6 => {
            Some(Duration::from_secs_f64(1.0 / rate))
        }
        Some(rate) => {
            return Err(InputError::new(
                "--message-rate <PER_SECOND>",
                rate,
                "must be a number of messages per second above 0, at most 1000000",
            ))
        }
    };
    Ok(WebSocket {
        message,
        frames: match (args.hold, args.binary) {
            (true, _) => Frames::Ping,
            (false, true) => Frames::Binary,
            (false, false) => Frames::Text,
        },
        messages: args.messages.or((!until_end).then_some(1)),
        interval,
        matching: match &args.match_field {
            Some(field) => Matching::Field(field.clone()),
            None => Matching::Echo,
        },
        reply_timeout: args.reply_timeout.unwrap_or(DEFAULT_REPLY_TIMEOUT),
        subprotocols: args.subprotocols.clone(),
        deflate: args.deflate,
    })
}

/// The URL the engine connects to: ws:// as http://, wss:// as https:// (the upgrade is an
/// HTTP/1.1 request).
fn http_url(url: &str) -> Result<String, InputError> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    match scheme.to_ascii_lowercase().as_str() {
        "ws" => Ok(format!("http://{rest}")),
        "wss" => Ok(format!("https://{rest}")),
        _ => Err(InputError::new(
            "<URL>",
            url,
            "expected ws://HOST[:PORT]/PATH or wss://… (a WebSocket endpoint)",
        )),
    }
}

/// Flags of a load test that a WebSocket run cannot follow, refused rather than ignored.
fn refuse_http_only(load: &LoadArgs) -> Result<(), InputError> {
    let refused = [
        (load.request.method != "GET", "--method"),
        (load.request.body.is_some(), "--body"),
        (load.request.body_file.is_some(), "--body-file"),
        (load.request.every.compressed, "--compressed"),
        (load.no_keepalive, "--no-keepalive"),
        (load.request.proxy.is_some(), "--proxy"),
        (load.targets.targets.is_some(), "--targets"),
        (load.http2.http2, "--http2"),
        (load.http2.http3(), "--http3"),
        (load.http2.quic_0rtt, "--quic-0rtt"),
        (load.request.stream.is_some(), "--stream"),
        (load.request.sse_reconnect.is_some(), "--sse-reconnect"),
        (load.request.llm, "--llm"),
        (load.hold.hold.is_some(), "--hold-connections"),
        (load.request.every.server_timing, "--server-timing"),
        (
            load.request.every.server_time_header.is_some(),
            "--server-time-header",
        ),
        (load.request.every.trace_sample.is_some(), "--trace-sample"),
    ];
    match refused.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(InputError::new(
            flag,
            "",
            "is not for WebSocket runs (belier ws: one upgrade per socket, then messages)",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_urls_become_the_upgrade_requests_http_urls() {
        assert_eq!(http_url("ws://h:1/x?y").unwrap(), "http://h:1/x?y");
        assert_eq!(http_url("WSS://h/").unwrap(), "https://h/");
        for bad in ["http://h/", "h:1/x", "ftp://h"] {
            let e = http_url(bad).unwrap_err().to_string();
            assert!(e.contains("expected ws://"), "{bad}: {e}");
        }
    }
}
