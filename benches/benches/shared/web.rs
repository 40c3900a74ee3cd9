//! What the benches beside nginx share (`serve`, `objects`): the two collections
//! (10,000 files of 1 KiB, 200 of 1 MiB), generated and published by `build`, and nginx
//! as a child process serving a publication. Included by each with `#[path]`.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use resourcesync_model::Fixity;
use resourcesync_source::collection::{Options, build};

/// One collection: what the files are and how many.
pub(crate) struct Size {
    pub(crate) name: &'static str,
    pub(crate) files: usize,
    /// The length of file `i`.
    pub(crate) len: fn(usize) -> usize,
}

pub(crate) const SMALL: Size = Size {
    name: "small",
    files: 10_000,
    len: |_| 1 << 10,
};

pub(crate) const LARGE: Size = Size {
    name: "large",
    files: 200,
    len: |_| 1 << 20,
};

/// A collection on disk.
pub(crate) struct Collection {
    _dir: tempfile::TempDir,
    pub(crate) root: PathBuf,
    /// Every file's path relative to the root, which is its URL's path under a base.
    pub(crate) paths: Vec<String>,
    /// Every file's md5, in hexadecimal, for aria2c to check as `sync` checks the listed
    /// digests.
    pub(crate) md5s: Vec<String>,
    pub(crate) bytes: u64,
}

pub(crate) fn generate(size: &Size, files: usize) -> Collection {
    let dir = resourcesync_benches::scratch(&format!("serve-bench-{}", size.name));
    let root = dir.path().join("collection");
    let sub = root.join(size.name);
    std::fs::create_dir_all(&sub).unwrap();
    let mut paths = Vec::with_capacity(files);
    let mut md5s = Vec::with_capacity(files);
    let mut bytes = 0;
    for i in 0..files {
        let len = (size.len)(i);
        let name = format!("f{i:05}.bin");
        let content = resourcesync_benches::bytes(i as u64 + 1, len);
        let mut fixity = Fixity::new();
        fixity.update(&content);
        md5s.push(fixity.finish().md5.to_string());
        std::fs::write(sub.join(&name), content).unwrap();
        paths.push(format!("{}/{name}", size.name));
        bytes += len as u64;
    }
    Collection {
        _dir: dir,
        root,
        paths,
        md5s,
        bytes,
    }
}

/// A publication of `collection` for a server at `base`, in a directory of its own.
pub(crate) fn publish(collection: &Collection, base: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = resourcesync_benches::scratch("serve-bench-publish");
    let publish = dir.path().join("publish");
    let report = build(
        &collection.root,
        &publish,
        &Options::new(base.parse().unwrap()),
        SystemTime::now(),
        &(),
    )
    .unwrap();
    assert_eq!(report.resources, collection.paths.len() as u64);
    (dir, publish)
}

/// nginx as a child process, until dropped.
pub(crate) struct Nginx {
    pub(crate) base: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    pub(crate) fn start(nginx: &Path, port: u16, publish: &Path) -> Nginx {
        Nginx::start_with(nginx, port, publish, false)
    }

    /// [`start`](Nginx::start), with directory listings (`autoindex`) when `listings`:
    /// what rclone's HTTP backend reads.
    pub(crate) fn start_with(nginx: &Path, port: u16, publish: &Path, listings: bool) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        // As root, nginx's workers would switch to `nobody`, who cannot read the build's
        // files (written 0600 through temporary files) nor enter the temporary
        // directories (0700); anyone else's workers stay who they are.
        let root = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(prefix).unwrap().uid() == 0
        };
        let user = if root { "user root;" } else { "" };
        let p = prefix.display();
        let config = format!(
            "{user}
daemon off;
worker_processes auto;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    types {{ application/octet-stream bin; application/xml xml; }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 65;
    keepalive_requests 100000;
    client_body_temp_path {p}/body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        autoindex {autoindex};
    }}
}}
",
            root = publish.display(),
            autoindex = if listings { "on" } else { "off" },
        );
        let conf = prefix.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let mut child = server_command(nginx)
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(prefix.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let log = || std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
            if let Some(status) = child.try_wait().unwrap() {
                panic!("nginx exited ({status}): {}", log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "nginx did not listen within 10 s: {}",
                log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Nginx {
            base: format!("http://127.0.0.1:{port}/"),
            child,
            _dir: dir,
        }
    }
}

impl Nginx {
    /// The CPU time nginx's processes (the master and its workers) have used so far, in
    /// seconds, from `/proc`: what serving cost, read before and after a fetch.
    pub(crate) fn cpu(&self) -> f64 {
        let master = self.child.id();
        let mut ticks = cpu_ticks(master, false);
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                    continue;
                };
                if parent_of(pid) == Some(master) {
                    ticks += cpu_ticks(pid, false);
                }
            }
        }
        ticks as f64 / TICKS_PER_SECOND
    }
}

/// The kernel's clock ticks per second, in which `/proc/<pid>/stat` counts CPU time
/// (`getconf CLK_TCK`: 100 on Linux's every common configuration).
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of `/proc/<pid>/stat` after the command's name (which may hold spaces).
fn stat_fields(pid: u32) -> Vec<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    // The state is a letter: counted as 0, so the numbers keep their places.
    after_name
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect()
}

/// The parent of process `pid`, if it still runs.
fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid).get(1).map(|p| *p as u32)
}

/// User and system ticks of process `pid` (with `children`, also of its children that
/// it waited for: a client run as a child, once it exited).
fn cpu_ticks(pid: u32, children: bool) -> u64 {
    // After the name: state (0), ppid (1), ... utime (11), stime (12), cutime (13),
    // cstime (14).
    let f = stat_fields(pid);
    let own = f.get(11).unwrap_or(&0) + f.get(12).unwrap_or(&0);
    let waited = f.get(13).unwrap_or(&0) + f.get(14).unwrap_or(&0);
    if children { own + waited } else { own }
}

/// The CPU time this process and the children it waited for have used so far, in
/// seconds: a client's, in process or run as a child, read before and after it fetched.
pub(crate) fn own_cpu() -> f64 {
    cpu_ticks(std::process::id(), true) as f64 / TICKS_PER_SECOND
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM is nginx's fast shutdown, workers included; a SIGKILL (all `Child`
        // can send) would leave the workers running, so it is the last resort.
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command that runs the server `program` in a session of its own, as servers run:
/// nginx started as it starts by default (`daemon on`) calls `setsid`, and a service
/// manager starts each service in its own session and group. On one machine this
/// decides how the kernel shares the cores between server and client: with autogroup
/// scheduling (on by default in Linux, and on these machines:
/// `/proc/sys/kernel/sched_autogroup_enabled` is 1) each session is a group, and the
/// CPU is shared between groups before threads. A server in the clients' session (a
/// plain child of this process, as the benches ran it before) shares it thread by
/// thread with them, so a client of 16 threads takes CPU from a server of a worker per
/// core that a server of its own would have had: wget2 fetched the 10,000 small files from
/// nginx in 0.30 s with nginx in the bench's session and in 0.39 s with nginx in a
/// session of its own, where `sync` took 0.27 s either way. Client and server on two
/// machines, each with cores of its own, are closer to the second.
///
/// With `BENCH_ONE_SESSION` set, or without `setsid` (util-linux, on every Debian; on
/// CI its absence fails the bench), the server is a plain child in this process's
/// session (said once).
///
/// Either way the server gets SIGTERM when this process ends, however it ends (its
/// parent-death signal): out of the terminal's process group, a Ctrl-C would otherwise
/// leave it serving. nginx takes SIGTERM as its fast shutdown, workers included.
pub(crate) fn server_command(program: &Path) -> Command {
    static SETSID: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let setsid = SETSID.get_or_init(|| {
        if std::env::var_os("BENCH_ONE_SESSION").is_some() {
            eprintln!("servers run in the bench's session (BENCH_ONE_SESSION)");
            return None;
        }
        let found = resourcesync_benches::peers::program("setsid", "util-linux");
        if found.is_none() {
            eprintln!("servers run in the bench's session: no setsid");
        }
        found
    });
    let mut command = match setsid {
        // `setsid` calls setsid(2) and executes the program in its place (it forks only
        // when it leads its process group, which a child just spawned does not): the
        // child's process id is the server's, to read its CPU time and to stop it by.
        Some(setsid) => {
            let mut command = Command::new(setsid);
            command.arg(program);
            command
        }
        None => Command::new(program),
    };
    let parent = rustix::process::getpid();
    // SAFETY: between fork and exec the hook makes two system calls (prctl, getppid),
    // which are async-signal-safe, and allocates nothing. The signal is kept across
    // `setsid`'s exec and nginx's (neither is set-user-ID), and set before the check
    // that the parent is still there (a parent gone before it would never send it).
    #[allow(unsafe_code)]
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
            if rustix::process::getppid() != Some(parent) {
                return Err(std::io::Error::other("the bench ended"));
            }
            Ok(())
        });
    }
    command
}

/// The CPU time process `pid` has used so far, in seconds (its own, not its
/// children's): a server's, read before and after a fetch.
pub(crate) fn process_cpu(pid: u32) -> f64 {
    cpu_ticks(pid, false) as f64 / TICKS_PER_SECOND
}

/// A free port on 127.0.0.1 for nginx, which is given a port rather than a socket.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
