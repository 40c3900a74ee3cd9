//! The client's building blocks, one module per topic.

mod discovery;
mod local_path;
mod policy;
mod sim;
mod sync;
mod convergence;
