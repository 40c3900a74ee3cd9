//! What the client refuses of its caller: [`Misuse`].

use crate::event::ChangeId;
use crate::request::RequestId;

/// An input that breaks the contract of [`Client`](crate::Client): a bug of the driver,
/// not of the Source. Every `handle_*` input that names a request and every confirmation
/// ([`Client::applied`](crate::Client::applied), [`Client::failed`](crate::Client::failed))
/// returns it.
///
/// What it leaves behind: nothing. The input is refused whole, before it changes
/// anything: the client's state, its events and its requests are as they were before the
/// call, so a driver may log it and go on (or stop: it has a bug).
///
/// A correct driver never sees one. In particular, the inputs still on their way when the
/// client ended a request ([`Event::Cancel`](crate::Event::Cancel), or a response with an
/// error status, whose body the client does not read) are accepted and ignored until
/// that request's end or failure: an asynchronous driver may deliver them after the
/// client's decision without a misuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// This client never issued the request (the id is another client's).
    #[error("{0} was not issued by this client")]
    UnknownRequest(RequestId),
    /// The request is over: its end ([`handle_end`](crate::Client::handle_end)) or its
    /// failure ([`handle_failure`](crate::Client::handle_failure)) was handed over already.
    #[error("{0} is over: its end or its failure was handed over already")]
    RequestOver(RequestId),
    /// A chunk of the body, or its end, before the response head
    /// ([`handle_response`](crate::Client::handle_response)): the client cannot tell a
    /// body from an error page without the status.
    #[error("{0}: a body before the response head")]
    BodyBeforeResponse(RequestId),
    /// A second response head for one request.
    #[error("{0}: a second response head")]
    ResponseTwice(RequestId),
    /// Digests ([`handle_digests`](crate::Client::handle_digests)) for a request whose
    /// body is not a resource's or a package's, or whose body was handed over in part
    /// already.
    #[error(
        "{0}: digests for a body that is not a resource's or a package's, or was handed in part"
    )]
    NotDigestible(RequestId),
    /// A manifest for a request whose body is no package waiting for one: no
    /// [`Event::Package`](crate::Event::Package) named it, or its manifest was handed over
    /// already.
    #[error("{0}: no package waits for its manifest")]
    NoPackage(RequestId),
    /// This client never decided the change.
    #[error("{0} was not decided by this client")]
    UnknownChange(ChangeId),
    /// The change is settled already: applied, failed (by the caller, or by the client
    /// when its fetch failed), or decided in a dry run (which settles it at once).
    #[error("{0} is settled already")]
    ChangeSettled(ChangeId),
    /// No [`Event::Store`](crate::Event::Store), [`Event::Extract`](crate::Event::Extract)
    /// or [`Event::Delete`](crate::Event::Delete) named the change yet: its resource is
    /// still being fetched, and there is nothing to confirm.
    #[error("{0} is not instructed yet: nothing to confirm")]
    NotInstructed(ChangeId),
    /// A record to keep for a deletion: a deleted resource is not held.
    #[error("{0} is a deletion: nothing is held to record")]
    HeldForDeletion(ChangeId),
}
