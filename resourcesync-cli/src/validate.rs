//! `resourcesync validate`: one input (a document, plain or gzipped, or a ZIP package)
//! checked against the standard's rules, as a typed [`Report`]; the command prints it.
//!
//! A document is checked as it streams, in memory that does not grow with its size: each
//! finding goes to the caller as it is found, and the report keeps at most
//! [`ValidateOptions::listed`] of each severity (the counts are always exact).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use resourcesync_model::{DocumentKind, Finding, Severity};
use resourcesync_xml::{Input, Limits, Position, Reader};

/// What to validate and how much to keep.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ValidateOptions {
    /// The input: a file, or `-` for standard input.
    pub input: PathBuf,
    /// Findings of each severity kept in the report ([`Report::errors`],
    /// [`Report::warnings`]); the counts are exact whatever it is.
    pub listed: usize,
}

impl ValidateOptions {
    /// Validates `input` (`-` is standard input), keeping no finding in the report.
    pub fn new(input: impl Into<PathBuf>) -> ValidateOptions {
        ValidateOptions {
            input: input.into(),
            listed: 0,
        }
    }

    /// The input's name in a report: its path, or `<stdin>` for `-`.
    pub fn name(&self) -> String {
        if self.is_stdin() {
            "<stdin>".to_string()
        } else {
            self.input.display().to_string()
        }
    }

    fn is_stdin(&self) -> bool {
        self.input.as_os_str() == "-"
    }

    /// Keeps up to `listed` findings of each severity in the report.
    #[must_use]
    pub fn with_listed(mut self, listed: usize) -> ValidateOptions {
        self.listed = listed;
        self
    }
}

/// Why an input could not be read as a ResourceSync document or package.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unreadable {
    /// What went wrong, without the place.
    pub message: String,
    /// Where, when it is known.
    pub position: Option<Position>,
}

impl Unreadable {
    fn new(message: impl Into<String>) -> Unreadable {
        Unreadable {
            message: message.into(),
            position: None,
        }
    }
}

/// What one input came to, from best to worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Outcome {
    /// Read, and it breaks no rule.
    Valid,
    /// Read, and it breaks a rule.
    BreaksRules,
    /// It could not be read.
    Unreadable,
}

impl Outcome {
    /// The exit status of `validate` for this outcome: 0, 1 or 2.
    pub fn exit_status(self) -> u8 {
        match self {
            Outcome::Valid => 0,
            Outcome::BreaksRules => 1,
            Outcome::Unreadable => 2,
        }
    }
}

/// What one input came to: its kind and entries, its findings (kept up to a bound, and
/// counted), and why it could not be read, if it could not.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Report {
    /// The input's name: its path, or `<stdin>`.
    pub name: String,
    /// The kind of document (a package's: its manifest's), once known.
    pub kind: Option<DocumentKind>,
    /// Entries read.
    pub entries: u64,
    /// The errors found, up to [`ValidateOptions::listed`].
    pub errors: Vec<Finding>,
    /// The warnings found, up to [`ValidateOptions::listed`].
    pub warnings: Vec<Finding>,
    /// Errors found (an unreadable input's is not among them: see
    /// [`total_errors`](Report::total_errors)).
    pub error_count: u64,
    /// Warnings found.
    pub warning_count: u64,
    /// Why the input could not be read, if it could not.
    pub unreadable: Option<Unreadable>,
}

impl Report {
    /// Errors, an unreadable input counting one.
    pub fn total_errors(&self) -> u64 {
        self.error_count + u64::from(self.unreadable.is_some())
    }

    /// Unreadable, breaking rules, or valid.
    pub fn outcome(&self) -> Outcome {
        if self.unreadable.is_some() {
            Outcome::Unreadable
        } else if self.error_count > 0 {
            Outcome::BreaksRules
        } else {
            Outcome::Valid
        }
    }
}

/// Reads and checks one input, handing each finding to `found` as it is found: what it
/// came to. An input that cannot be read is a report too ([`Report::unreadable`]).
pub fn validate(options: &ValidateOptions, found: impl FnMut(&Finding)) -> Report {
    let mut reading = Reading {
        report: Report {
            name: options.name(),
            ..Report::default()
        },
        listed: options.listed,
        found,
    };
    let read = if options.is_stdin() {
        reading.stdin()
    } else {
        reading.file(&options.input)
    };
    reading.report.unreadable = read.err();
    reading.report
}

/// A report being made, and where its findings go.
struct Reading<F> {
    report: Report,
    listed: usize,
    found: F,
}

impl<F: FnMut(&Finding)> Reading<F> {
    fn add(&mut self, f: Finding) {
        (self.found)(&f);
        let report = &mut self.report;
        let (list, count) = match f.severity() {
            Severity::Error => (&mut report.errors, &mut report.error_count),
            Severity::Warning => (&mut report.warnings, &mut report.warning_count),
        };
        *count += 1;
        if list.len() < self.listed {
            list.push(f);
        }
    }

    /// Reads a file: a package when it starts like a ZIP archive, else a document.
    fn file(&mut self, input: &Path) -> Result<(), Unreadable> {
        let name = &self.report.name;
        if name.starts_with("http://") || name.starts_with("https://") {
            return Err(Unreadable::new(
                "URLs are not supported yet: download the document and give its file",
            ));
        }
        let mut file =
            File::open(input).map_err(|e| Unreadable::new(format!("cannot open: {e}")))?;
        if is_zip(&mut file) {
            let mut package =
                resourcesync_package::Package::new(BufReader::new(file)).map_err(package_error)?;
            self.report.kind = Some(package.manifest().head.kind());
            self.report.entries = package.manifest().entries.len() as u64;
            for f in package.check().map_err(package_error)? {
                self.add(f);
            }
            return Ok(());
        }
        // The reader opens the file itself (buffered, gzip detected by content), so that
        // its errors name the path.
        drop(file);
        let reader = Reader::open_with_limits(input, limits()).map_err(unreadable)?;
        self.document(reader)
    }

    /// Reads standard input as a document. Its first bytes are read aside to tell a ZIP
    /// package, which cannot be read from a stream, and put back in front of the rest.
    fn stdin(&mut self) -> Result<(), Unreadable> {
        let mut stdin = BufReader::with_capacity(64 * 1024, io::stdin().lock());
        let mut first = Vec::with_capacity(ZIP_MAGIC.len());
        (&mut stdin)
            .take(ZIP_MAGIC.len() as u64)
            .read_to_end(&mut first)
            .map_err(|e| Unreadable::new(format!("cannot read: {e}")))?;
        if first == ZIP_MAGIC {
            return Err(Unreadable::new(
                "a ZIP package is read from its end, so not from standard input: give its file",
            ));
        }
        let reader = Reader::with_limits(io::Cursor::new(first).chain(stdin), limits())
            .map_err(unreadable)?;
        self.document(reader)
    }

    /// Reads a document (gzipped or not) as it streams, its findings as they come.
    fn document(&mut self, mut reader: Reader<impl Input>) -> Result<(), Unreadable> {
        self.report.kind = Some(reader.kind().map_err(unreadable)?);
        loop {
            let next = reader.next_entry();
            for f in reader.take_findings() {
                self.add(f);
            }
            self.report.entries = reader.entries_read();
            match next {
                Ok(Some(_)) => {}
                Ok(None) => return Ok(()),
                Err(e) => return Err(unreadable(e)),
            }
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

/// The standard's limits are reported as findings (max-entries), not refused.
fn limits() -> Limits {
    Limits::unbounded_size()
}

/// A read error as its message (without the place) and its place.
fn unreadable(e: resourcesync_xml::Error) -> Unreadable {
    Unreadable {
        message: e.kind().to_string(),
        position: Some(e.position()),
    }
}

/// A package error as its message and its sources' (each error either prints its source
/// or returns it), with the manifest's place when the manifest is unreadable.
fn package_error(e: resourcesync_package::PackageError) -> Unreadable {
    if let resourcesync_package::PackageError::Manifest(xml) = e {
        let Unreadable { message, position } = unreadable(xml);
        return Unreadable {
            message: format!("manifest.xml cannot be read: {message}"),
            position,
        };
    }
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = format!("{message}: {s}");
        source = s.source();
    }
    Unreadable::new(message)
}

#[cfg(test)]
mod tests {
    use super::{Outcome, ValidateOptions, validate};

    fn example(name: &str) -> ValidateOptions {
        ValidateOptions::new(format!(
            "{}/../spec/examples/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
    }

    #[test]
    fn every_finding_goes_to_the_caller_and_the_report_keeps_up_to_its_bound() {
        let mut found = 0;
        let report = validate(&example("ex01-resourcelist.xml"), |_| found += 1);
        assert_eq!(report.kind.map(|k| k.name()), Some("Resource List"));
        assert_eq!(report.entries, 2);
        assert!(found > 0);
        assert_eq!(found, report.error_count + report.warning_count);
        assert!(report.errors.is_empty() && report.warnings.is_empty());
        let listed = validate(&example("ex01-resourcelist.xml").with_listed(10), |_| {});
        assert_eq!(listed.errors.len() as u64, listed.error_count);
        assert_eq!(listed.outcome(), report.outcome());
    }

    #[test]
    fn a_missing_file_is_unreadable_and_counts_one_error() {
        let report = validate(&example("no-such-file.xml"), |_| {});
        assert_eq!(report.outcome(), Outcome::Unreadable);
        assert_eq!(report.outcome().exit_status(), 2);
        assert_eq!(report.total_errors(), 1);
        let unreadable = report.unreadable.unwrap();
        assert!(
            unreadable.message.starts_with("cannot open"),
            "{unreadable:?}"
        );
    }
}
