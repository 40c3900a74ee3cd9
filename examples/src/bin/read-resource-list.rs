//! Reads a Resource List from a file (`.xml`, or gzipped `.xml.gz`), prints each entry's
//! `loc`, `lastmod`, `length` and `md5`, then every finding of the standard's rules.
//!
//! Shows: `Reader::open` (gzip is detected by content, errors name the path), streaming
//! entries with `next_entry`, the optional `<rs:md>` of an entry, `Hashes::get`, and
//! `Finding`s with their `Severity`.
//!
//! Exit status: 0 when no finding is an error, 1 when one is, 2 when the file cannot be
//! read as a Resource List.
//!
//! Usage: `read-resource-list <resourcelist.xml[.gz]>`

use std::error::Error;
use std::fmt::Display;
use std::path::PathBuf;
use std::process::ExitCode;

use resourcesync_model::{DocumentKind, HashAlgorithm, Severity};
use resourcesync_xml::Reader;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: read-resource-list <resourcelist.xml[.gz]>");
        return ExitCode::from(2);
    };
    match run(path) {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::from(1),
        Err(error) => {
            eprintln!("read-resource-list: {error}");
            ExitCode::from(2)
        }
    }
}

/// Prints the entries and the findings; returns whether a finding is an error.
fn run(path: PathBuf) -> Result<bool, Box<dyn Error>> {
    let mut reader = Reader::open(&path)?;
    let kind = reader.kind()?;
    if kind != DocumentKind::ResourceList {
        return Err(format!("{}: a {kind}, not a Resource List", path.display()).into());
    }
    println!("loc\tlastmod\tlength\tmd5");
    while let Some(entry) = reader.next_entry()? {
        let md5 = entry.hash(&HashAlgorithm::Md5).map(|hash| hash.hex());
        println!(
            "{}\t{}\t{}\t{}",
            entry.loc,
            or_dash(entry.lastmod),
            or_dash(entry.length()),
            or_dash(md5)
        );
    }
    println!("{} entries", reader.entries_read());

    let findings = reader.take_findings();
    for finding in &findings {
        println!("{finding}");
    }
    Ok(findings.iter().any(|f| f.severity() == Severity::Error))
}

/// A value, or `-` when there is none.
fn or_dash(value: Option<impl Display>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}
