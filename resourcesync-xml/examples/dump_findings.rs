//! Prints each spec example's kind, entry count and findings (a development aid).
fn main() {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).unwrap();
        match resourcesync_xml::read_document(&bytes) {
            Ok((doc, findings)) => {
                println!("{path}: {} {}", doc.head.kind(), doc.entries.len());
                for f in findings {
                    println!("   {f}");
                }
            }
            Err(e) => println!("{path}: ERROR {e}"),
        }
    }
}
