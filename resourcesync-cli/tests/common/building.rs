//! Running `resourcesync build` from a test: the command, its JSON report, files.
#![allow(dead_code)]

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) const BASE: &str = "http://127.0.0.1:8080/";

pub(crate) fn resourcesync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .output()
        .expect("run resourcesync")
}

/// Builds `collection` into `publish` without `--json`: the text output.
pub(crate) fn build_text(collection: &Path, publish: &Path) -> Output {
    let (collection, publish) = (collection.to_str().unwrap(), publish.to_str().unwrap());
    resourcesync(&["build", "--base-url", BASE, collection, publish])
}

/// Builds `collection` into `publish` with `extra` options and `--json`; the report.
pub(crate) fn build(collection: &Path, publish: &Path, extra: &[&str]) -> Value {
    let out = build_output(collection, publish, extra);
    assert!(
        out.status.success(),
        "build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

pub(crate) fn build_output(collection: &Path, publish: &Path, extra: &[&str]) -> Output {
    build_output_at(BASE, collection, publish, extra)
}

/// [`build_output`] under another base URL.
pub(crate) fn build_output_at(
    base: &str,
    collection: &Path,
    publish: &Path,
    extra: &[&str],
) -> Output {
    let mut args = vec!["build", "--json", "--base-url", base];
    args.extend_from_slice(extra);
    args.push(collection.to_str().unwrap());
    args.push(publish.to_str().unwrap());
    resourcesync(&args)
}

/// Writes `bytes` at `relative` under `root`, making its directories.
pub(crate) fn put(root: &Path, relative: &str, bytes: &[u8]) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}
