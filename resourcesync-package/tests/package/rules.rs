//! The two rules only a package reader can break: bitstream-fixity and unlisted-file,
//! each broken once and kept once, through `Package::check`.

use resourcesync_model::Rule;
use resourcesync_package::Package;

use crate::python_packages;

fn rules(name: &str, dir: &tempfile::TempDir) -> Vec<(Rule, Option<u64>)> {
    let mut package = Package::open(dir.path().join(name)).unwrap();
    package
        .check()
        .unwrap()
        .iter()
        .map(|f| (f.rule, f.entry))
        .collect()
}

#[test]
fn bitstream_fixity() {
    let dir = python_packages();
    assert_eq!(
        rules("fixity-md5.zip", &dir),
        [(Rule::BitstreamFixity, Some(1))]
    );
    assert_eq!(
        rules("fixity-length.zip", &dir),
        [(Rule::BitstreamFixity, Some(1))]
    );
    assert_eq!(rules("valid-deflated.zip", &dir), []);
}

#[test]
fn unlisted_file() {
    let dir = python_packages();
    assert_eq!(rules("unlisted.zip", &dir), [(Rule::UnlistedFile, None)]);
    assert_eq!(rules("valid-stored.zip", &dir), []);
}

/// The manifest's entries its reader skips (no `<loc>`, or one no reading makes a URI)
/// are told by number among the entries as written, and the findings number the others
/// so too: a Destination learns that the manifest names more than it could read.
#[test]
fn the_entries_a_manifest_s_reader_skipped_are_told_by_number() {
    use std::io::Write;
    let entry = |loc: &str| {
        let name = loc.rsplit('/').next().unwrap_or("none");
        let loc = if loc.is_empty() {
            String::new()
        } else {
            format!("<loc>{loc}</loc>")
        };
        format!(r#"<url>{loc}<rs:md length="1" path="/{name}"/></url>"#)
    };
    let entries: String = [
        "",
        "http://example.com/a",
        "http://exa mple.com/b",
        "http://example.com/c",
        "http://exa mple.com/d",
    ]
    .map(entry)
    .concat();
    let manifest = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcedump-manifest" at="2020-01-01T00:00:00Z"/>{entries}</urlset>"#
    );
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("manifest.xml", options).unwrap();
    zip.write_all(manifest.as_bytes()).unwrap();
    for kept in ["a", "c"] {
        zip.start_file(kept, options).unwrap();
        zip.write_all(b"x").unwrap();
    }
    let zip = zip.finish().unwrap();
    let package = Package::new(std::io::Cursor::new(zip.into_inner())).unwrap();
    assert_eq!(package.skipped(), [1, 3, 5]);
    let locs: Vec<&str> = (package.manifest().entries.iter())
        .map(|e| e.loc.as_str())
        .collect();
    assert_eq!(locs, ["http://example.com/a", "http://example.com/c"]);
    let about = |rule| {
        (package.findings().iter())
            .filter(|f| f.rule == rule)
            .map(|f| f.entry)
            .collect::<Vec<_>>()
    };
    assert_eq!(about(Rule::LocMandatory), [Some(1)]);
    assert_eq!(about(Rule::UriSyntax), [Some(3), Some(5)]);
}
