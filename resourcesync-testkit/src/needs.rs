//! Tests that need something from outside Rust (a program, the Python reference
//! implementation, root), in test binaries of their own (`harness = false`) run by
//! `libtest-mimic`: a test whose need is not met here is reported *ignored* in the
//! summary `cargo test` prints, with what it needs in brackets and why on stderr, rather
//! than passing without having run. Where the need must be met, on CI
//! (`CI` set to anything but `false`, as `.ci/run` sets it) or as the need says, a
//! missing one fails the test instead. `--include-ignored` runs an ignored test, which
//! then fails, saying what is missing.
//!
//! ```ignore
//! fn main() -> std::process::ExitCode {
//!     let unzip = needs::program("unzip", &["-v"], "unzip");
//!     needs::main(vec![needs::trial("unzip_tests_our_packages", &unzip, |()| { ... })])
//! }
//! ```

use std::collections::BTreeSet;
use std::process::{Command, ExitCode};
use std::sync::Mutex;

use libtest_mimic::{Arguments, Trial};

/// What a test needs and this machine does not have.
#[derive(Clone, Debug)]
pub struct Missing {
    /// Short, shown in brackets before the test's name: `needs unzip`.
    pub what: String,
    /// What was looked for and how to get it, on stderr (ignored) or as the failure.
    pub why: String,
    /// The test fails rather than being ignored.
    pub required: bool,
}

impl Missing {
    /// Missing, required on CI only.
    pub fn new(what: impl Into<String>, why: impl Into<String>) -> Missing {
        Missing {
            what: what.into(),
            why: why.into(),
            required: on_ci(),
        }
    }
}

/// Whether this is CI: `CI` set to anything but `false` (or empty).
pub fn on_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
}

/// The test `name`, run with what `need` found; ignored when it found nothing and that
/// is allowed (why said on stderr), failed when it is not.
pub fn trial<T, F>(name: &str, need: &Result<T, Missing>, test: F) -> Trial
where
    T: Clone + Send + 'static,
    F: FnOnce(T) + Send + 'static,
{
    match need {
        Ok(found) => {
            let found = found.clone();
            Trial::test(name, move || {
                test(found);
                Ok(())
            })
        }
        Err(missing) => {
            let why = missing.why.clone();
            let failing = Trial::test(name, move || Err(why.into()));
            if missing.required {
                failing
            } else {
                // Said once for all the tests that miss the same thing.
                static SAID: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
                if SAID.lock().unwrap().insert(missing.why.clone()) {
                    eprintln!("ignored ({}): {}", missing.what, missing.why);
                }
                failing
                    .with_ignored_flag(true)
                    .with_kind(missing.what.clone())
            }
        }
    }
}

/// Runs `trials` as the built-in harness would: its arguments (filters, `--ignored`,
/// `--test-threads`, `--list`), its output and summary, its exit status.
pub fn main(trials: Vec<Trial>) -> ExitCode {
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

/// The program `name` when it runs with `probe` and exits 0, or what is missing;
/// `package` is the Debian package that has it (`.ci/run` installs it).
pub fn program(name: &str, probe: &[&str], package: &str) -> Result<(), Missing> {
    match Command::new(name).args(probe).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(Missing::new(
            format!("needs {name}"),
            format!("`{name} {}` exited with {}", probe.join(" "), out.status),
        )),
        Err(e) => Err(Missing::new(
            format!("needs {name}"),
            format!("{name} cannot be run: {e} (apt-get install {package}, or run .ci/run)"),
        )),
    }
}
