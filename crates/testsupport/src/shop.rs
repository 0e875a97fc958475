//! A small shop API on 127.0.0.1 for the import and recorder tests: `POST /api/login` with
//! the right JSON body issues a fresh token, `/api/items` and `/api/items/ID` answer only with
//! `Authorization: Bearer` and a token it issued (else 401), `/` is a page, and any other path
//! echoes 200. It records every request it got (method, target, headers, body), so a test
//! counts on the server's side what a plan or a proxy sent.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// The user and password the login accepts.
pub const USER: &str = "ann";
pub const PASSWORD: &str = "correct horse";

/// A request the shop got.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The status the shop answered.
    pub status: u16,
}

impl Seen {
    /// The first header of that name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Books {
    seen: Vec<Seen>,
    tokens: Vec<String>,
}

/// The running shop; stops when dropped.
pub struct Shop {
    pub addr: SocketAddr,
    books: Arc<Mutex<Books>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Shop {
    pub fn start() -> Shop {
        let books = Arc::new(Mutex::new(Books::default()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = Arc::clone(&books);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(handle).with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Shop {
            addr,
            books,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.books.lock().unwrap().seen.clone()
    }

    /// Tokens issued so far.
    pub fn tokens(&self) -> Vec<String> {
        self.books.lock().unwrap().tokens.clone()
    }
}

impl Drop for Shop {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn handle(State(books): State<Arc<Mutex<Books>>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, 1 << 20).await.unwrap_or_default().to_vec();
    let target = parts
        .uri
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let path = parts.uri.path().to_string();
    let headers: Vec<(String, String)> = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut books = books.lock().unwrap();
    let bearer = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let authorized = bearer.is_some_and(|t| books.tokens.contains(&t));
    let method = parts.method.as_str().to_string();
    let (status, content_type, text) = match (method.as_str(), path.as_str()) {
        ("POST", "/api/login") => {
            let doc: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            if doc["user"] == USER && doc["password"] == PASSWORD {
                let token = format!("srv-{}-{:08x}", books.tokens.len(), fastish(&books.seen));
                books.tokens.push(token.clone());
                (
                    200,
                    "application/json",
                    serde_json::json!({"token": token, "user": {"name": USER, "id": 3}})
                        .to_string(),
                )
            } else {
                (
                    401,
                    "application/json",
                    r#"{"error":"bad credentials"}"#.to_string(),
                )
            }
        }
        ("GET", "/api/items") if authorized => (
            200,
            "application/json",
            r#"{"items":[{"id":42,"name":"lamp"},{"id":43,"name":"chair"}]}"#.to_string(),
        ),
        ("GET", p) if p.starts_with("/api/items/") && authorized => (
            200,
            "application/json",
            format!(r#"{{"id":{},"name":"lamp"}}"#, &p["/api/items/".len()..]),
        ),
        (_, p) if p.starts_with("/api/items") => (
            401,
            "application/json",
            r#"{"error":"no token"}"#.to_string(),
        ),
        ("GET", "/") => (
            200,
            "text/html",
            "<html><body>shop</body></html>".to_string(),
        ),
        _ => (200, "text/plain", "ok".to_string()),
    };
    books.seen.push(Seen {
        method,
        target,
        headers,
        body,
        status,
    });
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", content_type)],
        Body::from(text),
    )
        .into_response()
}

/// A value that differs from one login to the next and from any recorded token.
fn fastish(seen: &[Seen]) -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    nanos ^ (seen.len() as u32).wrapping_mul(2_654_435_761)
}
