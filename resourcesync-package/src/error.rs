//! Errors of writing and reading packages.

use std::io;

use crate::NameError;

/// Why a package could not be written, read, verified or extracted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackageError {
    /// The sink or source failed.
    #[error("IO error: {0}")]
    Io(#[from] io::Error),
    /// The ZIP structure is broken or unsupported.
    #[error("ZIP error: {0}")]
    Zip(#[from] zip::result::ZipError),
    /// The caller asked for something the standard does not allow.
    #[error("{0}")]
    Invalid(String),
    /// A bitstream whose length or a hash differs from the manifest.
    #[error("{0}")]
    Fixity(#[from] crate::FixityError),
    /// A change that comes before an earlier one of a Change Dump or its manifest.
    #[error(transparent)]
    Order(#[from] resourcesync_model::OrderError),
    /// A name that cannot safely become a path.
    #[error("unsafe name {0:?}: {1}")]
    Name(String, #[source] NameError),
}
