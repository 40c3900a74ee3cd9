//! `resourcesync sync` where the test needs more than this process: strace, to see the
//! order of the command's system calls; root, to mount a small tmpfs that fills up;
//! openssl and Python, for a Source served over TLS by a certificate of the test's own
//! authority.
//! The harness (`resourcesync_testkit::needs`) reports such a test ignored, saying why,
//! where its need is not met; on CI (`CI` set to anything but `false`; `.ci/run` installs
//! strace and runs as root) it fails instead.

use std::path::Path;
use std::process::{Command, ExitCode, Output};

use resourcesync_testkit::driver::{Driver, populate, text};
use resourcesync_testkit::needs::{self, Missing};
use resourcesync_testkit::served::Served;

#[path = "common/requests.rs"]
mod requests;
use requests::record_requests;

fn main() -> ExitCode {
    let strace = needs::program("strace", &["-V"], "strace");
    let tmpfs = Tmpfs::can_mount();
    let tls = needs::program("openssl", &["version"], "openssl").and(needs::program(
        "python3",
        &["--version"],
        "python3",
    ));
    needs::main(vec![
        needs::trial(
            "what_a_save_records_is_flushed_to_the_disk_before_the_inventory_is_saved",
            &strace,
            |()| what_a_save_records_is_flushed_to_the_disk_before_the_inventory_is_saved(),
        ),
        needs::trial(
            "a_full_disk_names_the_file_keeps_the_state_and_the_rerun_finishes",
            &tmpfs,
            |()| a_full_disk_names_the_file_keeps_the_state_and_the_rerun_finishes(),
        ),
        needs::trial(
            "a_dry_run_and_an_audit_read_a_directory_on_a_read_only_file_system",
            &tmpfs,
            |()| a_dry_run_and_an_audit_read_a_directory_on_a_read_only_file_system(),
        ),
        needs::trial(
            "an_https_source_is_synced_when_the_system_trusts_its_authority_and_refused_when_not",
            &tls,
            |()| {
                an_https_source_is_synced_when_the_system_trusts_its_authority_and_refused_when_not(
                )
            },
        ),
    ])
}

fn sync(args: &[&str]) -> Output {
    Driver::new(
        "resourcesync sync",
        env!("CARGO_BIN_EXE_resourcesync"),
        &["sync"],
    )
    .run(args)
}

fn what_a_save_records_is_flushed_to_the_disk_before_the_inventory_is_saved() {
    // The order of the system calls, as strace sees them: every resource renamed into
    // place, then a syncfs of the directory's file system, then the inventory committed
    // (fsync of its file) and the state renamed over the last one. Without the flush a
    // power failure could leave the inventory recording files whose bytes never reached
    // the disk.
    let served = Served::start(|s| populate(s, 20));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let log = dir.path().join("trace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            // File descriptors with their paths: the inventory's fsync is told apart
            // from the state file's.
            "-y",
            "-e",
            "trace=syncfs,sync,rename,renameat,renameat2,fsync,fdatasync",
            "-o",
        ])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", &served.base, d.to_str().unwrap()])
        .output()
        .expect("strace");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(&d).unwrap();
    let trace = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let last = |what: &dyn Fn(&str) -> bool| lines.iter().rposition(|l| what(l));
    // A body's temporary file ("request-N") renamed to the resource's name.
    let resource = last(&|l: &str| l.contains("rename") && l.contains("\"request-"));
    let flush = last(&|l: &str| l.contains("syncfs(") && l.contains("= 0"));
    let state = last(&|l: &str| l.contains("rename") && l.contains("state.json.tmp"));
    // The inventory's commit: the first fsync of its file after the flush.
    let commit = flush.and_then(|flush| {
        let after = lines[flush..].iter().position(|l| {
            (l.contains("fsync(") || l.contains("fdatasync(")) && l.contains("inventory.redb")
        });
        after.map(|i| flush + i)
    });
    let (Some(resource), Some(flush), Some(commit), Some(state)) = (resource, flush, commit, state)
    else {
        panic!(
            "resource {resource:?}, syncfs {flush:?}, commit {commit:?}, state {state:?}:\n{trace}"
        );
    };
    assert!(
        resource < flush && flush < commit && commit < state,
        "resource {resource}, syncfs {flush}, commit {commit}, state {state}:\n{trace}"
    );
}

/// A tmpfs mounted for the test's duration, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` at `at`, or says why it cannot be (root is needed).
    fn mount(at: &Path, size: &str) -> Result<Tmpfs, Missing> {
        std::fs::create_dir_all(at).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output();
        match mounted {
            Ok(out) if out.status.success() => Ok(Tmpfs(at.to_owned())),
            failed => Err(Missing::new(
                "needs root to mount a tmpfs",
                format!(
                    "cannot mount a tmpfs here (root needed; .ci/run runs as root): {}",
                    match failed {
                        Ok(out) => String::from_utf8_lossy(&out.stderr)
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .to_owned(),
                        Err(e) => e.to_string(),
                    }
                ),
            )),
        }
    }

    /// Whether a tmpfs can be mounted here: one mounted and unmounted.
    fn can_mount() -> Result<(), Missing> {
        let dir = tempfile::tempdir().unwrap();
        Tmpfs::mount(&dir.path().join("probe"), "64k").map(drop)
    }

    fn resize(&self, size: &str) {
        self.remount(&format!("size={size}"));
    }

    fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A directory a sync keeps, on a file system mounted read-only (a snapshot, a
/// replica, a mirror served from read-only media): a dry run and an audit read it, as
/// they change nothing (they failed at the lock, which they opened for writing:
/// "Read-only file system").
fn a_dry_run_and_an_audit_read_a_directory_on_a_read_only_file_system() {
    let served = Served::start(|s| populate(s, 5));
    let dir = tempfile::tempdir().unwrap();
    let disk = Tmpfs::mount(&dir.path().join("disk"), "8m").unwrap_or_else(|m| panic!("{}", m.why));
    let d = disk.0.join("dest");
    let dest = d.to_str().unwrap();
    assert_eq!(sync(&[&served.base, dest]).status.code(), Some(0));
    disk.remount("ro");
    let out = sync(&["--audit", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(", in sync"), "{}", text(&out));
    served.change(|s| {
        s.tick(1);
        s.put("r/1.txt", b"resource 1, updated");
        s.tick(1);
    });
    let out = sync(&["--dry-run", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("incremental: 0 created, 1 updated"),
        "{}",
        text(&out)
    );
    // A run that stores says why it cannot, naming where.
    let out = sync(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("Read-only file system"),
        "{}",
        text(&out)
    );
    disk.remount("rw");
}

fn a_full_disk_names_the_file_keeps_the_state_and_the_rerun_finishes() {
    let big = vec![b'x'; 32 * 1024];
    let served = Served::start(|s| {
        for i in 0..40 {
            let mut body = big.clone();
            body[0] = i as u8;
            s.put(&format!("r/{i}.bin"), &body);
        }
        s.tick(10);
    });
    let dir = tempfile::tempdir().unwrap();
    let disk =
        Tmpfs::mount(&dir.path().join("disk"), "512k").unwrap_or_else(|m| panic!("{}", m.why));
    let d = disk.0.join("dest");
    let out = sync(&[&served.base, d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("baseline: ") && stdout.contains("incomplete"),
        "{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("No space left on device"), "{}", text(&out));
    assert!(
        stderr.contains(d.to_str().unwrap()),
        "the path is named: {}",
        text(&out)
    );
    let stored = std::fs::read_dir(d.join("r")).map_or(0, |r| r.count());
    assert!(stored > 0 && stored < 40, "{stored} stored: {}", text(&out));
    // Space freed: the rerun finishes, fetching only what is missing.
    disk.resize("8m");
    let requests = record_requests(&served);
    let out = sync(&[&served.base, d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(&d).unwrap();
    assert_eq!(
        requests.lock().unwrap().len(),
        40 - stored,
        "{}",
        text(&out)
    );
}

/// Runs `openssl` with `args` in `dir`; panics with its output if it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
}

/// A child process killed and waited for when dropped, a failed assertion included.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Python's HTTPS server over `dir`, with `cert` and `key`, on 127.0.0.1: the child
/// and its port.
fn https_server(dir: &Path, cert: &Path, key: &Path) -> (Killed, u16) {
    use std::io::BufRead;
    const SERVER: &str = r#"
import functools, http.server, ssl, sys
root, cert, key = sys.argv[1:4]
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(
    ("127.0.0.1", 0), functools.partial(Quiet, directory=root))
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain(cert, key)
server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
"#;
    let mut child = Killed(
        Command::new("python3")
            .args(["-c", SERVER])
            .arg(dir)
            .arg(cert)
            .arg(key)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    let stdout = child.0.stdout.take().unwrap();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("the server said {line:?}"));
    (child, port)
}

fn an_https_source_is_synced_when_the_system_trusts_its_authority_and_refused_when_not() {
    // An authority of the test's own, and a certificate it signs for 127.0.0.1: what an
    // organisation's Source is, its authority installed on the machine (here named by
    // SSL_CERT_FILE, which the system's store is read from when set).
    let root = tempfile::tempdir().unwrap();
    let at = root.path();
    // The authority's extensions from a configuration of its own, not the system's
    // `v3_ca` (which, under OpenSSL 1.1.1, would add `basicConstraints` twice).
    std::fs::write(
        at.join("ca.cnf"),
        "[req]\ndistinguished_name = dn\nx509_extensions = ca\nprompt = no\n\
         [dn]\nCN = resourcesync test authority\n\
         [ca]\nbasicConstraints = critical,CA:TRUE\n\
         keyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n",
    )
    .unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        at,
        &[
            &["req", "-x509", "-config", "ca.cnf"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
        ]
        .concat(),
    );
    openssl(
        at,
        &[
            &["req"][..],
            &ec,
            &["-keyout", "server.key", "-out", "server.csr"],
            &["-subj", "/CN=127.0.0.1"],
        ]
        .concat(),
    );
    std::fs::write(
        at.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        at,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    // The publication, served over TLS at the base it names.
    let (coll, publish) = (at.join("coll"), at.join("publish"));
    std::fs::create_dir_all(coll.join("docs")).unwrap();
    std::fs::write(coll.join("docs/a.txt"), b"over TLS").unwrap();
    std::fs::write(coll.join("b.bin"), vec![7u8; 100_000]).unwrap();
    std::fs::create_dir(&publish).unwrap();
    let (server, port) = https_server(&publish, &at.join("server.pem"), &at.join("server.key"));
    let base = format!("https://127.0.0.1:{port}/");
    let built = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["build", "--base-url", &base])
        .arg(&coll)
        .arg(&publish)
        .output()
        .unwrap();
    let sync_with = |dest: &str, roots: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
        command
            .env_remove("SSL_CERT_DIR")
            .env_remove("SSL_CERT_FILE");
        for proxy in ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
            command.env_remove(proxy);
        }
        if let Some(roots) = roots {
            command.env("SSL_CERT_FILE", roots);
        }
        command
            .args(["sync", &base])
            .arg(at.join(dest))
            .output()
            .unwrap()
    };
    let trusted = sync_with("trusted", Some(&at.join("ca.pem")));
    let untrusted = sync_with("untrusted", None);
    drop(server);
    assert!(built.status.success(), "{}", text(&built));
    assert_eq!(trusted.status.code(), Some(0), "{}", text(&trusted));
    assert_eq!(
        std::fs::read(at.join("trusted/docs/a.txt")).unwrap(),
        b"over TLS"
    );
    assert_eq!(
        std::fs::read(at.join("trusted/b.bin")).unwrap(),
        vec![7u8; 100_000]
    );
    // The authority unknown to the machine: refused at the handshake, and said so.
    assert_eq!(untrusted.status.code(), Some(1), "{}", text(&untrusted));
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(stderr.contains("cannot connect"), "{}", text(&untrusted));
    assert!(stderr.contains("certificate"), "{}", text(&untrusted));
    assert!(!at.join("untrusted/docs/a.txt").exists());
}
