//! The Python with the reference implementation, for the interop tests and benchmarks.
//!
//! `.ci/run` installs `resync` and `resync-simulator` in `.venv`; elsewhere set
//! `RESOURCESYNC_PYTHON` to a Python that has them. Without one a test is skipped, saying
//! so on stderr, unless it is required: on CI (`CI` set to anything but `false`) or when
//! `RESOURCESYNC_PYTHON` is set, a missing one fails it.

use std::path::PathBuf;
use std::process::Command;

/// The Python that can `import modules` and has each of `scripts` beside it, or `None`
/// (said on stderr) where the test may be skipped.
pub fn python(modules: &str, scripts: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("RESOURCESYNC_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python"))
        });
    let usable = Command::new(&path)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
        && scripts.iter().all(|s| path.with_file_name(s).is_file());
    if usable {
        return Some(path);
    }
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    assert!(
        !ci && std::env::var_os("RESOURCESYNC_PYTHON").is_none(),
        "no Python with {modules} (and {scripts:?} beside it) at {}: .ci/run installs it in .venv",
        path.display()
    );
    eprintln!(
        "skipped: no Python with {modules} at {} (set RESOURCESYNC_PYTHON, or run .ci/run)",
        path.display()
    );
    None
}
