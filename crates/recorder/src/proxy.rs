//! The proxy: accepts clients, checks their token, opens `CONNECT` tunnels (TLS terminated with
//! a minted certificate), forwards each request to its origin and records the exchange.

use std::convert::Infallible;
use std::sync::Arc;

use base64::Engine as _;
use belier_import::{
    is_dropped_on_import, is_hop_by_hop, DraftRequest, Exchange, Recorded, Response,
};
use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::book::Book;
use crate::ca::Authority;
use crate::upstream::Upstream;

/// Longest request body forwarded.
const MAX_BODY: usize = 64 << 20;
/// Longest response body kept for the plan's correlation (the whole body is forwarded).
const MAX_RECORDED_BODY: usize = 1 << 20;

type Reply = hyper::Response<Full<Bytes>>;

pub(crate) struct Proxy {
    pub token: Option<String>,
    pub authority: Arc<Authority>,
    pub upstream: Arc<Upstream>,
    pub book: Arc<Book>,
}

/// Where a tunnel leads: requests inside it go to `https://authority`.
#[derive(Clone)]
struct Tunnel {
    authority: String,
}

pub(crate) async fn serve(
    listener: std::net::TcpListener,
    proxy: Arc<Proxy>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else { continue };
        let proxy = Arc::clone(&proxy);
        tokio::spawn(serve_connection(stream, proxy, None));
    }
}

async fn serve_connection<S>(stream: S, proxy: Arc<Proxy>, tunnel: Option<Tunnel>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let proxy = Arc::clone(&proxy);
        let tunnel = tunnel.clone();
        async move { Ok::<_, Infallible>(handle(proxy, tunnel, request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

fn text_reply(status: StatusCode, text: &str) -> Reply {
    let mut reply =
        hyper::Response::new(Full::new(Bytes::from(format!("belier record: {text}\n"))));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    reply
}

/// Whether the request carries the token: `Bearer TOKEN`, or Basic with TOKEN as password.
fn authorized(token: &str, request: &Request<Incoming>) -> bool {
    let Some(value) = request
        .headers()
        .get(header::PROXY_AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let presented = if let Some(bearer) = value.strip_prefix("Bearer ") {
        bearer.trim().to_string()
    } else if let Some(basic) = value.strip_prefix("Basic ") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(basic.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .unwrap_or_default();
        decoded
            .split_once(':')
            .map(|(_, p)| p.to_string())
            .unwrap_or_default()
    } else {
        return false;
    };
    constant_time_eq(presented.as_bytes(), token.as_bytes())
}

/// Compares without stopping at the first difference, so timing tells nothing of the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn handle(proxy: Arc<Proxy>, tunnel: Option<Tunnel>, request: Request<Incoming>) -> Reply {
    if tunnel.is_none() {
        if let Some(token) = &proxy.token {
            if !authorized(token, &request) {
                let mut reply = text_reply(
                    StatusCode::PROXY_AUTHENTICATION_REQUIRED,
                    "this recorder needs its token in Proxy-Authorization",
                );
                reply.headers_mut().insert(
                    header::PROXY_AUTHENTICATE,
                    http::HeaderValue::from_static("Basic realm=\"belier record\""),
                );
                return reply;
            }
        }
    }
    if request.method() == Method::CONNECT {
        return connect(proxy, request);
    }
    let (https, authority) = match &tunnel {
        Some(t) => (true, t.authority.clone()),
        None => {
            let uri = request.uri();
            match (uri.scheme_str(), uri.authority()) {
                (Some("http"), Some(a)) => (false, a.to_string()),
                _ => {
                    return text_reply(
                        StatusCode::BAD_REQUEST,
                        "this is a proxy: send absolute http:// URLs (curl --proxy), and https through CONNECT",
                    )
                }
            }
        }
    };
    forward(&proxy, https, &authority, request).await
}

/// Answers `CONNECT host:port` and serves the tunnel's HTTPS with a minted certificate.
fn connect(proxy: Arc<Proxy>, request: Request<Incoming>) -> Reply {
    let Some(authority) = request.uri().authority().map(|a| a.to_string()) else {
        return text_reply(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority_host(&authority).to_string();
    let config = match proxy
        .authority
        .server_config(host.trim_start_matches('[').trim_end_matches(']'))
    {
        Ok(c) => c,
        Err(e) => return text_reply(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(request).await else {
            return;
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let Ok(tls) = acceptor.accept(TokioIo::new(upgraded)).await else {
            return;
        };
        serve_connection(tls, proxy, Some(Tunnel { authority })).await;
    });
    hyper::Response::new(Full::new(Bytes::new()))
}

/// The host of `host:port` (an IPv6 literal keeps its brackets).
fn authority_host(authority: &str) -> &str {
    match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => &authority[..i],
        _ => authority,
    }
}

async fn forward(proxy: &Proxy, https: bool, authority: &str, request: Request<Incoming>) -> Reply {
    let start = proxy.book.now();
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return text_reply(
                StatusCode::BAD_REQUEST,
                &format!("reading the request body: {e}"),
            )
        }
    };
    let scheme = if https { "https" } else { "http" };
    let Ok(url) = url::Url::parse(&format!("{scheme}://{authority}/")) else {
        return text_reply(
            StatusCode::BAD_REQUEST,
            &format!("`{authority}` is not a host"),
        );
    };
    let host = url.host_str().unwrap_or_default().to_string();
    let port = url
        .port_or_known_default()
        .unwrap_or(if https { 443 } else { 80 });
    let target = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.as_str().to_string());

    let mut upstream = Request::builder().method(parts.method.clone()).uri(&target);
    for (name, value) in &parts.headers {
        // Uncompressed answers, so tokens in them can be read (the plan leaves
        // Accept-Encoding out for the same reason); the body is here whole already, so no
        // 100 Continue is worth waiting for.
        let skipped = [header::HOST, header::ACCEPT_ENCODING, header::EXPECT];
        if !is_hop_by_hop(name.as_str()) && !skipped.contains(name) {
            upstream = upstream.header(name, value);
        }
    }
    upstream = upstream.header(header::HOST, authority);
    let Ok(upstream) = upstream.body(Full::new(body.clone())) else {
        return text_reply(StatusCode::BAD_REQUEST, "the request cannot be sent on");
    };
    let (answer, answer_body) = match proxy.upstream.send(https, &host, port, upstream).await {
        Ok(a) => a,
        Err(e) => return text_reply(StatusCode::BAD_GATEWAY, &e),
    };
    let took = proxy.book.now().saturating_sub(start);

    let recorded = record(&parts, &target, &body, &answer, &answer_body).map(|exchange| Recorded {
        start,
        took,
        exchange,
    });
    let host_port = format!("{host}:{port}");
    proxy.book.add(
        url.origin().ascii_serialization(),
        &host,
        &host_port,
        recorded,
    );

    let mut reply = hyper::Response::new(Full::new(answer_body));
    *reply.status_mut() = answer.status;
    for (name, value) in &answer.headers {
        if !is_hop_by_hop(name.as_str()) && name != header::CONTENT_LENGTH {
            reply.headers_mut().append(name, value.clone());
        }
    }
    reply
}

/// The exchange as a step and its response, or `None` when it cannot be a plan's step (a body
/// that is not text, or text with `{{`, the template mark; a header a plan cannot hold).
fn record(
    parts: &http::request::Parts,
    target: &str,
    body: &Bytes,
    answer: &http::response::Parts,
    answer_body: &Bytes,
) -> Option<Exchange> {
    let text = |v: &[u8]| std::str::from_utf8(v).ok().map(str::to_string);
    let mut headers = Vec::new();
    for (name, value) in &parts.headers {
        if is_dropped_on_import(name.as_str()) {
            continue;
        }
        headers.push((name.as_str().to_string(), text(value.as_bytes())?));
    }
    let body = if body.is_empty() {
        None
    } else {
        Some(text(body)?)
    };
    let templated = |t: &str| t.contains("{{");
    if templated(target)
        || headers.iter().any(|(_, v)| templated(v))
        || body.as_deref().is_some_and(templated)
    {
        return None;
    }
    let request = DraftRequest {
        method: parts.method.as_str().to_string(),
        origin: None, // the book sets it, from the request line
        path: target.to_string(),
        headers,
        body,
        body_file: None,
        extract: Vec::new(),
    };
    // hyper lets through what a plan cannot hold (a header name of 1,000 characters): such an
    // exchange is forwarded, not recorded.
    if request.problem().is_some() {
        return None;
    }
    let response_headers = answer
        .headers
        .iter()
        .filter_map(|(n, v)| Some((n.as_str().to_string(), text(v.as_bytes())?)))
        .collect();
    let response_body = (answer_body.len() <= MAX_RECORDED_BODY)
        .then(|| text(answer_body))
        .flatten();
    Some(Exchange {
        request,
        response: Response {
            headers: response_headers,
            body: response_body,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_authorities() {
        assert_eq!(authority_host("example.test:443"), "example.test");
        assert_eq!(authority_host("[::1]:8443"), "[::1]");
        assert_eq!(authority_host("[::1]"), "[::1]");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret", b"s3cre"));
        assert!(!constant_time_eq(b"s3cret", b"s3creT"));
    }
}
