//! The ResourceSync Destination as a library: a directory kept in step with a Source,
//! the policy of a run around the sans-IO client (`resourcesync-client`), and drivers
//! that move the bytes, blocking or async. The mirror of `resourcesync-source`; the
//! `resourcesync sync` command is a thin layer over it.
//!
//! - [`DirectoryDestination`]: what a driver of the client does on disk (store, extract,
//!   delete, verify, save the state and the inventory), confined to the directory by a
//!   handle on it, and never overwriting or deleting what no sync stored.
//! - [`Run`]: one sync, whatever moves the bytes: the mode from what the last run saved,
//!   the comparison of the files with the inventory for an audit or a baseline, saves
//!   every few seconds, a stop the caller trips ([`StopToken`]), and the baseline that
//!   follows when the Change Lists cannot carry the directory forward. A driver asks it
//!   what to fetch and hands the responses to its client.
//! - [`blocking::sync`]: a driver over any blocking HTTP stack ([`blocking::Transport`]),
//!   ureq's with the feature `ureq`; `asynchronous::sync`: over hyper and tokio, many
//!   requests at once, with the feature `reqwest`.
//! - [`SyncOptions`] in, [`Synced`] out; an [`Observer`] sees every event, the progress
//!   and the run's [`Notice`]s. Nothing here prints.
//!
//! Out of scope: signals (trip a [`StopToken`] from a handler), printing, argument
//! parsing; those are the command's.
//!
//! # A sync over a blocking HTTP stack of your own
//!
//! ```
//! use resourcesync_destination::blocking::{self, Response, Transport};
//! use resourcesync_destination::{StopToken, SyncOptions};
//!
//! /// Any blocking stack: here one that finds nothing.
//! struct NotFound;
//!
//! impl Transport for NotFound {
//!     fn fetch(&mut self, _: http::Request<()>) -> Result<Response<'_>, String> {
//!         Ok(Response::new(http::StatusCode::NOT_FOUND, http::HeaderMap::new(), std::io::empty()))
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let options = SyncOptions::new("https://example.com/".parse()?, dir.path()).with_delete(100);
//! let synced = blocking::sync(&options, &mut NotFound, &StopToken::new(), &mut ())?;
//! assert!(!synced.report.complete);
//! # Ok(())
//! # }
//! ```
//!
//! # Features
//!
//! - `ureq`: [`blocking::UreqTransport`].
//! - `reqwest`: `asynchronous`, the driver over hyper and tokio (reqwest for a request the
//!   environment sends to a proxy).
//! - `object-store`: `objects::ObjectDestination`, a bucket's prefix (S3 and the other
//!   stores of the `object_store` crate) kept in step as a directory is.

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod blocking;
mod destination;
pub mod directory;
pub mod inventory;
mod options;
mod run;
mod synced;

#[cfg(feature = "reqwest")]
pub mod asynchronous;
#[cfg(feature = "reqwest")]
pub mod follow;
#[cfg(feature = "reqwest")]
pub mod gate;
#[cfg(feature = "reqwest")]
pub mod harvest;
#[cfg(feature = "object-store")]
pub mod objects;

// The hashers of this crate's maps, as the client's: by who chooses the keys.
use resourcesync_client::hash::{IdHash, SourceHash};

pub use destination::Destination;
pub use directory::{Bodies, DestinationError, DirectoryDestination, InMemory, KEPT, Verified};
pub use inventory::{DiskInventory, KeptInventory};
pub use options::SyncOptions;
pub use run::{Finished, Notice, Observer, Run, StopToken, SyncError};
pub use synced::Synced;
