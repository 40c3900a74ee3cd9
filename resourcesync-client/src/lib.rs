//! A sans-IO ResourceSync client (work in progress).
//!
//! This crate will be a state machine for discovery, navigation, baseline and incremental
//! synchronization and audit that never opens a socket, reads a file or the clock: the
//! caller performs each request it asks for and hands back the response.
//!
//! Nothing is implemented yet: the crate exists so that the workspace has its final
//! shape. It exports only the well-known path of a Source Description.

/// Where a Source publishes its Source Description (section 6.3.2, RFC 5785).
pub const WELL_KNOWN_PATH: &str = "/.well-known/resourcesync";
