//! Writes a Resource List of 120,000 entries (or `--entries N`) as a set — parts of at most
//! 50,000 entries and a Resource List Index — into a directory served under a base URL,
//! gzipping the parts with `--gzip`; then reads the whole set back as one stream of entries
//! and checks that every entry came back, without an error finding.
//!
//! Shows: resourcesync-source's `Directory` (the one way between URIs and files, both ways)
//! and `DirectoryStore::set_writer` with `SetOptions` and `Gzip`, `SetSummary`, and
//! `SetReader` whose fetch function opens the file the same `Directory` names for a URI.
//!
//! Usage: `write-read-set [--base URL] [--entries N] [--gzip] DIR`

use std::error::Error;
use std::path::PathBuf;
use std::process::ExitCode;

use resourcesync_model::{
    DocumentHead, DocumentKind, Entry, Link, Relation, Severity, Uri, W3cDateTime,
};
use resourcesync_source::{Directory, DirectoryStore};
use resourcesync_xml::{Gzip, SetOptions, SetReader};

/// What to do, from the command line (by hand: an argument parser is a dependency an
/// example does not need).
struct Args {
    /// The directory to write into; it is served at `base`.
    dir: PathBuf,
    /// The URL the directory is served at.
    base: Uri,
    /// How many entries to write.
    entries: u64,
    /// Gzip the parts (`resourcelist-00001.xml.gz`, …).
    gzip: bool,
}

const USAGE: &str = "usage: write-read-set [--base URL] [--entries N] [--gzip] DIR
Writes a Resource List as a set into a directory, then reads it back.";

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let (mut base, mut entries, mut gzip) =
            ("http://example.com/dataset1/".to_owned(), 120_000, false);
        let mut dir = None;
        let mut args = arguments();
        while let Some(arg) = args.next() {
            let mut value = || args.next().and_then(|a| a.into_string().ok()).ok_or(USAGE);
            match arg.to_str() {
                Some("--base") => base = value()?,
                Some("--entries") => entries = value()?.parse()?,
                Some("--gzip") => gzip = true,
                Some("-h" | "--help") => return Err(USAGE.into()),
                _ if dir.is_none() => dir = Some(PathBuf::from(arg)),
                _ => return Err(USAGE.into()),
            }
        }
        Ok(Args {
            dir: dir.ok_or(USAGE)?,
            base: base.parse()?,
            entries,
            gzip,
        })
    }
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
            eprintln!("write-read-set: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let dir = Directory::new(&args.dir, args.base)?;
    let at: W3cDateTime = "2013-01-03T09:00:00Z".parse()?;
    let head = DocumentHead::of_kind(DocumentKind::ResourceList)
        .with_at(at)
        .with_link(Link::new(Relation::Up, dir.uri("capabilitylist.xml")?));
    let gzip = if args.gzip { Gzip::Parts } else { Gzip::Never };
    let options = SetOptions::default().with_gzip(gzip);

    // Write: the set's documents go to files of the directory, errors refused.
    let mut set = DirectoryStore::set_writer(head, dir.clone(), "resourcelist.xml", options)?;
    for i in 0..args.entries {
        let entry = Entry::new(dir.uri(&format!("res{i}"))?)
            .with_lastmod(at)
            .with_length(i);
        set.write_entry(&entry)?;
    }
    let summary = set.finish()?.output; // no findings: errors were refused, none warned
    println!("wrote {} entries in these documents:", summary.entries);
    for uri in &summary.documents {
        println!("  {uri} -> {}", dir.path(uri)?.display());
    }

    // Read back from the set's URI (the index, or the one document): each URI is fetched
    // from the file the directory names for it.
    let mut reader = SetReader::open(summary.uri, |uri: &Uri| Ok(dir.open(uri)?))?;
    let mut count = 0u64;
    while reader.next_entry()?.is_some() {
        count += 1;
    }
    let findings = reader.take_findings();
    for found in &findings {
        println!("{}: {}", found.document, found.finding);
    }
    println!(
        "read {count} entries back, from {} parts",
        reader.parts_read()
    );
    let errors = findings
        .iter()
        .filter(|f| f.finding.severity() == Severity::Error);
    match (count == args.entries, errors.count()) {
        (true, 0) => Ok(()),
        (_, errors) => Err(format!("{count} of {} entries, {errors} errors", args.entries).into()),
    }
}
