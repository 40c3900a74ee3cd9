//! The Source's publishing engine, one module per topic.

mod publisher;
