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
//! - [`units`]: option values with units (durations, sizes).
//!
//! One convention for every subcommand: its library call takes typed options and returns
//! a typed report (or takes a callback or writer for what streams), and the binary
//! (`src/bin/resourcesync/`) holds the arguments, the help, the signals, the printing and
//! the exit status. `build`, `sync` and `demo` have no module here, their library calls
//! being in the libraries below: `build` is [`resourcesync_source::collection::build`]
//! (options in, a `BuildReport` out), `sync` is `resourcesync_destination`'s
//! `asynchronous::sync` (options, a stop token and an `Observer` in, `Synced` out);
//! `demo`, which runs them all and prints each step, is the binary's alone.
//!
//! Layers: this crate is the top of the family (model ← xml ← package ← source /
//! destination ← cli); its binary handles signals and prints, which the libraries never do
//! (`serve` hands a file it cannot read to the caller's `Reporter`).

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod explore;
pub mod serve;
pub mod units;
pub mod validate;
