//! A large body over plain HTTP/1.1, read on a blocking thread.
//!
//! Why not through hyper, as every other response: measured on a 2-core machine (an AMD
//! EPYC), 200 files of 1 MiB from nginx on 127.0.0.1, both cores busy (the server and
//! the client), a body read by blocking `recv` calls into one buffer a connection
//! reuses, hashed and written a MiB at a time, took some 10 % less CPU than the same work
//! on hyper's connection driven by tokio (its reads into fresh buffers, its wake-ups
//! between the connection's task and the body's), and the run's time with it. Throwaway
//! clients doing the same work (sha-256, a temporary file, a rename), in alternated
//! rounds against wget2: hyper on tokio 0.95-0.98x wget2's throughput, 1.02-1.07x on
//! current-thread runtimes, one a core; blocking reads with a hop to tokio's blocking
//! pool a request 1.07-1.09x, on threads of their own 1.13-1.18x; ureq 0.85x (session
//! 42). `sync` with this path: 1.08x, against 0.99x before (benches/README.md, "Session
//! 44"). So a body the worker keeps, over plain HTTP without a proxy, listed at
//! [`LARGE`] bytes or more, is read here; everything else (documents, small or
//! unlisted bodies, `https`, a proxy's URLs, a gated run's pool, bodies held in memory)
//! stays with hyper, where a hop to a blocking thread would cost a small body more than
//! it saves. A worker keeps this connection beside its hyper ones: a run may hold two
//! connections to a Source a worker.
//!
//! What is written by hand is the least of HTTP/1.1 a GET's response needs: the head is
//! parsed by httparse (hyper's own parser), the body framed as RFC 9112 section 6.3 says
//! (`Transfer-Encoding` with `chunked` last, else `Content-Length`, every copy of it the
//! same, else the connection's end), 1xx responses skipped, and a connection kept for
//! the next request only when the response said where it ended and did not ask for
//! `Connection: close`.
//!
//! The thread stops at the request's cancel (the client's timeout or a stop): dropping the
//! request's future shuts the socket down, which ends a `recv` at once, and the thread
//! checks the cancel before each read and each write to the body's file.
//! [`Blocking::settled`] waits until no such thread runs, so that a run's end waits for
//! them as it waits for its tasks.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::header::{CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::uri::Authority;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri};
use resourcesync_client::RequestId;
use resourcesync_model::Measure;
use tokio::sync::{Notify, mpsc};

use super::exchange::{Keep, Msg};
use super::http_client::{Http, Kept};

/// The least a body's listed length is for it to be read here: a hop to a blocking thread
/// and back (two wake-ups) costs a small body more than a blocking read saves.
pub(crate) const LARGE: u64 = 256 * 1024;

/// The buffer a connection reads a body into, reused from one body to the next: a body
/// is hashed and written a buffer at a time.
const BUFFER: usize = 1024 * 1024;

/// The most bytes of a response's head (its status line and header fields).
const MOST_HEAD: usize = 64 * 1024;

/// The most header fields of a response's head.
const MOST_FIELDS: usize = 128;

/// The most 1xx responses before a request's own.
const MOST_INFORMATIONAL: usize = 16;

/// The most bytes of a chunked body's trailer, and of its fields (hyper's limits).
const MOST_TRAILER: usize = 16 * 1024;
const MOST_TRAILER_FIELDS: usize = 100;

/// How long a `recv` waits before the thread looks at its cancel again: a stalled
/// Source is the client's to time out (its timeout cancels the request).
const TICK: Duration = Duration::from_millis(250);

/// How often, at the least, a body's progress is told while bytes arrive: the client's
/// timeout starts again with each, however slowly the buffer fills.
const TELL: Duration = Duration::from_secs(1);

/// A worker's connection for large bodies, with what it read past the last response
/// (nothing, on a connection kept) and its body buffer.
#[derive(Debug)]
pub(crate) struct Plain {
    authority: Authority,
    stream: TcpStream,
    /// What was read of the next response's head (and, after it, of its body).
    head: Vec<u8>,
    /// The body buffer, [`BUFFER`] bytes once a body needed it.
    body: Vec<u8>,
}

/// The blocking threads at work, counted so that a run's end can wait for them.
#[derive(Debug, Default)]
pub(crate) struct Blocking {
    running: AtomicUsize,
    idle: Notify,
}

impl Blocking {
    /// Waits until no body is read on a blocking thread.
    pub(crate) async fn settled(&self) {
        loop {
            let idle = self.idle.notified();
            let mut idle = std::pin::pin!(idle);
            idle.as_mut().enable();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// Counts a blocking thread at work until dropped.
struct Running(Arc<Blocking>);

impl Running {
    fn new(blocking: &Arc<Blocking>) -> Running {
        blocking.running.fetch_add(1, Ordering::AcqRel);
        Running(blocking.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Cancels the blocking thread's request when the future awaiting it is dropped (the
/// client cancelled the request, or the run's workers were stopped) before it is done:
/// the socket shut down ends the thread's `recv` at once.
struct Abandon {
    cancel: Arc<AtomicBool>,
    socket: Option<TcpStream>,
    done: bool,
}

impl Drop for Abandon {
    fn drop(&mut self) {
        if !self.done {
            self.cancel.store(true, Ordering::Release);
            if let Some(socket) = &self.socket {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// How a response ends (RFC 9112, section 6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    /// `Content-Length` bytes.
    Length(u64),
    /// Chunks, to the last (of size 0) and its trailer.
    Chunked,
    /// The connection's end.
    Close,
}

/// What one attempt on a connection came to.
enum Outcome {
    /// The response was answered (as messages, a failure among them); the connection
    /// is kept for the next request when it may be.
    Done { keep: bool },
    /// Not a byte of a response came on a connection that had served before the server
    /// closed it (its keep-alive ended as the request went out): a GET, idempotent, is
    /// sent again on a new connection (RFC 9112 section 9.3.1), once.
    Unanswered,
}

/// `uri`'s request on a connection of the worker's (`kept`'s, or a new one it keeps for
/// the next), its body kept as `keep` says and its messages sent on `tx`, as
/// [`exchange`](super::exchange::exchange) does through hyper.
pub(super) async fn exchange(
    http: &Http,
    kept: &mut Kept,
    uri: &Uri,
    id: RequestId,
    keep: Keep,
    tx: &mpsc::Sender<Msg>,
) {
    let Some((authority, request)) = http.plain_request(uri) else {
        let _ = (tx.send(Msg::Failed(id, format!("not a plain-HTTP URL: {uri}")))).await;
        return;
    };
    loop {
        // The worker's connection to the authority, else a new one (after a kept one
        // found closed, a new one: the kept one was taken).
        let (plain, reused) = match kept.plain.take() {
            Some(plain) if plain.authority == authority && idle(&plain.stream) => (plain, true),
            _ => match http.connect_plain(uri).await {
                Ok(stream) => {
                    let plain = Plain {
                        authority: authority.clone(),
                        stream,
                        head: Vec::new(),
                        body: Vec::new(),
                    };
                    (plain, false)
                }
                Err(reason) => {
                    let _ = tx.send(Msg::Failed(id, reason)).await;
                    return;
                }
            },
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let mut abandon = Abandon {
            cancel: cancel.clone(),
            socket: plain.stream.try_clone().ok(),
            done: false,
        };
        let running = Running::new(http.blocking());
        let (keep, sender, request) = (keep.clone(), tx.clone(), request.clone());
        let thread = tokio::task::spawn_blocking(move || {
            let _running = running;
            let mut plain = plain;
            let outcome = receive(&mut plain, &request, reused, id, &keep, &sender, &cancel);
            (plain, outcome)
        });
        let (plain, outcome) = match thread.await {
            Ok(done) => done,
            // A panic of the thread's is the request's worker's, caught and said there.
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(_) => return,
            },
        };
        abandon.done = true;
        match outcome {
            Outcome::Done { keep: true } => {
                kept.plain = Some(plain);
                return;
            }
            Outcome::Done { keep: false } => return,
            Outcome::Unanswered if reused => continue,
            Outcome::Unanswered => {
                let reason = "request failed: the connection closed before a response";
                let _ = tx.send(Msg::Failed(id, reason.to_owned())).await;
                return;
            }
        }
    }
}

/// Whether a kept connection is as it was left: open, nothing on it. A server that ended
/// it (its keep-alive over) or sent something unasked (a `408`, bytes past a body) has
/// it dropped before a request goes out on it, as hyper's idle connection reads them
/// and closes.
fn idle(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let clean = matches!(
        stream.peek(&mut [0u8; 1]),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    );
    stream.set_nonblocking(false).is_ok() && clean
}

/// Sends `request` on `plain` and reads its response, on a blocking thread.
fn receive(
    plain: &mut Plain,
    request: &[u8],
    reused: bool,
    id: RequestId,
    keep: &Keep,
    tx: &mpsc::Sender<Msg>,
    cancel: &AtomicBool,
) -> Outcome {
    let failed = |reason: String| {
        let _ = tx.blocking_send(Msg::Failed(id, reason));
        Outcome::Done { keep: false }
    };
    if let Err(e) = plain.stream.set_read_timeout(Some(TICK)) {
        return failed(format!("request failed: {e}"));
    }
    plain.head.clear();
    if let Err(e) = plain.stream.write_all(request) {
        return match reused {
            true => Outcome::Unanswered,
            false => failed(format!("request failed: {e}")),
        };
    }
    // The head, past any 1xx response (a few: each is a head to read).
    let mut informational = 0;
    let (status, headers, framing, mut keep_alive, length) = loop {
        let read = match read_head(plain, cancel) {
            Ok(read) => read,
            Err(Head::Cancelled) => return Outcome::Done { keep: false },
            Err(Head::Unanswered) if reused && informational == 0 => return Outcome::Unanswered,
            Err(Head::Unanswered) => {
                return failed("request failed: the connection closed before a response".into());
            }
            Err(Head::Failed(reason)) => return failed(format!("request failed: {reason}")),
        };
        if read.0 == StatusCode::SWITCHING_PROTOCOLS {
            return failed("request failed: the server switched protocols".into());
        }
        if read.0.is_informational() {
            informational += 1;
            if informational > MOST_INFORMATIONAL {
                return failed(format!(
                    "request failed: over {MOST_INFORMATIONAL} informational (1xx) responses"
                ));
            }
            plain.head.drain(..read.4);
            continue;
        }
        break read;
    };
    // What follows the head in the buffer is the body's.
    plain.head.drain(..length);
    // The head at once: the client may refuse the response by it (a status, a coding)
    // before a MiB of its body is read.
    if tx.blocking_send(Msg::Head(id, status, headers)).is_err() || !status.is_success() {
        // As through hyper: a failure's body left unread, with its connection.
        return Outcome::Done { keep: false };
    }
    let mut sink = Sink {
        id,
        keep,
        tx,
        measure: Measure::new(keep.algorithms),
        file: None,
        cancel,
        told: Instant::now(),
        untold: 0,
    };
    if plain.body.len() < BUFFER {
        plain.body.resize(BUFFER, 0);
    }
    let read = match framing {
        Framing::Chunked => read_chunked(plain, &mut sink, cancel),
        Framing::Length(_) | Framing::Close => read_plain(plain, framing, &mut sink, cancel),
    };
    match read {
        Ok(Ended::Whole) => {}
        Ok(Ended::Past) => keep_alive = false,
        Err(Stop::Cancelled) => return Outcome::Done { keep: false },
        Err(Stop::Failed(reason)) => return failed(reason),
    }
    match sink.finish() {
        Ok(()) => Outcome::Done {
            // A body that ended where it said, and nothing after it.
            keep: keep_alive && framing != Framing::Close && plain.head.is_empty(),
        },
        Err(Stop::Cancelled) => Outcome::Done { keep: false },
        Err(Stop::Failed(reason)) => failed(reason),
    }
}

/// Why a head was not read.
enum Head {
    Cancelled,
    /// The connection ended before a byte of the response.
    Unanswered,
    Failed(String),
}

/// A response head: its status, fields, framing, whether the connection may be kept, and
/// its length in `plain.head`.
type Parsed = (StatusCode, HeaderMap, Framing, bool, usize);

/// Reads the next response head into `plain.head` and parses it.
fn read_head(plain: &mut Plain, cancel: &AtomicBool) -> Result<Parsed, Head> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if !plain.head.is_empty() {
            let mut fields = [httparse::EMPTY_HEADER; MOST_FIELDS];
            let mut response = httparse::Response::new(&mut fields);
            match response.parse(&plain.head) {
                Ok(httparse::Status::Complete(length)) => {
                    return parsed(&response, length).map_err(Head::Failed);
                }
                Ok(httparse::Status::Partial) if plain.head.len() > MOST_HEAD => {
                    return Err(Head::Failed(format!(
                        "the response's head is over {MOST_HEAD} bytes"
                    )));
                }
                Ok(httparse::Status::Partial) => {}
                Err(httparse::Error::TooManyHeaders) => {
                    return Err(Head::Failed(format!(
                        "the response's head has over {MOST_FIELDS} fields"
                    )));
                }
                Err(e) => return Err(Head::Failed(format!("invalid HTTP response: {e}"))),
            }
        }
        match receive_some(&mut plain.stream, &mut chunk, cancel) {
            Ok(0) if plain.head.is_empty() => return Err(Head::Unanswered),
            Ok(0) => {
                return Err(Head::Failed(
                    "the connection closed within the response's head".into(),
                ));
            }
            Ok(n) => plain.head.extend_from_slice(&chunk[..n]),
            Err(Stop::Cancelled) => return Err(Head::Cancelled),
            // Reset before a byte of the response: as closed.
            Err(Stop::Failed(_)) if plain.head.is_empty() => return Err(Head::Unanswered),
            Err(Stop::Failed(e)) => return Err(Head::Failed(e)),
        }
    }
}

/// The head `response` parsed, of `length` bytes.
fn parsed(response: &httparse::Response<'_, '_>, length: usize) -> Result<Parsed, String> {
    let code = response.code.unwrap_or(0);
    let status =
        StatusCode::from_u16(code).map_err(|_| format!("invalid HTTP status code {code}"))?;
    let mut headers = HeaderMap::with_capacity(response.headers.len());
    for field in response.headers.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| format!("invalid header field name {:?}", field.name))?;
        let value = HeaderValue::from_bytes(field.value)
            .map_err(|_| format!("invalid value of header field {}", field.name))?;
        headers.append(name, value);
    }
    let tokens = |name: HeaderName| {
        (headers.get_all(name).iter())
            .flat_map(|v| v.to_str().unwrap_or("").split(','))
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
    };
    let codings = tokens(TRANSFER_ENCODING);
    let coded = headers.contains_key(TRANSFER_ENCODING);
    let http10 = response.version != Some(1);
    if coded && http10 {
        // RFC 9112 section 6.1: faulty framing.
        return Err("an HTTP/1.0 response with a Transfer-Encoding".into());
    }
    let no_body = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let framing = if no_body {
        Framing::Length(0)
    } else if coded {
        // Chunked last, or the body ends with the connection.
        match codings.last().map(String::as_str) {
            Some("chunked") => Framing::Chunked,
            _ => Framing::Close,
        }
    } else if headers.contains_key(CONTENT_LENGTH) {
        // Every copy of it the same number (RFC 9112 section 6.3, item 5).
        let mut lengths = (headers.get_all(CONTENT_LENGTH).iter())
            .flat_map(|v| v.to_str().unwrap_or("x").split(','))
            .map(|t| t.trim())
            .map(|t| {
                // Digits only (`u64`'s parser takes a `+`).
                (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| t.parse::<u64>().ok())
                    .flatten()
            });
        let first = lengths.next().flatten();
        match first {
            Some(n) if lengths.all(|l| l == Some(n)) => Framing::Length(n),
            _ => return Err("the response's Content-Length is invalid".into()),
        }
    } else {
        Framing::Close
    };
    let close = tokens(CONNECTION).iter().any(|t| t == "close");
    // HTTP/1.0 keeps a connection only when asked; this client does not ask.
    let keep = !http10 && !close && (!coded || codings == ["chunked"]);
    Ok((status, headers, framing, keep, length))
}

/// Why a body's reading stopped short.
enum Stop {
    Cancelled,
    Failed(String),
}

/// A failure to read a body's bytes, said as such.
fn broke_off(stop: Stop) -> Stop {
    match stop {
        Stop::Failed(e) => Stop::Failed(format!("the body broke off: {e}")),
        cancelled => cancelled,
    }
}

/// How a body's reading ended.
enum Ended {
    /// At its end.
    Whole,
    /// Past the most bytes it may have: the client fails it by its length.
    Past,
}

/// One `recv` into `buffer`, waiting while the request is not cancelled.
fn receive_some(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    cancel: &AtomicBool,
) -> Result<usize, Stop> {
    loop {
        if cancel.load(Ordering::Acquire) {
            return Err(Stop::Cancelled);
        }
        match stream.read(buffer) {
            // The end a cancel's shutdown made is no end of the response's.
            Ok(0) if cancel.load(Ordering::Acquire) => return Err(Stop::Cancelled),
            Ok(n) => return Ok(n),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) if cancel.load(Ordering::Acquire) => return Err(Stop::Cancelled),
            Err(e) => return Err(Stop::Failed(e.to_string())),
        }
    }
}

/// A body framed by its length or by the connection's end, read straight into the
/// connection's buffer.
fn read_plain(
    plain: &mut Plain,
    framing: Framing,
    sink: &mut Sink<'_>,
    cancel: &AtomicBool,
) -> Result<Ended, Stop> {
    let mut left = match framing {
        Framing::Length(n) => n,
        _ => u64::MAX,
    };
    // What came with the head first.
    let early = plain
        .head
        .len()
        .min(usize::try_from(left).unwrap_or(usize::MAX));
    let mut filled = early;
    plain.body[..early].copy_from_slice(&plain.head[..early]);
    plain.head.drain(..early);
    left -= early as u64;
    loop {
        if filled == plain.body.len() || (filled > 0 && sink.told.elapsed() >= TELL) {
            if sink.take(&plain.body[..filled])? {
                return Ok(Ended::Past);
            }
            filled = 0;
        }
        if left == 0 {
            break;
        }
        let room = (plain.body.len() - filled).min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = receive_some(
            &mut plain.stream,
            &mut plain.body[filled..filled + room],
            cancel,
        )
        .map_err(broke_off)?;
        if n == 0 {
            if framing == Framing::Close {
                break;
            }
            return Err(Stop::Failed(format!(
                "the body broke off: the connection closed {left} bytes before its end"
            )));
        }
        filled += n;
        left -= n as u64;
    }
    if sink.take(&plain.body[..filled])? {
        return Ok(Ended::Past);
    }
    Ok(Ended::Whole)
}

/// A chunked body: its chunks' data gathered into the connection's buffer, its trailer
/// skipped.
fn read_chunked(
    plain: &mut Plain,
    sink: &mut Sink<'_>,
    cancel: &AtomicBool,
) -> Result<Ended, Stop> {
    let mut filled = 0;
    // Raw bytes of the chunked stream not yet taken, and the data left of the chunk.
    let mut raw = std::mem::take(&mut plain.head);
    let mut at = 0;
    let mut chunk_left: u64 = 0;
    // A chunk's data ended; its CRLF is next.
    let mut crlf = false;
    let mut more = vec![0u8; 64 * 1024];
    let result = 'read: loop {
        // Take what the raw bytes hold.
        loop {
            if crlf {
                if raw.len() - at < 2 {
                    break;
                }
                if &raw[at..at + 2] != b"\r\n" {
                    break 'read Err(Stop::Failed(
                        "the body broke off: a chunk's data ends without CRLF".into(),
                    ));
                }
                at += 2;
                crlf = false;
                continue;
            }
            if chunk_left > 0 {
                let n = (raw.len() - at)
                    .min(usize::try_from(chunk_left).unwrap_or(usize::MAX))
                    .min(plain.body.len() - filled);
                if n == 0 && filled < plain.body.len() {
                    break;
                }
                plain.body[filled..filled + n].copy_from_slice(&raw[at..at + n]);
                filled += n;
                at += n;
                chunk_left -= n as u64;
                if filled == plain.body.len() || (filled > 0 && sink.told.elapsed() >= TELL) {
                    match sink.take(&plain.body[..filled]) {
                        Ok(true) => break 'read Ok(Ended::Past),
                        Ok(false) => filled = 0,
                        Err(stop) => break 'read Err(stop),
                    }
                }
                crlf = chunk_left == 0;
                continue;
            }
            // A size has a digit first (httparse takes an empty line for a size 0).
            if raw.get(at).is_some_and(|b| !b.is_ascii_hexdigit()) {
                break 'read Err(Stop::Failed(
                    "the body broke off: a chunk's size is invalid".into(),
                ));
            }
            match httparse::parse_chunk_size(&raw[at..]) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    at += used;
                    // The trailer: fields to an empty line.
                    match skip_trailer(&mut raw, &mut at, &mut plain.stream, &mut more, cancel) {
                        Ok(()) => {}
                        Err(stop) => break 'read Err(stop),
                    }
                    break 'read Ok(Ended::Whole);
                }
                Ok(httparse::Status::Complete((used, size))) => {
                    at += used;
                    chunk_left = size;
                }
                Ok(httparse::Status::Partial) if raw.len() - at > 4096 => {
                    break 'read Err(Stop::Failed(
                        "the body broke off: a chunk's size line is over 4096 bytes".into(),
                    ));
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => {
                    break 'read Err(Stop::Failed(
                        "the body broke off: a chunk's size is invalid".into(),
                    ));
                }
            }
        }
        // More raw bytes, after what is left.
        raw.drain(..at);
        at = 0;
        match receive_some(&mut plain.stream, &mut more, cancel).map_err(broke_off) {
            Ok(0) => {
                break Err(Stop::Failed(
                    "the body broke off: the connection closed before the last chunk".into(),
                ));
            }
            Ok(n) => raw.extend_from_slice(&more[..n]),
            Err(stop) => break Err(stop),
        }
    };
    // What follows the body stays the connection's.
    raw.drain(..at);
    plain.head = raw;
    match result {
        Ok(Ended::Whole) => match sink.take(&plain.body[..filled]) {
            Ok(true) => Ok(Ended::Past),
            Ok(false) => Ok(Ended::Whole),
            Err(stop) => Err(stop),
        },
        other => other,
    }
}

/// Sends `message` to the run's task, whose end is the run's (the request stops).
fn send(tx: &mpsc::Sender<Msg>, message: Msg) -> Result<(), Stop> {
    tx.blocking_send(message).map_err(|_| Stop::Cancelled)
}

/// Skips a chunked body's trailer, from `raw[*at..]` (reading more as needed) to its
/// empty line.
fn skip_trailer(
    raw: &mut Vec<u8>,
    at: &mut usize,
    stream: &mut TcpStream,
    more: &mut [u8],
    cancel: &AtomicBool,
) -> Result<(), Stop> {
    // Bytes and fields of the trailer so far: both bounded, as hyper bounds them.
    let (mut bytes, mut fields) = (0, 0);
    loop {
        if let Some(end) = raw[*at..].windows(2).position(|w| w == b"\r\n") {
            *at += end + 2;
            bytes += end + 2;
            if end == 0 {
                return Ok(());
            }
            fields += 1;
            if fields > MOST_TRAILER_FIELDS || bytes > MOST_TRAILER {
                return Err(Stop::Failed(format!(
                    "the body's trailer is over {MOST_TRAILER} bytes or {MOST_TRAILER_FIELDS} fields"
                )));
            }
            continue;
        }
        if bytes + (raw.len() - *at) > MOST_TRAILER {
            return Err(Stop::Failed(format!(
                "the body's trailer is over {MOST_TRAILER} bytes or {MOST_TRAILER_FIELDS} fields"
            )));
        }
        // What was skipped goes before more comes.
        raw.drain(..*at);
        *at = 0;
        match receive_some(stream, more, cancel).map_err(broke_off)? {
            0 => {
                return Err(Stop::Failed(
                    "the body broke off: the connection closed within its trailer".into(),
                ));
            }
            n => raw.extend_from_slice(&more[..n]),
        }
    }
}

/// Where a body's bytes go: hashed, written to its temporary file, and told to the run's
/// task (its progress, then its digests).
struct Sink<'a> {
    id: RequestId,
    keep: &'a Keep,
    tx: &'a mpsc::Sender<Msg>,
    measure: Measure,
    file: Option<std::fs::File>,
    cancel: &'a AtomicBool,
    told: Instant,
    untold: u64,
}

impl Sink<'_> {
    /// Takes `bytes`, the body's next; `true` once the body is past its limit.
    fn take(&mut self, bytes: &[u8]) -> Result<bool, Stop> {
        self.measure.update(bytes);
        self.untold += bytes.len() as u64;
        let past = (self.keep.limit).is_some_and(|limit| self.measure.length() > limit);
        if bytes.is_empty() {
            return Ok(past);
        }
        self.write(bytes)?;
        if past || self.told.elapsed() >= TELL || bytes.len() == BUFFER {
            // Not the last bytes: told as progress (the last go with the digests).
            self.tell()?;
        }
        Ok(past)
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Stop> {
        if self.cancel.load(Ordering::Acquire) {
            return Err(Stop::Cancelled);
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => match self.keep.bodies.create(self.id) {
                Ok(file) => self.file.insert(file),
                Err(e) => return Err(Stop::Failed(e.to_string())),
            },
        };
        file.write_all(bytes)
            .map_err(|e| Stop::Failed(self.keep.bodies.error(self.id, &e)))
    }

    /// Tells the bytes not yet told.
    fn tell(&mut self) -> Result<(), Stop> {
        let untold = std::mem::take(&mut self.untold);
        self.told = Instant::now();
        send(self.tx, Msg::Progress(self.id, untold))
    }

    /// The body's end: its digests.
    fn finish(mut self) -> Result<(), Stop> {
        if self.file.is_none() {
            // An empty body has its (empty) file too.
            self.write(&[])?;
        }
        send(self.tx, Msg::Digests(self.id, self.measure.finish()))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use resourcesync_model::Algorithms;
    use tokio::sync::mpsc;

    use super::{Kept, LARGE, Msg, exchange};
    use crate::asynchronous::exchange::Keep;
    use crate::asynchronous::http_client::Http;
    use crate::directory::Bodies;
    use crate::directory::test_support::first_request;

    /// What the server does for one request: the bytes it answers, then whether it
    /// closes the connection, or stalls on it.
    #[derive(Clone)]
    enum Answer {
        Send(Vec<u8>),
        SendAndClose(Vec<u8>),
        SendAndStall(Vec<u8>),
        /// In pieces of a few bytes, each a segment of its own.
        Dribble(Vec<u8>),
        /// The first, then the second unasked a moment later, the connection left open.
        Late(Vec<u8>, Vec<u8>),
    }

    /// A server on 127.0.0.1 that answers its requests, in the order they come on any
    /// connection, with `answers`; it counts the connections it accepted.
    fn server(answers: Vec<Answer>) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let answers = Arc::new(std::sync::Mutex::new(answers.into_iter()));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let answers = answers.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    loop {
                        let mut line = String::new();
                        loop {
                            line.clear();
                            match reader.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) if line == "\r\n" => break,
                                Ok(_) => {}
                            }
                        }
                        let Some(answer) = answers.lock().unwrap().next() else {
                            return;
                        };
                        match answer {
                            Answer::Send(bytes) => {
                                if stream.write_all(&bytes).is_err() {
                                    return;
                                }
                            }
                            Answer::SendAndClose(bytes) => {
                                let _ = stream.write_all(&bytes);
                                let _ = stream.shutdown(std::net::Shutdown::Both);
                                return;
                            }
                            Answer::Dribble(bytes) => {
                                stream.set_nodelay(true).unwrap();
                                for piece in bytes.chunks(3) {
                                    if stream.write_all(piece).is_err() {
                                        return;
                                    }
                                    std::thread::sleep(Duration::from_micros(50));
                                }
                            }
                            Answer::Late(bytes, late) => {
                                let _ = stream.write_all(&bytes);
                                std::thread::sleep(Duration::from_millis(50));
                                let _ = stream.write_all(&late);
                            }
                            Answer::SendAndStall(bytes) => {
                                let _ = stream.write_all(&bytes);
                                std::thread::sleep(Duration::from_secs(30));
                                return;
                            }
                        }
                    }
                });
            }
        });
        (base, accepted)
    }

    /// A body of `n` bytes that is not one byte repeated.
    fn body(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 1000) as u8).collect()
    }

    fn with_length(body: &[u8]) -> Vec<u8> {
        let mut r =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len()).into_bytes();
        r.extend_from_slice(body);
        r
    }

    /// `body` in chunks of uneven sizes, with a chunk extension and a trailer.
    fn chunked(body: &[u8]) -> Vec<u8> {
        let mut r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut rest = body;
        let mut size = 1;
        while !rest.is_empty() {
            let n = size.min(rest.len());
            r.extend_from_slice(format!("{n:x};ext=1\r\n").as_bytes());
            r.extend_from_slice(&rest[..n]);
            r.extend_from_slice(b"\r\n");
            rest = &rest[n..];
            size = size * 3 + 17;
        }
        r.extend_from_slice(b"0\r\nX-Trailer: yes\r\n\r\n");
        r
    }

    /// A runtime as the command's, and the bodies' directory.
    fn setup() -> (tokio::runtime::Runtime, tempfile::TempDir, Bodies) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tmp =
            cap_std::fs::Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let bodies = Bodies::new(tmp, dir.path().to_owned());
        (runtime, dir, bodies)
    }

    struct Fetched {
        messages: Vec<Msg>,
        file: Option<Vec<u8>>,
    }

    /// The requests of `uris` made one after another on one worker's connections, each
    /// body kept in a file of `dir`'s (`limit` the most it may have), and what each
    /// said and kept.
    fn fetch_all(uris: &[String], limit: Option<u64>) -> Vec<Fetched> {
        fetch_paused(uris, limit, Duration::ZERO)
    }

    /// [`fetch_all`], `pause` between two requests.
    fn fetch_paused(uris: &[String], limit: Option<u64>, pause: Duration) -> Vec<Fetched> {
        let (runtime, _dir, bodies) = setup();
        let http = Http::new(None, 1);
        let mut kept = Kept::default();
        let mut all = Vec::new();
        for uri in uris {
            std::thread::sleep(pause);
            let request = first_request(uri);
            let id = request.id;
            let keep = Keep {
                bodies: bodies.clone(),
                limit,
                algorithms: Algorithms::SHA256,
                in_memory: false,
            };
            let (tx, mut rx) = mpsc::channel(1024);
            let uri: http::Uri = uri.parse().unwrap();
            runtime.block_on(exchange(&http, &mut kept, &uri, id, keep, &tx));
            let mut messages = Vec::new();
            while let Ok(message) = rx.try_recv() {
                messages.push(message);
            }
            let file = std::fs::read(bodies.path(id)).ok();
            all.push(Fetched { messages, file });
        }
        all
    }

    /// The digests `fetched` ended with, after its head (200) and its progress.
    fn digests(fetched: &Fetched) -> &resourcesync_model::Measured {
        let Some(Msg::Head(_, status, _)) = fetched.messages.first() else {
            panic!("no head first: {:?}", fetched.messages);
        };
        assert_eq!(*status, 200);
        match fetched.messages.last() {
            Some(Msg::Digests(_, measured)) => measured,
            other => panic!("not digests at the end: {other:?}"),
        }
    }

    #[test]
    fn bodies_framed_by_length_by_chunks_and_by_the_end_are_kept_whole() {
        let (a, b, c, e) = (
            body(1_500_000),
            body(700_000),
            body(LARGE as usize + 5),
            body(3000),
        );
        // A 1xx response before the first: skipped.
        let mut first = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n".to_vec();
        first.extend(with_length(&a));
        let mut last = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        last.extend_from_slice(&c);
        let (base, accepted) = server(vec![
            Answer::Send(first),
            Answer::Send(chunked(&b)),
            Answer::SendAndClose(last),
            Answer::Send(with_length(b"")),
            // Every CRLF, size line and trailer split across reads.
            Answer::Dribble(chunked(&e)),
        ]);
        let uris: Vec<String> = ["a", "b", "c", "d", "e"]
            .map(|n| format!("{base}{n}"))
            .into();
        let fetched = fetch_all(&uris, None);
        for (fetched, body) in fetched.iter().zip([&a, &b, &c, &Vec::new(), &e]) {
            let measured = digests(fetched);
            assert_eq!(measured.length, body.len() as u64);
            assert_eq!(
                measured.sha256,
                Some(resourcesync_testkit::publication::digests(body).sha256)
            );
            assert_eq!(fetched.file.as_ref(), Some(body));
        }
        // Progress told as the 1.5 MB body came, before its digests.
        assert!(
            fetched[0]
                .messages
                .iter()
                .any(|m| matches!(m, Msg::Progress(..)))
        );
        // The first three on one connection (the third ended it), the rest on another.
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_again() {
        let a = body(LARGE as usize);
        let (base, accepted) = server(vec![
            // Closed after its response, as a server whose keep-alive ended does.
            Answer::SendAndClose(with_length(&a)),
            Answer::Send(with_length(&a)),
        ]);
        let uris = vec![format!("{base}a"), format!("{base}b")];
        let fetched = fetch_all(&uris, None);
        for fetched in &fetched {
            assert_eq!(digests(fetched).length, a.len() as u64);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_kept_connection_the_server_wrote_on_while_idle_is_not_used_again() {
        let a = body(LARGE as usize);
        // A 408 after the response, unasked, as a balancer sends when it ends a
        // connection: not the next request's answer.
        let stale = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n".to_vec();
        let (base, accepted) = server(vec![
            Answer::Late(with_length(&a), stale),
            Answer::Send(with_length(&a)),
        ]);
        let uris = vec![format!("{base}a"), format!("{base}b")];
        let fetched = fetch_paused(&uris, None, Duration::from_millis(300));
        for fetched in &fetched {
            assert_eq!(digests(fetched).length, a.len() as u64);
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_body_cut_short_or_framed_wrong_fails_with_the_reason() {
        let a = body(600_000);
        let mut cut =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 1 << 20).into_bytes();
        cut.extend_from_slice(&a);
        let mut bad_chunk =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdefgh".to_vec();
        bad_chunk.extend_from_slice(b"\r\n0\r\n\r\n");
        let mut trailer_flood =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n".to_vec();
        trailer_flood.extend(b"a: b\r\n".repeat(5000));
        let cases: [(Vec<u8>, &str); 11] = [
            (
                cut,
                "the body broke off: the connection closed 448576 bytes before its end",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 13\r\n\r\n".to_vec(),
                "request failed: the response's Content-Length is invalid",
            ),
            (
                b"HTTP/1.1 2x0 OK\r\n\r\n".to_vec(),
                "request failed: invalid HTTP response",
            ),
            (
                bad_chunk,
                "the body broke off: a chunk's data ends without CRLF",
            ),
            (
                [b"HTTP/1.1 200 OK\r\n".as_slice(), &b"X: y\r\n".repeat(200)].concat(),
                "request failed: the response's head has over 128 fields",
            ),
            (
                [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &b"y".repeat(70_000)].concat(),
                "request failed: the response's head is over 65536 bytes",
            ),
            (
                trailer_flood,
                "the body's trailer is over 16384 bytes or 100 fields",
            ),
            (
                // An empty size line is no last chunk.
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n\r\n\r\n"
                    .to_vec(),
                "the body broke off: a chunk's size is invalid",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nabcde".to_vec(),
                "request failed: the response's Content-Length is invalid",
            ),
            (
                b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
                "request failed: an HTTP/1.0 response with a Transfer-Encoding",
            ),
            (
                b"HTTP/1.1 100 Continue\r\n\r\n".repeat(17),
                "request failed: over 16 informational (1xx) responses",
            ),
        ];
        for (answer, reason) in cases {
            let (base, _) = server(vec![Answer::SendAndClose(answer)]);
            let fetched = fetch_all(&[format!("{base}a")], None);
            match fetched[0].messages.last() {
                Some(Msg::Failed(_, said)) => assert!(said.starts_with(reason), "{said}"),
                other => panic!("{reason}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_failure_s_head_is_told_and_its_connection_not_kept() {
        let (base, accepted) = server(vec![
            Answer::Send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!".to_vec()),
            Answer::Send(with_length(b"ok")),
        ]);
        let fetched = fetch_all(&[format!("{base}a"), format!("{base}b")], None);
        assert!(matches!(
            fetched[0].messages.as_slice(),
            [Msg::Head(_, status, _)] if *status == 404
        ));
        assert_eq!(fetched[0].file, None);
        assert_eq!(digests(&fetched[1]).length, 2);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_body_past_its_limit_is_read_no_further_than_a_buffer_past_it() {
        let a = body(3 << 20);
        let (base, accepted) = server(vec![
            Answer::Send(with_length(&a)),
            Answer::Send(with_length(b"ok")),
        ]);
        let fetched = fetch_all(&[format!("{base}a"), format!("{base}b")], Some(1000));
        let length = digests(&fetched[0]).length;
        assert!(length > 1000 && length <= 1 << 20, "{length}");
        // Its connection, its body unread, not kept.
        assert_eq!(digests(&fetched[1]).length, 2);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_request_dropped_while_its_body_stalls_stops_its_thread() {
        let mut head =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", 1 << 20).into_bytes();
        head.extend_from_slice(&body(1000));
        let (base, _) = server(vec![Answer::SendAndStall(head)]);
        let (runtime, _dir, bodies) = setup();
        let keep = Keep {
            bodies,
            limit: None,
            algorithms: Algorithms::SHA256,
            in_memory: false,
        };
        let http = Http::new(None, 1);
        let uri = format!("{base}a");
        let id = first_request(&uri).id;
        let (tx, _rx) = mpsc::channel(16);
        runtime.block_on(async {
            let mut kept = Kept::default();
            let uri: http::Uri = uri.parse().unwrap();
            let stalled = exchange(&http, &mut kept, &uri, id, keep, &tx);
            // The client's timeout, or a stop: the request dropped.
            let ended = tokio::time::timeout(Duration::from_millis(300), stalled).await;
            assert!(ended.is_err(), "the stalled body ended");
            let settled = tokio::time::timeout(Duration::from_secs(5), http.blocking().settled());
            assert!(settled.await.is_ok(), "the thread still reads");
        });
    }
}
