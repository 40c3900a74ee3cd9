//! S3-compatible servers that are real software, started on 127.0.0.1 for a test and
//! stopped by their process id when dropped: `moto_server` (the Python `moto`, in the
//! project's venv: `.ci/run` installs it) and `s3s-fs` (a Rust server over a directory,
//! `cargo install --locked s3s-fs@0.14.1 --features binary`).
//!
//! What each lacks, as far as the tests meet it: moto keeps its objects in memory (a
//! restart loses them, so the tests that kill the server use s3s-fs) and costs a Python
//! call per request; s3s-fs ignores conditional GETs (`If-None-Match` on a GET), and
//! keeps metadata beside each object in a file of its own. Both honour `If-None-Match: *`
//! and `If-Match` on a PUT, and both keep user metadata.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::needs::{self, Missing};

/// Which server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `moto_server`, the Python mock's server.
    Moto,
    /// `s3s-fs`, a Rust server over a directory.
    S3sFs,
}

impl Kind {
    /// The name the tests show.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Moto => "moto_server",
            Kind::S3sFs => "s3s-fs",
        }
    }
}

/// The credentials every server here is started with.
pub const ACCESS_KEY: &str = "resourcesync";
/// See [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "resourcesync-secret";

/// How to start a server of `kind`, or what is missing (required on CI).
pub fn find(kind: Kind) -> Result<PathBuf, Missing> {
    match kind {
        Kind::Moto => {
            let python = crate::python::find("moto", &["moto_server"])?;
            Ok(python.with_file_name("moto_server"))
        }
        Kind::S3sFs => {
            needs::program(
                "s3s-fs",
                &["--version"],
                "s3s-fs (cargo install --locked s3s-fs@0.14.1 --features binary)",
            )?;
            Ok(PathBuf::from("s3s-fs"))
        }
    }
}

/// A running server with one bucket, stopped (killed, by its process id) when dropped.
#[derive(Debug)]
pub struct S3Server {
    /// Which.
    pub kind: Kind,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The bucket made at start.
    pub bucket: String,
    program: PathBuf,
    port: u16,
    /// s3s-fs's root (kept across a restart).
    root: Option<tempfile::TempDir>,
    child: Option<Child>,
}

impl S3Server {
    /// Starts `program` (from [`find`]) as a server of `kind` on a free port, with the
    /// bucket `bucket`.
    pub fn start(kind: Kind, program: &Path, bucket: &str) -> S3Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let root = (kind == Kind::S3sFs).then(|| tempfile::tempdir().unwrap());
        let mut server = S3Server {
            kind,
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: bucket.to_owned(),
            program: program.to_owned(),
            port,
            root,
            child: None,
        };
        if let Some(root) = &server.root {
            // s3s-fs: a bucket is a directory under its root.
            std::fs::create_dir(root.path().join(bucket)).unwrap();
        }
        server.restart();
        if kind == Kind::Moto {
            // moto checks no signature: an unsigned CreateBucket does.
            let status = request(
                port,
                &format!(
                    "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                ),
            );
            assert!(status.starts_with("HTTP/1.1 200"), "CreateBucket: {status}");
        }
        server
    }

    /// Starts the server again (after [`kill`](Self::kill)) on the same port, with what
    /// it kept (s3s-fs keeps its directory; moto starts empty).
    pub fn restart(&mut self) {
        let mut command = Command::new(&self.program);
        match self.kind {
            Kind::Moto => command.args(["-H", "127.0.0.1", "-p", &self.port.to_string()]),
            Kind::S3sFs => command
                .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
                .args(["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY])
                .arg(self.root.as_ref().unwrap().path()),
        };
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", self.program.display()));
        self.child = Some(child);
        // Up once it answers (bounded: 20 s, for a Python start on a busy machine).
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{} did not start",
                self.kind.name()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Lets anyone GET the bucket's objects (a bucket policy), as the bucket behind a
    /// static site is: moto only (it checks no signature, so an unsigned request sets it;
    /// s3s-fs has no policies and answers only signed requests).
    pub fn allow_public_read(&self) {
        assert_eq!(self.kind, Kind::Moto, "a public bucket is moto's");
        let bucket = &self.bucket;
        let policy = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}"#
        );
        let status = request(
            self.port,
            &format!(
                "PUT /{bucket}?policy HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{policy}",
                self.port,
                policy.len()
            ),
        );
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "PutBucketPolicy: {status}"
        );
    }

    /// Puts a folder marker at `KEY/`: the empty object whose key ends with `/` that the
    /// S3 console's "Create folder" (and other tools) make. No `object_store` call can make
    /// one (its paths drop a trailing `/`, and list the marker as the empty object `KEY`):
    /// a request with no true signature, which moto takes (s3s-fs checks signatures).
    pub fn put_folder_marker(&self, key: &str) {
        let status = self.folder_marker("PUT", key);
        assert!(
            status.starts_with("HTTP/1.1 200"),
            "PutObject {key}/: {status}"
        );
    }

    /// Deletes the folder marker at `KEY/` ([`put_folder_marker`](Self::put_folder_marker);
    /// a delete of `KEY` through `object_store` is of another object).
    pub fn delete_folder_marker(&self, key: &str) {
        let status = self.folder_marker("DELETE", key);
        assert!(
            status.starts_with("HTTP/1.1 204"),
            "DeleteObject {key}/: {status}"
        );
    }

    /// `method` of the object `KEY/`, with an `Authorization` that names the access key
    /// and signs nothing (moto checks no signature, but takes an anonymous DELETE for a
    /// stranger's); the status line.
    fn folder_marker(&self, method: &str, key: &str) -> String {
        assert_eq!(self.kind, Kind::Moto, "an unsigned request is moto's");
        request(
            self.port,
            &format!(
                "{method} /{}/{key}/ HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                self.bucket, self.port
            ),
        )
    }

    /// s3s-fs's directory, where the object `KEY` of the bucket is the file
    /// `BUCKET/KEY`; `None` for moto.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_ref().map(tempfile::TempDir::path)
    }

    /// The settings a client of this server needs, as `object_store` keys.
    pub fn options(&self) -> Vec<(String, String)> {
        [
            ("aws_endpoint", self.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", ACCESS_KEY),
            ("aws_secret_access_key", SECRET_KEY),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    /// The same settings as `--store-option KEY=VALUE` arguments.
    pub fn store_args(&self) -> Vec<String> {
        self.options()
            .into_iter()
            .flat_map(|(k, v)| ["--store-option".to_owned(), format!("{k}={v}")])
            .collect()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `text` to the server and returns its status line.
fn request(port: u16, text: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(text.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_owned()
}
