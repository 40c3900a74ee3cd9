//! A command under test as a process: a signal sent to it, and its end waited for, with a
//! bound.

// Each test file includes this module and uses part of it.
#![allow(dead_code)]

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

pub(crate) use rustix::process::Signal;

/// Sends `signal` to `child` (SIGINT and SIGTERM are how a user stops a run).
pub(crate) fn signal(child: &Child, signal: Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), signal).unwrap();
}

/// The child's exit status once it exits, if it does within `bound`.
pub(crate) fn exited_within(child: &mut Child, bound: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < bound {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
