//! Writes a generated 50,000-entry Resource List many times into a reused buffer, as the
//! `write` bench does, for a profiler. `CHANGES=1` writes a Change List instead; `ITER`
//! writes (20); `ITER=0` generates the document alone (callgrind's baseline).
fn main() {
    let doc = resourcesync_benches::profiled_document();
    let iterations = resourcesync_benches::profiled_iterations();
    let mut out = Vec::with_capacity(20 << 20);
    let start = std::time::Instant::now();
    let mut total = 0;
    for _ in 0..iterations {
        out.clear();
        let mut w = resourcesync_xml::Writer::new(&mut out, &doc.head).unwrap();
        for e in &doc.entries {
            w.write_entry(e).unwrap();
        }
        let _ = w.finish().unwrap();
        total += out.len();
    }
    println!(
        "{total} bytes in {:?} per document",
        start.elapsed() / iterations.max(1)
    );
}
