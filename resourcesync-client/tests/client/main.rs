//! The client's building blocks, one module per topic.

mod apply;
mod convergence;
mod counting;
mod coverage;
mod digests;
mod discovery;
mod display;
mod fuzz_corpus;
mod fuzz_regressions;
mod hostile;
mod local_path;
mod misuse;
mod moving;
mod policy;
mod problems;
mod sim;
mod sync;
