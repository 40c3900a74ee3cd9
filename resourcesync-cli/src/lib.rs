//! The `resourcesync` command's features as a library: what each subcommand does is a
//! function here with typed options, and the binary (`src/bin/resourcesync`) parses a
//! command line, calls it and prints. Tests, benchmarks and the demo call the same
//! functions in process.
//!
//! - [`validate`]: checks a document or a package against the standard's rules: a file
//!   or standard input ([`validate::validate`]), a publication directory
//!   ([`validate::validate_directory`]), a URL ([`validate::validate_url`]), each a typed
//!   report with `Display`.
//! - [`explore`]: the documents a Source offers, read by the client in its exploring
//!   mode.
//! - [`Chain`]: an error and its causes on one line, as the command prints every error;
//!   [`problem_line`]: a run's problem as the command prints it.
//! - [`serve`]: serves a publication over HTTP, with the discovery routes of section 6.3
//!   (`serve_with_limits` until a shutdown future completes; the subcommand's arguments,
//!   signals and start line are the binary's).
//! - [`hub`]: the WebSub hub `serve --hub` runs beside a publication (the state machine
//!   of `resourcesync-websub` over axum and reqwest, its subscriptions kept in a file).
//! - [`notify`]: a Publisher's notifications delivered to its hub over reqwest.
//! - [`units`]: option values with units (durations, sizes).
//!
//! One convention for every subcommand: its library call takes typed options and returns
//! a typed report (or takes a callback or writer for what streams), and the binary
//! (`src/bin/resourcesync/`) holds the arguments, the help, the signals, the printing and
//! the exit status (so no type here has a clap derive, a help text or an exit status:
//! [`validate::Outcome`] is valid, breaks rules or unreadable, the binary maps it to 0, 1
//! or 2), and a typed error per subcommand that cannot start, whose causes it prints
//! with [`Chain`]. `build`, `sync` and `demo` have no module here, their library calls
//! being in the libraries below: `build` is [`resourcesync_source::collection::build`]
//! (options in, a `BuildReport` out), `sync` is `resourcesync_destination`'s
//! `asynchronous::sync` (options, a stop token and an `Observer` in, `Synced` out);
//! `demo`, which runs them all and prints each step, is the binary's alone.
//!
//! Layers: this crate is the top of the family (model ← xml ← package ← source /
//! destination ← cli); its binary handles signals and prints, which the libraries never do
//! (`serve` hands a file it cannot read to the caller's `Reporter`).

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod explore;
pub mod hub;
pub mod notify;
pub mod serve;
pub mod sources;
pub mod units;
pub mod validate;

use std::error::Error;
use std::fmt;

/// A problem of a run as the command prints it: the client's words, and for a URI
/// refused for its authority the way out, which only the caller knows: the command's
/// option, and where the files of that authority then go (a directory of their own in
/// DIR, `@HOST:PORT/`, as the README says).
pub fn problem_line(problem: &resourcesync_client::Problem) -> String {
    use resourcesync_client::ProblemKind;
    use resourcesync_client::policy::Refusal;
    let ProblemKind::Refused(refused) = &problem.kind else {
        return problem.to_string();
    };
    let Refusal::OtherAuthority(authority) = &refused.refusal else {
        return problem.to_string();
    };
    // Where `resourcesync_client::local_path` puts it: a `:` is no name's character on
    // Windows.
    let dir = if cfg!(windows) {
        authority.replace(':', "%3A")
    } else {
        authority.clone()
    };
    format!(
        "{problem}: allow it with --allow-authority {authority} (its files then go to DIR/@{dir}/)"
    )
}

/// An error and its causes on one line, for a person to read: `error: cause: cause`.
///
/// Each error of the family either prints its cause or returns it as its
/// [`source`](Error::source); some of other crates do both (reqwest's, thiserror's
/// `#[error("{0}")]` with `#[from]`). A cause whose message the line already holds is
/// left out, so that no cause is said twice whichever way an error is written.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let message = error.to_string();
            if !line.contains(&message) {
                line = format!("{line}: {message}");
            }
            cause = error.source();
        }
        f.write_str(&line)
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::Chain;

    /// An error that says its cause itself and returns it too (thiserror's `"{0}"` with
    /// `#[from]`), over one that only returns it.
    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("the HTTP client: {0}")]
        Says(#[from] Middle),
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot connect")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn each_cause_is_said_once_whether_an_error_prints_it_or_returns_it() {
        let e = Outer::from(Middle(std::io::Error::other("connection refused")));
        assert_eq!(
            Chain(&e).to_string(),
            "the HTTP client: cannot connect: connection refused"
        );
    }
}
