//! Streaming reader and writer of ResourceSync documents (work in progress).
//!
//! This crate will read every ResourceSync document (Source Description to Change Dump
//! Archive Index) from any `BufRead` or byte slice in constant memory, yielding the
//! document head and then one [`resourcesync_model::Entry`] at a time, and write them
//! back entry by entry, splitting large sets into indexes.
//!
//! Nothing is implemented yet: the crate exists so that the workspace has its final
//! shape. It exports only the namespaces it will read.

pub use resourcesync_model::{RS_NAMESPACE, SITEMAP_NAMESPACE};
