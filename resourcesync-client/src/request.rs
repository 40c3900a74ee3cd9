//! The requests the client asks its caller to make.

use std::fmt;

use resourcesync_model::Uri;
use serde::Serialize;

use crate::event::ChangeId;
use crate::local_path::LocalPath;

/// Names one request from [`Client::poll_request`](crate::Client::poll_request) to its
/// last input. `Copy`: a driver keeps it beside its own handle of the exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct RequestId(pub(crate) u64);

impl RequestId {
    /// The id's number, which [`Display`](fmt::Display) writes after `request `: unique
    /// among a client's requests, for a driver that names things after them (a body's
    /// temporary file) without formatting the whole text.
    ///
    /// ```
    /// # use resourcesync_client::RequestId;
    /// fn temporary_name(id: RequestId) -> String {
    ///     format!("request-{}", id.number())
    /// }
    /// ```
    pub fn number(&self) -> u64 {
        self.0
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {}", self.0)
    }
}

/// What a request is for, so that the caller knows what to do with the body.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Purpose {
    /// Discovery: a well-known URI, a robots.txt, a Source's home page. Stream the body
    /// to the client.
    Discovery,
    /// A ResourceSync document. Stream the body to the client.
    Document,
    /// A resource: keep the body as it arrives (a temporary file, not yet at `path`) and
    /// stream it to the client too, which checks it and then says
    /// [`Event::Store`](crate::Event::Store) or [`Event::Discard`](crate::Event::Discard).
    Resource {
        /// The change the resource is for.
        change: ChangeId,
        /// Where it will go, relative to the destination.
        path: LocalPath,
    },
    /// A package of a Resource Dump or Change Dump: keep the body in a file (it is read
    /// by seeking) and stream it to the client too, which checks it and then says
    /// [`Event::Package`](crate::Event::Package).
    Package,
}

/// A request to make: an HTTP GET, built with the `http` crate's types.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request {
    /// Names the request in the inputs that answer it.
    pub id: RequestId,
    /// The request; its body is empty. Do not follow redirects: hand the 3xx response
    /// to the client, which checks the target against its policy (or, if your stack
    /// follows them, report each with [`Client::handle_redirect`](crate::Client::handle_redirect)).
    pub http: http::Request<()>,
    /// The URI, as the client knows it.
    pub uri: Uri,
    /// What it is for.
    pub purpose: Purpose,
}
