//! The ResourceSync Source's publishing engine: what `resourcesync build` does, as a
//! library.
//!
//! [`build::build`] publishes a directory's files (or the files a list names) as a Source:
//! Source Description, Capability List, Resource List (an index over parts when the limits
//! require), contiguous Change Lists with `from`/`until`, their index and their archive,
//! and on request a Resource Dump and a Change Dump, each entry with `lastmod`, `length`,
//! md5, sha-256 and a media type. Each run writes a new generation beside the publish
//! directory and switches to it by renaming one symbolic link, so a failed or killed run
//! leaves the last publication as it was; a run reads again only the files whose size or
//! modification time changed.
//!
//! Publishing goes through [`Directory`], a directory served at a base URI: the one checked
//! way from a URI to a file under it, each file written atomically. [`DirectoryStore`] writes
//! a set ([`resourcesync_xml::SetWriter`]) into one, and `&Directory` is a
//! [`resourcesync_package::DumpStore`], where a dump's packages go.
//!
//! Out of scope: HTTP (serve the publish directory with any web server, or
//! `resourcesync serve`) and the clock: the caller passes the time a run starts, so tests
//! drive the engine with a virtual one.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use resourcesync_source::build::{Options, build};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! let collection = root.path().join("collection");
//! std::fs::create_dir(&collection)?;
//! std::fs::write(collection.join("a.txt"), "first")?;
//! let publish = root.path().join("publish");
//! let options = Options::new("http://example.com/".parse()?);
//!
//! let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let first = build(&collection, &publish, &options, start, &())?;
//! assert_eq!((first.generation, first.created), (1, 1));
//!
//! std::fs::write(collection.join("b.txt"), "second")?;
//! let later = start + Duration::from_secs(60);
//! let second = build(&collection, &publish, &options, later, &())?;
//! assert_eq!((second.generation, second.created, second.resources), (2, 1, 2));
//! assert_eq!(second.at.to_string(), "2023-11-14T22:14:20Z");
//! assert!(publish.join("resourcesync/changelist.xml").is_file());
//! # Ok(())
//! # }
//! ```

pub mod build;
mod directory;

pub use directory::{Directory, DirectoryError, DirectoryStore, MAX_SEGMENT_LEN};
