//! A sans-IO ResourceSync client (work in progress).
//!
//! This crate will be a state machine for discovery, navigation, baseline and incremental
//! synchronization and audit that never opens a socket, reads a file or the clock: the
//! caller performs each request it asks for and hands back the response. The state machine
//! is still to come; what exists are the pure building blocks it will use:
//!
//! - [`discovery`]: the well-known URI of a Source Description, `Sitemap:` lines in
//!   robots.txt, `<link rel="resourcesync">` in HTML and `Link:` headers (sections 6.3
//!   and 8), each bounded and tolerant of any input.
//! - [`local_path`]: the one checked function by which a resource URI becomes a relative
//!   path under a destination directory ([`local_path::PathMapper`]), and
//!   [`local_path::PathSet`], which finds two URIs that would share a file.
//! - [`policy`]: which URIs the client may fetch ([`policy::Policy`]): http and https only,
//!   the Source's authority unless the caller allows others, no special-purpose addresses
//!   (server-side request forgery), redirects and resolved addresses checked the same way.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod discovery;
pub mod local_path;
pub mod policy;

/// Where a Source publishes its Source Description (section 6.3.2, RFC 5785).
pub const WELL_KNOWN_PATH: &str = "/.well-known/resourcesync";
