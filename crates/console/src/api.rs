//! The console's routes: the page, its script and styles, the JSON API under `/api/` (see
//! the book's docs/src/reference/api.md) and the finished runs' files. Every request passes
//! the [`Guard`] first.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::stream::Stream;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::guard::Guard;
use crate::hub::{Hub, Unit};
use crate::launcher::{Form, Launcher};
use crate::page;

/// How often an idle event stream sends a comment, so proxies and browsers keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) hub: Arc<Hub>,
    pub(crate) guard: Guard,
    pub(crate) launcher: Option<Arc<dyn Launcher>>,
}

type S = State<Arc<Shared>>;

/// The console's router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(index))
        .route(
            "/console.js",
            get(|| async { asset("text/javascript", page::SCRIPT) }),
        )
        .route(
            "/console.css",
            get(|| async { asset("text/css", page::STYLE) }),
        )
        .route("/api/console", get(console))
        .route("/api/run", get(run))
        .route("/api/stream", get(stream))
        .route("/api/runs", get(runs).post(launch))
        .route("/api/run/rate", post(rate))
        .route("/api/run/users", post(users))
        .route("/api/run/pause", post(pause))
        .route("/api/run/resume", post(resume))
        .route("/api/run/stop", post(stop))
        .route("/runs/{id}/report.html", get(report))
        .route("/runs/{id}/results.jsonl", get(results))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .layer(middleware::map_response(unframed))
        .with_state(shared)
}

/// No page of another site may show the console in a frame (where a click could be made to
/// land on its controls): every answer, refusals included, says so to old and new browsers.
async fn unframed(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        axum::http::HeaderValue::from_static("frame-ancestors 'none'"),
    );
    headers.insert(
        header::X_FRAME_OPTIONS,
        axum::http::HeaderValue::from_static("DENY"),
    );
    response
}

/// Host on every request; the token on every request but the page opened with `?token=`;
/// the origin on every POST.
async fn guard(State(s): S, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if let Err(refused) = s.guard.host(headers) {
        return refused.into_response();
    }
    let opening = request.uri().path() == "/" && token_in(request.uri().query()).is_some();
    if !opening && !s.guard.authorized(headers) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: open the console at the URL printed at start (with \
             ?token=), or send 'Authorization: Bearer TOKEN'",
        );
    }
    if request.method() == Method::POST {
        if let Err(refused) = s.guard.same_origin(headers) {
            return refused.into_response();
        }
    }
    next.run(request).await
}

fn token_in(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|p| p.strip_prefix("token="))
}

/// The page; opened with the right `?token=`, it sets the cookie and sends the browser on to
/// the address without the token (out of the history and the address bar).
async fn index(State(s): S, RawQuery(query): RawQuery) -> Response {
    match token_in(query.as_deref()) {
        Some(t) if s.guard.matches(t) => (
            StatusCode::SEE_OTHER,
            [
                (
                    header::SET_COOKIE,
                    format!("{}={t}; Path=/; HttpOnly; SameSite=Strict", s.guard.cookie),
                ),
                (header::LOCATION, "/".to_string()),
            ],
        )
            .into_response(),
        Some(_) if s.guard.token.is_some() => error(StatusCode::UNAUTHORIZED, "wrong token"),
        _ => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            page::HTML,
        )
            .into_response(),
    }
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, json_body(&json!({ "error": message }))).into_response()
}

fn json_body(v: &Value) -> ([(header::HeaderName, &'static str); 2], String) {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        v.to_string(),
    )
}

/// `GET /api/console`: what this console can do.
async fn console(State(s): S) -> Response {
    let plans = s.launcher.as_ref().map(|l| l.plans()).unwrap_or_default();
    json_body(&json!({
        "mode": if s.launcher.is_some() { "console" } else { "run" },
        "plans": plans,
    }))
    .into_response()
}

/// `GET /api/run`: the latest run with its intervals, or `null`.
async fn run(State(s): S) -> Response {
    json_body(&s.hub.current()).into_response()
}

/// `GET /api/runs`: this console's runs, newest first.
async fn runs(State(s): S) -> Response {
    json_body(&s.hub.list()).into_response()
}

/// `GET /api/stream`: Server-Sent Events; `interval` once per settled interval, `begin`,
/// `steering` and `end` as they happen.
async fn stream(State(s): S) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let events = futures_util::stream::unfold(s.hub.subscribe(), |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(e) => {
                    let (name, data) = e.split_once('\n').unwrap_or(("message", &e));
                    let event = Event::default().event(name).data(data);
                    return Some((Ok(event), rx));
                }
                // A slow page skips what it missed; its next interval brings the totals.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

/// `POST /api/runs`: starts a run from the form (`belier web` only).
async fn launch(State(s): S, body: Bytes) -> Response {
    let Some(launcher) = &s.launcher else {
        return error(
            StatusCode::NOT_FOUND,
            "this console watches one run: start another with belier web",
        );
    };
    let form: Form = match serde_json::from_slice(&body) {
        Ok(f) => f,
        Err(e) => return error(StatusCode::BAD_REQUEST, &format!("not a run form: {e}")),
    };
    if !s.hub.reserve() {
        return error(
            StatusCode::CONFLICT,
            "a run is in progress: stop it before starting another",
        );
    }
    match launcher.launch(form) {
        Ok(()) => (StatusCode::ACCEPTED, json_body(&json!({"started": true}))).into_response(),
        Err(message) => {
            s.hub.release();
            error(StatusCode::BAD_REQUEST, &message)
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rate {
    rate: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Users {
    #[serde(alias = "connections")]
    users: f64,
}

/// `POST /api/run/rate {"rate": R}`.
async fn rate(State(s): S, body: Bytes) -> Response {
    match serde_json::from_slice::<Rate>(&body) {
        Ok(r) => set_level(&s, r.rate, true),
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            &format!("expected {{\"rate\": R}}: {e}"),
        ),
    }
}

/// `POST /api/run/users {"users": N}` (or `{"connections": N}`).
async fn users(State(s): S, body: Bytes) -> Response {
    match serde_json::from_slice::<Users>(&body) {
        Ok(u) => set_level(&s, u.users, false),
        Err(e) => error(
            StatusCode::BAD_REQUEST,
            &format!("expected {{\"users\": N}}: {e}"),
        ),
    }
}

fn set_level(s: &Shared, level: f64, rate: bool) -> Response {
    let outcome = s.hub.steer(|control, unit| {
        if unit.is_rate() != rate {
            let (asked, use_) = if rate {
                ("a rate", "/api/run/users")
            } else {
                ("users", "/api/run/rate")
            };
            return Err((
                StatusCode::CONFLICT,
                format!(
                    "this run's level is {}, not {asked}: use {use_}",
                    name(unit)
                ),
            ));
        }
        control
            .set_level(level)
            .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))
    });
    answer(s, outcome)
}

fn name(unit: Unit) -> &'static str {
    match unit {
        Unit::Rate => "a rate of requests",
        Unit::Iterations => "a rate of iterations",
        Unit::Connections => "connections",
        Unit::Users => "users",
    }
}

async fn pause(State(s): S) -> Response {
    let outcome = s.hub.steer(|c, _| {
        c.pause();
        Ok(())
    });
    answer(&s, outcome)
}

async fn resume(State(s): S) -> Response {
    let outcome = s.hub.steer(|c, _| {
        c.resume();
        Ok(())
    });
    answer(&s, outcome)
}

async fn stop(State(s): S) -> Response {
    let outcome = s.hub.stop().then_some(Ok(()));
    answer(&s, outcome)
}

/// 200 with the run's steering, or why not: 409 when no run is in progress.
fn answer(s: &Shared, outcome: Option<Result<(), (StatusCode, String)>>) -> Response {
    match outcome {
        None => error(StatusCode::CONFLICT, "no run in progress"),
        Some(Err((status, message))) => error(status, &message),
        Some(Ok(())) => {
            s.hub.steered();
            json_body(&s.hub.current()["steering"]).into_response()
        }
    }
}

/// `GET /runs/ID/report.html`: the run's HTML report, once it has ended.
async fn report(State(s): S, Path(id): Path<u64>) -> Response {
    let html = match s.hub.report(id) {
        Some(Ok(html)) => html.into_bytes(),
        Some(Err(path)) => match tokio::fs::read(&path).await {
            Ok(bytes) => bytes,
            Err(e) => {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("cannot read the report: {e}"),
                )
            }
        },
        None => return error(StatusCode::NOT_FOUND, "no such run, or it has not ended"),
    };
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

/// `GET /runs/ID/results.jsonl`: the run's results file, once it has ended. The path is the
/// one the run wrote, never one from the request.
async fn results(State(s): S, Path(id): Path<u64>, _headers: HeaderMap) -> Response {
    let Some(path) = s.hub.results(id) else {
        return error(
            StatusCode::NOT_FOUND,
            "no such run, or it kept no results file",
        );
    };
    match tokio::fs::read(&path).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, "application/x-ndjson".to_string()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"belier-run-{id}.jsonl\""),
                ),
            ],
            bytes,
        )
            .into_response(),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot read the results file: {e}"),
        ),
    }
}
