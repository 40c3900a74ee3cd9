//! The bodies of resources and packages while they arrive: their temporary files, and
//! for a destination that sends them on, their bytes in memory within a budget.

use super::*;

/// The temporary directory the bodies of resources and packages go to while they
/// arrive, by a handle: cheap to clone, for the tasks of an async driver. A destination
/// that sends bodies on rather than renaming files into place (a bucket's) may also take
/// them in memory, within a budget ([`reserve`](Bodies::reserve),
/// [`keep`](Bodies::keep)): a body that does not fit goes to its file.
#[derive(Clone, Debug)]
pub struct Bodies {
    pub(super) tmp: Arc<Dir>,
    /// Its path, for the errors.
    shown: Arc<PathBuf>,
    /// The bodies held in memory, if the destination takes any.
    memory: Option<Arc<Memory>>,
}

/// Bodies held in memory, and the budget they share.
#[derive(Debug)]
struct Memory {
    /// The most bytes held at once, all bodies together.
    budget: u64,
    /// The most bytes of one body.
    each: u64,
    /// Bytes reserved now, shared by every [`Bodies`] made with the same budget.
    used: Arc<std::sync::atomic::AtomicU64>,
    /// The whole bodies, by request, until the destination takes them; and the requests
    /// cancelled before their body was kept.
    held: std::sync::Mutex<HashMap<RequestId, Slot, crate::IdHash>>,
}

/// A request's place in [`Memory::held`].
#[derive(Debug)]
enum Slot {
    /// Its whole body, until the destination takes it.
    Body(InMemory),
    /// Cancelled before its body came: the body, if its task still keeps one (it was
    /// past its last await when aborted), is dropped then.
    Cancelled,
}

/// A whole body held in memory; its bytes go back to the budget when it is dropped.
#[derive(Debug)]
pub struct InMemory {
    chunks: Vec<bytes::Bytes>,
    reserved: u64,
    memory: Arc<Memory>,
}

impl InMemory {
    /// The body's chunks, in order.
    pub fn chunks(&self) -> &[bytes::Bytes] {
        &self.chunks
    }
}

impl Drop for InMemory {
    fn drop(&mut self) {
        self.memory
            .used
            .fetch_sub(self.reserved, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Bodies {
    /// The bodies' directory `tmp`, shown as `shown` in errors.
    pub(crate) fn new(tmp: Dir, shown: PathBuf) -> Bodies {
        Bodies {
            tmp: Arc::new(tmp),
            shown: Arc::new(shown),
            memory: None,
        }
    }

    /// Takes bodies of up to `each` bytes in memory while all of them together, with
    /// those of every other [`Bodies`] that shares `used`, hold at most `budget` bytes.
    #[cfg(feature = "object-store")]
    pub(crate) fn with_memory(
        mut self,
        budget: u64,
        each: u64,
        used: Arc<std::sync::atomic::AtomicU64>,
    ) -> Bodies {
        self.memory = Some(Arc::new(Memory {
            budget,
            each,
            used,
            held: std::sync::Mutex::new(HashMap::default()),
        }));
        self
    }

    /// Whether a body that has `so_far` bytes may take `more` in memory: true when they
    /// were reserved (give them back with [`release`](Bodies::release) if the body goes
    /// to its file after all). False with no memory, past a body's most, or past the
    /// budget.
    pub fn reserve(&self, so_far: u64, more: u64) -> bool {
        use std::sync::atomic::Ordering;
        let Some(memory) = &self.memory else {
            return false;
        };
        if so_far + more > memory.each {
            return false;
        }
        memory
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + more <= memory.budget).then_some(used + more)
            })
            .is_ok()
    }

    /// Gives back `reserved` bytes of the budget.
    pub fn release(&self, reserved: u64) {
        if let Some(memory) = &self.memory
            && reserved > 0
        {
            memory
                .used
                .fetch_sub(reserved, std::sync::atomic::Ordering::AcqRel);
        }
    }

    /// Holds `request`'s whole body, `chunks`, for which `reserved` bytes were
    /// [reserved](Bodies::reserve), until the destination takes it.
    pub fn keep(&self, request: RequestId, chunks: Vec<bytes::Bytes>, reserved: u64) {
        let Some(memory) = &self.memory else {
            return;
        };
        let body = InMemory {
            chunks,
            reserved,
            memory: memory.clone(),
        };
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Slot::Cancelled) = held.remove(&request) {
            // Dropped here, its bytes back in the budget: no one will take it.
            return;
        }
        held.insert(request, Slot::Body(body));
    }

    /// `request`'s body, if it is held in memory (taken: the next call finds none).
    pub fn take(&self, request: RequestId) -> Option<InMemory> {
        let memory = self.memory.as_ref()?;
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        match held.entry(request) {
            std::collections::hash_map::Entry::Occupied(slot)
                if matches!(slot.get(), Slot::Body(_)) =>
            {
                match slot.remove() {
                    Slot::Body(body) => Some(body),
                    Slot::Cancelled => None,
                }
            }
            // Nothing, or still cancelled (the body may yet come): the mark stays.
            _ => None,
        }
    }

    /// Drops `request`'s body, now or, if its task has not kept it yet, when it does: a
    /// cancelled request's task is aborted, but one already past its last await still
    /// keeps its body, which would otherwise hold its bytes of the budget to the run's
    /// end. The mark left for a body not kept yet stays as long as these bodies (a
    /// destination's, one run): an id for each request cancelled.
    pub fn cancel(&self, request: RequestId) {
        let Some(memory) = &self.memory else {
            return;
        };
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.remove(&request).is_none() {
            held.insert(request, Slot::Cancelled);
        }
    }

    /// The directory's handle.
    #[cfg(feature = "object-store")]
    pub(crate) fn dir(&self) -> &Dir {
        &self.tmp
    }

    /// Creates (or truncates) the temporary file of `request`'s body. Write it only for
    /// a response with a success status, and only when
    /// [`DirectoryDestination::keeps_body`] said so.
    /// An error names the file (a full disk, say, is told with the path it met).
    pub fn create(&self, request: RequestId) -> io::Result<std::fs::File> {
        let name = temp_name(request);
        match self.tmp.create(&name) {
            Ok(file) => Ok(file.into_std()),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.shown.join(name).display()),
            )),
        }
    }

    /// The error `e` met writing the body of `request`, with the file's path.
    pub fn error(&self, request: RequestId, e: &io::Error) -> String {
        format!("{}: {e}", self.path(request).display())
    }

    /// The path of the temporary file of `request`'s body, for errors.
    pub(crate) fn path(&self, request: RequestId) -> PathBuf {
        self.shown.join(temp_name(request))
    }
}

#[cfg(all(test, feature = "object-store"))]
mod memory_tests {
    use super::*;

    use crate::directory::test_support::{self, bodies};

    /// A request's id, from a client's first request (ids have no constructor).
    fn request_id() -> RequestId {
        test_support::first_request("http://example.com/").id
    }

    #[test]
    fn bodies_in_memory_keep_within_their_budget_and_give_it_back() {
        let (_dir, bodies) = bodies(10, 6);
        // One body's most, then the budget of all.
        assert!(bodies.reserve(0, 6));
        assert!(!bodies.reserve(6, 1), "past a body's most");
        assert!(bodies.reserve(0, 4));
        assert!(!bodies.reserve(0, 1), "past the budget");
        // Given back by a body that went to its file.
        bodies.release(4);
        assert!(bodies.reserve(0, 3));
        bodies.release(3);
        // A whole body held: taken once, and its bytes back in the budget when dropped.
        let id = request_id();
        bodies.keep(
            id,
            vec![
                bytes::Bytes::from_static(b"abc"),
                bytes::Bytes::from_static(b"def"),
            ],
            6,
        );
        assert!(!bodies.reserve(0, 5));
        let body = bodies.take(id).unwrap();
        assert_eq!(body.chunks().concat(), b"abcdef");
        assert!(bodies.take(id).is_none());
        drop(body);
        assert!(bodies.reserve(0, 6));
        assert!(bodies.reserve(0, 4));
    }

    #[test]
    fn a_body_kept_after_its_request_was_cancelled_gives_its_bytes_back() {
        let (_dir, bodies) = bodies(10, 10);
        // Cancelled with its body held: dropped at once.
        let id = request_id();
        assert!(bodies.reserve(0, 4));
        bodies.keep(id, vec![bytes::Bytes::from_static(b"abcd")], 4);
        bodies.cancel(id);
        assert!(bodies.take(id).is_none());
        assert!(bodies.reserve(0, 10), "the budget whole again");
        bodies.release(10);
        // Cancelled before its task kept it (the task past its last await): dropped
        // when kept, not held to the run's end.
        bodies.cancel(id);
        assert!(bodies.reserve(0, 4));
        bodies.keep(id, vec![bytes::Bytes::from_static(b"efgh")], 4);
        assert!(bodies.take(id).is_none());
        assert!(bodies.reserve(0, 10), "the late body's bytes given back");
    }

    #[test]
    fn bodies_without_memory_take_none() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let bodies = Bodies::new(tmp, dir.path().to_owned());
        assert!(!bodies.reserve(0, 1));
        let id = request_id();
        bodies.keep(id, vec![bytes::Bytes::from_static(b"x")], 1);
        assert!(bodies.take(id).is_none());
    }
}
