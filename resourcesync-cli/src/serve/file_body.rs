//! The body of a response that sends an open file, or a range of it, to the length its
//! `Content-Length` promised.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::body::Bytes;
use hyper::body::Frame;
use tokio::io::{AsyncRead, Take};
use tokio_util::bytes::BytesMut;
use tokio_util::io::poll_read_buf;

use super::connections::CutShort;

/// A file read on the task that polls it, as nginx reads (without `aio`): a read of a
/// chunk from the page cache takes tens of microseconds, less than `tokio::fs`'s hop to
/// the blocking pool and back for every chunk, and its copy between two buffers. A file
/// on a disk that must be waited for holds up this worker's other connections for the
/// read's time; the other workers go on.
pub(super) struct OnWorker(pub(super) std::fs::File);

impl AsyncRead for OnWorker {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let file = &mut self.get_mut().0;
        let n = loop {
            match io::Read::read(file, buf.initialize_unfilled()) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// `len` bytes of a file read from where it stands, at most `chunk` at a time.
///
/// A file that grows meanwhile is sent to `len` bytes, no further. One that shrinks, or
/// fails to read, ends before `len`: the response can no longer be what its
/// `Content-Length` said, and the connection must close, without pretending the
/// response whole and without another byte put in for those missing. Ending the body
/// early does not do it: a gzipped body is then finished by the compression layer, a
/// complete and valid 200 of part of the file. Ending it with an error closes the
/// connection, but hyper then drops what it holds unwritten, up to a few chunks of the
/// bytes that were still there (a 16 MiB file truncated while sent arrived 256 KiB
/// short, when its body ended early). So with a [`CutShort`] from the
/// connection, the body stops instead, and the connection closes once everything sent
/// before is written out; without one (the router under a server of the caller's) it
/// ends with the error.
pub(super) struct FileBody<R> {
    file: Take<R>,
    buf: BytesMut,
    chunk: usize,
    /// Bytes still owed of `len`.
    left: u64,
    cut_short: Option<CutShort>,
    /// The file ended early and the connection has been told.
    stopped: bool,
    /// The file's path in the publication, for the report of a read that fails.
    name: std::path::PathBuf,
    /// Where that report goes.
    report: super::Reporter,
}

impl<R: AsyncRead + Unpin> FileBody<R> {
    /// The body of `file` (at the offset it stands at), `len` bytes long; `name` is its
    /// path in the publication, which a failed read is reported with, to `report`.
    pub(super) fn new(
        file: R,
        len: u64,
        chunk: usize,
        cut_short: Option<CutShort>,
        name: std::path::PathBuf,
        report: super::Reporter,
    ) -> FileBody<R> {
        FileBody {
            file: tokio::io::AsyncReadExt::take(file, len),
            buf: BytesMut::new(),
            chunk,
            left: len,
            cut_short,
            stopped: false,
            name,
            report,
        }
    }
}

impl<R: AsyncRead + Unpin> hyper::body::Body for FileBody<R> {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if this.left == 0 {
            return Poll::Ready(None);
        }
        if this.stopped {
            // The connection closes once it has written what it holds; no waker is
            // needed, as nothing more will come.
            return Poll::Pending;
        }
        if this.buf.capacity() == 0 {
            this.buf.reserve(this.chunk);
        }
        let read = ready!(poll_read_buf(Pin::new(&mut this.file), cx, &mut this.buf));
        let error = match read {
            Ok(n) if n > 0 => {
                this.left = this.left.saturating_sub(n as u64);
                return Poll::Ready(Some(Ok(Frame::data(this.buf.split().freeze()))));
            }
            Ok(_) => io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file shrank while it was sent",
            ),
            // The status line went out before the first read: a read error is the
            // server's fault, and is reported as its 500s are.
            Err(e) => {
                (this.report)(&super::ReadFailure {
                    path: this.name.clone(),
                    error: io::Error::new(e.kind(), e.to_string()),
                    sending: true,
                });
                e
            }
        };
        match &this.cut_short {
            Some(cut_short) => {
                this.stopped = true;
                cut_short.close_once_written();
                Poll::Pending
            }
            None => Poll::Ready(Some(Err(error))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body as _;

    /// A reporter that drops what it is given.
    fn quiet() -> super::super::Reporter {
        std::sync::Arc::new(|_| {})
    }

    /// A file whose reads fail.
    struct Failing;

    impl AsyncRead for Failing {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Poll::Ready(Err(io::Error::other("the disk is gone")))
        }
    }

    /// A read that fails while the body is sent is handed to the reporter, with the
    /// path, and nothing is printed (the library's caller decides).
    #[tokio::test]
    async fn a_read_that_fails_while_sent_is_reported_not_printed() {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let keep = std::sync::Arc::clone(&seen);
        let report: super::super::Reporter = std::sync::Arc::new(move |failure| {
            keep.lock().unwrap().push(failure.to_string());
        });
        let body = FileBody::new(Failing, 10, 16, None, "a\nb.txt".into(), report);
        assert_eq!(drain(body).await, (Vec::new(), true));
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            [r#"cannot read /"a\nb.txt" while sending it: the disk is gone"#]
        );
    }

    /// The frames of `body` until it ends: the bytes, and whether it ended with an error.
    async fn drain<R: AsyncRead + Unpin>(mut body: FileBody<R>) -> (Vec<u8>, bool) {
        let mut received = Vec::new();
        loop {
            let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
            match frame {
                Some(Ok(frame)) => received.extend_from_slice(&frame.into_data().unwrap()),
                Some(Err(_)) => return (received, true),
                None => return (received, false),
            }
        }
    }

    #[tokio::test]
    async fn a_longer_file_is_sent_to_the_length_and_a_shorter_one_ends_in_an_error() {
        let bytes: Vec<u8> = (1..=100).collect();
        let body = FileBody::new(&bytes[..], 60, 16, None, "t".into(), quiet());
        assert!(!body.is_end_stream());
        assert_eq!(drain(body).await, (bytes[..60].to_vec(), false));
        let body = FileBody::new(&bytes[..], 150, 16, None, "t".into(), quiet());
        assert_eq!(drain(body).await, (bytes.clone(), true));
        assert!(FileBody::new(&bytes[..], 0, 16, None, "t".into(), quiet()).is_end_stream());
    }
}
