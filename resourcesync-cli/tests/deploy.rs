//! `deploy/kubernetes/sync-shards.yaml`, the Indexed Job that runs one Source's shards on
//! as many pods: rendered as the Job controller and the kubelet would (each index's
//! `$(SHARD)`, the `$(SOURCE_URL)` of its env, the volume's mount path onto a directory
//! here) and its command lines run as processes on this machine at once, into one
//! directory; then audited whole. The manifest's numbers must agree (completions,
//! parallelism, the N of `--shard`), and its `command` is this binary.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use resourcesync_testkit::driver::text;
use resourcesync_testkit::served::Served;

const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../deploy/kubernetes/sync-shards.yaml"
);

/// The value of `key: value` lines (the first of each key), indentation ignored.
fn scalars(yaml: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for line in yaml.lines().map(str::trim) {
        if line.starts_with('#') {
            continue;
        }
        let line = line.trim_start_matches("- ");
        if let Some((key, value)) = line.split_once(": ") {
            out.entry(key.to_owned())
                .or_insert_with(|| value.trim().trim_matches('"').to_owned());
        }
    }
    out
}

/// A flow sequence of double-quoted strings (`["a", "b"]`), as JSON reads it.
fn sequence(yaml: &str, key: &str) -> Vec<String> {
    let line = yaml
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&format!("{key}: [")))
        .unwrap_or_else(|| panic!("no `{key}: [...]` in the manifest"));
    serde_json::from_str(&line[key.len() + 2..]).unwrap()
}

#[test]
fn the_indexed_job_s_command_lines_fill_one_directory_as_one_sync() {
    let yaml = std::fs::read_to_string(MANIFEST).unwrap();
    let values = scalars(&yaml);
    assert_eq!(values["kind"], "Job");
    assert_eq!(values["completionMode"], "Indexed");
    assert_eq!(values["restartPolicy"], "Never");
    let n: u64 = values["completions"].parse().unwrap();
    assert_eq!(values["parallelism"], values["completions"]);
    assert_eq!(
        values["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let command = sequence(&yaml, "command");
    assert_eq!(command, ["resourcesync"]);
    let args = sequence(&yaml, "args");
    assert!(
        args.contains(&format!("$(SHARD)/{n}")),
        "{args:?}: the N of --shard"
    );
    let mount = &values["mountPath"];

    let served = Served::start(|s| {
        for i in 0..40 {
            s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
        }
        s.tick(10);
    });
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // Rendered per index, and run at once.
    let render = |arg: &str, index: u64| {
        let arg = arg
            .replace("$(SHARD)", &index.to_string())
            .replace("$(SOURCE_URL)", &served.base);
        match arg.strip_prefix(mount.as_str()) {
            Some(rest) => format!("{}{rest}", data.display()),
            None => arg,
        }
    };
    let children: Vec<_> = (0..n)
        .map(|index| {
            let args: Vec<String> = args.iter().map(|a| render(a, index)).collect();
            Command::new(env!("CARGO_BIN_EXE_resourcesync"))
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (index, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "index {index}: {}", text(&out));
    }
    let dir = data.join("mirror");
    served.equals(&dir).unwrap();
    for k in 0..n {
        assert!(
            Path::new(&dir)
                .join(format!(".resourcesync/shards/{k}-of-{n}"))
                .is_dir()
        );
    }
    let audit = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--audit", &served.base, dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(audit.status.success(), "{}", text(&audit));
}
