//! `collection::build`, the engine of `resourcesync build`, called in process: what it
//! publishes from a generated collection, read back and validated; incremental runs and
//! their Change Lists; dumps; failures that leave the publication as it was; what it
//! refuses to follow, read or remove. (What the command adds, its output and exit status,
//! is tested with the command.)

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use resourcesync_source::collection::{self, BuildError, BuildReport, Options};
use resourcesync_testkit::publication::Publication;
pub(crate) use resourcesync_testkit::publication::generate_collection as generated;

mod changes;
mod dumps;
mod failures;
mod published;
mod trust;

/// The base URL the publications are served at.
pub(crate) const BASE: &str = "http://127.0.0.1:8080/";

/// The options `resourcesync build --base-url BASE` gives.
pub(crate) fn options() -> Options {
    Options::new(BASE.parse().unwrap())
}

/// Builds `collection` into `publish` now; the report.
pub(crate) fn build(collection: &Path, publish: &Path, options: &Options) -> BuildReport {
    collection::build(collection, publish, options, SystemTime::now(), &())
        .unwrap_or_else(|e| panic!("build failed: {e}"))
}

/// Builds `collection` into `publish` now, which must fail; the error.
pub(crate) fn refused(collection: &Path, publish: &Path, options: &Options) -> BuildError {
    match collection::build(collection, publish, options, SystemTime::now(), &()) {
        Ok(report) => panic!("published generation {}", report.generation),
        Err(error) => error,
    }
}

/// The publication in `publish`, served at [`BASE`].
pub(crate) fn publication(publish: &Path) -> Publication {
    Publication::new(publish, BASE)
}

/// The path under the publish directory of a URI under [`BASE`].
pub(crate) fn local(uri: &str) -> &str {
    uri.strip_prefix(BASE).expect("a URI under the base")
}

/// Writes `bytes` at `relative` under `root`, making its directories.
pub(crate) fn put(root: &Path, relative: &str, bytes: &[u8]) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// Sets the modification time of the file at `path`.
pub(crate) fn set_mtime(path: &Path, time: SystemTime) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// Waits out the file system clock's granularity: a file changed within it of a build's
/// start is read again by the next build (its change time cannot tell a later change in
/// the same tick), which a test that counts the files read must not meet.
pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(100));
}
