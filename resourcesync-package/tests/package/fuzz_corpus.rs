//! Replays the committed corpus of the `package` fuzz target (in `fuzz/`) with the same
//! limits, so plain `cargo test` exercises it: no input may panic.

use resourcesync_package::{Package, PackageLimits};

#[test]
fn package_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/package");
    let mut ran = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let limits = PackageLimits::default()
            .with_bytes(1 << 20, 4 << 20)
            .with_ratio(100);
        if let Ok(mut package) = Package::with_limits(std::io::Cursor::new(data), limits) {
            let _ = package.check();
        }
        ran += 1;
    }
    assert!(ran >= 10, "the package corpus is missing");
}
