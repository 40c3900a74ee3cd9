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

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use resourcesync_model::Finding;
use serde_json::{Value, json};

mod build;
mod demo;
mod explore;
mod serve;
mod sync;

use resourcesync_cli::validate::{self, Outcome, Unreadable, ValidateOptions};

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
        let report = validate_one(input, args.json, &mut out);
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

/// Validates one input, printing its findings as they come (text) and its line (or JSON
/// object): what it came to.
fn validate_one(input: &Path, json: bool, out: &mut impl Write) -> validate::Report {
    // JSON lists findings in the report, bounded; text prints each as it is found.
    let options = ValidateOptions::new(input).with_listed(if json { MAX_LISTED } else { 0 });
    let name = options.name();
    let report = validate::validate(&options, |f| {
        if !json {
            let _ = writeln!(out, "{name}: {f}");
        }
    });
    if json {
        let finding = |f: &Finding| {
            json!({
                "rule": f.rule.id(),
                "section": f.section,
                "message": f.message,
                "line": f.position.map(|p| p.line),
                "column": f.position.map(|p| p.column),
                "entry": f.entry,
            })
        };
        let mut errors: Vec<Value> = report.errors.iter().map(finding).collect();
        if let Some(Unreadable {
            message, position, ..
        }) = &report.unreadable
        {
            errors.push(json!({
                "rule": null, "section": null, "message": message,
                "line": position.map(|p| p.line),
                "column": position.map(|p| p.column),
                "entry": position.and_then(|p| p.entry),
            }));
        }
        let object = json!({
            "input": report.name,
            "kind": report.kind.map(|k| k.name()),
            "entries": report.entries,
            "errors": errors,
            "warnings": report.warnings.iter().map(finding).collect::<Vec<_>>(),
            "error_count": report.total_errors(),
            "warning_count": report.warning_count,
        });
        let _ = writeln!(out, "{object}");
    } else {
        if let Some(Unreadable {
            message, position, ..
        }) = &report.unreadable
        {
            let place = position.map(|p| format!(" at {p}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{}: cannot be read as a ResourceSync document{place}: {message}",
                report.name
            );
        }
        let _ = writeln!(
            out,
            "{}: {}, {} entries, {} errors, {} warnings",
            report.name,
            report.kind.map_or("unreadable", |k| k.name()),
            report.entries,
            report.total_errors(),
            report.warning_count
        );
    }
    report
}
