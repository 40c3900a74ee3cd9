//! Writing and reading+verifying packages of stored bitstreams, each beside the floor
//! measured in the same run: md5 and sha-256 computed in one pass over the same bytes in
//! memory, which any package writer or verifier must do at least.
//!
//! `cargo bench -p resourcesync-benches --bench package`

use std::hint::black_box;
use std::io::{Cursor, Read};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use resourcesync_package::{
    Bitstream, Compression, Fixity, Package, PackageOptions, PackageWriter,
};

/// Writes the package into `out`, cleared first: a buffer reused across iterations, whose
/// pages are already mapped, so that the benchmark measures the writer rather than the
/// kernel zeroing a fresh gigabyte each time (a file sink has no such cost either).
///
/// The bitstreams' descriptions are built once, outside the measurement, as a caller would
/// have them; each iteration clones them.
fn write(bitstreams: &[(Bitstream, Vec<u8>)], out: &mut Vec<u8>) -> usize {
    out.clear();
    let options = PackageOptions::default().compression(Compression::Store);
    let mut writer =
        PackageWriter::new(out, resourcesync_benches::manifest_head(), options).unwrap();
    for (bitstream, content) in bitstreams {
        writer.add(bitstream.clone(), &content[..]).unwrap();
    }
    writer.finish().unwrap().0.len()
}

fn described(contents: Vec<Vec<u8>>) -> Vec<(Bitstream, Vec<u8>)> {
    contents
        .into_iter()
        .enumerate()
        .map(|(i, content)| {
            let bitstream = Bitstream::new(
                format!("http://example.com/res{i}").parse().unwrap(),
                format!("/resources/{i}").into(),
            );
            (bitstream, content)
        })
        .collect()
}

fn floor(bitstreams: &[(Bitstream, Vec<u8>)]) -> u64 {
    let mut n = 0;
    for (_, b) in bitstreams {
        let mut f = Fixity::new();
        f.update(b);
        n += f.finish().length;
    }
    n
}

fn bench(c: &mut Criterion) {
    for (name, count, size) in [("10000x4KiB", 10_000, 4 << 10), ("20x50MiB", 20, 50 << 20)] {
        let bitstreams = described(
            (0..count)
                .map(|i| resourcesync_benches::bytes(i as u64 + 1, size))
                .collect(),
        );
        let total = (count * size) as u64;
        let mut zip = Vec::with_capacity(count * size + (1 << 20));
        write(&bitstreams, &mut zip);
        let mut out = Vec::with_capacity(zip.len());
        write(&bitstreams, &mut out);
        let mut g = c.benchmark_group(format!("package/{name}"));
        g.throughput(Throughput::Bytes(total));
        g.sample_size(10);
        g.bench_function("floor: md5 + sha-256 in one pass", |b| {
            b.iter(|| black_box(floor(&bitstreams)))
        });
        g.bench_function("write (stored)", |b| {
            b.iter(|| black_box(write(&bitstreams, &mut out)))
        });
        g.bench_function("read and verify", |b| {
            b.iter(|| {
                let mut package = Package::new(Cursor::new(&zip[..])).unwrap();
                let mut buf = vec![0u8; 64 << 10];
                let mut n = 0;
                for i in 0..package.bitstream_count() {
                    let mut r = package.bitstream(i).unwrap();
                    loop {
                        let k = r.read(&mut buf).unwrap();
                        if k == 0 {
                            break;
                        }
                        n += k;
                    }
                }
                assert_eq!(n as u64, total);
                n
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
