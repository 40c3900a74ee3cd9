//! `resourcesync build` as a hostile collection meets it (issue 28): a name is escaped
//! wherever the command prints it. (What the build follows, reads and removes:
//! resourcesync-source's tests, in process.)

#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;

#[path = "common/building.rs"]
mod building;

use building::*;

/// A name is escaped wherever `build` prints it: an escape sequence in a skipped file's
/// name reaches no terminal, and a newline forges no line. Fails on the code before: the
/// names were printed raw.
#[test]
fn names_are_escaped_wherever_build_prints_them() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "own.txt", b"own");
    let forged = "x\nresourcesync build: published generation 9\u{1b}[2J";
    // Skipped for its control characters (no URI), and for being a link.
    put(&coll, forged, b"skipped");
    symlink("own.txt", coll.join("link\u{1b}]0;title\u{7}")).unwrap();
    let out = build_text(&coll, &publish);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("resourcesync build: published")),
        "{stderr}"
    );
    assert!(
        stderr.contains(r"\u{1b}[2J") && stderr.contains(r"x\n"),
        "{stderr}"
    );
    // And in an error: a list naming a file by such a name, a URI holding one (which
    // does not parse) or a bidirectional override (which does).
    let list = root.path().join("list.txt");
    for line in [
        "http://example.org/a no-such\u{1b}[2J.txt",
        "http://example.org/\u{1b}[2J own.txt",
        "http://example.org/\u{202e}a own.txt\nhttp://example.org/\u{202e}a own.txt",
    ] {
        fs::write(&list, format!("{line}\n")).unwrap();
        let out = build_output(&coll, &publish, &["--list", list.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains('\u{1b}') && !stderr.contains('\u{202e}'),
            "{stderr:?}"
        );
        assert!(
            stderr.contains(r"\u{1b}[2J") || stderr.contains(r"\u{202e}"),
            "{stderr}"
        );
    }
}
