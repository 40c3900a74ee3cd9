//! Reading and writing generated realistic documents (about 330 bytes an entry), each
//! beside the floor measured in the same run: a raw quick-xml `NsReader` loop over the
//! same bytes that reads every event and attribute value and builds nothing.
//!
//! `cargo bench -p resourcesync-benches --bench xml`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use resourcesync_benches::{document, raw_loop, xml};
use resourcesync_model::DocumentKind;
use resourcesync_xml::{Limits, Reader, Writer};

fn read_all(bytes: &[u8]) -> u64 {
    let mut reader = Reader::with_limits(bytes, Limits::unbounded_size()).unwrap();
    let mut n = 0;
    while let Some(entry) = reader.next_entry().unwrap() {
        n += entry.links.len() as u64 + 1;
        black_box(entry);
    }
    assert!(reader.findings().is_empty());
    n
}

fn bench(c: &mut Criterion) {
    for (name, kind) in [
        ("resourcelist-50k", DocumentKind::ResourceList),
        ("changelist-50k", DocumentKind::ChangeList),
    ] {
        let doc = document(kind, 0, 50_000);
        let bytes = xml(&doc);
        assert_eq!(read_all(&bytes), 55_000);
        let mut g = c.benchmark_group(format!("xml/{name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.sample_size(20);
        g.bench_function("raw quick-xml NsReader loop (floor)", |b| {
            b.iter(|| black_box(raw_loop(&bytes[..])))
        });
        g.bench_function("resourcesync-xml typed read", |b| {
            b.iter(|| black_box(read_all(&bytes)))
        });
        let mut out = Vec::with_capacity(bytes.len() + 1024);
        g.bench_function("resourcesync-xml write", |b| {
            b.iter(|| {
                out.clear();
                let mut w = Writer::new(&mut out, &doc.head).unwrap();
                for e in &doc.entries {
                    w.write_entry(e).unwrap();
                }
                w.finish().unwrap();
                black_box(out.len())
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
