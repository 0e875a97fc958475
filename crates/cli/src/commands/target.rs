//! `belier target`: the built-in target server in the foreground.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use belier_testserver::{Behaviour, Config, Handlers, Server, TlsConfig};

use crate::args::TargetArgs;
use crate::settings::InputError;
use crate::signals::Signals;

/// The file holding the CA of a generated certificate, for clients' `--cacert`: removed when
/// dropped, as the server it trusts stops (each start generates a new certificate).
pub(crate) struct CaFile(PathBuf);

impl CaFile {
    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for CaFile {
    fn drop(&mut self) {
        // Gone already (a user removed it) is as good.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes the CA of `server`'s generated certificate where clients can find it and prints the
/// certificate's fingerprint; the file lasts as long as the returned [`CaFile`].
pub(crate) fn write_ca(server: &Server, config: &TlsConfig, ca: &str) -> anyhow::Result<CaFile> {
    let path = std::env::temp_dir().join(format!("belier-target-{}-ca.pem", server.addr().port()));
    std::fs::write(&path, ca)
        .with_context(|| format!("cannot write the CA to {}", path.display()))?;
    eprintln!(
        "  TLS: generated certificate, SHA-256 fingerprint {}",
        config.fingerprint_sha256().unwrap_or_default()
    );
    Ok(CaFile(path))
}

/// A certificate for `listen`'s address and the loopback names, and the CA that signed it.
pub(crate) fn self_signed(listen: SocketAddr) -> (TlsConfig, String) {
    let ip = listen.ip();
    let own = (!ip.is_unspecified()).then(|| ip.to_string());
    let mut names = vec!["localhost", "127.0.0.1", "::1"];
    if let Some(own) = own.as_deref().filter(|o| !names.contains(o)) {
        names.push(own);
    }
    TlsConfig::self_signed(&names)
}

/// Serves until Ctrl-C, then prints what the server saw.
pub fn run(args: TargetArgs, signals: &Signals) -> anyhow::Result<u8> {
    if args.print_proto {
        print!("{}", belier_testserver::TARGET_PROTO);
        return Ok(0);
    }
    if args.threads == 0 {
        return Err(InputError::new("--threads <N>", 0, "must be at least 1").into());
    }
    let defaults = behaviour(&args)?;
    let handlers = handlers(&args)?;
    let tls = args.tls.then(|| self_signed(args.listen));
    let server = Server::start(Config {
        listen: args.listen,
        unix_socket: args.unix_socket.clone(),
        threads: args.threads,
        defaults,
        record_requests: 0,
        tls: tls.as_ref().map(|(config, _)| config.clone()),
        http2: true,
        handlers: handlers.clone(),
        http3: args.http3,
    })
    .with_context(|| match &args.unix_socket {
        Some(path) => format!("cannot listen on {}", path.display()),
        None => format!("cannot listen on {}", args.listen),
    })?;
    let ca_file = announce(&server, &args, tls.as_ref(), handlers.as_ref())?;
    while !signals.stop_requested() {
        std::thread::sleep(Duration::from_millis(100));
    }
    farewell(server);
    drop(ca_file);
    Ok(0)
}

/// What every request gets unless its query string asks otherwise: the flags' defaults.
fn behaviour(args: &TargetArgs) -> anyhow::Result<Behaviour> {
    let mut defaults = Behaviour::default();
    if let Some(d) = args.delay {
        defaults.delay = d;
    }
    if let Some(s) = args.status {
        if !(100..=999).contains(&s) {
            return Err(
                InputError::new("--status <CODE>", s, "must be between 100 and 999").into(),
            );
        }
        defaults.status = s;
    }
    defaults.body_size = args.size.or(defaults.body_size);
    defaults.fault = args.fault.or(defaults.fault);
    Ok(defaults)
}

/// A server of known capacity (`--workers` handlers of `--service-time`), when both are given.
fn handlers(args: &TargetArgs) -> anyhow::Result<Option<Handlers>> {
    Ok(match (args.workers, args.service_time) {
        (Some(0), _) => {
            return Err(InputError::new("--workers <K>", 0, "must be at least 1").into());
        }
        (Some(_), Some(d)) if d.is_zero() => {
            return Err(InputError::new("--service-time <D>", "0", "must last some time").into());
        }
        (Some(workers), Some(service_time)) => Some(Handlers {
            workers,
            service_time,
            queue: args.queue,
            shed: args.shed,
        }),
        _ => None,
    })
}

/// Tells the user where the server listens, how to trust it (the CA file, kept until the
/// returned one is dropped) and what it can be asked.
fn announce(
    server: &Server,
    args: &TargetArgs,
    tls: Option<&(TlsConfig, String)>,
    handlers: Option<&Handlers>,
) -> anyhow::Result<Option<CaFile>> {
    match server.unix_socket() {
        Some(path) => eprintln!(
            "belier target listening on {} (belier --unix-socket {} {})",
            path.display(),
            path.display(),
            server.url("/")
        ),
        None => eprintln!("belier target listening on {}", server.url("/")),
    }
    eprintln!(
        "  HTTP/1.1 and HTTP/2 ({}){}",
        if args.tls {
            "ALPN h2"
        } else {
            "h2c with prior knowledge"
        },
        if args.http3 {
            "; HTTP/3 over QUIC on the same port (UDP), advertised in HTTP/2's Alt-Svc"
        } else {
            ""
        }
    );
    let ca_file = match tls {
        Some((config, ca)) => Some(write_ca(server, config, ca)?),
        None => None,
    };
    if let Some(file) = &ca_file {
        eprintln!(
            "  clients trust it with --cacert {} (or skip the check with -k)",
            file.path().display()
        );
    }
    if let Some(h) = handlers {
        eprintln!(
            "  {} handlers of {:?} each: capacity {:.0} requests/s; queue {}; beyond it {}; \
             counters at {}",
            h.workers,
            h.service_time,
            h.capacity(),
            h.queue.map_or("unbounded".into(), |q| q.to_string()),
            if h.shed {
                "503 at once"
            } else {
                "the connection closes"
            },
            server.url("/metrics")
        );
    }
    eprintln!(
        "  per-request knobs: ?delay=20ms &status=503 &size=1024 &chunked=1 &close=1 \
         &token=1 &json=1 &redirect=3 &fault=reset|close-before-headers|close-mid-body|malformed|stall"
    );
    eprintln!(
        "  gRPC: belier.target.Target (Unary, ServerStream, ClientStream, Bidi), each call's \
         delay_ms, code, size, count and gap_ms in its message (belier target --print-proto)"
    );
    eprintln!("  Ctrl-C stops it");
    Ok(ca_file)
}

/// Stops the server and prints what it saw.
fn farewell(server: Server) {
    let counts = server.counts();
    let pool = server.pool_stats();
    server.stop();
    eprintln!(
        "belier target served {} requests on {} connections ({} responses)",
        counts.requests, counts.connections, counts.responses
    );
    if let Some(p) = pool {
        eprintln!(
            "  handlers served {}, shed {}; mean service time {}",
            p.served,
            p.rejected,
            p.mean_service
                .map_or("-".into(), |d| format!("{:.3} ms", d.as_secs_f64() * 1e3))
        );
    }
}
