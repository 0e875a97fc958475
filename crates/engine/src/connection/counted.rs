//! A stream whose traffic a watcher sees as it goes: the bytes each read brought (with the
//! kernel's receive stamp of that read, when the watcher wants it) and how many were written.
//! An HTTP/2 connection counts and follows its frames through it (`http2::wire::Wire`), a
//! WebSocket counts its bytes. The watcher is shared (`Rc`) with whoever reads the figures:
//! a worker's tasks share one thread.

use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a [`Counted`] stream tells of its traffic.
pub(crate) trait Watch {
    /// Whether reads should ask for their kernel receive stamp.
    fn wants_stamps(&self) -> bool;
    /// A read brought `bytes`, with the stamp of its last segment when asked for and known.
    fn read(&self, bytes: &[u8], stamp: Option<Duration>);
    /// `n` bytes were written.
    fn written(&self, n: u64);
}

/// A stream that may know the kernel's receive stamp of its last read.
pub(crate) trait LastStamp {
    /// The stamp of the last read, since the Unix epoch, if it carried one.
    fn last_stamp(&self) -> Option<Duration>;
}

/// A stream whose traffic `W` sees.
pub(crate) struct Counted<S, W> {
    inner: S,
    watch: Rc<W>,
}

impl<S, W> Counted<S, W> {
    pub(crate) fn new(inner: S, watch: Rc<W>) -> Self {
        Counted { inner, watch }
    }

    /// The stream inside.
    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + LastStamp + Unpin, W: Watch> AsyncRead for Counted<S, W> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let stamp = match this.watch.wants_stamps() {
                true => this.inner.last_stamp(),
                false => None,
            };
            this.watch.read(&buf.filled()[before..], stamp);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin, W: Watch> AsyncWrite for Counted<S, W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            this.watch.written(n as u64);
        }
        polled
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
