//! W3C Datetime parsing and formatting, beside chrono's RFC 3339 parser and formatter on
//! the same texts (the peer every Rust user already has).
//!
//! `cargo bench -p resourcesync-benches --bench datetime`

use std::hint::black_box;

use chrono::DateTime;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use resourcesync_model::W3cDateTime;

/// 10,000 complete datetimes, the forms chrono also reads: whole seconds in UTC (the form
/// section 7 recommends), with fractions, and with offsets of both signs.
fn texts() -> Vec<String> {
    (0..10_000u32)
        .map(|i| {
            let (d, h, m, s) = (i % 28 + 1, i % 24, i % 60, (i * 7) % 60);
            match i % 4 {
                0 | 1 => format!("2013-01-{d:02}T{h:02}:{m:02}:{s:02}Z"),
                2 => format!("2013-02-{d:02}T{h:02}:{m:02}:{s:02}.{:03}Z", i % 1000),
                _ => format!("2013-03-{d:02}T{h:02}:{m:02}:{s:02}-05:30"),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let texts = texts();
    let ours: Vec<W3cDateTime> = texts.iter().map(|t| t.parse().unwrap()).collect();
    let theirs: Vec<_> = texts
        .iter()
        .map(|t| DateTime::parse_from_rfc3339(t).unwrap())
        .collect();
    // Both read the same instants, or the comparison means nothing.
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a.to_chrono(), *b);
    }

    let mut g = c.benchmark_group("datetime/parse");
    g.throughput(Throughput::Elements(texts.len() as u64));
    g.bench_function("resourcesync W3cDateTime", |b| {
        b.iter(|| {
            for t in &texts {
                black_box(t.parse::<W3cDateTime>().unwrap());
            }
        })
    });
    g.bench_function("chrono parse_from_rfc3339", |b| {
        b.iter(|| {
            for t in &texts {
                black_box(DateTime::parse_from_rfc3339(t).unwrap());
            }
        })
    });
    g.finish();

    let mut g = c.benchmark_group("datetime/format");
    g.throughput(Throughput::Elements(texts.len() as u64));
    let mut buf = String::with_capacity(64);
    g.bench_function("resourcesync W3cDateTime", |b| {
        b.iter(|| {
            for v in &ours {
                buf.clear();
                use std::fmt::Write;
                write!(buf, "{v}").unwrap();
                black_box(&buf);
            }
        })
    });
    g.bench_function("chrono to_rfc3339", |b| {
        b.iter(|| {
            for v in &theirs {
                black_box(v.to_rfc3339());
            }
        })
    });
    g.finish();

    let mut sorted = ours.clone();
    let mut g = c.benchmark_group("datetime/sort");
    g.throughput(Throughput::Elements(texts.len() as u64));
    g.bench_function("resourcesync W3cDateTime", |b| {
        b.iter(|| {
            sorted.clone_from(&ours);
            sorted.sort();
            black_box(&sorted);
        })
    });
    let mut sorted_theirs = theirs.clone();
    g.bench_function("chrono DateTime<FixedOffset>", |b| {
        b.iter(|| {
            sorted_theirs.clone_from(&theirs);
            sorted_theirs.sort();
            black_box(&sorted_theirs);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
