//! The `resourcesync` command.
//!
//! ```text
//! resourcesync validate [--json] [--deny-warnings] <INPUT>...
//! resourcesync sync [OPTIONS] <SOURCE-URL> <DIR>
//! resourcesync explore [--json] <URL>
//! resourcesync build [OPTIONS] --base-url <URL> <COLLECTION-DIR> <PUBLISH-DIR>
//! resourcesync demo [--source <URL>] [--keep <DIR>] [--json]
//! resourcesync serve [--addr IP:PORT] [--json] <PUBLISH-DIR>
//! ```
//!
//! What each subcommand does, what it prints (text and JSON) and its exit statuses are
//! written once, in its help below: `resourcesync validate --help`. Subcommands are
//! variants of [`Command`], each with arguments of its own, so `sync`, `build` and
//! `serve` can join `validate` without touching it.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use resourcesync_model::{DocumentKind, Finding, Severity};
use resourcesync_xml::{Input, Limits, Position, Reader};
use serde_json::{Value, json};

mod explore;

use resourcesync_cli::{build, demo, serve, sync};

/// Exit statuses common to the subcommands, for the top-level help.
const TOP_EXIT_STATUS: &str = "\
Exit status:
  0  success: the inputs are valid, the sync completed
  1  the command ran and found a problem: a rule broken, a sync incomplete or refused
  2  the command could not run: an unreadable input, a wrong command line
Each subcommand's --help says exactly when.";

/// Exit statuses of `validate`.
const EXIT_STATUS: &str = "\
Exit status:
  0  every input was read and breaks no rule (warnings allowed, unless --deny-warnings)
  1  some input breaks a rule, or has a warning with --deny-warnings
  2  some input cannot be read as a ResourceSync document, or the command line is wrong
The worst input decides. --help and --version exit with 0.";

/// What `validate` does, for its long help.
const VALIDATE_ABOUT: &str = "\
Checks documents and packages against the standard's rules.

Each INPUT is a file, or - for standard input. A document is checked as it streams, in
memory that does not grow with its size; gzipped input is decompressed, from a file or
from standard input. A file that starts like a ZIP archive is read as a Resource Dump or
Change Dump package: its manifest is checked and every bitstream verified against it
(bitstream-fixity), files the manifest does not describe are reported (unlisted-file),
and a package that cannot be opened (no manifest, unsafe names, a missing bitstream, ...)
counts as unreadable. A package is read from its end, so it must be a file: on standard
input it is unreadable. URLs are not fetched.";

/// The output of `validate`, for its long help.
const VALIDATE_OUTPUT: &str = "\
Output:
  For each input, every error and warning on a line of its own:
    <input>: error [<rule>, section <section>] entry <n> line <l> column <c>: <message>
  then one line of counts:
    <input>: <kind>, <n> entries, <n> errors, <n> warnings
  and, after all inputs, one line over all of them:
    summary: <n> documents (<n> unreadable), <n> entries, <n> errors, <n> warnings
  An input that cannot be read counts one error; standard input is named <stdin>.

JSON (--json):
  One object per input and line:
    {\"input\", \"kind\", \"entries\", \"errors\": [{\"rule\", \"section\", \"message\",
     \"line\", \"column\", \"entry\"}], \"warnings\": [...], \"error_count\", \"warning_count\"}
  null where a place or kind is unknown; an input that cannot be read has one error whose
  rule and section are null. To keep memory bounded, at most 10,000 errors and 10,000
  warnings are listed per input; error_count and warning_count always give the totals.
  Then one last object over all inputs:
    {\"summary\": {\"documents\", \"unreadable\", \"entries\", \"errors\", \"warnings\",
     \"exit_status\"}}";

/// Findings listed per severity and input in JSON output; the counts are always exact.
const MAX_LISTED: usize = 10_000;

/// ResourceSync (ANSI/NISO Z39.99-2017) documents and packages.
#[derive(Parser)]
#[command(name = "resourcesync", version, after_help = TOP_EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
enum Command {
    /// Checks documents and packages against the standard's rules.
    #[command(
        long_about = VALIDATE_ABOUT,
        after_help = EXIT_STATUS,
        after_long_help = format!("{VALIDATE_OUTPUT}\n\n{EXIT_STATUS}"),
    )]
    Validate(ValidateArgs),
    /// Keeps a directory in step with a ResourceSync Source.
    #[command(
        long_about = sync::SYNC_ABOUT,
        after_help = sync::SYNC_EXIT,
        after_long_help = format!("{}\n\n{}", sync::SYNC_OUTPUT, sync::SYNC_EXIT),
    )]
    Sync(sync::SyncArgs),
    /// Shows the documents a ResourceSync Source offers, as a tree.
    #[command(long_about = explore::EXPLORE_ABOUT)]
    Explore(explore::ExploreArgs),
    /// Publishes a directory as a ResourceSync Source, incrementally and atomically.
    #[command(
        long_about = build::BUILD_ABOUT,
        after_help = build::BUILD_EXIT,
        after_long_help = format!("{}\n\n{}", build::BUILD_OUTPUT, build::BUILD_EXIT),
    )]
    Build(build::BuildArgs),
    /// Shows the whole family at work: publish, serve, sync, change, sync, audit.
    #[command(
        long_about = demo::DEMO_ABOUT,
        after_help = demo::DEMO_EXIT,
        after_long_help = format!("{}\n\n{}", demo::DEMO_OUTPUT, demo::DEMO_EXIT),
    )]
    Demo(demo::DemoArgs),
    /// Publishes a directory over HTTP as a ResourceSync Source.
    #[command(
        long_about = serve::SERVE_ABOUT,
        after_help = serve::SERVE_EXIT,
        after_long_help = format!("{}\n\n{}", serve::SERVE_OUTPUT, serve::SERVE_EXIT),
    )]
    Serve(serve::ServeArgs),
}

/// The arguments of `validate`.
#[derive(Args)]
struct ValidateArgs {
    /// Documents (plain or gzipped) and ZIP packages; - reads standard input.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// One JSON object per input and line, then a summary object.
    #[arg(long)]
    json: bool,
    /// Warnings make the exit status 1, as errors do.
    #[arg(long)]
    deny_warnings: bool,
}

/// What one input came to, from best to worst.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Valid,
    BreaksRules,
    Unreadable,
}

impl Outcome {
    fn exit_status(self) -> u8 {
        match self {
            Outcome::Valid => 0,
            Outcome::BreaksRules => 1,
            Outcome::Unreadable => 2,
        }
    }
}

fn main() -> ExitCode {
    // clap prints help and version to stdout with status 0, and usage errors to stderr
    // with status 2, the status of an unreadable input.
    match Cli::parse().command {
        Command::Validate(args) => validate_all(&args),
        Command::Sync(args) => sync::run(&args),
        Command::Explore(args) => explore::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Serve(args) => serve::run(&args),
    }
}

/// Validates every input, prints the summary, and returns the worst outcome's status.
fn validate_all(args: &ValidateArgs) -> ExitCode {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut worst = Outcome::Valid;
    let (mut documents, mut unreadable, mut entries, mut errors, mut warnings) = (0, 0, 0, 0, 0);
    for input in &args.inputs {
        let report = validate(input, args.json, &mut out);
        let mut outcome = report.outcome();
        if args.deny_warnings && report.warning_count > 0 {
            outcome = outcome.max(Outcome::BreaksRules);
        }
        worst = worst.max(outcome);
        documents += 1;
        unreadable += u64::from(report.unreadable.is_some());
        entries += report.entries;
        errors += report.total_errors();
        warnings += report.warning_count;
    }
    let status = worst.exit_status();
    let _ = if args.json {
        let summary = json!({"summary": {
            "documents": documents,
            "unreadable": unreadable,
            "entries": entries,
            "errors": errors,
            "warnings": warnings,
            "exit_status": status,
        }});
        writeln!(out, "{summary}")
    } else {
        writeln!(
            out,
            "summary: {documents} documents ({unreadable} unreadable), {entries} entries, \
             {errors} errors, {warnings} warnings"
        )
    };
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::from(status)
}

/// Why an input could not be read: the message (without the place) and the place.
type Unreadable = (String, Option<Position>);

/// What one input came to: its kind and entries, its findings listed up to a bound and
/// counted, and why it could not be read, if it could not.
#[derive(Default)]
struct Report {
    kind: Option<DocumentKind>,
    entries: u64,
    errors: Vec<Value>,
    warnings: Vec<Value>,
    error_count: u64,
    warning_count: u64,
    unreadable: Option<Unreadable>,
}

impl Report {
    fn add(&mut self, f: &Finding, json: bool, out: &mut impl Write, input: &str) {
        let (list, count) = match f.severity() {
            Severity::Error => (&mut self.errors, &mut self.error_count),
            Severity::Warning => (&mut self.warnings, &mut self.warning_count),
        };
        *count += 1;
        if json {
            if list.len() < MAX_LISTED {
                list.push(json!({
                    "rule": f.rule.id(),
                    "section": f.section,
                    "message": f.message,
                    "line": f.position.map(|p| p.line),
                    "column": f.position.map(|p| p.column),
                    "entry": f.entry,
                }));
            }
        } else {
            let _ = writeln!(out, "{input}: {f}");
        }
    }

    /// Errors, an unreadable input counting one.
    fn total_errors(&self) -> u64 {
        self.error_count + u64::from(self.unreadable.is_some())
    }

    fn outcome(&self) -> Outcome {
        if self.unreadable.is_some() {
            Outcome::Unreadable
        } else if self.error_count > 0 {
            Outcome::BreaksRules
        } else {
            Outcome::Valid
        }
    }
}

/// The ZIP local file header's signature, with which a package starts.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Whether a file starts with a ZIP local file header; the file is rewound either way.
fn is_zip(file: &mut File) -> bool {
    use std::io::Seek;
    let mut magic = [0u8; 4];
    let zip = file.read_exact(&mut magic).is_ok() && magic == ZIP_MAGIC;
    file.rewind().is_ok() && zip
}

/// A read error as its message (without the place) and its place.
fn unreadable(e: resourcesync_xml::Error) -> Unreadable {
    (e.kind().to_string(), Some(e.position()))
}

/// A package error as its message and its sources' (each error either prints its source
/// or returns it), with the manifest's place when the manifest is unreadable.
fn package_error(
    e: resourcesync_package::PackageError,
) -> (String, Option<resourcesync_xml::Position>) {
    if let resourcesync_package::PackageError::Manifest(xml) = e {
        let (message, position) = unreadable(xml);
        return (format!("manifest.xml cannot be read: {message}"), position);
    }
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    (message, None)
}

/// Reads and checks one input, printing its findings and its line (or JSON object).
fn validate(input: &std::path::Path, json: bool, out: &mut impl Write) -> Report {
    let stdin = input.as_os_str() == "-";
    let name = if stdin {
        "<stdin>".to_string()
    } else {
        input.display().to_string()
    };
    let mut report = Report::default();
    let read = if stdin {
        read_stdin(&mut report, json, out, &name)
    } else {
        read_file(input, &mut report, json, out, &name)
    };
    report.unreadable = read.err();
    if json {
        let mut errors = std::mem::take(&mut report.errors);
        if let Some((message, position)) = &report.unreadable {
            errors.push(json!({
                "rule": null, "section": null, "message": message,
                "line": position.map(|p| p.line),
                "column": position.map(|p| p.column),
                "entry": position.and_then(|p| p.entry),
            }));
        }
        let object = json!({
            "input": name,
            "kind": report.kind.map(|k| k.name()),
            "entries": report.entries,
            "errors": errors,
            "warnings": std::mem::take(&mut report.warnings),
            "error_count": report.total_errors(),
            "warning_count": report.warning_count,
        });
        let _ = writeln!(out, "{object}");
    } else {
        if let Some((message, position)) = &report.unreadable {
            let place = position.map(|p| format!(" at {p}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{name}: cannot be read as a ResourceSync document{place}: {message}"
            );
        }
        let _ = writeln!(
            out,
            "{name}: {}, {} entries, {} errors, {} warnings",
            report.kind.map_or("unreadable", |k| k.name()),
            report.entries,
            report.total_errors(),
            report.warning_count
        );
    }
    report
}

/// Reads a file: a package when it starts like a ZIP archive, else a document.
fn read_file(
    input: &std::path::Path,
    report: &mut Report,
    json: bool,
    out: &mut impl Write,
    name: &str,
) -> Result<(), Unreadable> {
    if name.starts_with("http://") || name.starts_with("https://") {
        return Err((
            "URLs are not supported yet: download the document and give its file".to_string(),
            None,
        ));
    }
    let mut file = File::open(input).map_err(|e| (format!("cannot open: {e}"), None))?;
    if is_zip(&mut file) {
        let mut package =
            resourcesync_package::Package::new(BufReader::new(file)).map_err(package_error)?;
        report.kind = Some(package.manifest().head.kind());
        report.entries = package.manifest().entries.len() as u64;
        for f in package.check().map_err(package_error)? {
            report.add(&f, json, out, name);
        }
        return Ok(());
    }
    // The reader opens the file itself (buffered, gzip detected by content), so that its
    // errors name the path.
    drop(file);
    let reader = Reader::open_with_limits(input, limits()).map_err(unreadable)?;
    read_document(reader, report, json, out, name)
}

/// The standard's limits are reported as findings (max-entries), not refused.
fn limits() -> Limits {
    Limits::unbounded_size()
}

/// Reads standard input as a document. Its first bytes are read aside to tell a ZIP
/// package, which cannot be read from a stream, and put back in front of the rest.
fn read_stdin(
    report: &mut Report,
    json: bool,
    out: &mut impl Write,
    name: &str,
) -> Result<(), Unreadable> {
    let mut stdin = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut first = Vec::with_capacity(ZIP_MAGIC.len());
    (&mut stdin)
        .take(ZIP_MAGIC.len() as u64)
        .read_to_end(&mut first)
        .map_err(|e| (format!("cannot read: {e}"), None))?;
    if first == ZIP_MAGIC {
        return Err((
            "a ZIP package is read from its end, so not from standard input: give its file"
                .to_string(),
            None,
        ));
    }
    let reader =
        Reader::with_limits(io::Cursor::new(first).chain(stdin), limits()).map_err(unreadable)?;
    read_document(reader, report, json, out, name)
}

/// Reads a document (gzipped or not) as it streams, reporting its findings as they come.
fn read_document(
    mut reader: Reader<impl Input>,
    report: &mut Report,
    json: bool,
    out: &mut impl Write,
    name: &str,
) -> Result<(), Unreadable> {
    report.kind = Some(reader.kind().map_err(unreadable)?);
    loop {
        let next = reader.next_entry();
        for f in reader.take_findings() {
            report.add(&f, json, out, name);
        }
        report.entries = reader.entries_read();
        match next {
            Ok(Some(_)) => {}
            Ok(None) => return Ok(()),
            Err(e) => return Err(unreadable(e)),
        }
    }
}
