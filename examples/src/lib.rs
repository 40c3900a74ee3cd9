//! Programs that show the resourcesync crates at work; see `src/bin/`. The subcommands of
//! `resourcesync` that tests, benchmarks and the demo run in process are here: [`build`]
//! (publishing), [`serve`] (the HTTP server), [`sync`] (the driver of the client) and
//! [`demo`] (all of them together).
//!
//! It also compiles the workspace README's examples as doc-tests, so that the first code a
//! user reads is code that runs.

pub mod build;
pub mod demo;
pub mod serve;
pub mod sync;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
