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
