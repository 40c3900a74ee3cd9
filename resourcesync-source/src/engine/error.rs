//! Why a run published nothing.

use std::io;

use resourcesync_model::Uri;
use resourcesync_package::PackageError;
use resourcesync_xml::WriteError;

use crate::directory::DirectoryError;
use crate::shown::escaped;
use crate::store::StoreError;

/// Why a [`Publisher`](crate::Publisher) run published nothing. The publication last
/// committed is as it was in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The store could not read, write or switch: another publisher holds it, it is
    /// something no publisher made, or a file could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The dumps are on and the run was given no content to package: the caller's
    /// mistake ([`Publisher::publish_snapshot_with`](crate::Publisher::publish_snapshot_with)).
    #[error(
        "the dumps need the resources' content: publish with publish_snapshot_with or publish_changes_with"
    )]
    NoContent,
    /// A resource's content, which a dump packages, could not be read.
    #[error("{}: content: {source}", escaped(uri.as_str()))]
    Content {
        /// The resource.
        uri: Uri,
        /// Why.
        source: io::Error,
    },
    /// The application wrote (or removed) a file under a name the documents or the state
    /// have ([`Transaction::write`](crate::Transaction::write)): the caller's mistake.
    #[error("{}: the publication's own name, not the application's", escaped(name))]
    Reserved {
        /// The name.
        name: String,
    },
    /// A resource the application gave cannot be published as it is.
    #[error("{}: {reason}", escaped(uri.as_str()))]
    Resource {
        /// The resource.
        uri: Uri,
        /// What is wrong.
        reason: &'static str,
    },
    /// A document's name makes no URI under the base.
    #[error("{name}: makes no URI under the base: {error}")]
    Name {
        /// The name, relative to the base.
        name: String,
        /// Why.
        error: resourcesync_model::UriError,
    },
    /// The base URL cannot be a directory's base, or a name makes no URI under it.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// A document could not be written, or would break a rule of the standard.
    #[error("{document}: {source}")]
    Document {
        /// The document's name in the publication.
        document: String,
        /// Why.
        source: WriteError,
    },
    /// A dump package could not be written.
    #[error("{document}: {source}")]
    Package {
        /// The dump's name in the publication.
        document: String,
        /// Why.
        source: PackageError,
    },
    /// What the last run left (its state, or the open Change List it extends) cannot be
    /// read.
    #[error("{document}: unreadable state of the last run: {reason}")]
    State {
        /// The document's name in the publication.
        document: String,
        /// Why.
        reason: String,
    },
}
