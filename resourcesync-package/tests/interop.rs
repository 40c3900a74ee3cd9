//! Our packages in Python's zipfile and `unzip -t`: the same names and contents, and the
//! manifest's hashes agree with what Python computes. Where a tool cannot be run the
//! test is reported ignored (this binary's harness is `resourcesync_testkit::needs`),
//! except on CI (`CI` set to anything but `false`; `.ci/run` sets it and installs both),
//! where it fails.

use std::process::{Command, ExitCode};

use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};
use resourcesync_testkit::needs;

fn main() -> ExitCode {
    needs::main(vec![
        needs::trial(
            "python_zipfile_reads_our_packages",
            &needs::program("python3", &["-c", "import zipfile"], "python3"),
            |()| python_zipfile_reads_our_packages(),
        ),
        needs::trial(
            "unzip_tests_our_packages",
            &needs::program("unzip", &["-v"], "unzip"),
            |()| unzip_tests_our_packages(),
        ),
    ])
}

fn package() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("package.zip");
    let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
    head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    let up = "http://example.com/dataset1/capabilitylist.xml";
    head.links
        .push(Link::new(Relation::Up, up.parse().unwrap()));
    let mut writer = PackageWriter::create(&path, head, PackageOptions::default()).unwrap();
    for (i, (content, media)) in [
        (&b"<html>one</html>"[..], "text/html"),
        (&[9u8; 70_000][..], "image/png"),
        (&b""[..], "text/plain"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/resources/res{i}").into(),
        );
        b.media_type = Some(media.parse().unwrap());
        writer.add(b, content).unwrap();
    }
    writer.finish_file().unwrap();
    (dir, path)
}

fn python_zipfile_reads_our_packages() {
    let (_dir, path) = package();
    let script = r#"
import hashlib, re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
names = sorted(z.namelist())
assert names == ["manifest.xml", "resources/res0", "resources/res1", "resources/res2"], names
manifest = z.read("manifest.xml").decode()
for name in names[1:]:
    data = z.read(name)
    md5 = hashlib.md5(data).hexdigest()
    sha = hashlib.sha256(data).hexdigest()
    entry = re.search(r'<rs:md ([^>]*path="/%s"[^>]*)/>' % name, manifest).group(1)
    assert 'hash="md5:%s sha-256:%s"' % (md5, sha) in entry, entry
    assert 'length="%d"' % len(data) in entry, entry
assert z.read("resources/res1") == bytes([9]) * 70000
print("ok")
"#;
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

fn unzip_tests_our_packages() {
    let (_dir, path) = package();
    let out = Command::new("unzip").arg("-t").arg(&path).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("No errors detected"), "{stdout}");
    assert!(stdout.contains("testing: resources/res1"), "{stdout}");
}
