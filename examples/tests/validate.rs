//! `resourcesync validate`: output, JSON shape and exit status on the spec's examples.

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/examples"))
        .output()
        .expect("run resourcesync")
}

fn status(args: &[&str]) -> i32 {
    run(args).status.code().unwrap()
}

#[test]
fn exit_status_says_valid_broken_or_unreadable() {
    assert_eq!(status(&["validate", "ex14-resourcelist.xml"]), 0);
    // Warnings alone do not fail a document.
    assert_eq!(status(&["validate", "ex07-source-description.xml"]), 0);
    assert_eq!(status(&["validate", "ex27-patch-links.xml"]), 1);
    assert_eq!(status(&["validate", "ex11-robots.txt"]), 2);
    assert_eq!(status(&["validate", "no-such-file.xml"]), 2);
    assert_eq!(
        status(&["validate", "http://example.com/resourcelist.xml"]),
        2
    );
    // The worst input decides.
    assert_eq!(
        status(&["validate", "ex14-resourcelist.xml", "ex27-patch-links.xml"]),
        1
    );
    assert_eq!(
        status(&["validate", "ex27-patch-links.xml", "ex11-robots.txt"]),
        2
    );
    assert_eq!(status(&["validate"]), 2);
    assert_eq!(status(&["check", "ex14-resourcelist.xml"]), 2);
}

#[test]
fn text_output_names_rule_section_and_place() {
    let out = run(&["validate", "ex27-patch-links.xml"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(
        "ex27-patch-links.xml: error [hash-syntax, section 7] entry 1 line 7 column 5: invalid hash"
    ), "{text}");
    assert!(text.ends_with("ex27-patch-links.xml: Change List, 2 entries, 4 errors, 0 warnings\n"));
}

#[test]
fn json_output_has_one_object_per_input() {
    let out = run(&[
        "validate",
        "--json",
        "ex05-resourcedump-manifest.xml",
        "ex11-robots.txt",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let manifest = &lines[0];
    assert_eq!(manifest["input"], "ex05-resourcedump-manifest.xml");
    assert_eq!(manifest["kind"], "Resource Dump Manifest");
    assert_eq!(manifest["entries"], 2);
    assert_eq!(manifest["errors"][0]["rule"], "up-link-mandatory");
    assert_eq!(manifest["errors"][0]["section"], "11.2");
    assert!(manifest["errors"][0]["line"].is_null());
    let warning = &manifest["warnings"][1];
    assert_eq!(warning["rule"], "manifest-type-recommended");
    assert_eq!(
        (
            warning["line"].as_u64(),
            warning["column"].as_u64(),
            warning["entry"].as_u64()
        ),
        (Some(8), Some(3), Some(2))
    );
    let robots = &lines[1];
    assert!(robots["kind"].is_null());
    assert!(robots["errors"][0]["rule"].is_null());
    assert!(
        robots["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("unexpected text")
    );
}

#[test]
fn every_example_validates_as_the_spec_readme_says() {
    // Examples 1-5, 8 and 27 break rules (spec/README.md); the rest are valid.
    let broken = ["ex01", "ex02", "ex03", "ex04", "ex05", "ex08", "ex27"];
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/examples");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if !name.ends_with(".xml") {
            continue;
        }
        let expected = if broken.iter().any(|b| name.starts_with(b)) {
            1
        } else {
            0
        };
        assert_eq!(status(&["validate", &name]), expected, "{name}");
    }
}

#[test]
fn packages_are_validated_bitstream_by_bitstream() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../resourcesync-package/tests/package/packages.py"
        ))
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = |name: &str| dir.path().join(name).display().to_string();
    assert_eq!(status(&["validate", &path("valid-deflated.zip")]), 0);
    // The Python reference implementation's manifests lack the leading slash: an error.
    assert_eq!(status(&["validate", &path("resync-style.zip")]), 1);
    assert_eq!(status(&["validate", &path("unlisted.zip")]), 0);
    assert_eq!(status(&["validate", &path("fixity-sha256.zip")]), 1);
    assert_eq!(status(&["validate", &path("name-dotdot.zip")]), 2);
    assert_eq!(status(&["validate", &path("no-manifest.zip")]), 2);

    let out = run(&[
        "validate",
        "--json",
        &path("fixity-md5.zip"),
        &path("unlisted.zip"),
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["kind"], "Resource Dump Manifest");
    assert_eq!(lines[0]["errors"][0]["rule"], "bitstream-fixity");
    assert_eq!(lines[0]["errors"][0]["entry"], 1);
    assert!(
        lines[0]["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("md5")
    );
    assert_eq!(lines[1]["warnings"][0]["rule"], "unlisted-file");
}
