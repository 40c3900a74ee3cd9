//! The client's building blocks, one module per topic.

mod convergence;
mod discovery;
mod local_path;
mod policy;
mod sim;
mod sync;
