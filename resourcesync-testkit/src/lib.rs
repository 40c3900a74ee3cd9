//! What the tests and benchmarks of several crates share, written once: a simulated Source
//! with a virtual clock ([`source`]), that Source served over HTTP with injected faults
//! ([`served`]), a Destination driver run as a child process and the scenarios every
//! driver must pass ([`driver`], [`scenarios`]), a publication on disk read back
//! ([`publication`]), the Python reference implementation for the interop tests
//! ([`python`]), the harness of tests that need a tool, ignored where it is missing
//! ([`needs`]), (feature `tls`) a test CA and a certificate for 127.0.0.1 (`tls`), and
//! (feature `objects`) an object store with a test's hooks over another (`objects`).
//! Not published.
//!
//! Its assertions panic: it is test code.

// Test support: its enums are matched only by the tests that use them.
#![allow(clippy::exhaustive_enums, missing_debug_implementations)]

pub mod driver;
#[cfg(feature = "http")]
pub mod farm;
pub mod needs;
#[cfg(feature = "objects")]
pub mod objects;
pub mod publication;
pub mod python;
#[cfg(feature = "http")]
pub mod s3;
#[cfg(feature = "http")]
pub mod scenarios;
#[cfg(feature = "http")]
pub mod served;
#[allow(missing_docs)]
pub mod source;
#[cfg(feature = "tls")]
pub mod tls;
