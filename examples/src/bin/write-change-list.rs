//! Writes a Change List of the changes given on the command line to a file or to standard
//! output, with the writer refusing anything that breaks a rule of the standard (a change
//! out of forward chronological order, a datetime before `from`, …).
//!
//! Shows: `DocumentHead::of_kind` with `with_from` and the mandatory `up` link, entries
//! built in one expression, "now" as `W3cDateTime::from(SystemTime::now())` (read once:
//! the value is `Copy`), `Writer::with_options` with `WriteOptions::with_refuse_errors`,
//! and `Written::findings` (warnings only, since errors are refused). The document is
//! written to memory first, so that a refused change leaves no half-written file.
//!
//! Usage: `write-change-list [--from T] [--up URI] [-o FILE] CHANGE,LOC[,DATETIME]...`
//! for example `write-change-list created,http://example.com/res1 deleted,http://example.com/res2`;
//! `--from` and a change's missing datetime default to now.

use std::error::Error;
use std::fs;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use resourcesync_model::{
    Change, DocumentHead, DocumentKind, Entry, Link, Relation, Uri, W3cDateTime,
};
use resourcesync_xml::{WriteOptions, Writer};

/// What to do, from the command line (by hand: an argument parser is a dependency an
/// example does not need).
struct Args {
    /// The start of the changes covered (default: now).
    from: Option<W3cDateTime>,
    /// The Capability List the Change List belongs to.
    up: Uri,
    /// Where to write (default: standard output).
    output: Option<PathBuf>,
    /// The changes, in order: `created|updated|deleted,LOC[,DATETIME]`.
    changes: Vec<(Change, Uri, Option<W3cDateTime>)>,
}

const USAGE: &str =
    "usage: write-change-list [--from DATETIME] [--up URL] [-o|--output FILE] CHANGE...
Writes a Change List, refusing what breaks a rule of the standard.
CHANGE: created|updated|deleted,LOC[,DATETIME], in order.";

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let mut up = "http://example.com/dataset1/capabilitylist.xml".to_owned();
        let (mut from, mut output, mut changes) = (None, None, Vec::new());
        let mut args = arguments();
        while let Some(arg) = args.next() {
            let mut value = || args.next().and_then(|a| a.into_string().ok()).ok_or(USAGE);
            match arg.to_str() {
                Some("--from") => from = Some(value()?.parse()?),
                Some("--up") => up = value()?,
                Some("-o" | "--output") => output = Some(PathBuf::from(value()?)),
                Some("-h" | "--help") => return Err(USAGE.into()),
                Some(change) => {
                    changes.push(parse_change(change).map_err(|e| format!("{change:?}: {e}"))?)
                }
                None => return Err(USAGE.into()),
            }
        }
        if changes.is_empty() {
            return Err(USAGE.into());
        }
        Ok(Args {
            from,
            up: up.parse()?,
            output,
            changes,
        })
    }
}

fn parse_change(
    text: &str,
) -> Result<(Change, Uri, Option<W3cDateTime>), Box<dyn Error + Send + Sync>> {
    let mut fields = text.splitn(3, ',');
    let change = fields.next().unwrap_or_default().parse()?;
    let loc = fields
        .next()
        .ok_or("expected CHANGE,LOC[,DATETIME]")?
        .parse()?;
    let datetime = fields.next().map(str::parse).transpose()?;
    Ok((change, loc, datetime))
}

/// The command line's arguments, `--name=value` as `--name value`.
fn arguments() -> impl Iterator<Item = std::ffi::OsString> {
    std::env::args_os()
        .skip(1)
        .flat_map(|arg| match arg.to_str().and_then(|a| a.split_once('=')) {
            Some((name, value)) if name.starts_with("--") => vec![name.into(), value.into()],
            _ => vec![arg],
        })
}

fn main() -> ExitCode {
    match Args::parse().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("write-change-list: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let now = W3cDateTime::from(SystemTime::now());
    let head = DocumentHead::of_kind(DocumentKind::ChangeList)
        .with_from(args.from.unwrap_or(now))
        .with_link(Link::new(Relation::Up, args.up));
    let options = WriteOptions::default().with_refuse_errors(true);
    let mut writer = Writer::with_options(Vec::new(), &head, options)?;
    for (change, loc, datetime) in args.changes {
        let entry = Entry::new(loc)
            .with_change(change)
            .with_datetime(datetime.unwrap_or(now));
        writer.write_entry(&entry)?;
    }
    let count = writer.entries_written();
    let written = writer.finish()?;
    for warning in &written.findings {
        eprintln!("{warning}");
    }
    // Written only once every change was accepted: a refused change leaves no file behind.
    match &args.output {
        Some(path) => {
            fs::write(path, &written.output).map_err(|e| format!("{}: {e}", path.display()))?;
            eprintln!("wrote {count} changes to {}", path.display());
        }
        None => io::stdout().write_all(&written.output)?,
    }
    Ok(())
}
