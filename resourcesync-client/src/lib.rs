//! A sans-IO ResourceSync client, in the making: the pure building blocks a Destination
//! needs before it fetches anything or writes a file.
//!
//! The client will be a state machine for discovery, navigation, baseline and incremental
//! synchronization and audit that never opens a socket, reads a file or the clock: the
//! caller performs each request it asks for and hands back the response. **The state
//! machine is still to come.** What exists today are three self-contained modules it will
//! use, each usable on its own by a driver:
//!
//! - [`discovery`]: the well-known URI of a Source Description ([`discovery::well_known_uri`]),
//!   `Sitemap:` lines in robots.txt ([`discovery::robots_txt`]),
//!   `<link rel="resourcesync">` in an HTML head ([`discovery::html_links`]) and `Link:`
//!   headers ([`discovery::link_headers`]) (sections 6.3 and 8, RFC 8288), each bounded by
//!   [`discovery::Limits`] and tolerant of any input.
//! - [`policy`]: which URIs the client may fetch ([`policy::Policy`]): http and https only,
//!   the Source's authority unless the caller allows others, no special-purpose addresses
//!   (server-side request forgery); redirects the driver followed and addresses its
//!   resolver returned are checked the same way.
//! - [`local_path`]: the one checked, pure function by which a resource URI becomes a
//!   relative path under a destination directory ([`local_path::PathMapper`]), and
//!   [`local_path::PathSet`], which finds two URIs that would share a file on a
//!   case-insensitive or normalizing file system.
//!
//! Out of scope: HTTP, DNS, files and time. A driver performs them; this crate says what
//! is safe to do.
//!
//! # Example
//! ```
//! use resourcesync_client::discovery::{link_headers, Limits};
//! use resourcesync_client::local_path::{Collision, PathMapper, PathSet};
//! use resourcesync_client::policy::Policy;
//!
//! // A response for a resource announced its Capability List in a `Link:` header.
//! let page = "https://example.com/dataset1/res1.html".parse()?;
//! let found = link_headers(&page, [r#"<capabilitylist.xml>; rel="resourcesync""#], &Limits::default());
//! assert_eq!(found.uris[0].as_str(), "https://example.com/dataset1/capabilitylist.xml");
//!
//! // Whatever a Source lists passes the policy before it is fetched...
//! let policy = Policy::new(&found.uris[0])?;
//! assert!(policy.check(&"https://example.com/dataset1/res2.pdf".parse()?).is_ok());
//! assert!(policy.check(&"http://169.254.169.254/latest/meta-data/".parse()?).is_err());
//!
//! // ...and the mapper before it is written.
//! let mapper = PathMapper::new(&"https://example.com/".parse()?)?;
//! let mut paths = PathSet::new();
//! let pdf = "https://example.com/dataset1/res2.pdf".parse()?;
//! let path = mapper.local_path(&pdf)?;
//! assert_eq!(path.as_str(), "dataset1/res2.pdf");
//! paths.insert(&pdf, &path)?;
//! let upper = "https://example.com/dataset1/RES2.PDF".parse()?;
//! let collision = paths.insert(&upper, &mapper.local_path(&upper)?).unwrap_err();
//! assert_eq!(collision.kind, Collision::Case);
//! assert!(mapper.local_path(&"https://example.com/dataset1/%2e%2e/%2e%2e/etc/passwd".parse()?).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Features
//! None yet.
//!
//! # Deviations
//! Where this crate is stricter or more lenient than the standard, on purpose (each
//! module says more):
//! - robots.txt `Sitemap:` values that are relative are resolved against the robots.txt
//!   URI, where RFC 9309 asks for absolute ones.
//! - Only the head of an HTML document is read, and it ends where the HTML standard's
//!   parser would end it; a `Link:` whose `anchor` names another resource is ignored.
//! - The policy refuses any URI with a userinfo, and redirects from https to http.
//! - Local paths key on the authority and the percent-decoded path, not the scheme: the
//!   http and https URIs of a resource are one file, and so are `/a:b` and `/a%3Ab`.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod client;
mod config;
pub mod discovery;
mod event;
mod feed;
pub mod inventory;
pub mod local_path;
pub mod policy;
mod request;
mod state;

pub use client::Client;
pub use config::{Bounds, Config, ConfigError, Mode, Shard};
pub use event::{
    Action, Change, ChangeId, DocumentRead, Event, Extract, Problem, ProblemKind, Progress, Report,
    Standing, Store, Warning,
};
pub use inventory::{Held, Inventory, MemoryInventory};
pub use request::{Purpose, Request, RequestId};
pub use state::{Checkpoint, Position, State};

/// Where a Source publishes its Source Description (section 6.3.2, RFC 5785); see
/// [`discovery::well_known_uri`].
pub const WELL_KNOWN_PATH: &str = "/.well-known/resourcesync";
