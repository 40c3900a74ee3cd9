//! One request's exchange: on a worker's task, the request made (or answered from a
//! mirror's directory), its response streamed to the run's task as [`Msg`]s, a
//! resource's or a package's body kept ([`Keep`]) in its temporary file or in memory and
//! hashed as it arrives; on the run's task, each message handed to the client
//! ([`Msg::deliver`], [`wait`]).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use resourcesync_client::{Client, Misuse, Request, RequestId};
use resourcesync_model::uri_path::SegmentRules;
use resourcesync_model::{Algorithms, Measure, Measured};
use tokio::sync::mpsc;

use super::http_client::{Http, Kept};
use super::sleep_until;
use crate::directory::Bodies;

/// The most bytes of a document's body in one [`Msg::Chunk`] (and of a body read from a
/// mirror's directory). The run's task parses a listing slower than a fast Source sends
/// it (tens of MB/s against hundreds), and the resources it lists are asked for between
/// two pieces: a piece of 16 KiB is some fifty entries, a fraction of a millisecond of
/// parsing, so the requests in flight are kept full while a listing is read. Pieces of a
/// chunk share its buffer (no copy).
pub const PIECE: usize = 16 * 1024;

/// What a request task tells the main task.
#[derive(Debug)]
#[non_exhaustive]
pub enum Msg {
    /// The response head.
    Head(RequestId, StatusCode, HeaderMap),
    /// A piece of the body, at most [`PIECE`] bytes.
    Chunk(RequestId, Bytes),
    /// The end of the body.
    End(RequestId),
    /// The exchange failed.
    Failed(RequestId, String),
    /// More bytes of a body the task hashes itself arrived (a resource or a package).
    Progress(RequestId, u64),
    /// The end of such a body: its length and digests.
    Digests(RequestId, Measured),
    /// A whole response at once, hashed and kept by the task: head and digests (a small
    /// resource).
    Whole(RequestId, StatusCode, HeaderMap, Measured),
    /// The request passed its [`Gate`](crate::gate::Gate) and is sent now.
    Started(RequestId),
    /// The task making the request panicked: a failure if the request is still in
    /// flight (the panic may have come after its last message).
    Panicked(RequestId, String),
}

impl Msg {
    /// The request it is about.
    pub fn id(&self) -> RequestId {
        match self {
            Msg::Head(id, ..)
            | Msg::Chunk(id, _)
            | Msg::End(id)
            | Msg::Failed(id, _)
            | Msg::Progress(id, _)
            | Msg::Digests(id, _)
            | Msg::Whole(id, ..)
            | Msg::Started(id)
            | Msg::Panicked(id, _) => *id,
        }
    }

    /// Hands what the request task said to the client, as the input it is. A misuse is
    /// a bug of this driver's (the client refused the input and changed nothing).
    pub fn deliver<I: resourcesync_client::Inventory>(
        self,
        client: &mut Client<I>,
    ) -> Result<(), Misuse> {
        let now = Instant::now();
        match self {
            Msg::Head(id, status, headers) => client.handle_response(id, status, &headers, now),
            Msg::Chunk(id, bytes) => client.handle_body(id, &bytes, now),
            Msg::End(id) => client.handle_end(id, now),
            Msg::Failed(id, reason) => client.handle_failure(id, reason, now),
            Msg::Progress(id, bytes) => client.handle_progress(id, bytes, now),
            Msg::Digests(id, digests) => client.handle_digests(id, digests, now),
            Msg::Whole(id, status, headers, digests) => {
                client.handle_response(id, status, &headers, now)?;
                client.handle_digests(id, digests, now)
            }
            Msg::Started(id) => client.handle_started(id, now),
            Msg::Panicked(id, reason) if client.in_flight(id) => {
                client.handle_failure(id, reason, now)
            }
            Msg::Panicked(..) => Ok(()),
        }
    }
}

/// Waits for what comes first, a request task's message or the client's next timeout, and
/// hands it to the client; a misuse is this driver's bug.
pub async fn wait<I: resourcesync_client::Inventory>(
    client: &mut Client<I>,
    rx: &mut mpsc::Receiver<Msg>,
) -> Result<(), Misuse> {
    let timeout = client.poll_timeout();
    tokio::select! {
        message = rx.recv() => if let Some(message) = message {
            message.deliver(client)?;
        },
        () = sleep_until(timeout) => client.handle_timeout(Instant::now()),
    }
    Ok(())
}

/// A body a request task keeps itself: a resource's or a package's, written to its
/// temporary file and hashed as it arrives.
#[derive(Clone, Debug)]
pub struct Keep {
    /// Where it is written ([`DirectoryDestination::bodies`](crate::DirectoryDestination::bodies)).
    pub bodies: Bodies,
    /// The most bytes it may have ([`Client::body_limit`]): reading stops one past it.
    pub limit: Option<u64>,
    /// The digests computed of it ([`Client::algorithms`]).
    pub algorithms: Algorithms,
    /// Held in memory while the bodies' budget has room, rather than written to its file
    /// ([`Destination::keeps_in_memory`](crate::Destination::keeps_in_memory)).
    pub in_memory: bool,
}

/// Makes one request and streams its response to the main task; a resource or a
/// package answered with success is kept by the task instead, as `keep` says, and the
/// main task gets its progress and digests. URLs under a mirror's prefix are answered
/// from its directory.
pub async fn fetch(
    http: Http,
    request: Request,
    keep: Option<Keep>,
    tx: mpsc::Sender<Msg>,
    mirrors: Vec<(String, PathBuf)>,
) {
    exchange(&http, None, request, keep, &tx, &mirrors).await;
}

/// [`fetch`], on `kept` when given ([`Http::get_on`]), else through the pool.
pub(super) async fn exchange(
    http: &Http,
    kept: Option<&mut Kept>,
    request: Request,
    keep: Option<Keep>,
    tx: &mpsc::Sender<Msg>,
    mirrors: &[(String, PathBuf)],
) {
    let id = request.id;
    // Made only to be matched against the mirrors' prefixes.
    let url = (!mirrors.is_empty()).then(|| request.http.uri().to_string());
    if let Some(url) = &url
        && let Some((prefix, dir)) = mirrors.iter().find(|(p, _)| url.starts_with(p.as_str()))
    {
        // Read beneath the mirror's directory only, through a handle on it: a URI whose
        // rest climbs out (`..`), is absolute (`//`), or meets a link that leads out is
        // not found, and nothing of such a file is read, let alone quoted in an error.
        // The rest is a URI's path: its query and fragment are not the file's, and it is
        // read as a server reads a request's path (the model's grammar for one, as
        // `serve` reads it): each segment decoded apart (`%20` for a space, UTF-8 bytes
        // for other letters), empty and `.` ones skipped; one the grammar refuses (`..`,
        // an encoded `/`, bytes not UTF-8) names no file here.
        let rest = mirrored(&url[prefix.len()..]);
        let dir = dir.clone();
        let read = tokio::task::spawn_blocking(move || {
            let rest = rest.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
            cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority())?.read(rest)
        })
        .await;
        let (status, body) = match read {
            Ok(Ok(body)) => (StatusCode::OK, body),
            // What the path names is not there, or not a file of the mirror's own.
            Ok(Err(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound
                        | std::io::ErrorKind::NotADirectory
                        | std::io::ErrorKind::IsADirectory
                        | std::io::ErrorKind::PermissionDenied
                        | std::io::ErrorKind::InvalidInput
                ) =>
            {
                (StatusCode::NOT_FOUND, Vec::new())
            }
            // The disk failed: said as what it is, not as a 404.
            Ok(Err(e)) => {
                let _ = tx.send(Msg::Failed(id, format!("mirror: {e}"))).await;
                return;
            }
            Err(e) => {
                let _ = tx.send(Msg::Failed(id, format!("mirror: {e}"))).await;
                return;
            }
        };
        let _ = tx.send(Msg::Head(id, status, HeaderMap::new())).await;
        if status.is_success() {
            if let Some(keep) = &keep
                && let Err(e) = keep.bodies.create(id).and_then(|mut f| f.write_all(&body))
            {
                let _ = tx.send(Msg::Failed(id, e.to_string())).await;
                return;
            }
            if !send_pieces(tx, id, Bytes::from(body)).await {
                return;
            }
        }
        let _ = tx.send(Msg::End(id)).await;
        return;
    }
    let got = match kept {
        Some(kept) => http.get_on(kept, request.http.uri()).await,
        None => http.get(request.http.uri()).await,
    };
    let mut response = match got {
        Ok(response) => response,
        Err(reason) => {
            let _ = tx.send(Msg::Failed(id, reason)).await;
            return;
        }
    };
    let status = response.status;
    // Taken, not cloned: reading the body needs no header of the response's.
    let headers = std::mem::take(&mut response.headers);
    let keep = match keep {
        Some(keep) if status.is_success() => keep,
        _ => {
            // A document (or an error): streamed to the client as it arrives.
            if tx.send(Msg::Head(id, status, headers)).await.is_err() || !status.is_success() {
                return;
            }
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        if !send_pieces(tx, id, chunk).await {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(reason) => {
                        let _ = tx.send(Msg::Failed(id, reason)).await;
                        return;
                    }
                }
            }
            let _ = tx.send(Msg::End(id)).await;
            return;
        }
    };
    // A resource or a package, kept in its temporary file and hashed here, on the task
    // that receives it: the tasks run on every core, where the client, a state machine
    // on the main task, would hash every body on one (hashing is most of the work of a
    // large body). Only the digests that check what is listed are computed
    // (`Keep::algorithms`). The client gets the progress and, at the end, the digests to
    // check (`Client::handle_digests`).
    //
    // The body's chunks (hyper's own buffers) are kept as they arrive and written
    // together with one `writev` once BATCH bytes are held, on this worker: no copy in
    // user space, no hop to tokio's blocking pool, one message to the main task per
    // batch. A write of a quarter of a MiB to the page cache takes tens of microseconds,
    // less than a hop to the blocking pool and back (whose futex wake-ups were most of
    // the system calls of a sync of small files, and which `tokio::fs` takes for every
    // chunk, with a copy). A body of at most BATCH bytes is written with one call and
    // handed over in one message. Reading stops one byte past the limit (the listed
    // length, or the cap for an unlisted one): the client fails it then.
    //
    // A body the destination takes in memory (`Keep::in_memory`) keeps its chunks while
    // the bodies' budget has room, and is handed over whole at the end
    // (`Bodies::keep`); once it does not fit, what it held goes to its file and the rest
    // follows as above.
    const BATCH: usize = 256 * 1024;
    let Keep {
        bodies,
        limit,
        algorithms,
        in_memory,
    } = keep;
    let mut measure = Measure::new(algorithms);
    let mut held: Vec<Bytes> = Vec::new();
    let mut in_memory = in_memory;
    // Bytes of the budget this body holds (given back however the task ends, aborted
    // included, unless handed over with the body), and bytes not yet told as progress.
    let mut reserved = Reserved {
        bodies: &bodies,
        bytes: 0,
    };
    let mut unreported = 0usize;
    let mut file: Option<std::fs::File> = None;
    let mut head = Some(headers);
    let fail = |reason: String| Msg::Failed(id, reason);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(reason) => {
                let _ = tx.send(fail(reason)).await;
                return;
            }
        };
        measure.update(&chunk);
        let past = limit.is_some_and(|limit| measure.length() > limit);
        if in_memory {
            let more = chunk.len() as u64;
            if bodies.reserve(reserved.bytes, more) {
                reserved.bytes += more;
            } else {
                // It goes to its file from here on, with what it held.
                in_memory = false;
                reserved.release();
            }
        }
        unreported += chunk.len();
        held.push(chunk);
        if unreported < BATCH && !past {
            continue;
        }
        if !in_memory {
            let f = match &mut file {
                Some(f) => f,
                None => match bodies.create(id) {
                    Ok(f) => file.insert(f),
                    Err(e) => {
                        let _ = tx.send(fail(e.to_string())).await;
                        return;
                    }
                },
            };
            if let Err(e) = write_chunks(f, &held) {
                let _ = tx.send(fail(bodies.error(id, &e))).await;
                return;
            }
            held.clear();
        }
        if let Some(headers) = head.take()
            && tx.send(Msg::Head(id, status, headers)).await.is_err()
        {
            return;
        }
        if tx
            .send(Msg::Progress(id, std::mem::take(&mut unreported) as u64))
            .await
            .is_err()
        {
            return;
        }
        if past {
            break;
        }
    }
    let measured = measure.finish();
    // The rest of the body (all of it, for a small one) goes to the file, or the whole
    // body to the bodies in memory; the progress of the last batch is in the digests'
    // length.
    let written = match &mut file {
        Some(f) => write_chunks(f, &held),
        None if in_memory => {
            bodies.keep(id, held, std::mem::take(&mut reserved.bytes));
            Ok(())
        }
        None => bodies
            .create(id)
            .and_then(|mut f| write_chunks(&mut f, &held)),
    };
    let message = match (written, head) {
        (Err(e), _) => fail(bodies.error(id, &e)),
        (Ok(()), Some(headers)) => Msg::Whole(id, status, headers, measured),
        (Ok(()), None) => Msg::Digests(id, measured),
    };
    let _ = tx.send(message).await;
}

/// Bytes of the bodies' memory budget a receiving body holds: given back when dropped.
struct Reserved<'a> {
    bodies: &'a Bodies,
    bytes: u64,
}

impl Reserved<'_> {
    fn release(&mut self) {
        self.bodies.release(std::mem::take(&mut self.bytes));
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Hands `bytes`, a document's body or part of it, to the run's loop in pieces of at most
/// [`PIECE`] bytes (each shares `bytes`' buffer: no copy); `false` once the loop is gone.
async fn send_pieces(tx: &mpsc::Sender<Msg>, id: RequestId, mut bytes: Bytes) -> bool {
    while !bytes.is_empty() {
        let piece = bytes.split_to(bytes.len().min(PIECE));
        if tx.send(Msg::Chunk(id, piece)).await.is_err() {
            return false;
        }
    }
    true
}

/// Writes `chunks` to `file` whole, with as few `writev` calls as the kernel allows.
fn write_chunks<B: AsRef<[u8]>>(file: &mut std::fs::File, chunks: &[B]) -> std::io::Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> = chunks
        .iter()
        .map(|c| std::io::IoSlice::new(c.as_ref()))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match file.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The file a mirror holds for the rest of a URL after the mirror's prefix: its path read
/// as a server reads a request's (the model's [`SegmentRules::REQUEST`]), its query and
/// fragment left out; `None` where the grammar names no file (`..`, an encoded `/`, a
/// control character, bytes not UTF-8).
fn mirrored(rest: &str) -> Option<PathBuf> {
    let path = rest.split(['?', '#']).next().unwrap_or("");
    SegmentRules::REQUEST
        .path(path)
        .ok()
        .map(|names| names.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::{Msg, mirrored};

    #[test]
    fn a_panic_after_a_request_s_last_message_is_no_misuse() {
        let config = resourcesync_client::Config::new(
            "http://example.com/".parse().unwrap(),
            resourcesync_client::Mode::Baseline { prefer_dump: false },
        )
        .unwrap();
        let mut client = resourcesync_client::Client::new(
            config,
            resourcesync_client::State::default(),
            resourcesync_client::MemoryInventory::default(),
        );
        let now = std::time::Instant::now();
        let id = client.poll_request(now).unwrap().id;
        // In flight: a failure, said.
        Msg::Panicked(id, "a bug".into())
            .deliver(&mut client)
            .unwrap();
        assert!(!client.in_flight(id));
        // Over (its end, or that failure, delivered): ignored, where a second failure
        // would be a misuse that ends the run.
        Msg::Panicked(id, "a bug".into())
            .deliver(&mut client)
            .unwrap();
        assert!(
            Msg::Failed(id, "again".into())
                .deliver(&mut client)
                .is_err()
        );
    }

    #[test]
    fn a_mirror_reads_a_url_s_path_as_a_server_reads_a_request_s() {
        let path = |rest: &str| mirrored(rest).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(path("a/./b//c.xml?x=1#f").as_deref(), Some("a/b/c.xml"));
        assert_eq!(
            path("caf%C3%A9%20au%20lait").as_deref(),
            Some("café au lait")
        );
        for refused in [
            "../x",
            "a/../../x",
            "a%2Fb",
            "a%2fb",
            "%2E%2E/x",
            "a%00b",
            "%FF",
        ] {
            assert_eq!(path(refused), None, "{refused}");
        }
    }
}

#[cfg(all(test, feature = "object-store"))]
mod memory_tests {

    use resourcesync_model::Algorithms;
    use resourcesync_testkit::served::Served;

    use super::{Keep, Msg, fetch};
    use crate::directory::test_support::first_request;
    use crate::directory::{Bodies, temp_name};

    /// `fetch` of the first request a client makes of `served` (its Source Description),
    /// kept by `bodies`, and every message it sent.
    async fn fetched(
        served: &Served,
        bodies: &Bodies,
    ) -> (resourcesync_client::RequestId, Vec<Msg>) {
        let request = first_request(&served.base);
        let id = request.id;
        let keep = Keep {
            bodies: bodies.clone(),
            limit: None,
            algorithms: Algorithms::SHA256,
            in_memory: true,
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let http = super::Http::new(None, 1);
        fetch(http, request, Some(keep), tx, Vec::new()).await;
        let mut messages = Vec::new();
        while let Ok(message) = rx.try_recv() {
            messages.push(message);
        }
        (id, messages)
    }

    fn bodies(budget: u64) -> (tempfile::TempDir, Bodies) {
        crate::directory::test_support::bodies(budget, budget)
    }

    #[test]
    fn a_body_that_fits_stays_in_memory_and_one_that_does_not_goes_to_its_file() {
        let served = Served::start(|s| {
            s.put("r/a.txt", b"a");
            s.tick(10);
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Room for it: in memory, no file.
        let (dir, room) = bodies(1 << 20);
        let (id, messages) = runtime.block_on(fetched(&served, &room));
        assert!(messages.iter().any(|m| matches!(m, Msg::Whole(..))));
        let body = room.take(id).expect("held in memory");
        let text = String::from_utf8(body.chunks().concat()).unwrap();
        assert!(text.contains("sitemaps.org"), "{text}");
        assert!(!dir.path().join(temp_name(id)).exists());
        // Its bytes back in the budget once dropped: the whole budget reserved again.
        assert!(!room.reserve(0, 1 << 20));
        drop(body);
        assert!(room.reserve(0, 1 << 20));
        room.release(1 << 20);
        // No room (10 bytes): its file, whole, and nothing held.
        let (dir, none) = bodies(10);
        let (id, _) = runtime.block_on(fetched(&served, &none));
        assert!(none.take(id).is_none());
        let written = std::fs::read_to_string(dir.path().join(temp_name(id))).unwrap();
        assert_eq!(written, text);
        assert!(
            none.reserve(0, 10),
            "what it reserved before it spilled, given back"
        );
    }
}
