//! Reads a generated 50,000-entry Resource List many times, for a profiler.
//! `RAW=1` runs the raw quick-xml loop instead; `NOCHECK=1` turns rule checking off;
//! `CHANGES=1` reads a Change List instead; `BUFREAD=1` reads through `BufRead`.
fn main() {
    let doc = resourcesync_benches::profiled_document();
    let bytes = resourcesync_benches::xml(&doc);
    let raw = std::env::var_os("RAW").is_some();
    let check = std::env::var_os("NOCHECK").is_none();
    let start = std::time::Instant::now();
    let mut total = 0;
    let iterations = resourcesync_benches::profiled_iterations();
    for _ in 0..iterations {
        if raw {
            total += resourcesync_benches::raw_loop(&bytes[..]);
            continue;
        }
        let limits = resourcesync_xml::Limits::unbounded_size();
        let options = check.then(Default::default);
        if std::env::var_os("BUFREAD").is_some() {
            let reader = resourcesync_xml::Reader::with_limits(&bytes[..], limits).unwrap();
            let mut r = reader.with_check_options(options);
            while let Some(e) = r.next_entry().unwrap() {
                total += e.links.len();
            }
            continue;
        }
        let reader = resourcesync_xml::Reader::from_slice_with_limits(&bytes[..], limits);
        let mut r = reader.with_check_options(options);
        while let Some(e) = r.next_entry().unwrap() {
            total += e.links.len();
        }
    }
    // `ITER=0` measures generating and writing alone (callgrind's baseline): no division by
    // zero, whose panic's backtrace would count in it.
    println!(
        "{total} in {:?} per document",
        start.elapsed() / iterations.max(1)
    );
}
