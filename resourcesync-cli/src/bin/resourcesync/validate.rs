//! `resourcesync validate`: the command line over [`resourcesync_cli::validate`], the
//! printing of its reports (text or JSON lines) and its exit status.

use std::collections::HashMap;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use resourcesync_cli::Chain;
use resourcesync_cli::validate::{
    Outcome, Skipped, Unreadable, ValidateOptions, ValidationReport, validate, validate_directory,
    validate_url,
};
use resourcesync_client::{Warning, WarningSummary};
use resourcesync_model::{Finding, Severity};
use serde_json::{Value, json};

/// Exit statuses of `validate`.
pub(crate) const VALIDATE_EXIT: &str = "\
Exit status:
  0  every input was read and breaks no rule (warnings allowed, unless --deny-warnings)
  1  some input breaks a rule, or has a warning with --deny-warnings (a package's
     bitstream whose bytes fail a hash listed for it breaks one)
  2  some input cannot be read as a ResourceSync document (a URL that cannot be fetched,
     a directory without any document), or the command line is wrong
The worst input decides. --help and --version exit with 0.";

/// What `validate` does, for its long help.
pub(crate) const VALIDATE_ABOUT: &str = "\
Checks documents and packages against the standard's rules.

Each INPUT is a file, a directory, a URL (http:// or https://), or - for standard input.
A document is checked as it streams, in memory that does not grow with its size; gzipped
input is decompressed, from a file or from standard input. A file that starts like a ZIP
archive is read as a Resource Dump or Change Dump package: its manifest is checked and
every bitstream verified against it (bitstream-fixity: a bitstream whose bytes fail a
hash listed for it), files the manifest does not describe are reported (unlisted-file),
and a package that cannot be opened (no manifest, unsafe names, a missing bitstream, ...)
counts as unreadable. A package is read from its end, so it must be a file or a URL: on
standard input it is unreadable.

A directory is read whole, as `resourcesync build` publishes it: every document and
package in it, in path order. What is neither (its about page, the resources, other
XML) is named and skipped, as are hidden directories but .well-known/ (the publisher's
state in .resourcesync/). A URL is fetched (redirects followed, up to --max-bytes within
--timeout) and read as a file is.";

/// The output of `validate`, for its long help.
pub(crate) const VALIDATE_OUTPUT: &str = "\
Output:
  For each input, every error on a line of its own as it is found:
    <input>: error [<rule>, section <section>] entry <n> line <l> column <c>: <message>
  then its warnings, one line per rule with a count and the first entries:
    <input>: warning: <rule>: <message> (<n> entries: <e>, <e>, <e>, ...)
  then one line of counts:
    <input>: <kind>, <n> entries, <n> errors, <n> warnings
  and, after all inputs, one line over all of them:
    summary: <n> documents (<n> unreadable), <n> entries, <n> errors, <n> warnings
  An input that cannot be read counts one error; standard input is named <stdin>. In a
  directory each document is an input, and each file skipped has a line of its own,
    <file>: skipped: <why>
  and is counted in the summary: (<n> unreadable, <n> skipped).

JSON (--json):
  One object per input and line:
    {\"input\", \"kind\", \"entries\", \"errors\": [{\"rule\", \"section\", \"message\",
     \"line\", \"column\", \"entry\"}], \"warnings\": [...], \"error_count\", \"warning_count\"}
  null where a place or kind is unknown; an input that cannot be read has one error whose
  rule and section are null. To keep memory bounded, at most 10,000 errors and 10,000
  warnings are listed per input; error_count and warning_count always give the totals.
  A file of a directory skipped: {\"input\", \"skipped\": <why>}.
  Then one last object over all inputs:
    {\"summary\": {\"documents\", \"unreadable\", \"skipped\", \"entries\", \"errors\",
     \"warnings\", \"exit_status\"}}";

/// Findings listed per severity and input in JSON output; the counts are always exact.
const MAX_LISTED: usize = 10_000;

/// The arguments of `validate`.
#[derive(Args)]
pub(crate) struct ValidateArgs {
    /// Documents (plain or gzipped), ZIP packages, publication directories or URLs; -
    /// reads standard input.
    #[arg(required = true, value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// One JSON object per input and line, then a summary object.
    #[arg(long)]
    json: bool,
    /// Warnings make the exit status 1, as errors do.
    #[arg(long)]
    deny_warnings: bool,
    /// Bytes a URL's document or package may have (K, M, G: powers of 1024).
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = resourcesync_cli::units::bytes)]
    max_bytes: u64,
    /// Time fetching a URL may take in all; ms, s or m.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = resourcesync_cli::units::duration)]
    timeout: Duration,
}

/// The exit status of an outcome (see [`VALIDATE_EXIT`]).
fn status(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Valid => 0,
        Outcome::BreaksRules => 1,
        _ => 2,
    }
}

/// Validates every input, prints the summary, and returns the worst outcome's status.
pub(crate) fn run(args: &ValidateArgs) -> ExitCode {
    let stdout = io::stdout();
    let mut printer = Printer {
        json: args.json,
        deny_warnings: args.deny_warnings,
        out: BufWriter::new(stdout.lock()),
        warnings: HashMap::new(),
        worst: Outcome::Valid,
        totals: Totals::default(),
    };
    // A URL needs an async runtime: one, made for the first.
    let mut runtime = None;
    for input in &args.inputs {
        let options = ValidateOptions::new(input)
            .with_listed(if args.json { MAX_LISTED } else { 0 })
            .with_fetch_limits(args.max_bytes, args.timeout);
        let text = input.to_string_lossy();
        if text.starts_with("http://") || text.starts_with("https://") {
            let report = match (text.parse(), runtime_for(&mut runtime)) {
                (Ok(url), Ok(runtime)) => {
                    runtime.block_on(validate_url(&url, &options, |f| printer.found(&text, f)))
                }
                (Err(e), _) => {
                    ValidationReport::unreadable(text, format!("not a URL: {}", Chain(&e)))
                }
                (_, Err(e)) => ValidationReport::unreadable(text, Chain(&e).to_string()),
            };
            printer.report(report);
        } else if input.is_dir() {
            let directory = validate_directory(&options, |name, f| printer.found(name, f));
            let mut skipped = directory.skipped.iter().peekable();
            for report in directory.reports {
                // The skipped files in path order among the reports.
                while let Some(s) = skipped.next_if(|s| s.name < report.name) {
                    printer.skipped(s);
                }
                printer.report(report);
            }
            skipped.for_each(|s| printer.skipped(s));
        } else {
            let name = options.name();
            let report = validate(&options, |f| printer.found(&name, f));
            printer.report(report);
        }
    }
    printer.summary()
}

/// The tokio runtime URLs are fetched on, made the first time one is asked for.
fn runtime_for(
    runtime: &mut Option<tokio::runtime::Runtime>,
) -> io::Result<&tokio::runtime::Runtime> {
    if runtime.is_none() {
        *runtime = Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
        );
    }
    runtime
        .as_ref()
        .ok_or_else(|| io::Error::other("no runtime"))
}

/// The counts over every input.
#[derive(Default)]
struct Totals {
    documents: u64,
    unreadable: u64,
    skipped: u64,
    entries: u64,
    errors: u64,
    warnings: u64,
}

/// What the command shows of the reports: errors as they are found, warnings aggregated
/// per input and rule as `sync` shows them, each report's line or JSON object, the
/// summary.
struct Printer<W: Write> {
    json: bool,
    deny_warnings: bool,
    out: W,
    /// The warnings of each input not yet printed, by input.
    warnings: HashMap<String, WarningSummary>,
    worst: Outcome,
    totals: Totals,
}

impl<W: Write> Printer<W> {
    /// A finding of input `name`, as it is found: JSON lists them in the report instead.
    fn found(&mut self, name: &str, f: &Finding) {
        if self.json {
            return;
        }
        match f.severity() {
            Severity::Error => {
                let _ = writeln!(self.out, "{name}: {f}");
            }
            _ => self
                .warnings
                .entry(name.to_owned())
                .or_default()
                .add(&Warning::new(
                    None,
                    f.entry,
                    Some(f.rule),
                    f.message.clone(),
                )),
        }
    }

    /// A file of a directory not validated.
    fn skipped(&mut self, skipped: &Skipped) {
        self.totals.skipped += 1;
        let _ = if self.json {
            let why = skipped.reason.to_string();
            writeln!(
                self.out,
                "{}",
                json!({"input": skipped.name, "skipped": why})
            )
        } else {
            writeln!(self.out, "{skipped}")
        };
    }

    /// One input's report: its warnings and line (or JSON object); counted.
    fn report(&mut self, report: ValidationReport) {
        let mut outcome = report.outcome();
        if self.deny_warnings && report.warning_count > 0 {
            outcome = outcome.max(Outcome::BreaksRules);
        }
        self.worst = self.worst.max(outcome);
        let totals = &mut self.totals;
        totals.documents += 1;
        totals.unreadable += u64::from(report.unreadable.is_some());
        totals.entries += report.entries;
        totals.errors += report.total_errors();
        totals.warnings += report.warning_count;
        let warnings = self.warnings.remove(&report.name).unwrap_or_default();
        let _ = if self.json {
            writeln!(self.out, "{}", report_json(&report))
        } else {
            if let Some(unreadable) = &report.unreadable {
                let _ = writeln!(self.out, "{}: {unreadable}", report.name);
            }
            for group in warnings.groups() {
                let _ = writeln!(self.out, "{}: warning: {group}", report.name);
            }
            writeln!(self.out, "{report}")
        };
    }

    /// The summary line (or object); the exit status.
    fn summary(mut self) -> ExitCode {
        let status = status(self.worst);
        let Totals {
            documents,
            unreadable,
            skipped,
            entries,
            errors,
            warnings,
        } = self.totals;
        let _ = if self.json {
            let summary = json!({"summary": {
                "documents": documents,
                "unreadable": unreadable,
                "skipped": skipped,
                "entries": entries,
                "errors": errors,
                "warnings": warnings,
                "exit_status": status,
            }});
            writeln!(self.out, "{summary}")
        } else {
            let skipped = match skipped {
                0 => String::new(),
                n => format!(", {n} skipped"),
            };
            writeln!(
                self.out,
                "summary: {documents} documents ({unreadable} unreadable{skipped}), \
                 {entries} entries, {errors} errors, {warnings} warnings"
            )
        };
        if self.out.flush().is_err() {
            return ExitCode::from(2);
        }
        ExitCode::from(status)
    }
}

/// A report as its JSON object.
fn report_json(report: &ValidationReport) -> Value {
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
    json!({
        "input": report.name,
        "kind": report.kind.map(|k| k.name()),
        "entries": report.entries,
        "errors": errors,
        "warnings": report.warnings.iter().map(finding).collect::<Vec<_>>(),
        "error_count": report.total_errors(),
        "warning_count": report.warning_count,
    })
}
