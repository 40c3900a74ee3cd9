//! What `resourcesync validate pkg.zip` does to a package, beside the floor measured in the
//! same run: md5 and sha-256 computed in one pass over the same bitstreams in memory.
//!
//! The package is written once to a temporary file; each iteration makes the same
//! `Package` calls as `examples/src/bin/resourcesync.rs` does for a ZIP (the magic number
//! read and the file rewound, `Package::new` over a default `BufReader` of the file, the
//! manifest's kind and entry count, `check`), in process, reading the file from the disk
//! (the page cache, after the first iteration). `Package::new` is `with_limits` with
//! the default limits; "one thread" turns the hashing thread off. Throughput is in bytes
//! of bitstreams.
//!
//! `cargo bench -p resourcesync-benches --bench validate -- --warm-up-time 1 --measurement-time 5`

use std::fs::File;
use std::hint::black_box;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use resourcesync_package::{
    Bitstream, Compression, Fixity, Package, PackageLimits, PackageOptions, PackageWriter,
};

/// Writes a package of `contents`, stored, to `path`.
fn write(contents: &[Vec<u8>], path: &Path) {
    let file = std::io::BufWriter::new(File::create(path).unwrap());
    let options = PackageOptions::default().compression(Compression::Store);
    let mut writer =
        PackageWriter::new(file, resourcesync_benches::manifest_head(), options).unwrap();
    for (i, content) in contents.iter().enumerate() {
        let mut bitstream = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/resources/{i}").into(),
        );
        // With a type, the package is valid: `check` finds nothing, verifying is all.
        bitstream.media_type = Some("application/octet-stream".parse().unwrap());
        writer.add(bitstream, &content[..]).unwrap();
    }
    let (file, _) = writer.finish().unwrap();
    file.into_inner().unwrap().sync_all().unwrap();
}

/// md5 and sha-256 in one pass over each bitstream.
fn floor(contents: &[Vec<u8>]) -> u64 {
    let mut n = 0;
    for b in contents {
        let mut f = Fixity::new();
        f.update(b);
        n += f.finish().length;
    }
    n
}

/// What `resourcesync validate` does with a ZIP file: the entries and the findings; with
/// `thread` false, without the hashing thread (the command has it).
fn validate(path: &Path, thread: bool) -> (usize, usize) {
    let mut file = File::open(path).unwrap();
    let mut magic = [0u8; 4];
    let zip = file.read_exact(&mut magic).is_ok() && magic == *b"PK\x03\x04";
    assert!(file.rewind().is_ok() && zip);
    let limits = PackageLimits::default().with_hashing_thread(thread);
    let mut package = Package::with_limits(BufReader::new(file), limits).unwrap();
    black_box(package.manifest().head.kind());
    let entries = package.manifest().entries.len();
    let findings = package.check().unwrap();
    (entries, findings.len())
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    for (name, count, size) in [("10000x4KiB", 10_000, 4 << 10), ("20x50MiB", 20, 50 << 20)] {
        let contents: Vec<Vec<u8>> = (0..count)
            .map(|i| resourcesync_benches::bytes(i as u64 + 1, size))
            .collect();
        let path = dir.path().join(format!("{name}.zip"));
        write(&contents, &path);
        assert_eq!(validate(&path, true), (count, 0));
        let mut g = c.benchmark_group(format!("validate/{name}"));
        g.throughput(Throughput::Bytes((count * size) as u64));
        g.sample_size(10);
        if size > 1 << 20 {
            // One iteration a sample: linear sampling would run 55 of two seconds each.
            g.sampling_mode(SamplingMode::Flat);
        }
        g.bench_function("floor: md5 + sha-256 in one pass", |b| {
            b.iter(|| black_box(floor(&contents)))
        });
        g.bench_function("validate (file)", |b| {
            b.iter(|| black_box(validate(&path, true)))
        });
        g.bench_function("validate (file), one thread", |b| {
            b.iter(|| black_box(validate(&path, false)))
        });
        g.finish();
        std::fs::remove_file(&path).unwrap();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
