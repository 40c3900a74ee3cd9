//! Short programs that show the resourcesync crates at work, each one a file a user can
//! copy; see `src/bin/`. The `resourcesync` command itself is the `resourcesync-cli`
//! crate.
//!
//! This crate also compiles the workspace README's examples as doc-tests, so that the first
//! code a user reads is code that runs.

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
