//! The `resourcesync` command's features as a library: what each subcommand does is a
//! function here with typed options, and the binary (`src/bin/resourcesync`) parses a
//! command line, calls it and prints. Tests, benchmarks and the demo call the same
//! functions in process.
//!
//! - [`validate`]: checks a document or a package against the standard's rules.
//! - [`explore`]: the documents a Source offers, read by the client in its exploring
//!   mode.
//! - [`build`]: publishes a directory (or a list of files) as a ResourceSync Source,
//!   incrementally and atomically.
//! - [`serve`]: serves a publication over HTTP, with the discovery routes of section 6.3.
//! - [`sync`]: the Destination: the command's layer (arguments, signals, printing) over
//!   `resourcesync-destination`, which keeps a directory in step with a Source.
//! - [`demo`]: all of them together, on a generated collection.
//! - [`units`]: option values with units (durations, sizes).
//!
//! Layers: this crate is the top of the family (model ← xml ← package ← source /
//! destination ← cli); it handles signals and prints, which the libraries below never do.

pub mod build;
pub mod demo;
pub mod explore;
pub mod serve;
pub mod sync;
pub mod units;
pub mod validate;
