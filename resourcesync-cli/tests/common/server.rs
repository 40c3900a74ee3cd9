//! `resourcesync serve` in a child process, for the tests that run a Destination against a
//! publication `resourcesync build` makes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The server, killed when dropped.
pub(crate) struct Server(Child);

impl From<Child> for Server {
    /// A server a test started itself.
    fn from(child: Child) -> Server {
        Server(child)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves `publish` with a hub (`serve --hub`) on `addr` (`127.0.0.1:0`: a port of the
/// server's choosing), the hub sending requests to 127.0.0.1 only, relaying the topics
/// under `topics` (none: this server's) and keeping its subscriptions in `state`;
/// returns it with its URL and its hub's.
#[allow(dead_code)] // not every test binary that shares this file serves a hub
pub(crate) fn serve_hub(
    publish: &Path,
    state: &Path,
    addr: &str,
    topics: &[&str],
) -> (Server, String, String) {
    serve_hub_with(publish, state, addr, topics, &[])
}

/// [`serve_hub`] with more arguments.
#[allow(dead_code)] // not every test binary that shares this file serves a hub
pub(crate) fn serve_hub_with(
    publish: &Path,
    state: &Path,
    addr: &str,
    topics: &[&str],
    args: &[&str],
) -> (Server, String, String) {
    serve_hub_logged(publish, state, addr, topics, args, default_stderr())
}

/// [`serve_hub_with`], the hub's standard error (what its operator reads) to `stderr`.
#[allow(dead_code)] // not every test binary that shares this file serves a hub
pub(crate) fn serve_hub_logged(
    publish: &Path,
    state: &Path,
    addr: &str,
    topics: &[&str],
    args: &[&str],
    stderr: Stdio,
) -> (Server, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    command
        .args(["serve", "--addr", addr, "--json", "--hub"])
        .args(["--hub-allow", "127.0.0.1"])
        .args(args);
    for topic in topics {
        command.args(["--hub-topic", topic]);
    }
    command.arg("--hub-state").arg(state).arg(publish);
    let (server, first) = start_with(command, stderr);
    let line: serde_json::Value = serde_json::from_str(&first).unwrap();
    let url = line["url"].as_str().unwrap().to_owned();
    let hub = line["hub"].as_str().unwrap().to_owned();
    (server, url, hub)
}

/// Starts `command` (a `serve`), its output piped, and reads the start line.
#[allow(dead_code)] // called by this file's functions, and by a test binary of its own
pub(crate) fn start(command: Command) -> (Server, String) {
    start_with(command, default_stderr())
}

/// A server's standard error: none, or the test's with `DEBUG_FOLLOW` set.
fn default_stderr() -> Stdio {
    match std::env::var_os("DEBUG_FOLLOW") {
        Some(_) => Stdio::inherit(),
        None => Stdio::null(),
    }
}

/// [`start`], its standard error to `stderr`.
fn start_with(mut command: Command, stderr: Stdio) -> (Server, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (Server(child), first)
}

/// Serves `publish` on 127.0.0.1 at a port of the server's choosing, and returns it with
/// its base URL, named `localhost`: a Source on a name that resolves to loopback is
/// allowed its addresses (a name resolving there for another Source is refused).
/// `publish` may be an empty directory the build turns into its publication later: the
/// server resolves it per request.
#[allow(dead_code)] // not every test binary that shares this file serves without a hub
pub(crate) fn serve(publish: &Path) -> (Server, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .arg(publish);
    let (server, first) = start(command);
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .replace("127.0.0.1", "localhost");
    (server, base)
}
