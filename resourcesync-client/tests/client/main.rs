//! The client's building blocks, one module per topic.

mod local_path;
mod policy;
