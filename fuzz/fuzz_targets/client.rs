//! Arbitrary response sequences for the sans-IO client: a script read from the fuzz bytes
//! answers, fails, redirects, times out and confirms against a simulated Source, in every
//! mode; never a panic, requests in flight within the bound, the work held bounded by
//! what the Source listed, and a run that waits for nothing is done
//! (see `fuzz/common/client.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

use resourcesync_testkit::source as sim;

#[path = "../common/client.rs"]
#[allow(dead_code)]
mod script;

fuzz_target!(|data: &[u8]| {
    script::run(data);
});
