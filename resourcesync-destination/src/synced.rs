//! What a run came to: [`Synced`], its summary line, and what to do about what it left.

use resourcesync_client::{Mode, Report};

/// What a sync came to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Synced {
    /// `baseline`, `incremental` or `audit`.
    pub mode: &'static str,
    /// The client's report.
    pub report: Report,
    /// How long it took.
    pub seconds: f64,
    /// Stopped by the caller's [`StopToken`](crate::StopToken) before its end (what it did
    /// is saved).
    pub interrupted: bool,
}

impl std::fmt::Display for Synced {
    /// The summary line of `resourcesync sync`: the counts, the time, and complete,
    /// incomplete or interrupted (an audit: changed, missing, extra, in sync or not).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = &self.report;
        write!(
            f,
            "{}: {} created, {} updated, {} deleted, {} unchanged, {} failed, {} refused, {} conflicts, {} not deleted, {} bytes, {} requests, {:.2} s, {}",
            self.mode,
            report.created,
            report.updated,
            report.deleted,
            report.unchanged,
            report.failed,
            report.refused,
            report.conflicts,
            report.kept,
            report.bytes,
            report.requests,
            self.seconds,
            if self.interrupted {
                "interrupted"
            } else if report.complete {
                "complete"
            } else {
                "incomplete"
            },
        )?;
        if report.moved > 0 {
            write!(f, ", {} moved at the Source", report.moved)?;
        }
        if let Some(standing) = report.standing() {
            write!(
                f,
                ", {} changed, {} missing, {} extra, {standing}",
                report.changed, report.missing, report.extra,
            )?;
            // Listed without anything to compare the held copy with: said only when
            // there are such, so that the line of a Source that lists digests is as before.
            if report.unverified > 0 {
                write!(f, ", {} unverified", report.unverified)?;
            }
        }
        Ok(())
    }
}

impl Synced {
    /// What a run in `mode` came to, in `seconds`.
    pub fn new(mode: &Mode, report: Report, seconds: f64) -> Synced {
        let mode = match mode {
            Mode::Audit => "audit",
            Mode::Incremental => "incremental",
            _ => "baseline",
        };
        Synced {
            mode,
            report,
            seconds,
            interrupted: false,
        }
    }

    /// What the user can do about what the summary counts and a later run will not
    /// settle by itself: deletions left undone (an incremental run goes on from where
    /// this one ended), conflicts left as they are (each later run meets them again
    /// until the user resolves them). And that a dry run changed nothing, its counts
    /// being what a run would do.
    pub fn hints(&self, dry_run: bool) -> Vec<String> {
        let report = &self.report;
        let mut hints = Vec::new();
        if dry_run {
            hints.push(
                "a dry run: nothing was changed; the counts are what a run would decide, \
                 not what it would find in DIR (a file there that no sync stored, or one \
                 changed since, is a conflict only a run meets)"
                    .into(),
            );
        }
        if report.kept > 0 {
            hints.push(match report.kept {
                1 => "1 deletion listed by the Source was not made (no --delete); \
                      `sync --baseline --delete` makes it later"
                    .to_owned(),
                n => format!(
                    "{n} deletions listed by the Source were not made (no --delete); \
                     `sync --baseline --delete` makes them later"
                ),
            });
        }
        if report.moved > 0 {
            hints.push(format!(
                "{} resources changed at the Source while the run read them (their bytes \
                 matched nothing it listed, named above): the next run fetches them again",
                report.moved
            ));
        }
        if report.conflicts > 0 {
            let count = match report.conflicts {
                1 => "1 conflict (named above) was left as it is".to_owned(),
                n => format!("{n} conflicts (named above) were left as they are"),
            };
            hints.push(format!(
                "{count}. A file at a listed resource's path that is not what the sync \
                 stored (one no sync stored, or one edited since) is met again by each \
                 later run (it is not complete) until it is resolved: remove the file (the \
                 next run fetches the Source's), or run with --replace-foreign, which \
                 replaces it. A file edited since the sync stored it that the Source \
                 deleted is kept, yours from then on: no later run names it. `sync \
                 --audit` lists them"
            ));
        }
        hints
    }

    /// 0 when it completed (and, an audit, found the directory in sync), 130 when it
    /// was interrupted, else 1 (the exit statuses of `resourcesync sync`).
    pub fn exit_status(&self) -> u8 {
        let ok = self.report.complete && self.report.in_sync.unwrap_or(true);
        match (self.interrupted, ok) {
            (true, _) => 130,
            (false, true) => 0,
            (false, false) => 1,
        }
    }
}
