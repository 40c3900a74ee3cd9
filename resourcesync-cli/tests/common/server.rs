//! `resourcesync serve` in a child process, for the tests that run a Destination against a
//! publication `resourcesync build` makes.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The server, killed when dropped.
pub(crate) struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Serves `publish` on 127.0.0.1 at a port of the server's choosing, and returns it with
/// its base URL, named `localhost`: a Source on a name that resolves to loopback is
/// allowed its addresses (a name resolving there for another Source is refused).
/// `publish` may be an empty directory the build turns into its publication later: the
/// server resolves it per request.
pub(crate) fn serve(publish: &Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .arg(publish)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let server = Server(child);
    let base = first
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .replace("127.0.0.1", "localhost");
    (server, base)
}
