//! The `resourcesync` command.
//!
//! ```text
//! resourcesync validate [--json] <FILE>...
//! ```
//!
//! For each input: the document kind, the number of entries, and every error and warning
//! with its rule id, section of the standard, message and place. Exit status 0 when no
//! input has an error, 1 when some input breaks a rule, 2 when some input cannot be read
//! as a ResourceSync document at all (or the command line is wrong). It streams: memory
//! does not grow with the size of a document. Gzipped files are read as they are. A ZIP
//! file is read as a Resource Dump or Change Dump package: its manifest is checked and
//! every bitstream verified against it (`bitstream-fixity`), files the manifest does not
//! describe are reported (`unlisted-file`), and a package that cannot be opened (no
//! manifest, unsafe names, a missing bitstream, …) counts as unreadable.
//!
//! With `--json`, one JSON object per input and line:
//! `{"input", "kind", "entries", "errors": [{"rule", "section", "message", "line",
//! "column", "entry"}], "warnings": [...]}`, `null` where a place is unknown; a document
//! that cannot be read has one error whose rule and section are `null`. To keep memory
//! bounded, at most 10,000 errors and 10,000 warnings are listed per input;
//! `"error_count"` and `"warning_count"` always give the totals.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Write};
use std::process::ExitCode;

use resourcesync_model::{Finding, Severity};
use resourcesync_xml::{Limits, Reader};
use serde_json::{Value, json};

const USAGE: &str = "usage: resourcesync validate [--json] <FILE>...";

/// Findings listed per severity and input in JSON output; the counts are always exact.
const MAX_LISTED: usize = 10_000;

/// What one input came to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Valid,
    BreaksRules,
    Unreadable,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some("validate"), rest) = (args.first().map(String::as_str), args.get(1..)) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = rest.unwrap_or_default();
    let json = rest.iter().any(|a| a == "--json");
    let inputs: Vec<&String> = rest.iter().filter(|a| *a != "--json").collect();
    if inputs.is_empty() || inputs.iter().any(|a| a.starts_with("--")) {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut worst = Outcome::Valid;
    for input in inputs {
        let outcome = validate(input, json, &mut out);
        worst = worst.max(outcome);
    }
    if out.flush().is_err() {
        return ExitCode::from(2);
    }
    ExitCode::from(match worst {
        Outcome::Valid => 0,
        Outcome::BreaksRules => 1,
        Outcome::Unreadable => 2,
    })
}

/// The findings of one input, listed up to a bound and counted.
#[derive(Default)]
struct Report {
    errors: Vec<Value>,
    warnings: Vec<Value>,
    error_count: u64,
    warning_count: u64,
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
}

/// Whether a file starts with a ZIP local file header; the file is rewound either way.
fn is_zip(file: &mut File) -> bool {
    use std::io::{Read, Seek};
    let mut magic = [0u8; 4];
    let zip = file.read_exact(&mut magic).is_ok() && magic == *b"PK\x03\x04";
    file.rewind().is_ok() && zip
}

/// A read error as its message (without the place) and its place.
fn unreadable(e: resourcesync_xml::Error) -> (String, Option<resourcesync_xml::Position>) {
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

fn validate(input: &str, json: bool, out: &mut impl Write) -> Outcome {
    let mut report = Report::default();
    let mut kind = None;
    let mut entries = 0;
    let read = (|| {
        if input.starts_with("http://") || input.starts_with("https://") {
            return Err((
                "URLs are not supported yet: download the document and give its file".to_string(),
                None,
            ));
        }
        let mut file = File::open(input).map_err(|e| (format!("cannot open: {e}"), None))?;
        if is_zip(&mut file) {
            let mut package =
                resourcesync_package::Package::open(BufReader::new(file)).map_err(package_error)?;
            kind = Some(package.manifest().head.kind());
            entries = package.manifest().entries.len() as u64;
            for f in package.check().map_err(package_error)? {
                report.add(&f, json, out, input);
            }
            return Ok(());
        }
        // The standard's limits are reported as findings (max-entries), not refused.
        let mut reader = Reader::with_limits(
            BufReader::with_capacity(64 * 1024, file),
            Limits::unbounded_size(),
        )
        .map_err(unreadable)?;
        kind = Some(reader.kind().map_err(unreadable)?);
        loop {
            let next = reader.next_entry();
            for f in reader.take_findings() {
                report.add(&f, json, out, input);
            }
            entries = reader.entries_read();
            match next {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(()),
                Err(e) => return Err(unreadable(e)),
            }
        }
    })();
    let outcome = match &read {
        Err(_) => Outcome::Unreadable,
        Ok(()) if report.error_count > 0 => Outcome::BreaksRules,
        Ok(()) => Outcome::Valid,
    };
    if json {
        let mut errors = report.errors;
        if let Err((message, position)) = &read {
            errors.push(json!({
                "rule": null, "section": null, "message": message,
                "line": position.map(|p| p.line),
                "column": position.map(|p| p.column),
                "entry": position.and_then(|p| p.entry),
            }));
        }
        let object = json!({
            "input": input,
            "kind": kind.map(|k| k.name()),
            "entries": entries,
            "errors": errors,
            "warnings": report.warnings,
            "error_count": report.error_count + u64::from(read.is_err()),
            "warning_count": report.warning_count,
        });
        let _ = writeln!(out, "{object}");
    } else {
        if let Err((message, position)) = &read {
            let place = position.map(|p| format!(" at {p}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{input}: cannot be read as a ResourceSync document{place}: {message}"
            );
        }
        let _ = writeln!(
            out,
            "{input}: {}, {entries} entries, {} errors, {} warnings",
            kind.map_or("unreadable", |k| k.name()),
            report.error_count + u64::from(read.is_err()),
            report.warning_count
        );
    }
    outcome
}
