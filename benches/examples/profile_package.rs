//! Writes a package of many small or a few large stored bitstreams, for a profiler:
//! `SMALL=1` for 10,000 of 4 KiB, else 20 of 50 MiB.
use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
use resourcesync_package::{Bitstream, Compression, PackageOptions, PackageWriter};

fn main() {
    let (count, size) = if std::env::var_os("SMALL").is_some() {
        (10_000, 4 << 10)
    } else {
        (20, 50 << 20)
    };
    let content = vec![0x5au8; size];
    let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
    head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/caps.xml".parse().unwrap(),
    ));
    let mut out = Vec::with_capacity(count * size + (1 << 20));
    for round in 0..5 {
        out.clear();
        let start = std::time::Instant::now();
        let options = PackageOptions::default().compression(Compression::Store);
        let mut writer = PackageWriter::new(&mut out, head.clone(), options).unwrap();
        for i in 0..count {
            let b = Bitstream::new(
                format!("http://example.com/r{i}").parse().unwrap(),
                format!("/r{i}").into(),
            );
            writer.add(b, &content[..]).unwrap();
        }
        let (zip, _) = writer.finish().unwrap();
        println!(
            "round {round}: {} bytes in {:?}",
            zip.len(),
            start.elapsed()
        );
    }
}
