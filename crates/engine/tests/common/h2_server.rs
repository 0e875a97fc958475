//! The frame of the HTTP/2 servers the engine's tests write with h2's server API: a listener on
//! 127.0.0.1, over plain TCP (prior-knowledge h2c) or TLS with ALPN h2 and a fresh certificate,
//! that counts the connections it accepts and hands each to the test's own async handler.
//! What a connection is served, and what is counted of its requests, is the test's.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};

/// An accepted connection, plain or TLS, as the handler gets it.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// A server whose connections share the state `S` (the test's own counts).
pub struct H2Server<S> {
    pub addr: SocketAddr,
    pub state: Arc<S>,
    connections: Arc<AtomicU64>,
    /// Dropping the server drops its runtime, which closes the listener and its connections.
    _runtime: tokio::runtime::Runtime,
}

impl<S: Default + Send + Sync + 'static> H2Server<S> {
    /// Listens over plain TCP and calls `serve` on every connection with the shared state.
    pub fn listen<F, Fut>(serve: F) -> H2Server<S>
    where
        F: Fn(Box<dyn Io>, Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self::listen_with(None, serve)
    }

    /// Listens over TLS with a fresh certificate for `localhost` and ALPN h2; returns the server
    /// and its CA (PEM).
    pub fn listen_tls<F, Fut>(serve: F) -> (H2Server<S>, String)
    where
        F: Fn(Box<dyn Io>, Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let (tls, ca) = belier_testserver::TlsConfig::self_signed(&["localhost"]);
        let chain = CertificateDer::pem_slice_iter(tls.cert_chain_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(tls.key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        (Self::listen_with(Some(acceptor), serve), ca)
    }

    fn listen_with<F, Fut>(tls: Option<tokio_rustls::TlsAcceptor>, serve: F) -> H2Server<S>
    where
        F: Fn(Box<dyn Io>, Arc<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(S::default());
        let connections = Arc::new(AtomicU64::new(0));
        let (s, c) = (Arc::clone(&state), Arc::clone(&connections));
        let serve = Arc::new(serve);
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                // Counted on accepting, before any TLS handshake.
                c.fetch_add(1, Ordering::SeqCst);
                // As servers do (Go's net, nginx): a stream's small frames go out when
                // written, not once the one before is acknowledged (Nagle).
                let _ = tcp.set_nodelay(true);
                let s = Arc::clone(&s);
                match tls.clone() {
                    None => {
                        tokio::spawn(serve(Box::new(tcp), s));
                    }
                    Some(acceptor) => {
                        let serve = Arc::clone(&serve);
                        tokio::spawn(async move {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve(Box::new(stream), s).await;
                            }
                        });
                    }
                }
            }
        });
        H2Server {
            addr,
            state,
            connections,
            _runtime: runtime,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}
