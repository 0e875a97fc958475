//! What a task sends its requests on: a connection of its own (HTTP/1.1) or a stream slot on
//! a connection a group of tasks shares (HTTP/2, HTTP/3).

use std::rc::Rc;

use crate::connection::Connection;
use crate::http2::Group;

/// What a connection task (or a scripted user) sends its requests on.
pub(crate) enum Link {
    /// Its own HTTP/1.1 connection, while one is open.
    Http1(Option<Connection>),
    /// A stream slot on a connection the group's slots share.
    Http2(Rc<Group>),
    /// A stream slot on an HTTP/3 connection the group's slots share.
    Http3(Rc<crate::http3::Group>),
}

impl Link {
    /// Whether this link holds its own open HTTP/1.1 connection (HTTP/2 connections are
    /// shared by stream slots and not counted here).
    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Link::Http1(Some(_)))
    }

    /// Whether its requests are streams on a connection others share (HTTP/2, HTTP/3).
    pub(crate) fn is_multiplexed(&self) -> bool {
        !matches!(self, Link::Http1(_))
    }

    /// Another handle on the shared connection of a multiplexed link (`None` for HTTP/1.1).
    pub(crate) fn share(&self) -> Option<Link> {
        match self {
            Link::Http1(_) => None,
            Link::Http2(group) => Some(Link::Http2(Rc::clone(group))),
            Link::Http3(group) => Some(Link::Http3(Rc::clone(group))),
        }
    }

    /// Lets go of the connection (HTTP/1.1) when the task stops sending for a while.
    pub(crate) fn release(&mut self) {
        if let Link::Http1(conn) = self {
            *conn = None;
        }
    }

    pub(crate) fn tls_session(&self) -> Option<String> {
        match self {
            Link::Http1(conn) => conn.as_ref()?.tls_session(),
            Link::Http2(group) => group.tls_session(),
            Link::Http3(group) => group.tls_session(),
        }
    }
}
