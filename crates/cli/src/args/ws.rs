//! `belier ws ws://HOST/PATH …`: a WebSocket load test, with every flag of a load test (`-n`,
//! `-c`, `-z`, `-r`, the open loop, the outputs) flattened from [`LoadArgs`] and reworded
//! where a socket reads them differently: a request is one socket's life.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{parse_duration, LoadArgs};

/// Options of `belier ws`.
#[derive(Debug, Args)]
#[command(
    mut_arg("url", |a| {
        a.value_name("URL")
            .help("The WebSocket endpoint, ws://HOST[:PORT]/PATH or wss://… (TLS)")
    }),
    mut_arg("requests", |a| {
        a.help("Sockets to open in all (each sends --messages, then closes)")
    }),
    mut_arg("connections", |a| a.help("Sockets open at once [default: 1]")),
    mut_arg("headers", |a| {
        a.value_name("'KEY: VALUE'").help("A header of the upgrade request (repeatable)")
    }),
    mut_arg("timeout", |a| {
        a.help("Connect, TLS and the upgrade together must complete within this")
    }),
    mut_arg("body", |a| a.hide(true)),
    mut_arg("body_file", |a| a.hide(true)),
    mut_args(super::hide_http_only),
    // `belier ws --hold` holds its sockets with pings; held HTTP connections are not for a
    // WebSocket run, whose connections are its sockets.
    mut_arg("hold_connections", |a| a.long("hold-connections")),
)]
pub struct WsArgs {
    /// The load and its outputs, as for a load test.
    #[command(flatten)]
    pub load: LoadArgs,

    /// The messages and how they go (last: its heading goes on to what follows).
    #[command(flatten)]
    pub ws: WsMessageArgs,
}

/// What each socket of `belier ws` sends.
#[derive(Debug, Args)]
#[command(next_help_heading = "WebSocket")]
pub struct WsMessageArgs {
    /// The message each socket sends [default: hello]; each {{id}} in it is replaced by the
    /// message's number on its socket (0, 1, …), which --match-field finds in the reply.
    #[arg(long = "message", value_name = "TEXT", conflicts_with = "message_file")]
    pub message: Option<String>,

    /// The message, read from FILE.
    #[arg(long = "message-file", value_name = "FILE")]
    pub message_file: Option<PathBuf>,

    /// Send binary messages rather than text ones.
    #[arg(long = "binary", conflicts_with = "hold")]
    pub binary: bool,

    /// Hold the sockets: each sends pings (the message as their payload, at most 105 bytes)
    /// rather than messages, at --message-rate, each answered by a pong whose round trip is
    /// timed; with -z and no --messages, until the run ends.
    #[arg(long = "hold", conflicts_with = "match_field")]
    pub hold: bool,

    /// Messages each socket sends, then closes with 1000 [default: until the run ends with
    /// -z, else 1].
    #[arg(
        long = "messages",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub messages: Option<u64>,

    /// Open loop on each socket: this many messages per second, each timed from when it was
    /// due whatever the replies do (in all: this times -c). Without it, each socket sends
    /// its next message once the last was answered (closed loop).
    #[arg(long = "message-rate", value_name = "PER_SECOND")]
    pub message_rate: Option<f64>,

    /// Match each reply to its message by this JSON field, holding the message's {{id}}
    /// (replies in any order). Without it, replies are echoes, answering in order.
    #[arg(long = "match-field", value_name = "NAME")]
    pub match_field: Option<String>,

    /// A message not answered within this (from its intended send) ends its socket as a
    /// timeout [default: 10s].
    #[arg(long = "reply-timeout", value_name = "D", value_parser = parse_duration)]
    pub reply_timeout: Option<Duration>,

    /// A subprotocol offered in Sec-WebSocket-Protocol (repeatable, in order).
    #[arg(long = "subprotocol", value_name = "NAME")]
    pub subprotocols: Vec<String>,

    /// Offer permessage-deflate compression (RFC 7692) as browsers do, both sides keeping
    /// their context; where the server agrees, messages go compressed both ways, where it
    /// declines, uncompressed. The report counts which.
    #[arg(long)]
    pub deflate: bool,
}
