//! The ResourceSync Source's publishing engine: an application publishes what it has, as
//! the standard says a Source does, and Destinations follow it.
//!
//! - [`Publisher`] is fed by the application: a snapshot of its resource records
//!   ([`Publisher::publish_snapshot`]: URI, `lastmod`, length, md5 and sha-256, media
//!   type, as entries) or the changes its own database recorded ([`Publisher::publish_changes`]:
//!   created, updated, deleted, each with its datetime). It publishes a Source Description,
//!   a Capability List, a Resource List (an index over parts when the limits require),
//!   contiguous Change Lists with `from`/`until`, their index, and once that is full their
//!   archive. A change costs what the change is: the open Change List is read and written
//!   again, not the collection; the Resource List is written again on a policy the caller
//!   chooses ([`ResourceListPolicy`]), and its `at` never claims more than it holds.
//! - [`Publisher::begin`] opens a [`Transaction`]: the application writes its own files
//!   (the resources the documents describe) into the publication begun, and publishing
//!   the documents commits the whole at once: readers never see a resource without its
//!   entry, or an entry whose resource is not there yet.
//! - A [`Store`] keeps the publication and switches from one run's to the next at once:
//!   [`MemoryStore`], or [`GenerationStore`], a directory a web server serves (one
//!   generation per run behind one symbolic link; a failed or killed run leaves the last),
//!   or (feature `object-store`) `BucketStore`, a bucket's prefix any static host or CDN
//!   serves (staged, committed by one journal, rolled forward; one publisher at a time).
//! - [`collection::build`] publishes a directory's files (or a list of files) the way
//!   `resourcesync build` does, with Resource and Change Dumps, incrementally (a file of
//!   the same size, modification time and change time is not read again): an adapter
//!   that walks the directory and feeds the same engine (the Change Lists, the dumps,
//!   the Capability List and Source Description, the state) as the [`Publisher`].
//!
//! - With a hub ([`PublishOptions::with_hub`]), the Source has a Change Notification
//!   channel (Change Notification 1.0.1): its Capability List advertises it, and each run
//!   with changes writes the same changes as notifications, whose intervals tile time,
//!   into an outbox in the publication it commits ([`Publisher::outbox`]); [`notify`]
//!   delivers them to the hub, sans IO, in order and retried, and
//!   [`Publisher::delivered`] records what the hub took, so that none is sent before its
//!   run is published and none is lost by a restart.
//!
//! [`discovery`] makes the rest of a Source's side of discovery (section 6.3) from the
//! documents' URIs: the `<link rel="resourcesync">` page, the `Link` header, robots.txt's
//! `Sitemap` lines.
//!
//! A directory served at a base URI is a [`Directory`]: the one checked way from a URI to a
//! file under it, each file written atomically. [`DirectoryStore`] writes a set
//! ([`resourcesync_xml::SetWriter`]) into one, and `&Directory` is a
//! [`resourcesync_package::DumpStore`], where a dump's packages go.
//!
//! Out of scope: HTTP (serve the store with any web server, or `resourcesync serve`) and
//! the clock: each run takes the time it starts, so tests drive the engine with a virtual
//! one.
//!
//! # Publishing records, and a Destination following them
//!
//! ```
//! use std::collections::BTreeMap;
//! use std::time::{Duration, Instant, SystemTime};
//!
//! use http::{HeaderMap, StatusCode};
//! use resourcesync_client::{Client, Config, Event, MemoryInventory, Mode, State};
//! use resourcesync_model::{Entry, W3cDateTime};
//! use resourcesync_source::{ResourceEvent, MemoryStore, PublishOptions, Publisher};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let base = "http://example.org/";
//! let record = |n: u32, length: u64| -> Result<Entry, Box<dyn std::error::Error>> {
//!     Ok(Entry::new(format!("{base}records/{n}").parse()?).with_length(length))
//! };
//! let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let mut source = Publisher::new(MemoryStore::new(), PublishOptions::new(base.parse()?));
//! source.publish_snapshot([record(1, 3)?, record(2, 3)?], t0)?;
//!
//! // A Destination: the client, answered from the store and the application's resources.
//! let content = |uri: &str| uri.rsplit('/').next().unwrap_or("").repeat(3).into_bytes();
//! let mut run = |client: &mut Client<MemoryInventory>, store: &MemoryStore| loop {
//!     let now = Instant::now();
//!     if let Some(request) = client.poll_request(now) {
//!         let uri = request.http.uri().to_string();
//!         let body = match uri.strip_prefix(base).and_then(|name| store.get(name)) {
//!             Some(document) => document.to_vec(),
//!             None => content(&uri),
//!         };
//!         client.handle_response(request.id, StatusCode::OK, &HeaderMap::new(), now)?;
//!         client.handle_body(request.id, &body, now)?;
//!         client.handle_end(request.id, now)?;
//!     }
//!     while let Some(event) = client.poll_event() {
//!         match event {
//!             Event::Store(store) => client.applied(store.change.id, None, now)?,
//!             Event::Delete(change) => client.applied(change.id, None, now)?,
//!             Event::Done(report) => return Ok::<_, Box<dyn std::error::Error>>(report),
//!             _ => {}
//!         }
//!     }
//! };
//! let config = Config::new(base.parse()?, Mode::Baseline { prefer_dump: false })?;
//! let mut client = Client::new(config, State::new(), MemoryInventory::new());
//! assert_eq!(run(&mut client, source.store())?.created, 2);
//!
//! // The application's database says what changed; the next run publishes just that.
//! let t1 = t0 + Duration::from_secs(60);
//! let changes = [
//!     ResourceEvent::created(record(3, 3)?, W3cDateTime::from(t1)),
//!     ResourceEvent::deleted(format!("{base}records/1").parse()?, W3cDateTime::from(t1)),
//! ];
//! let published = source.publish_changes(changes, t1)?;
//! assert_eq!((published.created, published.deleted), (1, 1));
//! assert_eq!(published.resource_list, None, "the policy keeps the Resource List");
//!
//! let (state, inventory) = client.into_parts();
//! // Deleting what the Source deletes (nothing is deleted unless asked for).
//! let config = Config::new(base.parse()?, Mode::Incremental)?.with_delete(u64::MAX);
//! let mut client = Client::new(config, state, inventory);
//! let report = run(&mut client, source.store())?;
//! assert_eq!((report.created, report.deleted, report.complete), (1, 1, true));
//! # Ok(())
//! # }
//! ```

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

#[cfg(feature = "object-store")]
mod bucket;
pub mod collection;
mod directory;
pub mod discovery;
mod engine;
mod generations;
mod media;
pub mod notify;
mod outbox;
mod publisher;
mod shown;
mod store;

#[cfg(feature = "object-store")]
pub use bucket::BucketStore;
pub use directory::{Directory, DirectoryError, DirectoryStore, MAX_SEGMENT_LEN, push_segment};
pub use engine::PublishError;
pub use engine::dumps::Content;
pub use media::media_type;
pub use outbox::Notification;
pub use publisher::{
    PublishOptions, PublishReport, Publisher, ResourceEvent, ResourceListPolicy, Transaction,
};
pub use shown::Shown;
pub use store::{GenerationStore, MemoryStore, Store, StoreError};
