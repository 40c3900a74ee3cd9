//! Validates a package file the way `resourcesync validate` does, for a profiler:
//! `SMALL=1` for 10,000 bitstreams of 4 KiB, else 20 of 50 MiB; `ROUNDS` rounds (5);
//! `THREAD=0` without the hashing thread; `FLOOR=1` times the floor too (md5 + sha-256
//! in one pass over the same bytes in memory) and prints the ratio. Ends with the CPU time
//! the process took beside the wall time.
use std::fs::File;
use std::io::BufWriter;

use resourcesync_package::{
    Bitstream, Compression, Fixity, Package, PackageLimits, PackageOptions, PackageWriter,
};

fn main() {
    let (count, size) = if std::env::var_os("SMALL").is_some() {
        (10_000, 4 << 10)
    } else {
        (20, 50 << 20)
    };
    let rounds: usize = std::env::var("ROUNDS").map_or(5, |r| r.parse().unwrap());
    let head = resourcesync_benches::manifest_head();
    let thread = std::env::var("THREAD").map_or(true, |t| t != "0");
    let floor = std::env::var_os("FLOOR").is_some();
    let contents: Vec<Vec<u8>> = (0..count)
        .map(|i| resourcesync_benches::bytes(i as u64 + 1, size))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("package.zip");
    let options = PackageOptions::default().compression(Compression::Store);
    let out = BufWriter::new(File::create(&path).unwrap());
    let mut writer = PackageWriter::new(out, head, options).unwrap();
    for (i, content) in contents.iter().enumerate() {
        let mut b = Bitstream::new(
            format!("http://example.com/r{i}").parse().unwrap(),
            format!("/r/{i}").into(),
        );
        b.media_type = Some("application/octet-stream".parse().unwrap());
        writer.add(b, &content[..]).unwrap();
    }
    writer
        .finish()
        .unwrap()
        .0
        .into_inner()
        .unwrap()
        .sync_all()
        .unwrap();
    // CPU seconds of the process (Linux; clock ticks of 10 ms): with the hashing thread
    // and two free cores, more than the wall time.
    let cpu = || -> f64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let f: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        let ticks = |i: usize| f.get(i).and_then(|t| t.parse::<u64>().ok()).unwrap_or(0);
        (ticks(11) + ticks(12)) as f64 / 100.0
    };
    let (c0, w0) = (cpu(), std::time::Instant::now());
    let mut validating = 0.0;
    for round in 0..rounds {
        let floor_time = floor.then(|| {
            let start = std::time::Instant::now();
            for b in &contents {
                let mut f = Fixity::new();
                f.update(b);
                std::hint::black_box(f.finish());
            }
            start.elapsed()
        });
        let start = std::time::Instant::now();
        let limits = PackageLimits::default().with_hashing_thread(thread);
        let mut package = Package::open_with_limits(&path, limits).unwrap();
        let opened = start.elapsed();
        let findings = package.check().unwrap();
        assert!(findings.is_empty());
        let took = start.elapsed();
        validating += took.as_secs_f64();
        print!("round {round}: {took:?} ({opened:?} to open)");
        match floor_time {
            Some(f) => println!(
                ", floor {f:?}, {:.2}x",
                f.as_secs_f64() / took.as_secs_f64()
            ),
            None => println!(),
        }
    }
    println!(
        "cpu {:.2}s wall {:.2}s of which validating {validating:.2}s",
        cpu() - c0,
        w0.elapsed().as_secs_f64()
    );
}
