//! The Python with the reference implementation, for the interop tests and benchmarks.
//!
//! `.ci/run` installs `resync` and `resync-simulator` in `.venv`; elsewhere set
//! `RESOURCESYNC_PYTHON` to a Python that has them. Without one a test is ignored
//! ([`needs`](crate::needs)) and a bench function skipped, saying so, unless it is
//! required: on CI (`CI` set to anything but `false`) or when `RESOURCESYNC_PYTHON` is
//! set, a missing one fails it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::needs::{Missing, on_ci};

/// The Python that can `import modules` and has each of `scripts` beside it, or what is
/// missing, required on CI or when `RESOURCESYNC_PYTHON` is set.
pub fn find(modules: &str, scripts: &[&str]) -> Result<PathBuf, Missing> {
    let path = std::env::var_os("RESOURCESYNC_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
            workspace.join(".venv/bin/python")
        });
    let usable = Command::new(&path)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success())
        && scripts.iter().all(|s| path.with_file_name(s).is_file());
    if usable {
        return Ok(path);
    }
    Err(Missing {
        what: format!("needs Python with {modules}"),
        why: format!(
            "no Python with {modules}{} at {} \
             (set RESOURCESYNC_PYTHON, or run .ci/run, which installs it in .venv)",
            if scripts.is_empty() {
                String::new()
            } else {
                format!(" (and {} beside it)", scripts.join(", "))
            },
            path.display()
        ),
        required: on_ci() || std::env::var_os("RESOURCESYNC_PYTHON").is_some(),
    })
}

/// [`find`] for a bench: `None` (said on stderr) where it may skip what needs Python; a
/// required one missing panics.
pub fn python(modules: &str, scripts: &[&str]) -> Option<PathBuf> {
    match find(modules, scripts) {
        Ok(path) => Some(path),
        Err(missing) => {
            assert!(!missing.required, "{}", missing.why);
            eprintln!("skipped: {}", missing.why);
            None
        }
    }
}
