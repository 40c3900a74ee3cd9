//! Verification on one thread and on two find the same: the same fixity errors, in the
//! same order, on the same corrupt package, and the same error when a bitstream cannot be
//! read after some that do not verify.

use std::io::{Cursor, Write};

use resourcesync_model::{DocumentKind, Hashes};
use resourcesync_package::{
    Bitstream, Compression, Package, PackageError, PackageLimits, PackageOptions, PackageWriter,
};
use zip::write::SimpleFileOptions;

use crate::manifest_head;

/// Pseudo-random bytes.
fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// 300 bitstreams, mostly of 4 KiB, some of 700 KiB (across the hashing thread's batches)
/// and some empty, with these faults: content changed after hashing (md5 reported), the
/// manifest's length one less (longer) and one more (shorter), only a sha-256 listed and
/// the content changed (sha-256 reported). Stored by the zip crate, CRC-32s right.
fn corrupt_package() -> (Vec<u8>, usize) {
    let contents: Vec<Vec<u8>> = (0..300u64)
        .map(|i| match i % 50 {
            7 => bytes(i + 1, 700 << 10),
            13 => Vec::new(),
            _ => bytes(i + 1, 4 << 10),
        })
        .collect();
    let options = PackageOptions::default().compression(Compression::Store);
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ResourceDumpManifest),
        options,
    )
    .unwrap();
    for (i, content) in contents.iter().enumerate() {
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/r/{i}").into(),
        );
        b.media_type = Some("application/octet-stream".parse().unwrap());
        writer.add(b, &content[..]).unwrap();
    }
    let (_, info) = writer.finish().unwrap();
    let mut manifest = info.manifest;
    let mut contents = contents;
    let mut faults = 0;
    for (i, content) in contents.iter_mut().enumerate() {
        let md = manifest.entries[i].md.as_mut().unwrap();
        match i {
            3 | 57 | 299 => {
                let middle = content.len() / 2;
                content[middle] ^= 1;
            }
            10 | 107 => *md.length.as_mut().unwrap() -= 1,
            11 | 108 => *md.length.as_mut().unwrap() += 1,
            200 => {
                let sha = md.hash.as_ref().unwrap().iter().nth(1).unwrap().clone();
                md.hash = Some(Hashes::new(vec![sha]).unwrap());
                content[0] ^= 1;
            }
            _ => continue,
        }
        faults += 1;
    }
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (i, content) in contents.iter().enumerate() {
        zip.start_file(format!("r/{i}"), stored).unwrap();
        zip.write_all(content).unwrap();
    }
    zip.start_file("manifest.xml", stored).unwrap();
    zip.write_all(
        &resourcesync_xml::write_document(Vec::new(), &manifest)
            .unwrap()
            .output,
    )
    .unwrap();
    (zip.finish().unwrap().into_inner(), faults)
}

fn open(zip: &[u8], thread: bool) -> Package<Cursor<&[u8]>> {
    let limits = PackageLimits::default().with_hashing_thread(thread);
    Package::with_limits(Cursor::new(zip), limits).unwrap()
}

fn check(zip: &[u8], thread: bool) -> Result<Vec<String>, String> {
    open(zip, thread)
        .check()
        .map(|findings| findings.iter().map(|f| f.to_string()).collect())
        .map_err(|e| e.to_string())
}

fn verify(zip: &[u8], thread: bool) -> String {
    let error = open(zip, thread).verify().unwrap_err();
    assert!(matches!(error, PackageError::Fixity(_)), "{error}");
    error.to_string()
}

#[test]
fn one_thread_and_two_find_the_same_fixity_errors() {
    let (zip, faults) = corrupt_package();
    let one = check(&zip, false).unwrap();
    assert_eq!(one.len(), faults, "{one:#?}");
    assert!(
        one.iter().all(|f| f.contains("bitstream-fixity")),
        "{one:#?}"
    );
    assert_eq!(check(&zip, true).unwrap(), one);
    assert!(verify(&zip, false).contains("r/3"));
    assert_eq!(verify(&zip, true), verify(&zip, false));
}

#[test]
fn one_thread_and_two_judge_alike_a_bitstream_changed_behind_its_crc() {
    let (mut zip, faults) = corrupt_package();
    // Bitstream 250's content changed behind its CRC-32: its manifest hashes differ too,
    // a fixity finding after the others (bytes changed, not a broken ZIP).
    let content = bytes(251, 4 << 10);
    let at = zip
        .windows(content.len())
        .position(|w| w == &content[..])
        .unwrap();
    zip[at + 100] ^= 1;
    let one = check(&zip, false).unwrap();
    assert_eq!(one.len(), faults + 1, "{one:#?}");
    assert!(
        one.iter()
            .any(|f| f.contains("bitstream-fixity") && f.contains("r/250")),
        "{one:#?}"
    );
    assert_eq!(check(&zip, true).unwrap(), one);
    assert_eq!(verify(&zip, true), verify(&zip, false));
}
