//! `resourcesync sync --sources FILE`: the command's layer over
//! `resourcesync_destination::harvest`: the file read (`resourcesync_cli::sources`), the
//! signals, and the printing (each Source's problems as they happen, named; a table, or
//! JSON, of what each came to; with --follow a line per run and notice).

use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use resourcesync_client::Event;
use resourcesync_destination::Notice;
use resourcesync_destination::asynchronous::AsyncStop;
use resourcesync_destination::follow::FollowNotice;
use resourcesync_destination::harvest::{self, Harvest, HarvestObserver, Harvested, Member};
use resourcesync_model::W3cDateTime;

use crate::error::Error;
use crate::sync::{SyncArgs, follow_json, follow_line, listen};

/// The long help's part about the Sources file.
pub(crate) const SOURCES_HELP: &str = "\
Many Sources (--sources FILE):
  FILE is TOML: a [[source]] table per Source with `url` (as SOURCE-URL), `dir` (its own
  directory, relative to FILE's; no two the same or one inside another) and, optionally,
  `name` and sync's options by their names: delete, max-deletes, concurrency, verify,
  dump, max-unlisted-bytes, max-request-time, replace-foreign, allow-authority (a list);
  and `interval` (when it is due again after a complete run, default 1h) and `max-time`
  (the longest one run of it may take). A [defaults] table gives any of these to every
  Source that does not set it. A [limits] table bounds the harvest: sources (synced at
  once, 16), requests (in flight in all, 64), per-host (in flight to one scheme, host
  and port, 4), robots (read each host's robots.txt and start its requests its
  Crawl-delay apart; true). Each Source keeps its own state in its directory, exactly
  as `sync SOURCE-URL DIR` does; --audit, --dry-run and --baseline apply to each.
  One Source failing, hanging or slow holds only its own places. Problems are printed
  on standard error as they happen, each after its Source's name; then a table on
  standard output: each Source's status (complete, incomplete, timed out, interrupted,
  failed: it could not start), counts, seconds, when it is next due, and why it did not
  complete. With --json, an object per Source as it finishes ({\"source\": {...}}), then
  {\"harvest\": {...}}. Exit status 0 when every Source completed, 1 when one did not,
  2 when FILE cannot be used, 130 when interrupted.
  With --follow, every Source is followed as `sync --follow` follows one (its callback on
  --listen's address, at a port of its own), each line after its Source's name.";

/// Runs `sync --sources FILE`: its exit status.
pub(crate) async fn run(args: &SyncArgs, file: &Path) -> Result<u8, Error> {
    let (audit, dry_run, baseline) = (args.audit, args.dry_run, args.baseline);
    let harvest = resourcesync_cli::sources::read(file)?
        .map_sync(|s| {
            s.with_audit(audit)
                .with_dry_run(dry_run)
                .with_baseline(baseline)
        })
        .map_err(|source| resourcesync_cli::sources::SourcesError::Harvest {
            path: file.to_path_buf(),
            source,
        })?;
    let stop = AsyncStop::new();
    let _listener = listen(stop.clone());
    let printer = Arc::new(Printer {
        json: args.json,
        names: harvest.members().iter().map(|m| m.name.clone()).collect(),
    });
    if args.follow {
        let followed = harvest::follow(&harvest, args.listen.ip(), &stop, printer.clone()).await;
        let failed = followed.iter().filter(|f| f.is_err()).count();
        let all = followed.len();
        // A follower that failed was told when it did (`Printer::failed`).
        for (member, followed) in harvest.members().iter().zip(followed) {
            if let Ok(f) = followed {
                printer.say(&member.name, &f.to_string());
            }
        }
        // Followers end when stopped, or when one cannot go on.
        return Ok(match (stop.token().is_stopped(), failed) {
            (true, _) => 130,
            (false, f) if f == all => 2,
            (false, _) => 1,
        });
    }
    let done = harvest::harvest(&harvest, &stop, printer.clone()).await;
    let complete = done.iter().filter(|d| d.is_complete()).count();
    let interrupted = stop.token().is_stopped();
    let mut out = io::stdout().lock();
    if args.json {
        let summary = serde_json::json!({"harvest": {
            "sources": done.len(), "complete": complete, "incomplete": done.len() - complete,
            "interrupted": interrupted}});
        let _ = writeln!(out, "{summary}");
    } else {
        let _ = write!(out, "{}", table(&harvest, &done));
        let _ = writeln!(
            out,
            "harvest: {} Sources, {complete} complete, {} not{}",
            done.len(),
            done.len() - complete,
            if interrupted { ", interrupted" } else { "" }
        );
    }
    Ok(match (interrupted, complete == done.len()) {
        (true, _) => 130,
        (false, true) => 0,
        (false, false) => 1,
    })
}

/// The table of what each Source came to.
fn table(harvest: &Harvest, done: &[Harvested]) -> String {
    let header = [
        "SOURCE", "STATUS", "MODE", "CREATED", "UPDATED", "DELETED", "FAILED", "SECONDS",
        "NEXT DUE", "WHY",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_owned()).collect()];
    for (d, member) in done.iter().zip(harvest.members()) {
        let (mode, counts, seconds) = match &d.outcome {
            Ok(s) => (
                s.mode.to_owned(),
                [
                    s.report.created,
                    s.report.updated,
                    s.report.deleted,
                    s.report.failed,
                ]
                .map(|n| n.to_string()),
                format!("{:.2}", s.seconds),
            ),
            Err(_) => (
                "-".into(),
                ["-", "-", "-", "-"].map(str::to_owned),
                "-".into(),
            ),
        };
        let mut row = vec![clean(&member.name), d.status().to_owned(), mode];
        row.extend(counts);
        row.push(seconds);
        row.push(moment(d.next_due));
        row.push(d.reason().map(|r| clean(&r)).unwrap_or_default());
        rows.push(row);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut text = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text
}

/// `at` in UTC to the second (`2026-11-29T05:12:00Z`).
fn moment(at: std::time::SystemTime) -> String {
    let seconds = at
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    W3cDateTime::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds)).to_string()
}

/// `text` as a terminal shows it as written: what a terminal would obey (a control
/// character, a line break, a bidirectional override) escaped, as every message of
/// ours escapes a Source's words (`resourcesync_model::text::escaped`).
fn clean(text: &str) -> String {
    resourcesync_model::text::escaped(text).into_owned()
}

/// Prints what the Sources' runs say, each after its Source's name.
struct Printer {
    json: bool,
    names: Vec<String>,
}

impl Printer {
    fn name(&self, index: usize) -> &str {
        self.names.get(index).map_or("?", String::as_str)
    }

    fn say(&self, name: &str, line: &str) {
        let _ = writeln!(io::stdout().lock(), "{}: {}", clean(name), clean(line));
    }
}

impl HarvestObserver for Printer {
    fn started(&self, _: usize, _: &Member) {}

    fn event(&self, index: usize, event: &Event) {
        match event {
            Event::Problem(problem) => {
                eprintln!(
                    "{}: problem: {}",
                    clean(self.name(index)),
                    clean(&resourcesync_cli::problem_line(problem))
                );
            }
            Event::Audit { uri, standing } => {
                eprintln!("{}: {standing}: {uri}", clean(self.name(index)));
            }
            _ => {}
        }
    }

    fn notice(&self, index: usize, notice: &Notice) {
        eprintln!(
            "{}: {}",
            clean(self.name(index)),
            clean(&notice.to_string())
        );
    }

    fn follow(&self, index: usize, notice: &FollowNotice) {
        let name = self.name(index);
        if self.json {
            if let Some(mut value) = follow_json(notice) {
                if let Some(object) = value.as_object_mut() {
                    object.insert("source".into(), name.into());
                }
                let _ = writeln!(io::stdout().lock(), "{value}");
            }
        } else if let Some(line) = follow_line(notice) {
            self.say(name, &line);
        }
    }

    fn failed(&self, index: usize, error: &resourcesync_destination::SyncError) {
        eprintln!(
            "{}: cannot follow: {}",
            clean(self.name(index)),
            clean(&resourcesync_cli::Chain(error).to_string())
        );
    }

    fn finished(&self, done: &Harvested) {
        if !self.json {
            return;
        }
        let mut object = serde_json::json!({
            "name": done.name,
            "status": done.status(),
            "complete": done.is_complete(),
            "why": done.reason(),
            "crawl_delay": done.crawl_delay.map(|d| d.as_secs_f64()),
            "started": moment(done.started),
            "ended": moment(done.ended),
            "next_due": moment(done.next_due),
        });
        if let (Ok(synced), Some(map)) = (&done.outcome, object.as_object_mut()) {
            map.insert("mode".into(), synced.mode.into());
            map.insert("seconds".into(), synced.seconds.into());
            if let Ok(report) = serde_json::to_value(&synced.report) {
                map.insert("report".into(), report);
            }
        }
        let _ = writeln!(
            io::stdout().lock(),
            "{}",
            serde_json::json!({ "source": object })
        );
    }
}

#[cfg(test)]
mod tests {
    /// A Source's words in a harvest's lines keep what a terminal would obey escaped: a
    /// bidirectional override passed as it was (it is no control character), and a line
    /// break became a space, where every other message escapes both.
    #[test]
    fn a_source_s_words_are_escaped_as_every_message_escapes_them() {
        assert_eq!(
            super::clean("evil\u{202e}txt.exe\nnext"),
            r"evil\u{202e}txt.exe\nnext"
        );
        assert_eq!(super::clean("the hub's \"words\""), "the hub's \"words\"");
    }
}
