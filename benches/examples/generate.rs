//! Writes a generated realistic Resource List of N entries (about 330 bytes each) into a
//! directory with the set writer: one document if it fits, else parts of 50,000 entries
//! and the index over them. For measuring `resourcesync validate` (benches/README.md).
//!
//! `cargo run --release -p resourcesync-benches --example generate -- DIR N [--single]`
//!
//! With `--single`, one document of N entries however large (past the Sitemap protocol's
//! limits, which `validate` then reports), written entry by entry.

use resourcesync_model::{DocumentKind, Uri};
use resourcesync_xml::{SetLimits, SetWriter};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(n)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok()))
    else {
        eprintln!("usage: generate DIR N");
        std::process::exit(2);
    };
    std::fs::create_dir_all(dir).unwrap();
    if args.iter().any(|a| a == "--single") {
        resourcesync_benches::write_single_document(
            std::path::Path::new(&format!("{dir}/resourcelist.xml")),
            n,
        )
        .unwrap();
        println!("1 document, {n} entries");
        return;
    }
    let head = resourcesync_benches::document(DocumentKind::ResourceList, 0, 0).head;
    let mut set = SetWriter::new(
        head,
        "http://example.com/dataset1/resourcelist.xml"
            .parse()
            .unwrap(),
        |i| format!("http://example.com/dataset1/resourcelist-{i:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            let name = uri.as_str().rsplit('/').next().unwrap_or("part.xml");
            std::fs::write(format!("{dir}/{name}"), xml)
        },
        SetLimits::default(),
    )
    .unwrap();
    for i in 0..n {
        set.write_entry(&resourcesync_benches::entry(i, false))
            .unwrap();
    }
    let summary = set.finish().unwrap().output;
    println!(
        "{} documents, {} entries",
        summary.documents.len(),
        summary.entries
    );
}
