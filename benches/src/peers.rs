//! The client peers the benches run beside `resourcesync sync` (wget2, aria2c), found on
//! the system, and the timing and medians the benches print their ratios with.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A program of the system, or `None` (said on stderr) where the bench may skip what
/// needs it; on CI (`CI` set to anything but `false`) a missing one fails the bench.
/// `package` is the Debian package that has it (`.ci/run` installs it).
pub fn program(name: &str, package: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        assert!(
            !ci,
            "no {name} on PATH: .ci/run installs it (apt-get install {package})"
        );
        eprintln!("skipped: no {name} on PATH (apt-get install {package})");
    }
    found
}

/// One line of wget2's input file: the URL.
pub fn wget2_line(url: &str, _path: &str, _md5: &str) -> String {
    format!("{url}\n")
}

/// One entry of aria2c's input file: the URL, the file's path under the output
/// directory, and its md5, which aria2c checks (a mismatch fails the download).
pub fn aria2c_line(url: &str, path: &str, md5: &str) -> String {
    format!("{url}\n  out={path}\n  checksum=md5={md5}\n")
}

/// Writes a peer's input file at `path`: `line` ([`wget2_line`], [`aria2c_line`]) of each
/// resource's URL under `base`, path (relative, as under `base`) and md5.
pub fn input_file<'a>(
    path: &Path,
    base: &str,
    resources: impl Iterator<Item = (&'a str, &'a str)>,
    line: fn(&str, &str, &str) -> String,
) {
    let lines: String = resources
        .map(|(relative, md5)| line(&format!("{base}{relative}"), relative, md5))
        .collect();
    std::fs::write(path, lines).unwrap();
}

/// wget2 with `threads` threads over the URLs of `list` ([`wget2_line`]) into `out`:
/// how long it took. Panics, with wget2's message, when it fails.
pub fn wget2(wget2: &Path, list: &Path, out: &Path, threads: usize) -> Duration {
    let mut command = Command::new(wget2);
    command
        .args([
            "--no-config",
            "--quiet",
            "--no-hsts",
            "--no-hpkp",
            "--no-netrc",
            &format!("--max-threads={threads}"),
        ])
        .arg("--input-file")
        .arg(list)
        .arg("--directory-prefix")
        .arg(out);
    timed("wget2", command)
}

/// aria2c with `downloads` downloads at once, one connection each, over the entries of
/// `list` ([`aria2c_line`]) into `out`: how long it took. Panics, with aria2c's
/// message, when it fails (a digest that does not match included).
pub fn aria2c(aria2c: &Path, list: &Path, out: &Path, downloads: usize) -> Duration {
    let mut command = Command::new(aria2c);
    command
        .args([
            "--no-conf",
            "--quiet",
            "--file-allocation=none",
            "--auto-file-renaming=false",
            "--max-connection-per-server=1",
            &format!("--max-concurrent-downloads={downloads}"),
        ])
        .arg("--input-file")
        .arg(list)
        .arg("--dir")
        .arg(out);
    timed("aria2c", command)
}

/// Runs `command` to its end: how long it took. Panics, with its output, when it fails.
pub fn timed(name: &str, mut command: Command) -> Duration {
    let start = Instant::now();
    let output = command.output().unwrap();
    let took = start.elapsed();
    assert!(
        output.status.success(),
        "{name} ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    took
}

/// The median of `values` (sorted in place); NaN for none.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Runs `f` `iters` times for criterion's `iter_custom` and returns the total of the
/// times it returns (each run's timed part), each also kept in `times`, in seconds, for the
/// medians and ratios a bench prints after its group.
pub fn timing(times: &mut Vec<f64>, iters: u64, mut f: impl FnMut() -> Duration) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let took = f();
        times.push(took.as_secs_f64());
        total += took;
    }
    total
}

/// How long `f` took.
pub fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}
