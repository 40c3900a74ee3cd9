//! Reading and writing generated realistic documents (about 330 bytes an entry), each
//! beside the floor measured in the same run: a raw quick-xml `NsReader` loop over the
//! same bytes that reads every event and attribute value and builds nothing.
//!
//! `cargo bench -p resourcesync-benches --bench xml`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use resourcesync_benches::{document, raw_loop, xml};
use resourcesync_model::DocumentKind;
use resourcesync_xml::{Limits, Next, PushReader, Reader, Writer};

fn read_all(bytes: &[u8]) -> u64 {
    let mut reader = Reader::from_slice_with_limits(bytes, Limits::unbounded_size());
    let mut n = 0;
    while let Some(entry) = reader.next_entry().unwrap() {
        n += entry.links.len() as u64 + 1;
        black_box(entry);
    }
    assert!(reader.findings().is_empty());
    n
}

fn read_all_buffered(bytes: &[u8]) -> u64 {
    let mut reader = Reader::with_limits(bytes, Limits::unbounded_size()).unwrap();
    let mut n = 0;
    while let Some(entry) = reader.next_entry().unwrap() {
        n += entry.links.len() as u64 + 1;
        black_box(entry);
    }
    assert!(reader.findings().is_empty());
    n
}

/// The push reader fed 64 KiB chunks, as a sans-IO client feeds an HTTP body, taking
/// entries after each.
fn read_all_pushed(bytes: &[u8]) -> u64 {
    let mut reader = PushReader::with_limits(Limits::unbounded_size());
    let mut n = 0;
    let mut take = |reader: &mut PushReader| loop {
        match reader.next_entry().unwrap() {
            Next::Entry(entry) => {
                n += entry.links.len() as u64 + 1;
                black_box(entry);
            }
            Next::NeedMore => return false,
            Next::End => return true,
            _ => unreachable!(),
        }
    };
    for chunk in bytes.chunks(64 * 1024) {
        reader.feed(chunk).unwrap();
        assert!(!take(&mut reader));
    }
    reader.finish().unwrap();
    assert!(take(&mut reader));
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
        assert_eq!(read_all_pushed(&bytes), 55_000);
        let mut g = c.benchmark_group(format!("xml/{name}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.sample_size(20);
        g.bench_function("raw quick-xml NsReader loop (floor)", |b| {
            b.iter(|| black_box(raw_loop(&bytes[..])))
        });
        g.bench_function("resourcesync-xml typed read (slice)", |b| {
            b.iter(|| black_box(read_all(&bytes)))
        });
        g.bench_function("resourcesync-xml typed read (BufRead)", |b| {
            b.iter(|| black_box(read_all_buffered(&bytes)))
        });
        g.bench_function("resourcesync-xml typed read (push, 64 KiB chunks)", |b| {
            b.iter(|| black_box(read_all_pushed(&bytes)))
        });
        let mut out = Vec::with_capacity(bytes.len() + 1024);
        g.bench_function("resourcesync-xml write", |b| {
            b.iter(|| {
                out.clear();
                let mut w = Writer::new(&mut out, &doc.head).unwrap();
                for e in &doc.entries {
                    w.write_entry(e).unwrap();
                }
                let _ = w.finish().unwrap();
                black_box(out.len())
            })
        });
        g.finish();
    }
}

/// A 1,000,000-entry Resource List published with the set writer: 20 parts of 50,000
/// entries and the index over them, read through the index.
fn bench_set(c: &mut Criterion) {
    use resourcesync_model::Uri;
    use resourcesync_xml::{SetLimits, SetWriter};
    use std::collections::BTreeMap;

    let mut store: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let head = document(DocumentKind::ResourceList, 0, 0).head;
    let mut set = SetWriter::new(
        head,
        "http://example.com/resourcelist.xml".parse().unwrap(),
        |i| format!("http://example.com/resourcelist-{i:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::default(),
    )
    .unwrap();
    for i in 0..1_000_000 {
        set.write_entry(&resourcesync_benches::entry(i, false))
            .unwrap();
    }
    assert_eq!(set.finish().unwrap().output.documents.len(), 21);
    let total: usize = store.values().map(Vec::len).sum();
    let index = store["http://example.com/resourcelist.xml"].clone();

    let read_set = || {
        let mut reader = Reader::from_slice(&index[..]);
        let mut n = 0;
        while let Some(part) = reader.next_entry().unwrap() {
            n += read_all(&store[part.loc.as_str()]);
        }
        n
    };
    assert_eq!(read_set(), 1_100_000);

    let mut g = c.benchmark_group("xml/resourcelist-1m-index-20-parts");
    g.throughput(Throughput::Bytes(total as u64));
    g.sample_size(10);
    g.bench_function("raw quick-xml NsReader loop (floor)", |b| {
        b.iter(|| store.values().map(|doc| raw_loop(&doc[..])).sum::<usize>())
    });
    g.bench_function("resourcesync-xml typed read", |b| {
        b.iter(|| black_box(read_set()))
    });
    g.finish();
}

criterion_group!(benches, bench, bench_set);
criterion_main!(benches);
