//! `resourcesync validate`: documents (plain or gzipped) and ZIP packages checked against
//! the standard's rules, as typed reports; the command prints them.
//!
//! Three kinds of input: a file or standard input ([`validate`]), a whole publication
//! directory ([`validate_directory`]: each document and package in it, what is neither
//! named and skipped), and a URL ([`validate_url`]: fetched within a size and a time,
//! then read as a file is).
//!
//! A document is checked as it streams, in memory that does not grow with its size: each
//! finding goes to the caller as it is found, and the report keeps at most
//! [`ValidateOptions::listed`] of each severity (the counts are always exact). A fetched
//! document is held in memory, up to [`ValidateOptions::max_bytes`].

use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::time::Duration;

use resourcesync_model::{DocumentKind, Finding, Severity, Uri};
use resourcesync_package::{BadPackage, Package, PackageError};
use resourcesync_xml::{ErrorKind, Input, Limits, Position, Reader};

use crate::Chain;

/// What to validate and how much to keep.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ValidateOptions {
    /// The input: a file, or `-` for standard input.
    pub input: PathBuf,
    /// Findings of each severity kept in the report ([`ValidationReport::errors`],
    /// [`ValidationReport::warnings`]); the counts are exact whatever it is.
    pub listed: usize,
    /// Bytes a fetched document or package may have ([`validate_url`]); 256 MiB by
    /// default (a sitemap holds at most 50 MiB uncompressed, a package more).
    pub max_bytes: u64,
    /// Time a fetch may take in all ([`validate_url`]); 60 s by default.
    pub timeout: Duration,
}

impl ValidateOptions {
    /// Validates `input` (`-` is standard input), keeping no finding in the report.
    pub fn new(input: impl Into<PathBuf>) -> ValidateOptions {
        ValidateOptions {
            input: input.into(),
            listed: 0,
            max_bytes: 256 << 20,
            timeout: Duration::from_secs(60),
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

    /// Fetches no more than `max_bytes` within `timeout` ([`validate_url`]).
    #[must_use]
    pub fn with_fetch_limits(mut self, max_bytes: u64, timeout: Duration) -> ValidateOptions {
        self.max_bytes = max_bytes;
        self.timeout = timeout;
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

/// What one input came to: its kind and entries, its findings (kept up to a bound, and
/// counted), and why it could not be read, if it could not.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ValidationReport {
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
    /// [`total_errors`](ValidationReport::total_errors)).
    pub error_count: u64,
    /// Warnings found.
    pub warning_count: u64,
    /// Why the input could not be read, if it could not.
    pub unreadable: Option<Unreadable>,
}

impl ValidationReport {
    /// The report of an input named `name` that cannot be read, as `message` says (a URL
    /// that is not one, a directory that cannot be walked).
    pub fn unreadable(name: impl Into<String>, message: impl Into<String>) -> ValidationReport {
        ValidationReport {
            name: name.into(),
            unreadable: Some(Unreadable::new(message)),
            ..ValidationReport::default()
        }
    }

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

impl fmt::Display for ValidationReport {
    /// The line of counts: `<name>: <kind>, <n> entries, <n> errors, <n> warnings`, the
    /// kind `unreadable` when unknown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}, {} entries, {} errors, {} warnings",
            self.name,
            self.kind.map_or("unreadable", |k| k.name()),
            self.entries,
            self.total_errors(),
            self.warning_count
        )
    }
}

impl fmt::Display for Unreadable {
    /// `cannot be read as a ResourceSync document[ at <place>]: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cannot be read as a ResourceSync document")?;
        if let Some(position) = self.position {
            write!(f, " at {position}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A file of a directory that is not validated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// Its path.
    pub name: String,
    /// Why it is not validated.
    pub reason: Skip,
}

/// Why a file of a directory is not validated.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// A hidden directory: a publisher's state (`.resourcesync/`), a VCS's; only
    /// `.well-known/` is read.
    Hidden,
    /// XML whose root is no sitemap's: an about page, a resource.
    OtherXml {
        /// The root's local name.
        root: String,
    },
    /// Not XML, and not named as a document (`.xml`, `.xml.gz`): a resource, a page.
    NotXml,
    /// A ZIP archive without `manifest.xml`: not a package.
    NotAPackage,
    /// A link, not followed (a publication's resources are links to its collection).
    Link,
}

impl fmt::Display for Skipped {
    /// `<name>: skipped: <why>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: skipped: {}", self.name, self.reason)
    }
}

impl fmt::Display for Skip {
    /// Why, in words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Hidden => f.write_str("a hidden directory (state, not published documents)"),
            Skip::OtherXml { root } => write!(f, "XML whose root <{root}> is no sitemap's"),
            Skip::NotXml => f.write_str("not a ResourceSync document or package"),
            Skip::NotAPackage => f.write_str("a ZIP archive without manifest.xml"),
            Skip::Link => f.write_str("a link, not followed"),
        }
    }
}

/// What a directory came to: a report per document and package, in path order, and the
/// files and directories skipped.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct DirectoryReport {
    /// A report per document or package read (or that looked like one and could not be).
    pub reports: Vec<ValidationReport>,
    /// What was not validated, and why.
    pub skipped: Vec<Skipped>,
}

impl DirectoryReport {
    /// The worst of its reports' outcomes; [`Outcome::Unreadable`] when it holds no
    /// document at all (a typo in its name, an unbuilt publication), which then has a
    /// report saying so.
    pub fn outcome(&self) -> Outcome {
        self.reports
            .iter()
            .map(ValidationReport::outcome)
            .max()
            .unwrap_or(Outcome::Valid)
    }
}

/// Reads and checks one input, handing each finding to `found` as it is found: what it
/// came to. An input that cannot be read is a report too ([`ValidationReport::unreadable`]).
pub fn validate(options: &ValidateOptions, found: impl FnMut(&Finding)) -> ValidationReport {
    let mut reading = Reading::new(options.name(), options, found);
    let read = if options.is_stdin() {
        reading.stdin()
    } else {
        reading.file(&options.input, false).map(|_| ())
    };
    reading.report.unreadable = read.err();
    reading.report
}

/// Reads and checks every document and package under the directory
/// [`ValidateOptions::input`] (a publication as `resourcesync build` writes it), in path
/// order, handing each finding to `found` with its file's path as it is found. Files that
/// are neither (its about page, its resources, `.resourcesync/`) are skipped and named.
/// Links are not followed, but for the directory itself (a publication is one).
pub fn validate_directory(
    options: &ValidateOptions,
    mut found: impl FnMut(&str, &Finding),
) -> DirectoryReport {
    let mut directory = DirectoryReport::default();
    let root = options.input.as_path();
    let mut walk = walkdir::WalkDir::new(root).sort_by_file_name().into_iter();
    while let Some(next) = walk.next() {
        let entry = match next {
            Ok(entry) => entry,
            Err(e) => {
                let name = e.path().unwrap_or(root).display().to_string();
                let message = format!("cannot read: {}", Chain(&e));
                directory
                    .reports
                    .push(ValidationReport::unreadable(name, message));
                continue;
            }
        };
        let name = entry.path().display().to_string();
        let hidden = entry.depth() > 0
            && entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with('.'))
            && entry.file_name() != ".well-known";
        if entry.file_type().is_dir() {
            if hidden {
                walk.skip_current_dir();
                directory.skipped.push(Skipped {
                    name,
                    reason: Skip::Hidden,
                });
            }
            continue;
        }
        if entry.depth() > 0 && entry.path_is_symlink() {
            // A publication links its resources to the collection: never documents of
            // its own (build writes those as files), and a link could lead anywhere.
            directory.skipped.push(Skipped {
                name,
                reason: Skip::Link,
            });
            continue;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        let mut reading = Reading::new(name.clone(), options, |f: &Finding| found(&name, f));
        match reading.file(entry.path(), true) {
            Ok(Some(reason)) => directory.skipped.push(Skipped {
                name: name.clone(),
                reason,
            }),
            Ok(None) => directory.reports.push(reading.report),
            Err(unreadable) => {
                reading.report.unreadable = Some(unreadable);
                directory.reports.push(reading.report);
            }
        }
    }
    if directory.reports.is_empty() {
        let message = "no ResourceSync document or package in the directory";
        directory
            .reports
            .push(ValidationReport::unreadable(options.name(), message));
    }
    directory
}

/// Fetches the document or package at `url` (no more than [`ValidateOptions::max_bytes`],
/// within [`ValidateOptions::timeout`], redirects followed up to 5) over reqwest on the
/// current tokio runtime, and checks it as [`validate`] checks a file. A fetch that fails
/// (no answer, a status other than success, too large, too slow) makes the report
/// unreadable, its message naming the URL.
pub async fn validate_url(
    url: &Uri,
    options: &ValidateOptions,
    found: impl FnMut(&Finding),
) -> ValidationReport {
    let mut reading = Reading::new(url.to_string(), options, found);
    let read = match fetch(url, options).await {
        Ok(body) => reading.bytes(body),
        Err(message) => Err(Unreadable::new(format!("GET {url}: {message}"))),
    };
    reading.report.unreadable = read.err();
    reading.report
}

/// The body at `url`, or why not, in words.
async fn fetch(url: &Uri, options: &ValidateOptions) -> Result<Vec<u8>, String> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(5))
        .timeout(options.timeout)
        .build()
        .map_err(|e| Chain(&e).to_string())?;
    let mut response = http
        .get(url.as_str())
        .send()
        .await
        .map_err(|e| Chain(&e).to_string())?;
    if !response.status().is_success() {
        return Err(format!("the server answered {}", response.status()));
    }
    // A Source's home page, most often (its base URL): an HTML page is no document of
    // the standard, and its DOCTYPE would be refused as one, which misleads.
    let html = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            let essence = t.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("text/html")
                || essence.eq_ignore_ascii_case("application/xhtml+xml")
        });
    if html {
        let described = url
            .to_url()
            .ok()
            .and_then(|u| u.join("/.well-known/resourcesync").ok())
            .map(|u| format!(" (a Source describes itself at {u})"))
            .unwrap_or_default();
        return Err(format!(
            "an HTML page, not a ResourceSync document or package{described}"
        ));
    }
    let too_large = || format!("more than {} bytes (--max-bytes)", options.max_bytes);
    if response
        .content_length()
        .is_some_and(|n| n > options.max_bytes)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| Chain(&e).to_string())? {
        if (body.len() + chunk.len()) as u64 > options.max_bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A report being made, and where its findings go.
struct Reading<F> {
    report: ValidationReport,
    listed: usize,
    found: F,
}

impl<F: FnMut(&Finding)> Reading<F> {
    fn new(name: String, options: &ValidateOptions, found: F) -> Reading<F> {
        Reading {
            report: ValidationReport {
                name,
                ..ValidationReport::default()
            },
            listed: options.listed,
            found,
        }
    }

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

    /// Reads a file: a package when it starts like a ZIP archive, else a document. In a
    /// directory (`sniff`), a file that is neither is skipped, and why is returned.
    fn file(&mut self, input: &Path, sniff: bool) -> Result<Option<Skip>, Unreadable> {
        let name = &self.report.name;
        if !sniff && (name.starts_with("http://") || name.starts_with("https://")) {
            return Err(Unreadable::new(
                "a URL is validated by validate_url, not as a file",
            ));
        }
        let mut file =
            File::open(input).map_err(|e| Unreadable::new(format!("cannot open: {e}")))?;
        if is_zip(&mut file) {
            return self.package(BufReader::new(file), sniff);
        }
        // The reader opens the file itself (buffered, gzip detected by content), so that
        // its errors name the path.
        drop(file);
        let mut reader = Reader::open_with_limits(input, limits()).map_err(unreadable)?;
        if sniff && let Err(e) = reader.kind() {
            let named = input.file_name().is_some_and(|n| {
                let n = n.to_string_lossy().to_ascii_lowercase();
                n.ends_with(".xml") || n.ends_with(".xml.gz")
            });
            // Not a sitemap, or not XML and not named as a document: not ours to judge.
            match e.kind() {
                ErrorKind::NotSitemap { name, .. } => {
                    return Ok(Some(Skip::OtherXml { root: name.clone() }));
                }
                _ if !named => return Ok(Some(Skip::NotXml)),
                _ => return Err(unreadable(e)),
            }
        }
        self.document(reader).map(|()| None)
    }

    /// Reads fetched bytes: a package when they start like a ZIP archive, else a
    /// document (gzipped or not).
    fn bytes(&mut self, body: Vec<u8>) -> Result<(), Unreadable> {
        if body.starts_with(ZIP_MAGIC) {
            return self.package(io::Cursor::new(body), false).map(|_| ());
        }
        let reader = Reader::with_limits(io::Cursor::new(body), limits()).map_err(unreadable)?;
        self.document(reader)
    }

    /// Reads a package: its manifest's findings, then every bitstream verified. With
    /// `sniff`, a ZIP archive without a manifest is skipped.
    fn package(&mut self, zip: impl Read + Seek, sniff: bool) -> Result<Option<Skip>, Unreadable> {
        let mut package = match Package::new(zip) {
            Err(PackageError::Bad(BadPackage::NoManifest)) if sniff => {
                return Ok(Some(Skip::NotAPackage));
            }
            opened => opened.map_err(package_error)?,
        };
        self.report.kind = Some(package.manifest().head.kind());
        self.report.entries = package.manifest().entries.len() as u64;
        for f in package.check().map_err(package_error)? {
            self.add(f);
        }
        Ok(None)
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

/// A package error as its message and its causes', with the manifest's place when the
/// manifest is unreadable.
fn package_error(e: PackageError) -> Unreadable {
    if let PackageError::Manifest(xml) = e {
        let Unreadable { message, position } = unreadable(xml);
        return Unreadable {
            message: format!("manifest.xml cannot be read: {message}"),
            position,
        };
    }
    Unreadable::new(Chain(&e).to_string())
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
        assert_eq!(report.total_errors(), 1);
        let unreadable = report.unreadable.unwrap();
        assert!(
            unreadable.message.starts_with("cannot open"),
            "{unreadable:?}"
        );
    }
}
