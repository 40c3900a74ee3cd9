//! The file a request names, opened under the publish directory by directory handles.
//!
//! Every name is opened relative to the handle of the directory that holds it, one
//! segment at a time, without following a symbolic link (cap-std's `Dir`: `openat` with
//! `O_NOFOLLOW`, under `RESOLVE_BENEATH` where the kernel has it). A check of the path's
//! string (or of `canonicalize`) before an open by path would race a link swapped in
//! between the two; a handle-relative open that refuses links leaves nothing to race: what
//! is opened is what was looked at.
//!
//! Which links are followed: the publication's own, and no other.
//! - The publish directory itself is resolved as the system does, at every request: it is
//!   the link a publisher swaps to switch generations. (Its handle is kept between
//!   requests while the path still leads to the same directory: see
//!   `Shared::publication`.)
//! - A link in the generation's own tree (the directory the publish directory leads to,
//!   and its real subdirectories) is the publisher's: `resourcesync build` links the
//!   collection's files and directories there (`files` to `COLLECTION-DIR/files`). It is
//!   followed to its target. Where the target ends with the link's own path under the
//!   publication, as every link `build` makes does, those ending segments lie in the
//!   collection: they are opened one by one without following a link, like everything
//!   beneath, so a collection directory swapped for a link after the build is not
//!   followed either. The rest of the target, the publisher's path to its collection, is
//!   resolved as the system does (`/home` may itself be a link).
//! - Beneath a link so followed, no link is followed, wherever it points, inside the
//!   collection or out. `build` never publishes a link it finds in a collection (its walk
//!   skips them, and a directory holding one is not linked whole), so any link there was
//!   made after the build, by someone who may not be the publisher: following it would
//!   serve what the server can read rather than what was published.
//!
//! On Linux the rest of a path beneath a publisher's link is first opened in one call
//! that refuses a link anywhere on it (`openat2` with `RESOLVE_NO_SYMLINKS`): where it
//! succeeds there was no link to decide about, and the walk would have opened the same
//! file; anything else is left to the walk. That is most requests: two calls fewer.
//!
//! Only regular files are served: a FIFO, a socket or a device is not (a FIFO is opened
//! non-blocking, so that one swapped in after the check cannot hold a thread).

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// What a request's path names.
#[derive(Debug)]
pub(super) enum Found {
    /// A regular file, open, with the metadata of the open file.
    File(std::fs::File, std::fs::Metadata),
    /// A directory's `index.html`, open, with its metadata.
    Index(std::fs::File, std::fs::Metadata),
    /// A directory, asked for without its trailing `/` (to be redirected to it).
    Directory,
}

/// The publish directory, resolved as the system does (it is the link a publisher swaps),
/// for [`open_in`]: opened once per request, so that a request that opens two files (its
/// own and the Source Description) finds both in the same generation.
pub(super) fn open_publication(publish: &Path) -> io::Result<Dir> {
    Dir::open_ambient_dir(publish, ambient_authority())
}

/// Opens what `relative` (plain segments: no `.`, `..` or root) names under `root`, the
/// publish directory `publish` as [`open_publication`] opened it, as the module
/// describes; with `index`, a directory's `index.html` in its place.
///
/// An error is the system's for the segment that failed (`NotFound`, `NotADirectory`,
/// `InvalidFilename` for a name too long, `ELOOP` for a link not followed, …), or
/// `NotFound` for what is not a regular file; [`status_of`](super::status_of) says which
/// are the request's fault.
pub(super) fn open_in(
    root: &Dir,
    publish: &Path,
    relative: &Path,
    index: bool,
) -> io::Result<Found> {
    open_in_with(root, publish, relative, index, true)
}

/// [`open_in`], with `linkless`: whether the rest of a path beneath a publisher's link
/// may be opened in one call where it holds no link (see [`Walk::open_linkless`]); the
/// tests compare the two ways.
fn open_in_with(
    root: &Dir,
    publish: &Path,
    relative: &Path,
    index: bool,
    linkless: bool,
) -> io::Result<Found> {
    let mut segments: Vec<&OsStr> = relative
        .components()
        .map(|c| match c {
            Component::Normal(segment) => Ok(segment),
            _ => Err(io::Error::from(io::ErrorKind::NotFound)),
        })
        .collect::<io::Result<_>>()?;
    let mut walk = Walk {
        root,
        dir: None,
        ambient: Some(publish.to_owned()),
        linkless,
    };
    let mut index_added = false;
    let mut i = 0;
    loop {
        if i == segments.len() {
            // A directory: its index.html, or a redirect to its `/` form.
            if index_added {
                // An `index.html` that is a directory is no page.
                return Err(io::Error::from(io::ErrorKind::NotFound));
            }
            if !index {
                return Ok(Found::Directory);
            }
            segments.push(OsStr::new("index.html"));
            index_added = true;
        }
        match walk.step(&segments, i)? {
            Step::File(file, meta) if i + 1 == segments.len() && index_added => {
                return Ok(Found::Index(file, meta));
            }
            Step::File(file, meta) if i + 1 == segments.len() => {
                return Ok(Found::File(file, meta));
            }
            Step::File(..) => return Err(io::Error::from(io::ErrorKind::NotADirectory)),
            Step::Reached(file, meta) if index_added => return Ok(Found::Index(file, meta)),
            Step::Reached(file, meta) => return Ok(Found::File(file, meta)),
            Step::Directory => i += 1,
            Step::Resumed(at) => i = at,
        }
    }
}

/// Where a walk stands: the directory reached, and its path while it is still in the
/// publisher's tree.
struct Walk<'r> {
    /// The publish directory, where the walk starts.
    root: &'r Dir,
    /// The directory reached, once the walk has left `root`.
    dir: Option<Dir>,
    /// The path of `dir` as the system resolves it, while no link has been followed
    /// (links are the publisher's there); `None` beneath a followed link.
    ambient: Option<PathBuf>,
    /// Whether [`Walk::open_linkless`] may be tried.
    linkless: bool,
}

/// What one step of a walk found.
enum Step {
    File(std::fs::File, std::fs::Metadata),
    /// A directory, now the walk's.
    Directory,
    /// A publisher's link was followed: the walk goes on from this segment (a segment
    /// already passed, when the link's target ends with the link's own path).
    Resumed(usize),
    /// The last segment, a regular file, reached from a publisher's link in one call.
    Reached(std::fs::File, std::fs::Metadata),
}

impl Walk<'_> {
    /// The directory the walk has reached.
    fn here(&self) -> &Dir {
        self.dir.as_ref().unwrap_or(self.root)
    }

    /// Opens `segments[i]` in the walk's directory.
    fn step(&mut self, segments: &[&OsStr], i: usize) -> io::Result<Step> {
        let segment = segments[i];
        #[cfg(unix)]
        if self.dir.is_none() {
            // In a publication `build` made, a resource's path goes through a link at the
            // top (to the collection: a file at the top is one, as is a directory), and
            // only the publication's own directories and files are real (`resourcesync/`,
            // `.well-known/`, the `robots.txt` it writes): read as a link first, it takes
            // one call instead of a refused open and the read (a real file or directory
            // at the top pays one refused read).
            match self.root.read_link_contents(segment) {
                Ok(target) => return self.follow(segments, i, Some(target)),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        if i + 1 < segments.len() {
            // A segment before the last must be a directory: opened as one (`O_DIRECTORY`,
            // no link followed), it needs no metadata to tell (one system call of the
            // two a file's open and its metadata take).
            match self.here().open_dir_nofollow(segment) {
                Ok(dir) => {
                    self.dir = Some(dir);
                    self.enter(segment);
                    return Ok(Step::Directory);
                }
                // A link (Linux says ENOTDIR for a link with O_DIRECTORY and O_NOFOLLOW,
                // others ELOOP), or a file: `follow` reads the link, and a file is no
                // link (EINVAL, 404 as a path through a file is).
                #[cfg(unix)]
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTDIR | libc::ELOOP)) => {
                    return self.follow(segments, i, None);
                }
                // Anything else as any segment below, which says what it is.
                Err(_) => {}
            }
        }
        let mut options = OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            // A FIFO opened for reading blocks until a writer comes; non-blocking, it
            // opens at once and is refused below as not a regular file.
            options.custom_flags(libc::O_NONBLOCK);
        }
        let opened = self.here().open_with(segment, &options);
        let file = match opened {
            Ok(file) => file.into_std(),
            // O_NOFOLLOW refuses a link with ELOOP, and nothing else: no need to ask.
            #[cfg(unix)]
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return self.follow(segments, i, None);
            }
            Err(e) => {
                // The rarer cases ask the kind: a link (refused by O_NOFOLLOW), or a
                // directory where it cannot be opened as a file (Windows).
                let Ok(meta) = self.here().symlink_metadata(segment) else {
                    return Err(e);
                };
                if meta.is_symlink() {
                    return self.follow(segments, i, None);
                }
                if meta.is_dir() {
                    self.dir = Some(self.here().open_dir_nofollow(segment)?);
                    self.enter(segment);
                    return Ok(Step::Directory);
                }
                return Err(e);
            }
        };
        let meta = file.metadata()?;
        if meta.is_file() {
            Ok(Step::File(file, meta))
        } else if meta.is_dir() {
            self.dir = Some(Dir::from_std_file(file));
            self.enter(segment);
            Ok(Step::Directory)
        } else {
            Err(io::Error::from(io::ErrorKind::NotFound))
        }
    }

    /// Records that the walk went down into `segment`.
    fn enter(&mut self, segment: &OsStr) {
        if let Some(path) = &mut self.ambient {
            path.push(segment);
        }
    }

    /// Follows the link at `segments[i]` if it is the publisher's; see the module.
    /// `target` is the link's, if already read.
    fn follow(
        &mut self,
        segments: &[&OsStr],
        i: usize,
        target: Option<PathBuf>,
    ) -> io::Result<Step> {
        // One link at most is followed: beneath it, none is the publisher's.
        let Some(here) = self.ambient.take() else {
            return Err(not_followed());
        };
        let target = match target {
            Some(target) => target,
            None => self.here().read_link_contents(segments[i])?,
        };
        // The target's ending segments that are the link's own path under the
        // publication: opened one by one from the rest of the target.
        let ending = target
            .components()
            .rev()
            .zip(segments[..=i].iter().rev())
            .take_while(|(c, s)| matches!(c, Component::Normal(c) if c == *s))
            .count();
        let mut start = target.clone();
        for _ in 0..ending {
            start.pop();
        }
        // A relative target is relative to the link's directory.
        let start = here.join(start);
        if ending == 0 {
            // A link of another name (`data -> /srv/store`): the whole target is the
            // publisher's, resolved as the system does.
            return open_ambient(&start).map(|found| match found {
                AmbientFound::File(file, meta) => Step::File(file, meta),
                AmbientFound::Directory(dir) => {
                    self.dir = Some(dir);
                    Step::Directory
                }
            });
        }
        let first = i + 1 - ending;
        #[cfg(target_os = "linux")]
        if self.linkless
            && let Some(step) = self.open_linkless(&start, &segments[first..], segments.len())
        {
            return Ok(step);
        }
        #[cfg(unix)]
        {
            // The first ending segment opened with the rest of the target in one call:
            // the kernel resolves `start` as the system does and, with O_NOFOLLOW,
            // refuses a link as that segment, as the walk would. Two calls and a close
            // fewer than the target's directory, then the segment in it.
            use std::os::unix::fs::OpenOptionsExt;
            let path = start.join(segments[first]);
            let mut options = std::fs::OpenOptions::new();
            options.read(true);
            if first + 1 < segments.len() {
                options.custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW);
                self.dir = Some(Dir::from_std_file(options.open(&path)?));
                return Ok(Step::Resumed(first + 1));
            }
            // The last segment (so `first` is `i`): a file, or a directory.
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
            let file = options.open(&path)?;
            let meta = file.metadata()?;
            if meta.is_file() {
                Ok(Step::File(file, meta))
            } else if meta.is_dir() {
                self.dir = Some(Dir::from_std_file(file));
                Ok(Step::Directory)
            } else {
                Err(io::Error::from(io::ErrorKind::NotFound))
            }
        }
        #[cfg(not(unix))]
        {
            self.dir = Some(Dir::open_ambient_dir(&start, ambient_authority())?);
            Ok(Step::Resumed(first))
        }
    }

    /// Opens `start` (the rest of a publisher's link's target) and the segments `rest`
    /// beneath it, the request's last among them, in one call, where no part of that
    /// path is a link: `openat2` with `RESOLVE_NO_SYMLINKS` refuses a link anywhere on
    /// the way. What it opens is then what the segment-by-segment walk opens: `start`
    /// resolved as the system does (which, with no link in it, is by its names alone),
    /// and each segment beneath opened as no link. One call in place of the open of
    /// the first segment's directory, the open in it and the directory's close; more
    /// for each directory deeper.
    ///
    /// `None` for anything else, a link on the way (the publisher's own path to its
    /// collection may hold one: `/home` a link), no `openat2` (Linux before 5.6, or a
    /// sandbox that refuses it), a missing file or one neither regular nor a directory:
    /// the walk then goes segment by segment, and says what it finds. So the one call
    /// decides nothing the walk would not; it only saves the walk's calls where the
    /// answer is a file or directory found with no link at all.
    #[cfg(target_os = "linux")]
    fn open_linkless(&mut self, start: &Path, rest: &[&OsStr], end: usize) -> Option<Step> {
        use rustix::fs::{Mode, OFlags, ResolveFlags, openat2};
        use std::sync::atomic::{AtomicBool, Ordering};
        /// Set once the kernel has said it has no `openat2`, which it will not gain.
        static MISSING: AtomicBool = AtomicBool::new(false);
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let mut path = start.to_owned();
        for segment in rest {
            path.push(segment);
        }
        // A FIFO is opened non-blocking as in the walk (and then left to it).
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let opened = openat2(
            rustix::fs::CWD,
            &path,
            flags,
            Mode::empty(),
            ResolveFlags::NO_SYMLINKS,
        );
        let file = match opened {
            Ok(fd) => std::fs::File::from(fd),
            Err(rustix::io::Errno::NOSYS) => {
                MISSING.store(true, Ordering::Relaxed);
                return None;
            }
            Err(_) => return None,
        };
        let meta = file.metadata().ok()?;
        if meta.is_file() {
            Some(Step::Reached(file, meta))
        } else if meta.is_dir() {
            self.dir = Some(Dir::from_std_file(file));
            Some(Step::Resumed(end))
        } else {
            None
        }
    }
}

/// What a path resolved as the system does names.
enum AmbientFound {
    File(std::fs::File, std::fs::Metadata),
    Directory(Dir),
}

/// Opens `path` following links, for a target the publisher named in full.
fn open_ambient(path: &Path) -> io::Result<AmbientFound> {
    if std::fs::metadata(path)?.is_dir() {
        return Dir::open_ambient_dir(path, ambient_authority()).map(AmbientFound::Directory);
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        Ok(AmbientFound::File(file, meta))
    } else {
        Err(io::Error::from(io::ErrorKind::NotFound))
    }
}

/// The error of a link that is not followed.
fn not_followed() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "a symbolic link not followed")
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, symlink};

    /// What a walk found, to compare: its kind, and the device and inode of a file.
    fn outcome(found: io::Result<Found>) -> String {
        match found {
            Ok(Found::File(_, meta)) => format!("file {} {}", meta.dev(), meta.ino()),
            Ok(Found::Index(_, meta)) => format!("index {} {}", meta.dev(), meta.ino()),
            Ok(Found::Directory) => "directory".to_owned(),
            Err(e) => format!("error {:?}", e.kind()),
        }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The rest of a path beneath a publisher's link opened in one call finds what the
    /// walk segment by segment finds, for every kind of path: files and directories
    /// through a link straight to the collection, the same through a publisher's path
    /// that holds a link (the one call refused, the walk deciding), links planted in
    /// the collection since (not followed either way), a FIFO, names missing or
    /// through a file.
    #[test]
    fn one_call_beneath_a_publishers_link_opens_what_the_walk_opens() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let real = t.join("real");
        write(&real.join("files/hello.txt"), "hello\n");
        write(&real.join("files/sub/deep.txt"), "deep\n");
        write(&real.join("files/sub/index.html"), "<p>sub</p>\n");
        write(&real.join("top.txt"), "top\n");
        std::fs::create_dir_all(real.join("files/empty")).unwrap();
        write(&t.join("outside/secret.txt"), "secret\n");
        symlink(&real, t.join("alias")).unwrap();
        let files = real.join("files");
        symlink(t.join("outside/secret.txt"), files.join("abs.txt")).unwrap();
        symlink("hello.txt", files.join("alias.txt")).unwrap();
        symlink(t.join("outside"), files.join("out")).unwrap();
        symlink("../hello.txt", files.join("sub/up.txt")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(files.join("fifo"))
            .status()
            .unwrap();
        assert!(fifo.success());

        let paths = [
            "files/hello.txt",
            "files/sub/deep.txt",
            "files/sub",
            "files/empty",
            "top.txt",
            "other/deep.txt",
            "files/abs.txt",
            "files/alias.txt",
            "files/out/secret.txt",
            "files/out",
            "files/sub/up.txt",
            "files/fifo",
            "files/missing.txt",
            "files/hello.txt/more",
            "missing/hello.txt",
        ];
        for (name, base) in [("direct", real.clone()), ("aliased", t.join("alias"))] {
            let publish = t.join(name);
            std::fs::create_dir(&publish).unwrap();
            symlink(base.join("files"), publish.join("files")).unwrap();
            symlink(base.join("top.txt"), publish.join("top.txt")).unwrap();
            // A link of another name: its whole target is the publisher's.
            symlink(base.join("files/sub"), publish.join("other")).unwrap();
            let root = open_publication(&publish).unwrap();
            for path in paths {
                for index in [false, true] {
                    let open = |linkless| {
                        outcome(open_in_with(
                            &root,
                            &publish,
                            Path::new(path),
                            index,
                            linkless,
                        ))
                    };
                    assert_eq!(open(true), open(false), "{name}: {path}, index {index}");
                }
            }
            // And what that is.
            let open =
                |path: &str, index| outcome(open_in(&root, &publish, Path::new(path), index));
            let file = |kind: &str, path: &str| {
                let meta = std::fs::metadata(real.join(path)).unwrap();
                format!("{kind} {} {}", meta.dev(), meta.ino())
            };
            assert_eq!(
                open("files/hello.txt", false),
                file("file", "files/hello.txt")
            );
            assert_eq!(
                open("other/deep.txt", false),
                file("file", "files/sub/deep.txt")
            );
            assert_eq!(
                open("files/sub", true),
                file("index", "files/sub/index.html")
            );
            assert_eq!(open("files/sub", false), "directory");
            for refused in [
                "files/abs.txt",
                "files/alias.txt",
                "files/out/secret.txt",
                "files/sub/up.txt",
                "files/fifo",
                "files/empty",
            ] {
                assert!(
                    open(refused, true).starts_with("error"),
                    "{name}: {refused}"
                );
            }
        }

        // The one call is taken where no link is on the way, and refused where the
        // publisher's path holds one (the walk then opens it, as above).
        let root = open_publication(&t.join("direct")).unwrap();
        let mut walk = Walk {
            root: &root,
            dir: None,
            ambient: None,
            linkless: true,
        };
        let rest = [OsStr::new("files"), OsStr::new("hello.txt")];
        assert!(matches!(
            walk.open_linkless(&real, &rest, 2),
            Some(Step::Reached(..))
        ));
        assert!(walk.open_linkless(&t.join("alias"), &rest, 2).is_none());
        assert!(matches!(
            walk.open_linkless(&real, &rest[..1], 1),
            Some(Step::Resumed(1))
        ));
        let planted = [OsStr::new("files"), OsStr::new("abs.txt")];
        assert!(walk.open_linkless(&real, &planted, 2).is_none());
    }
}
