//! Our packages in Python's zipfile and `unzip -t`: the same names and contents, and the
//! manifest's hashes agree with what Python computes. A test whose tool cannot be run is
//! skipped, saying so on stderr, except on CI (`CI` set to anything but `false`; `.ci/run`
//! sets it and installs both), where it fails.

use std::process::{Command, Output};

use resourcesync_model::DocumentKind;
use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};

use crate::manifest_head;

fn package() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("package.zip");
    let mut writer = PackageWriter::create(
        &path,
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
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

/// What the command printed; `None` when it cannot be run and that is allowed.
fn run_or_skip(command: &mut Command) -> Option<Output> {
    match command.output() {
        Ok(out) => Some(out),
        Err(e) => {
            let program = command.get_program().to_string_lossy().into_owned();
            let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
            assert!(!ci, "{program} cannot be run on CI: {e}");
            eprintln!("skipped: {program} cannot be run: {e}");
            None
        }
    }
}

#[test]
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
    let Some(out) = run_or_skip(Command::new("python3").args(["-c", script]).arg(&path)) else {
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
}

#[test]
fn unzip_tests_our_packages() {
    let (_dir, path) = package();
    let Some(out) = run_or_skip(Command::new("unzip").arg("-t").arg(&path)) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("No errors detected"), "{stdout}");
    assert!(stdout.contains("testing: resources/res1"), "{stdout}");
}
