//! The Prometheus exporter (`--metrics-listen ADDR`): `GET /metrics` during the run, for pull
//! setups, and for `--metrics-linger` after it.
//!
//! The run loop renders the page once per settled interval (and once more with the final
//! totals) and swaps it in; the serving thread (axum on its own current-thread tokio runtime,
//! apart from the engine's) only hands out the latest page. So a scrape
//! never touches the recorders, a slow or failing scraper can hold up nothing but its own
//! answer, and the engine knows nothing of any of it. The figures are those the report counts:
//! the settled intervals so far.
//!
//! Series (see docs/src/guide/outputs.md, "The series"):
//! - `belier_requests_total{status="200"}` per response status, and
//!   `belier_requests_total{error="timeout"}` per error kind (every kind, 0 included); summed,
//!   every request that ended.
//! - `belier_request_duration_seconds` histogram of the responses' latency (from the intended
//!   start, as the report's); errors have no latency, so `_count` is the responses.
//! - counters `belier_bytes_received_total`, `belier_bytes_sent_total`,
//!   `belier_connections_opened_total`, `belier_dropped_total`; over HTTP/3 the
//!   `belier_quic_*` counters (handshakes, datagrams, packets lost, ends by `cause`);
//! - gauges `belier_in_flight`, `belier_target_rate` (open loop), `belier_run_ended`, and
//!   `belier_run_info{url,name}` 1.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderName, Method, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::routing::any;
use axum::Router;
use belier_console::server::{loopback_host, same, Server, StartError};
use belier_outputs::text::escape;
pub use belier_outputs::Figures;
use belier_stats::Recorder;

use crate::settings::InputError;
use crate::signals::Signals;

/// How long the page is served after the run unless `--metrics-linger` says otherwise.
pub const DEFAULT_LINGER: Duration = Duration::from_secs(5);

/// How often a lingering exporter checks for Ctrl-C.
const LINGER_POLL: Duration = Duration::from_millis(100);

/// The exporter's settings, validated.
#[derive(Debug)]
pub struct Listen {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The bearer token scrapes must present, if any.
    pub token: Option<Token>,
    /// The token was made here (`--metrics-token generate`): printed at start.
    pub generated: bool,
    /// How long to keep serving after the run.
    pub linger: Duration,
}

/// A bearer token. Its `Debug` shows no secret, so settings can be printed safely.
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// Where a token is read from when `--metrics-token` is not given: unlike a flag, the
/// environment does not show in `ps` or a shell's history.
pub const TOKEN_VARIABLE: &str = "BELIER_METRICS_TOKEN";

/// The token in [`TOKEN_VARIABLE`], if set and not empty.
pub fn token_from_env() -> Option<String> {
    std::env::var(TOKEN_VARIABLE).ok().filter(|t| !t.is_empty())
}

/// Validates `--metrics-listen`, `--metrics-token` and `--metrics-linger`: a listener that is
/// not on the loopback needs a token, of [`belier_cluster::protocol::MIN_TOKEN_CHARS`] characters at least.
pub fn listen(
    addr: Option<SocketAddr>,
    token: Option<String>,
    linger: Option<Duration>,
) -> Result<Option<Listen>, InputError> {
    const FLAG: &str = "--metrics-token <TOKEN>";
    let Some(addr) = addr else { return Ok(None) };
    if token
        .as_ref()
        .is_some_and(|t| t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        return Err(InputError::new(
            FLAG,
            "",
            "must be non-empty, without spaces or control characters",
        ));
    }
    let token = crate::token::settle(token, addr, FLAG)?;
    if !addr.ip().is_loopback() && token.is_none() {
        return Err(InputError::new(
            "--metrics-listen <ADDR>",
            addr,
            "not a loopback address: anything else needs --metrics-token TOKEN (or \
             --metrics-token generate), so that scrapes must send 'Authorization: Bearer TOKEN'",
        ));
    }
    Ok(Some(Listen {
        addr,
        generated: token.as_ref().is_some_and(|t| t.generated),
        token: token.map(|t| Token(t.value)),
        linger: linger.unwrap_or(DEFAULT_LINGER),
    }))
}

/// A running exporter; stops serving when dropped.
pub struct Exporter {
    /// Serving until dropped.
    server: Server,
    page: Arc<Mutex<Arc<Pages>>>,
    info: String,
    linger: Duration,
}

impl Exporter {
    /// Listens on `listen.addr` and serves an empty page until the first update. `url` and
    /// `name` label `belier_run_info` (the URL without credentials or query).
    pub fn start(listen: &Listen, url: &str, name: &str) -> Result<Exporter, InputError> {
        let cannot =
            |e: StartError| InputError::new("--metrics-listen <ADDR>", listen.addr, e.to_string());
        let info = format!(
            concat!(
                "# HELP belier_run_info The run: its URL (no credentials, no query) and name.\n",
                "# TYPE belier_run_info gauge\n",
                "belier_run_info{{url=\"{}\",name=\"{}\"}} 1\n",
            ),
            escape(&public_url(url)),
            escape(name)
        );
        let page = Arc::new(Mutex::new(Arc::new(Pages::default())));
        let shared = Arc::new(Shared {
            page: Arc::clone(&page),
            token: listen.token.as_ref().map(|t| format!("Bearer {}", t.0)),
            loopback_only: listen.addr.ip().is_loopback() && listen.token.is_none(),
        });
        // Bound here, on the caller's thread, so that a taken address fails before any load.
        let server = Server::start(listen.addr, "metrics", |_| router(shared)).map_err(cannot)?;
        if let Some(Token(t)) = listen.token.as_ref().filter(|_| listen.generated) {
            eprintln!(
                "belier: metrics at http://{}/metrics: scrapes send 'Authorization: Bearer {t}'",
                server.addr()
            );
        }
        let exporter = Exporter {
            server,
            page,
            info,
            linger: listen.linger,
        };
        exporter.update(&Figures {
            total: &Recorder::new(),
            in_flight: 0,
            target_rate: None,
            ended: false,
            steps: &[],
            exemplars: None,
        });
        Ok(exporter)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// Renders `figures` and serves them from now on.
    pub fn update(&self, figures: &Figures) {
        let families = belier_outputs::families(figures);
        let mut text = belier_outputs::text::render(&families, &[]);
        text.push_str(&self.info);
        let mut openmetrics = belier_outputs::text::render_openmetrics(&families, &[]);
        openmetrics.push_str(&self.info);
        openmetrics.push_str("# EOF\n");
        let pages = Arc::new(Pages { text, openmetrics });
        // The lock only guards a pointer swap: the serving thread clones the Arc and lets go.
        *self.page.lock().unwrap_or_else(|e| e.into_inner()) = pages;
    }

    /// Keeps serving the final figures for `--metrics-linger`, or until Ctrl-C; saying so on
    /// standard error. A run stopped by Ctrl-C does not linger.
    pub fn linger(self, signals: &Signals) {
        if self.linger.is_zero() {
            return;
        }
        if signals.stop_requested() {
            eprintln!("belier: interrupted: not serving the final metrics any longer");
            return;
        }
        eprintln!(
            "belier: serving the final metrics at http://{}/metrics for {} (Ctrl-C to stop)",
            self.addr(),
            humantime::format_duration(self.linger)
        );
        let deadline = Instant::now() + self.linger;
        while Instant::now() < deadline && !signals.stop_requested() {
            std::thread::sleep(LINGER_POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }
}

/// The latest figures in each format the page is served in.
#[derive(Default)]
struct Pages {
    /// Prometheus' text format (0.0.4).
    text: String,
    /// OpenMetrics 1.0, with the latency buckets' exemplars, for scrapers that accept it
    /// (Prometheus asks for it first).
    openmetrics: String,
}

/// What the serving thread's handlers share.
struct Shared {
    /// The latest pages, swapped in by [`Exporter::update`].
    page: Arc<Mutex<Arc<Pages>>>,
    /// `Bearer TOKEN`, the `Authorization` a scrape must send, if any.
    token: Option<String>,
    /// On the loopback without a token: `Host` must name the loopback (DNS rebinding).
    loopback_only: bool,
}

/// The latest page at `GET /metrics`, 403 for a `Host` that is not the loopback's (when
/// there is no token), 401 without the token, 404 elsewhere, 405 for other methods.
fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", any(metrics))
        .fallback(|| async {
            text_response(
                StatusCode::NOT_FOUND,
                None,
                "only /metrics is served here\n".into(),
            )
        })
        .with_state(shared)
}

/// `/metrics`, any method.
async fn metrics(
    State(shared): State<Arc<Shared>>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    if shared.loopback_only && !host.is_some_and(loopback_host) {
        return text_response(
            StatusCode::FORBIDDEN,
            None,
            "this exporter answers requests for the loopback only (Host)\n".into(),
        );
    }
    let authorized = shared.token.as_deref().is_none_or(|expected| {
        headers
            .get(header::AUTHORIZATION)
            .is_some_and(|v| same(v.as_bytes(), expected.as_bytes()))
    });
    if !authorized {
        text_response(
            StatusCode::UNAUTHORIZED,
            Some((header::WWW_AUTHENTICATE, "Bearer")),
            "missing or wrong 'Authorization: Bearer' token\n".into(),
        )
    } else if method != Method::GET && method != Method::HEAD {
        text_response(
            StatusCode::METHOD_NOT_ALLOWED,
            Some((header::ALLOW, "GET, HEAD")),
            "GET only\n".into(),
        )
    } else {
        let pages = Arc::clone(&shared.page.lock().unwrap_or_else(|e| e.into_inner()));
        match accepts_openmetrics(&headers) {
            true => {
                let mut response = text_response(StatusCode::OK, None, pages.openmetrics.clone());
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static(belier_outputs::text::OPENMETRICS_TYPE),
                );
                response
            }
            false => text_response(StatusCode::OK, None, pages.text.clone()),
        }
    }
}

/// Whether the scrape's `Accept` names OpenMetrics' text format (with a weight above 0).
fn accepts_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("");
            let refused = parts.any(|p| p.replace(' ', "") == "q=0" || p == "q=0.0");
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
}

fn text_response(
    status: StatusCode,
    extra: Option<(HeaderName, &'static str)>,
    body: String,
) -> Response {
    let mut response = (
        status,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response();
    if let Some((name, value)) = extra {
        response
            .headers_mut()
            .insert(name, axum::http::HeaderValue::from_static(value));
    }
    response
}

/// The URL as a label: without user, password or query string, which may carry secrets.
fn public_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => String::new(),
    }
}

/// `figures` in Prometheus' text exposition format (0.0.4), without `belier_run_info`: the
/// outputs crate's families, so the page and every `--metrics-out` show the same series.
#[cfg(test)]
pub fn render(figures: &Figures) -> String {
    belier_outputs::text::render(&belier_outputs::families(figures), &[])
}

#[cfg(test)]
mod tests;
