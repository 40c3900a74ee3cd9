//! Integration tests of resourcesync-model, one binary with a module per topic.

#[macro_use]
mod common;

mod attribute;
mod capability;
mod datetime;
mod fuzz_corpus;
mod intervals;
mod malformed;
mod placement;
mod rules;
mod serde;
mod uri;
