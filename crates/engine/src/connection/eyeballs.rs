//! Happy eyeballs between IPv4 and IPv6, for a name that has both.
//!
//! RFC 8305 asks a client to sort a name's addresses interleaving the families, start a
//! connection to the first, and after a "Connection Attempt Delay" (250 ms recommended, at
//! least 100 ms) with no answer start the next one while the first goes on, the first to
//! connect winning and the others cancelled; a failed attempt starts the next at once. It also
//! asks to wait a little for the AAAA answer (Resolution Delay), and to remember which family
//! works.
//!
//! belier does less, on purpose: the address the run's policy picked is tried first, and
//! after [`ATTEMPT_DELAY`] (or at once, when it fails) one address of the other family races
//! it. A load test wants each connection on the address its policy chose, so no reordering and
//! no memory of the faster family: the fallback only keeps a family that does not answer from
//! stalling every connect until the timeout. Lookups are made before the run, so there is no
//! resolution delay to honour.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use super::Failure;

/// How long the picked address has to connect before the other family is tried beside it
/// (RFC 8305's recommended Connection Attempt Delay).
pub(crate) const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// Connects to `first` with `attempt`, racing `other` (the other family) from
/// [`ATTEMPT_DELAY`] on, or at once if `first` fails; the first to connect wins. When both
/// fail, `first`'s failure is the one counted.
pub(crate) async fn connect<S, F, A>(
    first: SocketAddr,
    other: SocketAddr,
    attempt: A,
) -> Result<S, Failure>
where
    A: Fn(SocketAddr) -> F,
    F: Future<Output = Result<S, Failure>>,
{
    let primary = attempt(first);
    tokio::pin!(primary);
    let first_failure = tokio::select! {
        done = &mut primary => match done {
            Ok(socket) => return Ok(socket),
            Err(failure) => failure,
        },
        () = tokio::time::sleep(ATTEMPT_DELAY) => {
            let fallback = attempt(other);
            tokio::pin!(fallback);
            tokio::select! {
                done = &mut primary => match done {
                    Ok(socket) => return Ok(socket),
                    Err(failure) => return fallback.await.map_err(|_| failure),
                },
                done = &mut fallback => match done {
                    Ok(socket) => return Ok(socket),
                    Err(_) => return primary.await,
                },
            }
        }
    };
    attempt(other).await.map_err(|_| first_failure)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv6Addr, TcpListener, TcpStream};

    use socket2::{Domain, Socket as Raw, Type};

    use super::*;

    /// The address the connection went to.
    fn peer(stream: &tokio::net::TcpStream) -> SocketAddr {
        stream.peer_addr().unwrap()
    }

    async fn tcp(addr: SocketAddr) -> Result<tokio::net::TcpStream, Failure> {
        tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| Failure::io(e, true))
    }

    /// A listener on ::1 that never accepts, its queue full: the kernel drops further SYNs,
    /// so a connect to it stalls, as to a family that does not route. Keeps its fillers.
    fn stalling_v6() -> (Raw, Vec<TcpStream>, SocketAddr) {
        let raw = Raw::new(Domain::IPV6, Type::STREAM, None).unwrap();
        raw.bind(&SocketAddr::from((Ipv6Addr::LOCALHOST, 0)).into())
            .unwrap();
        raw.listen(0).unwrap();
        let addr = raw.local_addr().unwrap().as_socket().unwrap();
        let mut fillers = Vec::new();
        for _ in 0..8 {
            match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(s) => fillers.push(s),
                Err(_) => return (raw, fillers, addr),
            }
        }
        panic!("the listen queue of {addr} never filled");
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_stalled_family_falls_back_to_the_other_after_the_delay() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let (_stalled, _fillers, v6) = stalling_v6();
        let started = std::time::Instant::now();
        let socket = block_on(connect(v6, v4.local_addr().unwrap(), tcp)).unwrap();
        assert_eq!(peer(&socket), v4.local_addr().unwrap());
        assert!(started.elapsed() >= ATTEMPT_DELAY, "not before the delay");
    }

    #[test]
    fn a_refused_family_falls_back_at_once_and_both_refused_fail() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let refused = {
            let l = TcpListener::bind("[::1]:0").unwrap();
            l.local_addr().unwrap()
        };
        let socket = block_on(connect(refused, v4.local_addr().unwrap(), tcp)).unwrap();
        assert_eq!(peer(&socket), v4.local_addr().unwrap());
        let v4_refused = v4.local_addr().unwrap();
        drop(v4);
        let failure = block_on(connect(refused, v4_refused, tcp)).err().unwrap();
        assert_eq!(failure.kind, belier_stats::ErrorKind::ConnectRefused);
    }

    #[test]
    fn the_picked_address_wins_when_it_answers() {
        let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
        let v6 = TcpListener::bind("[::1]:0").unwrap();
        let socket = block_on(connect(
            v6.local_addr().unwrap(),
            v4.local_addr().unwrap(),
            tcp,
        ))
        .unwrap();
        assert_eq!(peer(&socket), v6.local_addr().unwrap());
    }
}
