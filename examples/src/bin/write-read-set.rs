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

use clap::Parser;
use resourcesync_model::{
    DocumentHead, DocumentKind, Entry, Link, Relation, Severity, Uri, W3cDateTime,
};
use resourcesync_source::{Directory, DirectoryStore};
use resourcesync_xml::{Gzip, SetOptions, SetReader};

#[derive(Parser)]
#[command(about = "Writes a Resource List as a set into a directory, then reads it back")]
struct Args {
    /// The directory to write into; it is served at --base.
    dir: PathBuf,
    /// The URL the directory is served at.
    #[arg(long, default_value = "http://example.com/dataset1/")]
    base: Uri,
    /// How many entries to write.
    #[arg(long, default_value_t = 120_000)]
    entries: u64,
    /// Gzip the parts (`resourcelist-00001.xml.gz`, …).
    #[arg(long)]
    gzip: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
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
