//! What every request shares: the publication's handle, and the Capability Lists read
//! from its Source Description, cached while the files they came from are the same.

use super::*;

/// What every request shares: the directory as given, and the Capability Lists of the
/// last Source Description read, with the identity of its file.
pub(super) struct Shared {
    pub(super) dir: PathBuf,
    /// The publish directory's handle kept from one request to the next, with the
    /// device and inode it was opened on: see [`Shared::publication`].
    pub(super) publication: Mutex<Option<Kept>>,
    pub(super) capability_lists: Mutex<Option<(FileIdentity, Discovered)>>,
    /// Where read failures go.
    pub(super) report: Reporter,
}

/// The publish directory's handle kept between requests, and the device and inode it
/// was opened on.
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) struct Kept {
    identity: (u64, u64),
    root: Arc<Dir>,
}

/// The Capability Lists, or why the Source Description could not be read.
pub(super) type Discovered = Result<Arc<Discovery>, String>;

/// What the Source Description says of the Capability Lists, kept with the identity of
/// its file, and the `Link` header made from it once rather than at every request.
#[derive(Debug)]
pub(super) struct Discovery {
    /// The Capability Lists' URIs.
    pub(super) lists: Vec<String>,
    /// The `Link` header naming them all (section 6.3.3); `None` without any.
    pub(super) link: Option<HeaderValue>,
    /// Each list's path under the publication, and its directory unless that is the
    /// root: the documents, which get no `Link` header.
    pub(super) documents: Vec<(PathBuf, Option<PathBuf>)>,
}

impl Discovery {
    pub(super) fn new(lists: Vec<String>) -> Discovery {
        let documents = lists
            .iter()
            .filter_map(|uri| relative_path_of_uri(uri))
            .map(|list| {
                let directory = list
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(Path::to_owned);
                (list, directory)
            })
            .collect();
        let link = resourcesync_source::discovery::link_header(lists.iter().map(String::as_str))
            .and_then(|link| HeaderValue::from_str(&link).ok());
        Discovery {
            lists,
            link,
            documents,
        }
    }
}

/// What tells one file's content from another's without reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct FileIdentity {
    pub(super) len: u64,
    #[cfg(not(unix))]
    pub(super) modified: Option<SystemTime>,
    /// Seconds and nanoseconds since 1970.
    #[cfg(unix)]
    pub(super) modified: (i64, i64),
    #[cfg(unix)]
    pub(super) inode: (u64, u64),
}

impl FileIdentity {
    pub(super) fn of(meta: &std::fs::Metadata) -> FileIdentity {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        FileIdentity {
            len: meta.len(),
            #[cfg(not(unix))]
            modified: meta.modified().ok(),
            #[cfg(unix)]
            modified: (meta.mtime(), meta.mtime_nsec()),
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
        }
    }

    /// The identity of what `path` under `dir` names, links followed, in one `statx`.
    #[cfg(unix)]
    pub(super) fn at(dir: &Dir, path: &str) -> io::Result<FileIdentity> {
        use rustix::fs::{AtFlags, StatxFlags, statx};
        let stat = statx(dir, path, AtFlags::empty(), StatxFlags::BASIC_STATS)?;
        Ok(FileIdentity {
            len: stat.stx_size,
            modified: (stat.stx_mtime.tv_sec, i64::from(stat.stx_mtime.tv_nsec)),
            inode: device_and_inode(&stat),
        })
    }
}

/// The device and inode a `statx` found, as `std`'s `dev()` and `ino()` give them.
#[cfg(unix)]
fn device_and_inode(stat: &rustix::fs::Statx) -> (u64, u64) {
    (
        rustix::fs::makedev(stat.stx_dev_major, stat.stx_dev_minor),
        stat.stx_ino,
    )
}

/// Where the Source Description is, under the publish directory (section 6.3.2).
pub(super) const SOURCE_DESCRIPTION: &str = ".well-known/resourcesync";

/// The most of a Source Description or Capability List read for discovery: both are
/// short (a Capability List has at most a dozen entries), and a request must not make the
/// server read without bound.
pub(super) const MAX_DOCUMENT: u64 = 8 << 20;

/// What a request found under the publication.
pub(super) struct Lookup {
    /// What the request's path names.
    pub(super) found: io::Result<Found>,
    /// The file's bytes, read with its open when asked for and at most [`CHUNK`] long.
    pub(super) bytes: Option<Bytes>,
    /// The Capability Lists for the `Link` header.
    pub(super) lists: Lists,
}

/// The Capability Lists for a resource's `Link` header, as far as the lookup knows them.
pub(super) enum Lists {
    /// These (`None`: no Source Description, or no `Link` header asked for).
    Known(Option<Discovered>),
    /// The Source Description is not the file last read, or could not be asked about:
    /// [`Shared::capability_lists`] reads it on the blocking pool.
    Unknown,
}

impl Shared {
    /// What the requests for `dir` share, nothing cached yet; `report` takes the read
    /// failures.
    pub(super) fn new(dir: PathBuf, report: Reporter) -> Arc<Shared> {
        Arc::new(Shared {
            dir,
            publication: Mutex::new(None),
            capability_lists: Mutex::new(None),
            report,
        })
    }

    /// Opens what `relative` names, confined to the publication (see `publication`);
    /// with `index`, a directory's `index.html`. With `whole`, a file of at most
    /// [`CHUNK`] bytes is read too; with `discover`, the Capability Lists are looked up
    /// beside a file, if the cache holds them.
    ///
    /// On the calling thread, a worker of the runtime, rather than on tokio's blocking
    /// pool: the opens and metadata are calls that the kernel's caches answer in
    /// microseconds, and a small file one read from the page cache, while a trip to the
    /// pool and back (a thread woken, the task woken back) cost more than all of them
    /// (strace: 30 futex calls per request; perf: a third of the server's time, with
    /// wget2 at 0.69x nginx's pace). nginx makes the same calls on its event loop. The
    /// price: on a slow or network file system a call that waits holds its worker (the
    /// others go on, and take over its queued tasks). Reading a Source Description that
    /// changed, and the chunks of a larger file, stay on the pool.
    pub(super) fn lookup(
        &self,
        relative: &Path,
        index: bool,
        whole: bool,
        discover: bool,
    ) -> Lookup {
        let opened =
            self.in_publication(|root| publication::open_in(root, &self.dir, relative, index));
        let (root, mut found) = match opened {
            Ok((root, found)) => (root, Ok(found)),
            Err(e) => {
                return Lookup {
                    found: Err(e),
                    bytes: None,
                    lists: Lists::Known(None),
                };
            }
        };
        let mut bytes = None;
        let mut lists = Lists::Known(None);
        if let Ok(Found::File(file, meta) | Found::Index(file, meta)) = &found {
            if whole && meta.len() <= CHUNK as u64 {
                match read_whole(file, meta.len()) {
                    Ok(read) => bytes = read,
                    Err(e) => found = Err(e),
                }
            }
            if discover {
                lists = self.cached_capability_lists(&root);
            }
        }
        Lookup {
            found,
            bytes,
            lists,
        }
    }

    /// The publish directory as its path leads now, for one request: resolved anew at
    /// every call (the path is the link a publisher swaps), by one `statx` of it, and
    /// opened only when it leads elsewhere than the handle kept from the call before
    /// (an open and a close fewer a request).
    ///
    /// The device and inode say it is the same directory: the handle kept holds the
    /// directory's inode, so that while it is kept no other directory can be given
    /// that number, even if this one is removed. A swap after the `statx` is as a swap
    /// after an open would be: this request is answered from the generation it found.
    pub(super) fn publication(&self) -> io::Result<Arc<Dir>> {
        #[cfg(unix)]
        {
            use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
            let now = device_and_inode(&statx(CWD, &self.dir, AtFlags::empty(), StatxFlags::INO)?);
            let mut kept = self.publication.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(kept) = &*kept
                && kept.identity == now
            {
                return Ok(Arc::clone(&kept.root));
            }
            let root = Arc::new(publication::open_publication(&self.dir)?);
            // The identity of what was opened, not of what the path led to a moment ago.
            let opened = statx(&*root, "", AtFlags::EMPTY_PATH, StatxFlags::INO)?;
            *kept = Some(Kept {
                identity: device_and_inode(&opened),
                root: Arc::clone(&root),
            });
            Ok(root)
        }
        #[cfg(not(unix))]
        publication::open_publication(&self.dir).map(Arc::new)
    }

    /// `open` in the publication (see [`Shared::publication`]), and the publication it
    /// ran in. Where the handle kept from an earlier request has gone stale (`ESTALE`,
    /// on NFS: the server removed the directory and may have given its inode number to
    /// another, which the `statx` of the path cannot tell from the one kept), the handle
    /// is dropped and `open` runs once more in the directory the path leads to now.
    /// Without that, every request would fail until the server restarted.
    pub(super) fn in_publication<T>(
        &self,
        open: impl Fn(&Dir) -> io::Result<T>,
    ) -> io::Result<(Arc<Dir>, T)> {
        let root = self.publication()?;
        match open(&root) {
            Ok(found) => Ok((root, found)),
            #[cfg(unix)]
            Err(e) if e.raw_os_error() == Some(libc::ESTALE) => {
                let mut kept = self.publication.lock().unwrap_or_else(|e| e.into_inner());
                if kept
                    .as_ref()
                    .is_some_and(|kept| Arc::ptr_eq(&kept.root, &root))
                {
                    *kept = None;
                }
                drop(kept);
                let root = self.publication()?;
                open(&root).map(|found| (root, found))
            }
            Err(e) => Err(e),
        }
    }

    /// The Capability Lists if the Source Description under `root` is the file last read
    /// (or there is none), by one `statx` of its path rather than the walk's half-dozen
    /// calls: every request of a resource asks, for its `Link` header.
    ///
    /// Only equality is trusted, and it means the very file the walk found and read
    /// before (device, inode, length and modification time to the nanosecond); any
    /// other answer, links included, is left to [`Shared::capability_lists`]. Nothing
    /// there is nothing for the walk either: it follows no link the system would not.
    pub(super) fn cached_capability_lists(&self, root: &Dir) -> Lists {
        #[cfg(unix)]
        match FileIdentity::at(root, SOURCE_DESCRIPTION) {
            Ok(identity) => {
                if let Some((cached, found)) = &*self.lock()
                    && *cached == identity
                {
                    return Lists::Known(Some(found.clone()));
                }
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Lists::Known(None);
            }
            Err(_) => {}
        }
        #[cfg(not(unix))]
        let _ = root;
        Lists::Unknown
    }

    /// The URIs of the Capability Lists the Source Description lists; `None` when there
    /// is no Source Description.
    pub(super) async fn capability_lists(self: &Arc<Self>) -> Option<Discovered> {
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || match shared.publication() {
            Ok(root) => shared.capability_lists_in(&root),
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => None,
            Err(e) => Some(Err(format!("cannot read the Source Description: {e}"))),
        })
        .await
        .unwrap_or_else(|e| Some(Err(format!("cannot read the Source Description: {e}"))))
    }

    /// [`capability_lists`](Shared::capability_lists) in the publication `root`, on a
    /// thread that may block. The Source Description is opened at every call, and read
    /// only when its file is not the one last read.
    pub(super) fn capability_lists_in(&self, root: &Dir) -> Option<Discovered> {
        let found = publication::open_in(root, &self.dir, Path::new(SOURCE_DESCRIPTION), false);
        let (file, meta) = match found {
            Ok(Found::File(file, meta) | Found::Index(file, meta)) => (file, meta),
            Ok(Found::Directory) => return None,
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => return None,
            Err(e) => return Some(Err(format!("cannot read the Source Description: {e}"))),
        };
        // The identity comes from the open file, so it is that of the bytes read even if
        // the link is swapped meanwhile.
        let identity = FileIdentity::of(&meta);
        if let Some((cached, found)) = &*self.lock()
            && *cached == identity
        {
            return Some(found.clone());
        }
        let found = read_bounded(&file)
            .map(|document| {
                Arc::new(Discovery::new(locs_of(
                    &document,
                    &Capability::CapabilityList,
                )))
            })
            .map_err(|e| format!("the Source Description: {e}"));
        *self.lock() = Some((identity, found.clone()));
        Some(found)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Option<(FileIdentity, Discovered)>> {
        // The cache is replaced whole, so a panic elsewhere cannot leave it half written.
        self.capability_lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// The `len` bytes of an open file, or `None` if it holds fewer now (it is being
/// rewritten: the response then streams what there is, as for a large file).
///
/// Read into a buffer of the file's length, in one call where the system gives it all:
/// `read_to_end` probes with 8 KiB and doubles, three calls for a 30 KB file.
pub(super) fn read_whole(mut file: &std::fs::File, len: u64) -> io::Result<Option<Bytes>> {
    let Ok(len) = usize::try_from(len) else {
        return Ok(None);
    };
    let mut bytes = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => return Ok(None),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(Bytes::from(bytes)))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// The handle kept is used while the publish directory's path leads to the directory
    /// it was opened on, and never once the path leads elsewhere: to a directory made at
    /// the same path after the first was removed, or to another generation by a link.
    #[test]
    fn the_publication_kept_is_the_one_its_path_leads_to() {
        let tmp = tempfile::tempdir().unwrap();
        let publish = tmp.path().join("publish");
        std::fs::create_dir(&publish).unwrap();
        std::fs::write(publish.join("a.txt"), "one").unwrap();
        let shared = Shared::new(publish.clone(), Arc::new(|_| {}));
        let first = shared.publication().unwrap();
        assert!(Arc::ptr_eq(&first, &shared.publication().unwrap()));

        // Removed and made anew at the same path.
        std::fs::remove_dir_all(&publish).unwrap();
        std::fs::create_dir(&publish).unwrap();
        std::fs::write(publish.join("a.txt"), "two").unwrap();
        let second = shared.publication().unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert_eq!(second.read_to_string("a.txt").unwrap(), "two");

        // A link swapped to another generation, and back.
        let generation = tmp.path().join("generation");
        std::fs::create_dir(&generation).unwrap();
        std::fs::write(generation.join("a.txt"), "three").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&publish, &link).unwrap();
        let shared = Shared::new(link.clone(), Arc::new(|_| {}));
        let read = || {
            shared
                .publication()
                .unwrap()
                .read_to_string("a.txt")
                .unwrap()
        };
        assert_eq!(read(), "two");
        let swap_to = |target: &Path| {
            let swapped = tmp.path().join("swapped");
            std::os::unix::fs::symlink(target, &swapped).unwrap();
            std::fs::rename(&swapped, &link).unwrap();
        };
        swap_to(&generation);
        assert_eq!(read(), "three");
        swap_to(&publish);
        assert_eq!(read(), "two");
    }

    /// A kept handle that has gone stale (as on NFS, where the path's `statx` can show
    /// the number the handle was opened on while the handle no longer works) is dropped
    /// at the first `ESTALE`, and the open tried once more in a handle opened anew; a
    /// second `ESTALE`, from that new handle, is the answer.
    #[test]
    fn a_stale_publication_is_opened_anew_once() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("a.txt"), "one").unwrap();
        let shared = Shared::new(tmp.path().to_owned(), Arc::new(|_| {}));
        let stale = shared.publication().unwrap();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let (root, read) = shared
            .in_publication(|root| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if std::ptr::eq(root, &*stale) {
                    Err(io::Error::from_raw_os_error(libc::ESTALE))
                } else {
                    root.read_to_string("a.txt")
                }
            })
            .unwrap();
        assert_eq!(read, "one");
        assert!(!Arc::ptr_eq(&root, &stale));
        assert_eq!(calls.into_inner(), 2);
        // The new handle is the one kept.
        assert!(Arc::ptr_eq(&root, &shared.publication().unwrap()));

        let calls = std::sync::atomic::AtomicUsize::new(0);
        let always = shared.in_publication(|_| -> io::Result<()> {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(io::Error::from_raw_os_error(libc::ESTALE))
        });
        assert_eq!(
            always.err().and_then(|e| e.raw_os_error()),
            Some(libc::ESTALE)
        );
        assert_eq!(calls.into_inner(), 2);
    }
}
