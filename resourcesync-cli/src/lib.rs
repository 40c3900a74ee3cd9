//! The `resourcesync` command's features as a library: what each subcommand does is a
//! function here with typed options, and the binary (`src/bin/resourcesync`) parses a
//! command line, calls it and prints. Tests, benchmarks and the demo call the same
//! functions in process.
//!
//! - [`validate`]: checks a document or a package against the standard's rules.
//! - [`explore`]: the documents a Source offers, read by the client in its exploring
//!   mode.
//! - [`serve`]: serves a publication over HTTP, with the discovery routes of section 6.3
//!   (`serve_with_limits` until a shutdown future completes; the subcommand's arguments,
//!   signals and start line are the binary's).
//! - [`sync`]: the Destination: the command's layer (arguments, signals, printing) over
//!   `resourcesync-destination`, which keeps a directory in step with a Source.
//! - [`units`]: option values with units (durations, sizes).
//!
//! `build` and `demo` have no module here: `build`'s library call is
//! [`resourcesync_source::build::build`] (typed options in, a `BuildReport` out), and the
//! binary holds its arguments, help, progress bar and printing; `demo`, which runs them
//! all and prints each step, is the binary's alone.
//!
//! Layers: this crate is the top of the family (model ← xml ← package ← source /
//! destination ← cli); it handles signals and prints, which the libraries below never do.

pub mod explore;
pub mod serve;
pub mod sync;
pub mod units;
pub mod validate;
