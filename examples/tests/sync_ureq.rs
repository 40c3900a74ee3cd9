//! `sync-ureq` against a Source served over HTTP on 127.0.0.1: the scenarios every
//! Destination driver must pass (`resourcesync-testkit`), as `resourcesync sync` does.

use resourcesync_testkit::driver::Driver;

resourcesync_testkit::driver_tests!(Driver::new(
    "sync-ureq",
    env!("CARGO_BIN_EXE_sync-ureq"),
    &[]
));
