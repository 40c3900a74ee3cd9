//! `Directory`: every URI that could name a file outside the directory, or a name a
//! server would not serve as written, is refused with its own error; writes are atomic.

use std::fs;
use std::path::Path;

use resourcesync_model::Uri;
use resourcesync_source::{Directory, DirectoryError as E};

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

fn dir(root: &Path) -> Directory {
    Directory::new(root, uri("http://example.com/data/set/")).unwrap()
}

/// Files in `root` and below, as relative paths, sorted.
fn files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}

#[test]
fn bases_must_be_http_directories_without_query() {
    for base in [
        "ftp://example.com/data/",
        "urn:isbn:0451450523",
        "http://example.com/data",
        "http://example.com/data/?q=1",
        "http://example.com/data/#f",
        "http://example.com/a/../",
        "http://example.com/a//",
        "http://example.com",
    ] {
        let e = Directory::new("/tmp/x", uri(base)).unwrap_err();
        assert!(matches!(e, E::InvalidBase { .. }), "{base}: {e}");
    }
    for base in ["http://example.com/", "HTTPS://Example.com:8443/a%20b/"] {
        Directory::new("/tmp/x", uri(base)).unwrap();
    }
}

#[test]
fn uris_under_the_base_map_to_files() {
    let d = dir(Path::new("/srv"));
    let cases = [
        ("http://example.com/data/set/a.xml", "/srv/a.xml"),
        ("http://EXAMPLE.com:80/data/set/a.xml", "/srv/a.xml"),
        (
            "http://example.com/data/%73et/b/c.xml.gz",
            "/srv/b/c.xml.gz",
        ),
        ("http://example.com/data/set/a%20b.xml", "/srv/a b.xml"),
        ("http://example.com/data/set/caf%C3%A9", "/srv/café"),
        ("http://example.com/data/set/...", "/srv/..."),
        ("http://example.com/data/set/.well", "/srv/.well"),
    ];
    for (u, path) in cases {
        assert_eq!(d.path(&uri(u)).unwrap(), Path::new(path), "{u}");
    }
    assert_eq!(
        d.uri("parts/list-00001.xml").unwrap().as_str(),
        "http://example.com/data/set/parts/list-00001.xml"
    );
}

#[test]
fn each_unsafe_uri_is_refused_with_its_own_error() {
    let d = dir(Path::new("/srv"));
    let long = format!("http://example.com/data/set/{}", "a".repeat(256));
    let long_encoded = format!("http://example.com/data/set/{}", "%41".repeat(256));
    type Expect = fn(&E) -> bool;
    let cases: Vec<(&str, Expect)> = vec![
        ("https://example.com/data/set/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.org/data/set/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.com:8080/data/set/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.com/data/settle/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.com/data/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.com/data", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://user@example.org@example.com/data/set/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("ftp://example.com/data/set/a.xml", |e| {
            matches!(e, E::OutsideBase { .. })
        }),
        ("http://example.com/data/set/a.xml?x=1", |e| {
            matches!(e, E::QueryOrFragment { .. })
        }),
        ("http://example.com/data/set/a.xml#top", |e| {
            matches!(e, E::QueryOrFragment { .. })
        }),
        ("http://example.com/data/set/../b.xml", |e| {
            matches!(e, E::DotSegment { .. })
        }),
        ("http://example.com/data/set/./b.xml", |e| {
            matches!(e, E::DotSegment { .. })
        }),
        ("http://example.com/data/set/a/..", |e| {
            matches!(e, E::DotSegment { .. })
        }),
        ("http://example.com/data/set/%2e%2E/b.xml", |e| {
            matches!(e, E::EncodedDotSegment { .. })
        }),
        ("http://example.com/data/set/.%2e/b.xml", |e| {
            matches!(e, E::EncodedDotSegment { .. })
        }),
        ("http://example.com/data/set/%2E", |e| {
            matches!(e, E::EncodedDotSegment { .. })
        }),
        ("http://example.com/data/set/a%2Fb.xml", |e| {
            matches!(e, E::Separator { .. })
        }),
        #[cfg(not(unix))]
        ("http://example.com/data/set/a%5cb.xml", |e| {
            matches!(e, E::Separator { .. })
        }),
        ("http://example.com/data/set/a%00.xml", |e| {
            matches!(e, E::ControlCharacter { code: 0, .. })
        }),
        ("http://example.com/data/set/a%0A.xml", |e| {
            matches!(e, E::ControlCharacter { code: 10, .. })
        }),
        ("http://example.com/data/set/a%7F.xml", |e| {
            matches!(e, E::ControlCharacter { code: 0x7F, .. })
        }),
        ("http://example.com/data/set/a%FF.xml", |e| {
            matches!(e, E::NotUtf8 { .. })
        }),
        ("http://example.com/data/set/a//b.xml", |e| {
            matches!(e, E::EmptySegment { .. })
        }),
        ("http://example.com/data/set/a/", |e| {
            matches!(e, E::EmptySegment { .. })
        }),
        ("http://example.com/data/set/", |e| {
            matches!(e, E::EmptySegment { .. })
        }),
        (&long, |e| matches!(e, E::SegmentTooLong { len: 256, .. })),
        (&long_encoded, |e| {
            matches!(e, E::SegmentTooLong { len: 256, .. })
        }),
    ];
    for (u, expected) in cases {
        let Ok(parsed) = u.parse::<Uri>() else {
            panic!("{u} does not parse");
        };
        let e = d.path(&parsed).unwrap_err();
        assert!(expected(&e), "{u}: {e}");
        // `uri` refuses what `path` refuses, and `write` writes nothing.
        assert!(d.write(&parsed, b"x").is_err());
    }
    // On Unix a backslash is a character of a name, written `%5C`.
    #[cfg(unix)]
    assert_eq!(
        d.path(&uri("http://example.com/data/set/a%5cb.xml"))
            .unwrap(),
        Path::new("/srv/a\\b.xml")
    );
    // 255 bytes, decoded, is the longest name.
    let ok = format!("http://example.com/data/set/{}", "%41".repeat(255));
    assert!(d.path(&uri(&ok)).is_ok());
}

#[test]
fn raw_backslashes_and_controls_are_refused_even_when_a_uri_holds_them() {
    let d = dir(Path::new("/srv"));
    // The model's URI parser may refuse these itself; when it does not, `path` must.
    for (u, backslash) in [
        ("http://example.com/data/set/a\\b.xml", true),
        ("http://example.com/data/set/a\u{7f}b.xml", false),
    ] {
        if let Ok(parsed) = u.parse::<Uri>() {
            let e = d.path(&parsed).unwrap_err();
            if backslash {
                assert!(matches!(e, E::Separator { .. }), "{u}: {e}");
            } else {
                assert!(matches!(e, E::ControlCharacter { .. }), "{u}: {e}");
            }
        }
    }
}

#[test]
fn uri_refuses_names_that_path_would_refuse() {
    let d = dir(Path::new("/srv"));
    assert!(matches!(d.uri("../x.xml"), Err(E::DotSegment { .. })));
    assert!(matches!(d.uri("a b.xml"), Err(E::InvalidName { .. })));
    assert!(matches!(d.uri("x.xml?q"), Err(E::QueryOrFragment { .. })));
    assert!(matches!(d.uri(""), Err(E::EmptySegment { .. })));
}

#[test]
fn writes_create_directories_and_leave_no_temporary_file() {
    let root = tempfile::tempdir().unwrap();
    let d = dir(root.path());
    let u = d.uri("parts/deep/a.xml").unwrap();
    let path = d.write(&u, b"first").unwrap();
    assert_eq!(path, root.path().join("parts/deep/a.xml"));
    assert_eq!(fs::read(&path).unwrap(), b"first");
    // A second write replaces the file whole.
    d.write(&u, b"second, longer").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"second, longer");
    assert_eq!(
        files(root.path()),
        ["parts", "parts/deep", "parts/deep/a.xml"]
    );
}

#[test]
fn a_failed_write_leaves_no_temporary_file_and_the_target_unchanged() {
    let root = tempfile::tempdir().unwrap();
    let d = dir(root.path());
    // The target is a non-empty directory: the rename fails after the temporary file
    // was written and synced.
    fs::create_dir_all(root.path().join("taken/inside")).unwrap();
    let e = d.write(&d.uri("taken").unwrap(), b"x").unwrap_err();
    assert!(matches!(e, E::Io { .. }), "{e}");
    assert_eq!(files(root.path()), ["taken", "taken/inside"]);
    // A parent that is a file: creating the directories fails.
    fs::write(root.path().join("file"), b"kept").unwrap();
    let e = d.write(&d.uri("file/a.xml").unwrap(), b"x").unwrap_err();
    assert!(matches!(e, E::Io { .. }), "{e}");
    assert_eq!(fs::read(root.path().join("file")).unwrap(), b"kept");
    assert_eq!(files(root.path()), ["file", "taken", "taken/inside"]);
}

#[cfg(unix)]
#[test]
fn a_write_into_a_read_only_directory_fails_cleanly() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let d = dir(root.path());
    let u = d.uri("a.xml").unwrap();
    d.write(&u, b"old").unwrap();
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o555)).unwrap();
    let result = d.write(&u, b"new");
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // Root may write anywhere; everyone else is refused.
    if result.is_err() {
        assert_eq!(fs::read(root.path().join("a.xml")).unwrap(), b"old");
    }
    assert_eq!(files(root.path()), ["a.xml"]);
}

/// A published file is readable by whoever may read the files the program creates (a web
/// server running as another user): the process's umask decides, not tempfile's 0600.
#[cfg(unix)]
#[test]
fn written_files_have_the_mode_of_any_file_the_program_creates() {
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let d = dir(root.path());
    let written = d
        .write(&uri("http://example.com/data/set/a/b.xml"), b"<urlset/>")
        .unwrap();
    let plain = root.path().join("plain");
    fs::File::create(&plain).unwrap();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&written), mode(&plain));
    assert_ne!(
        mode(&written) & 0o044,
        0,
        "readable by group or others under umask 022"
    );
}

#[test]
fn open_reads_what_write_wrote_and_refuses_what_path_refuses() {
    let root = tempfile::tempdir().unwrap();
    let d = dir(root.path());
    let u = uri("http://example.com/data/set/x.xml");
    d.write(&u, b"bytes").unwrap();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut d.open(&u).unwrap(), &mut text).unwrap();
    assert_eq!(text, "bytes");
    let missing = d
        .open(&uri("http://example.com/data/set/y.xml"))
        .unwrap_err();
    assert!(matches!(missing, E::Io { .. }), "{missing:?}");
    assert_eq!(
        std::io::Error::from(missing).kind(),
        std::io::ErrorKind::NotFound
    );
    let outside = d.open(&uri("http://example.org/x.xml")).unwrap_err();
    assert_eq!(
        std::io::Error::from(outside).kind(),
        std::io::ErrorKind::InvalidInput
    );
}
