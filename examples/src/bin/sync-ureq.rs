//! A blocking sync over ureq: `resourcesync-destination`'s blocking driver, one request at
//! a time, no async runtime.
//!
//! ```text
//! sync-ureq [--audit] [--dry-run] [--baseline] [--dump] [--delete] [--max-deletes N]
//!           [--replace-foreign] <SOURCE-URL> <DIR>
//! ```
//!
//! The client asks, ureq fetches (following no redirect: the client checks them), and what
//! the client decides is done on disk by the library's `DirectoryDestination`, as
//! `resourcesync sync` does over reqwest and tokio: the same summary line, the same exit
//! statuses. The problems the client meets are printed as they come.

use std::process::ExitCode;

use resourcesync_client::Event;
use resourcesync_destination::blocking::{self, UreqTransport};
use resourcesync_destination::{Notice, Observer, StopToken, SyncOptions};

/// Prints what a person needs as the run goes: problems, and the run's own notices.
struct Problems;

impl Observer for Problems {
    fn event(&mut self, event: &Event) {
        if let Event::Problem(problem) = event {
            eprintln!("problem: {problem}");
        }
    }

    fn notice(&mut self, notice: &Notice) {
        eprintln!("sync-ureq: {notice}");
    }
}

fn main() -> ExitCode {
    let (mut flags, mut operands, mut max_deletes) = (Vec::new(), Vec::new(), Some(u64::MAX));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--max-deletes" => max_deletes = args.next().and_then(|n| n.parse().ok()),
            "--audit" | "--dry-run" | "--dump" | "--delete" | "--baseline"
            | "--replace-foreign" => flags.push(arg),
            _ => operands.push(arg),
        }
    }
    let (Some(max_deletes), [source, dir]) = (max_deletes, &operands[..]) else {
        let usage = "[--audit] [--dry-run] [--baseline] [--dump] [--delete] [--max-deletes N] \
            [--replace-foreign] <SOURCE-URL> <DIR>";
        eprintln!("usage: sync-ureq {usage}");
        return ExitCode::from(2);
    };
    let flag = |name: &str| flags.iter().any(|f| f == name);
    let source = match source.parse() {
        Ok(source) => source,
        Err(e) => {
            eprintln!("sync-ureq: {source:?} is not a URL: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = SyncOptions::new(source, dir)
        .with_audit(flag("--audit"))
        .with_dry_run(flag("--dry-run"))
        .with_baseline(flag("--baseline"))
        .with_dump(flag("--dump"))
        .with_replace_foreign(flag("--replace-foreign"));
    if flag("--delete") {
        options = options.with_delete(max_deletes);
    }
    let mut transport = UreqTransport::new();
    match blocking::sync(&options, &mut transport, &StopToken::new(), &mut Problems) {
        Ok(synced) => {
            println!("{synced}");
            ExitCode::from(synced.exit_status())
        }
        Err(e) => {
            eprintln!("sync-ureq: {e}");
            ExitCode::from(2)
        }
    }
}
