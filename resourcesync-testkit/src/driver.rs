//! A Destination driver run as a child process, and the helpers its scenarios share.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::source::Source;

/// A program that syncs a directory from a Source: `resourcesync sync` or `sync-ureq`,
/// given the options, the Source's URL and the directory as arguments.
#[derive(Clone)]
pub struct Driver {
    name: &'static str,
    program: PathBuf,
    prefix: Vec<OsString>,
}

impl Driver {
    /// The name given to [`Driver::new`].
    pub fn name(&self) -> &str {
        self.name
    }

    /// `program` with `prefix` before the arguments of each run (`["sync"]`), named
    /// `name` in assertion messages.
    pub fn new(name: &'static str, program: impl Into<PathBuf>, prefix: &[&str]) -> Driver {
        Driver {
            name,
            program: program.into(),
            prefix: prefix.iter().map(OsString::from).collect(),
        }
    }

    /// The command with its prefix, to add arguments to.
    pub fn command(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.prefix);
        command
    }

    /// Runs the driver with `args` and waits for it.
    pub fn run(&self, args: &[&str]) -> Output {
        self.command().args(args).output().expect("run the driver")
    }

    /// [`run`](Self::run), the process killed if it has not ended within `limit`: `None`
    /// then. For a test whose failure would be a run that never ends.
    pub fn run_within(&self, args: &[&str], limit: std::time::Duration) -> Option<Output> {
        use std::io::Read;
        let mut child = (self.command().args(args))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run the driver");
        // Read as the process writes, so that a full pipe never holds it up.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the driver") {
                break status;
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                // Its readers are left to end with the pipes (a process it started
                // could hold them open).
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let (stdout, stderr) = (stdout.join(), stderr.join());
        Some(Output {
            status,
            stdout: stdout.unwrap_or_default(),
            stderr: stderr.unwrap_or_default(),
        })
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// A process's status, standard output and standard error, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `n` small resources under `r/` and one page, then ten seconds pass.
pub fn populate(s: &mut Source, n: usize) {
    for i in 0..n {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.put("docs/index.html", b"<html></html>");
    s.tick(10);
}
