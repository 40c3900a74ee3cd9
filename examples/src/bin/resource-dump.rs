//! Writes a Resource Dump package (a ZIP with `manifest.xml`) from a few files, then opens
//! it, verifies every bitstream against its manifest entry, and extracts it into a
//! directory, printing what was done at each step.
//!
//! Shows: `PackageWriter::create` … `finish_file` (the package appears atomically, or not
//! at all), `Bitstream`, the package's own fixity in `PackageInfo` (what the Resource Dump
//! entry listing the package carries), `Package::open`, `Package::verify` and
//! `Package::extract` (all or nothing, paths checked).
//!
//! Usage: `resource-dump [--base URL] PACKAGE.zip EXTRACT-DIR FILE...`; each file is the
//! resource `<base><file name>`, stored in the package at `/<file name>`.

use std::error::Error;
use std::fs::{self, File};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation, Uri, W3cDateTime};
use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};

/// What to do, from the command line (by hand: an argument parser is a dependency an
/// example does not need).
struct Args {
    /// The URL the files are published under.
    base: Uri,
    /// The package to write; it must not exist.
    package: PathBuf,
    /// The directory to extract into; it must not exist.
    extract: PathBuf,
    /// The files to put in the package.
    files: Vec<PathBuf>,
}

const USAGE: &str = "usage: resource-dump [--base URL] PACKAGE EXTRACT-DIR FILE...
Writes a Resource Dump package from files, verifies it and extracts it.";

impl Args {
    fn parse() -> Result<Args, Box<dyn Error>> {
        let mut base = "http://example.com/dataset1/".to_owned();
        let mut operands = Vec::new();
        let mut args = arguments();
        while let Some(arg) = args.next() {
            match arg.to_str() {
                Some("--base") => {
                    base = args
                        .next()
                        .and_then(|a| a.into_string().ok())
                        .ok_or(USAGE)?
                }
                Some("-h" | "--help") => return Err(USAGE.into()),
                _ => operands.push(PathBuf::from(arg)),
            }
        }
        if operands.len() < 3 {
            return Err(USAGE.into());
        }
        let files = operands.split_off(2);
        let extract = operands.pop().ok_or(USAGE)?;
        let package = operands.pop().ok_or(USAGE)?;
        Ok(Args {
            base: base.parse()?,
            package,
            extract,
            files,
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
            eprintln!("resource-dump: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), Box<dyn Error>> {
    let head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest)
        .with_at(W3cDateTime::from(SystemTime::now()))
        .with_link(Link::new(
            Relation::Up,
            args.base.join("capabilitylist.xml")?,
        ));

    let mut writer = PackageWriter::create(&args.package, head, PackageOptions::default())?;
    for file in &args.files {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("a file name must be UTF-8")?;
        let bitstream = Bitstream::new(args.base.join(name)?, format!("/{name}").into())
            .with_lastmod(fs::metadata(file)?.modified()?.into());
        let length = writer.add(bitstream, File::open(file)?)?;
        println!("added {} ({length} bytes) as /{name}", file.display());
    }
    let (path, info) = writer.finish_file()?;
    println!(
        "wrote {}: {} bytes, md5 {}, sha-256 {}",
        path.display(),
        info.digests.length,
        info.digests.md5,
        info.digests.sha256
    );
    for finding in &info.findings {
        println!("  {finding}");
    }

    // Extracting verifies every bitstream against the manifest as it writes it.
    let mut package = Package::open(&path)?;
    let target = package.extract(&args.extract)?;
    println!(
        "verified and extracted {} bitstreams into {}:",
        package.bitstream_count(),
        target.display()
    );
    for entry in &package.manifest().entries {
        if let Some(path) = entry.md.as_ref().and_then(|md| md.path.as_ref()) {
            println!("  {} <- {}", path, entry.loc);
        }
    }
    Ok(())
}
