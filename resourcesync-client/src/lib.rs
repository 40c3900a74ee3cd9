//! A sans-IO ResourceSync client: a Destination that discovers a Source, reads its
//! documents, and keeps a local copy of its resources in step, from the baseline
//! (Resource List or Resource Dump) through every incremental change (Change Lists, their
//! Indexes and Archive, Change Dumps), and audits it.
//!
//! [`Client`] is a state machine: it never opens a socket, reads a file or the clock. It
//! says which request to make next ([`Client::poll_request`], built with the `http`
//! crate's types), takes the response in pieces as it arrives (`handle_*`), and says what
//! to store, extract and delete ([`Client::poll_event`]); the caller does the IO with the
//! HTTP stack it already has, blocking or async, one request at a time or many. The
//! caller owns what the Destination keeps: the resources, an [`Inventory`] of them, and
//! the [`State`] (plain serde data: a [`Checkpoint`] per set of resources), which moves
//! only past changes the caller confirmed as applied.
//!
//! # A whole driver
//!
//! A blocking driver: `fetch` is the HTTP stack (here a map of documents, so that the
//! example runs), the resources go into a directory, each written to a temporary file and
//! renamed into place. [`Client`]'s documentation says which polls to drain after which
//! input.
//!
//! ```
//! use std::collections::HashMap;
//! use std::io::Write;
//! use std::path::Path;
//! use std::time::Instant;
//!
//! use http::{HeaderMap, StatusCode};
//! use resourcesync_client::{
//!     Client, Config, Event, MemoryInventory, Mode, Purpose, Report, State,
//! };
//!
//! /// What an HTTP stack gives back: status, headers, and the body in chunks.
//! type Fetched = Result<(StatusCode, HeaderMap, Vec<Vec<u8>>), String>;
//!
//! fn sync(
//!     client: &mut Client<MemoryInventory>,
//!     mut fetch: impl FnMut(&http::Request<()>) -> Fetched,
//!     dir: &Path,
//! ) -> Result<Report, Box<dyn std::error::Error>> {
//!     let temp = |id: resourcesync_client::RequestId| dir.join(format!(".part-{id}"));
//!     loop {
//!         let now = Instant::now();
//!         // 1. Make the requests the client asks for (here one after the other).
//!         if let Some(request) = client.poll_request(now) {
//!             let keep = matches!(request.purpose, Purpose::Resource { .. } | Purpose::Package);
//!             match fetch(&request.http) {
//!                 Ok((status, headers, chunks)) => {
//!                     // `?`: a `Misuse` is a bug of this driver's (a body before
//!                     // its head, an input after the end), refused whole.
//!                     client.handle_response(request.id, status, &headers, now)?;
//!                     let mut file = None;
//!                     if keep && status.is_success() {
//!                         file = Some(std::fs::File::create(temp(request.id))?);
//!                     }
//!                     for chunk in chunks {
//!                         if let Some(file) = &mut file {
//!                             file.write_all(&chunk)?;
//!                         }
//!                         client.handle_body(request.id, &chunk, Instant::now())?;
//!                     }
//!                     client.handle_end(request.id, Instant::now())?;
//!                 }
//!                 Err(reason) => client.handle_failure(request.id, reason, now)?,
//!             }
//!         } else if let Some(at) = client.poll_timeout() {
//!             // 4. Nothing to send: wait for the next retry.
//!             std::thread::sleep(at.saturating_duration_since(now));
//!             client.handle_timeout(Instant::now());
//!         }
//!         // 3. Carry out what the client decided, and confirm it.
//!         while let Some(event) = client.poll_event() {
//!             match event {
//!                 Event::Store(store) => {
//!                     let target = dir.join(store.change.path.to_path_buf());
//!                     std::fs::create_dir_all(target.parent().unwrap_or(dir))?;
//!                     std::fs::rename(temp(store.request), &target)?;
//!                     // The client records it in the inventory: the digests it verified.
//!                     client.applied(store.change.id, None, Instant::now())?;
//!                 }
//!                 Event::Delete(change) => {
//!                     match std::fs::remove_file(dir.join(change.path.to_path_buf())) {
//!                         Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
//!                             client.failed(change.id, e.to_string(), Instant::now())?
//!                         }
//!                         _ => client.applied(change.id, None, Instant::now())?,
//!                     }
//!                 }
//!                 Event::Discard { request, .. } => {
//!                     let _ = std::fs::remove_file(temp(request));
//!                 }
//!                 Event::Done(report) => return Ok(report),
//!                 // Packages (Event::Package, Extract, Release) are opened with
//!                 // resourcesync-package; this Source offers none. Checkpoint: save
//!                 // client.state() (below, at the end); the rest are reports.
//!                 _ => {}
//!             }
//!         }
//!     }
//! }
//!
//! // A Source: a Resource List and the two resources it lists.
//! let list = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
//!     xmlns:rs="http://www.openarchives.org/rs/terms/">
//!   <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
//!   <url><loc>https://example.com/a.txt</loc><rs:md length="5"/></url>
//!   <url><loc>https://example.com/docs/b.txt</loc><rs:md length="3"/></url>
//! </urlset>"#;
//! let mut source: HashMap<&str, &[u8]> = HashMap::new();
//! source.insert("https://example.com/resourcelist.xml", list.as_bytes());
//! source.insert("https://example.com/a.txt", b"hello");
//! source.insert("https://example.com/docs/b.txt", b"abc");
//! let fetch = |request: &http::Request<()>| -> Fetched {
//!     match source.get(request.uri().to_string().as_str()) {
//!         Some(body) => Ok((StatusCode::OK, HeaderMap::new(), vec![body.to_vec()])),
//!         None => Ok((StatusCode::NOT_FOUND, HeaderMap::new(), vec![])),
//!     }
//! };
//!
//! let dir = std::env::temp_dir().join(format!("resourcesync-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let start = "https://example.com/resourcelist.xml".parse()?;
//! let config = Config::new(start, Mode::Baseline { prefer_dump: false })?;
//! let mut client = Client::new(config, State::new(), MemoryInventory::new());
//! let report = sync(&mut client, fetch, &dir)?;
//! assert!(report.complete);
//! assert_eq!(report.created, 2);
//! assert_eq!(std::fs::read(dir.join("docs/b.txt"))?, b"abc");
//! // What to keep for the next run: the state (JSON here) and the inventory.
//! let saved = serde_json::to_string(client.state())?;
//! assert!(saved.contains("2025-01-01T00:00:00Z"));
//! std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Drivers over real HTTP stacks
//!
//! Two programs in the repository drive this client against live Sources, both on disk
//! through one type, `resourcesync_destination::DirectoryDestination` (the loop's
//! third step above, with packages, and the state and the inventory kept in the
//! destination directory):
//!
//! - [`sync-ureq`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/sync-ureq.rs):
//!   a blocking driver over ureq, one request at a time: the loop above.
//! - [`resourcesync sync`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/resourcesync-destination/src/asynchronous.rs):
//!   an async driver over hyper and tokio, many requests in flight, made by worker
//!   tasks, each streaming its response to the task that owns the client.
//!
//! # The building blocks
//!
//! Each is usable on its own by a driver:
//!
//! - [`discovery`]: the well-known URI of a Source Description ([`discovery::well_known_uri`],
//!   and [`discovery::path_well_known_uri`] for a Source published under a path),
//!   `Sitemap:` lines in robots.txt ([`discovery::robots_txt`]),
//!   `<link rel="resourcesync">` in an HTML head ([`discovery::html_links`]) and `Link:`
//!   headers ([`discovery::link_headers`]) (sections 6.3 and 8, RFC 8288), each bounded by
//!   [`discovery::DiscoveryLimits`] and tolerant of any input.
//! - [`policy`]: which URIs the client may fetch ([`policy::Policy`]): http and https only,
//!   the Source's authority unless the caller allows others, no special-purpose addresses
//!   (server-side request forgery); redirects the driver followed and addresses its
//!   resolver returned are checked the same way.
//! - [`local_path`]: the one checked, pure function by which a resource URI becomes a
//!   relative path under a destination directory ([`local_path::PathMapper`]), and
//!   [`local_path::PathSet`], which finds two URIs that would share a file on a
//!   case-insensitive or normalizing file system.
//! - [`inventory`]: what the Destination holds ([`Held`]) and how it compares with what
//!   the Source lists ([`Held::compare`]).
//!
//! ```
//! use resourcesync_client::discovery::{DiscoveryLimits, link_headers};
//! use resourcesync_client::local_path::{Collision, PathMapper, PathSet};
//! use resourcesync_client::policy::Policy;
//!
//! // A response for a resource announced its Capability List in a `Link:` header.
//! let page = "https://example.com/dataset1/res1.html".parse()?;
//! let found = link_headers(&page, [r#"<capabilitylist.xml>; rel="resourcesync""#], &DiscoveryLimits::default());
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
//! None.
//!
//! # Deviations
//! Where this crate is stricter or more lenient than the standard, on purpose (each
//! module says more):
//! - Discovery from a base with a path tries the well-known URI under that path
//!   (`/path/.well-known/resourcesync`) after the host's, which RFC 8615 puts at the root
//!   only: real Sources published under a path point their Capability Lists `up` there.
//! - robots.txt `Sitemap:` values that are relative are resolved against the robots.txt
//!   URI, where RFC 9309 asks for absolute ones.
//! - Only the head of an HTML document is read, and it ends where the HTML standard's
//!   parser would end it; a `Link:` whose `anchor` names another resource is ignored.
//! - The policy refuses any URI with a userinfo, and redirects from https to http.
//! - Local paths key on the authority and the percent-decoded path, not the scheme: the
//!   http and https URIs of a resource are one file, and so are `/a:b` and `/a%3Ab`.
//! - Change List intervals are read as closed at both ends: lists closed and opened in
//!   one second may both hold changes of that second, so every list whose `until` is not
//!   before the checkpoint is read, and the Change List Archive whenever the lists on
//!   offer start at or after it.
//! - When nothing can be compared (no hash both sides know, no `lastmod`), a held
//!   resource counts as changed and is fetched again.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod client;
mod config;
pub mod discovery;
mod event;
pub mod follow;
pub mod hash;
pub mod inventory;
pub mod local_path;
mod misuse;
pub mod policy;
mod request;
mod state;
mod warnings;

pub use client::{Client, PackageManifest};
pub use config::{Bounds, Config, ConfigError, Mode, Shard};
pub use event::{
    Action, Attempt, ChangeId, Decision, DocumentError, DocumentRead, EntryRefusal, Event, Extract,
    Placement, Problem, ProblemKind, Progress, Report, Standing, Warning,
};
pub use inventory::{Difference, Held, Inventory, MemoryInventory};
pub use misuse::Misuse;
pub use request::{Purpose, Request, RequestId};
pub use state::{Checkpoint, Refetch, State, StreamPosition};
pub use warnings::{WarningGroup, WarningSummary};

/// Where a Source publishes its Source Description (section 6.3.2, RFC 5785); see
/// [`discovery::well_known_uri`].
pub const WELL_KNOWN_PATH: &str = "/.well-known/resourcesync";

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
