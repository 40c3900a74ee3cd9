//! Minimal forms of what fuzzing the client (`fuzz/fuzz_targets/client.rs`) found, one
//! test each, named for the bug.
