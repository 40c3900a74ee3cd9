//! Arbitrary bytes opened as a package with small limits, checked and verified: never a
//! panic, and memory bounded by the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resourcesync_package::{Package, PackageLimits};

fuzz_target!(|data: &[u8]| {
    let limits = PackageLimits::default()
        .with_bytes(1 << 20, 4 << 20)
        .with_ratio(100);
    if let Ok(mut package) = Package::with_limits(std::io::Cursor::new(data), limits) {
        let _ = package.check();
    }
});
