//! A publish directory's generations: each run writes a whole new one beside it, and one
//! rename of a symbolic link, the publish directory itself, switches to it; a failed or
//! killed run leaves the last one published.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// Where a publish directory's generations, lock and links live.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The publish directory (a symbolic link once published).
    pub(crate) publish: PathBuf,
    /// `.<name>.resourcesync/` beside it.
    pub(crate) generations: PathBuf,
}

impl Layout {
    pub(crate) fn new(publish: &Path) -> Result<Layout, StoreError> {
        // `pub/` names the link's target, not the link: drop the trailing slash (and any
        // `.` segments), as a shell's completion adds it.
        let publish: PathBuf = publish.components().collect();
        let publish = publish.as_path();
        let not_ours = |reason| StoreError::NotOurs {
            path: publish.to_owned(),
            reason,
        };
        let name = publish
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| not_ours("the publish directory needs a UTF-8 name"))?;
        let parent = match publish.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        Ok(Layout {
            publish: publish.to_owned(),
            generations: parent.join(format!(".{name}.resourcesync")),
        })
    }

    /// Takes the lock of the publish directory, held until the returned file is dropped
    /// (the system releases it if the process dies): one publisher at a time.
    pub(crate) fn lock(&self) -> Result<File, StoreError> {
        fs::create_dir_all(&self.generations).map_err(|source| StoreError::Io {
            path: self.generations.clone(),
            source,
        })?;
        let path = self.generations.join("lock");
        let lock = File::create(&path).map_err(|source| StoreError::Io {
            path: path.clone(),
            source,
        })?;
        if lock.try_lock().is_err() {
            return Err(StoreError::Busy {
                publish: self.publish.clone(),
                lock: path,
            });
        }
        Ok(lock)
    }

    pub(crate) fn generation(&self, number: u64) -> PathBuf {
        self.generations.join(format!("{number:05}"))
    }

    /// The link's target for generation `number`, relative to the link's directory so
    /// that the whole tree can be moved.
    pub(crate) fn target(&self, number: u64) -> PathBuf {
        let dir = self.generations.file_name().unwrap_or_default();
        Path::new(dir).join(format!("{number:05}"))
    }

    /// The generation the publish directory links to now, if any; an error when it is
    /// something else than a publisher made (or an empty directory, which is taken).
    pub(crate) fn current(&self) -> Result<Option<u64>, StoreError> {
        let not_ours = |reason| StoreError::NotOurs {
            path: self.publish.clone(),
            reason,
        };
        let meta = match fs::symlink_metadata(&self.publish) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    path: self.publish.clone(),
                    source,
                });
            }
        };
        if meta.is_dir() {
            let empty = fs::read_dir(&self.publish)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            return if empty {
                Ok(None)
            } else {
                Err(not_ours(
                    "a directory with files that this publisher did not publish; give a new path",
                ))
            };
        }
        if !meta.file_type().is_symlink() {
            return Err(not_ours("not a directory this publisher publishes to"));
        }
        let target = fs::read_link(&self.publish).map_err(|source| StoreError::Io {
            path: self.publish.clone(),
            source,
        })?;
        let number = target
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| target == self.target(*n))
            .ok_or_else(|| not_ours("a symbolic link that this publisher did not make"))?;
        Ok(Some(number))
    }
}

pub(crate) fn remove_dir(path: &Path) -> Result<(), StoreError> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(StoreError::Io {
            path: path.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Points the publish directory at generation `number`: a new link beside it, renamed
/// over it, which is atomic. An empty directory in its place is removed first.
pub(crate) fn switch(layout: &Layout, number: u64) -> Result<(), StoreError> {
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| StoreError::Io { path, source }
    };
    // Made beside the publish directory, since its target is relative to that
    // directory's parent, and a rename is atomic only within one file system.
    let staged = layout.publish.with_file_name(format!(
        ".{}.link",
        layout
            .publish
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("publish")
    ));
    // A link a killed run left.
    let _ = fs::remove_file(&staged);
    symlink(&layout.target(number), &staged).map_err(write(&staged))?;
    if fs::symlink_metadata(&layout.publish).is_ok_and(|m| m.is_dir()) {
        // Checked empty by `Layout::current`.
        fs::remove_dir(&layout.publish).map_err(write(&layout.publish))?;
    }
    fs::rename(&staged, &layout.publish).map_err(|e| {
        let _ = fs::remove_file(&staged);
        StoreError::Io {
            path: layout.publish.clone(),
            source: e,
        }
    })?;
    // Durable once the directory holding the link is synced.
    if let Some(parent) = layout
        .publish
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        let _ = File::open(parent).and_then(|d| d.sync_all());
    }
    Ok(())
}

#[cfg(unix)]
pub(crate) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
pub(crate) fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "publishing switches generations by symbolic links, which need a Unix system",
    ))
}

/// Removes every generation but `keep` and the one before it, and leftovers of runs that
/// never switched.
pub(crate) fn remove_old_generations(layout: &Layout, keep: u64, before: Option<u64>) {
    let Ok(entries) = fs::read_dir(&layout.generations) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(n) = name.to_str().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        if n != keep && Some(n) != before {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}
