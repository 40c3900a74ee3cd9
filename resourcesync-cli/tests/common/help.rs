//! The help of a subcommand, checked the same way by each subcommand's tests.

use std::process::Command;

/// Runs `resourcesync` with each of `invocations` (`["build", "--help"]`,
/// `["help", "build"]`, …) and checks that each exits with 0 and prints every one of
/// `expected`.
pub(crate) fn assert_help(invocations: &[&[&str]], expected: &[&str]) {
    for args in invocations {
        let out = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
            .args(*args)
            .output()
            .expect("run resourcesync");
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        for expected in expected {
            assert!(
                text.contains(expected),
                "{args:?} lacks {expected:?}:\n{text}"
            );
        }
    }
}
