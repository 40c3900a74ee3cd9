//! Programs that show the resourcesync crates at work; see `src/bin/`. The driver of
//! `resourcesync sync` is here ([`sync`]), so that benchmarks can run it in process, and
//! so is the server of `resourcesync serve` ([`serve`]), so that tests can.
//!
//! The library itself only compiles the workspace README's examples as doc-tests, so that
//! the first code a user reads is code that runs.

pub mod build;
pub mod demo;
pub mod serve;
pub mod sync;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
