//! Where a publish directory's generations, lock and links live, and the one rename that
//! switches from one generation to the next.

use super::*;

/// Where a publish directory's generations, lock and links live.
pub(super) struct Layout {
    /// The publish directory (a symbolic link once published).
    pub(super) publish: PathBuf,
    /// `.<name>.resourcesync/` beside it.
    pub(super) generations: PathBuf,
}

impl Layout {
    pub(super) fn new(publish: &Path) -> Result<Layout, BuildError> {
        // `pub/` names the link's target, not the link: drop the trailing slash (and any
        // `.` segments), as a shell's completion adds it.
        let publish: PathBuf = publish.components().collect();
        let publish = publish.as_path();
        let not_ours = |reason| BuildError::NotOurs {
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

    pub(super) fn generation(&self, number: u64) -> PathBuf {
        self.generations.join(format!("{number:05}"))
    }

    /// The link's target for generation `number`, relative to the link's directory so
    /// that the whole tree can be moved.
    pub(super) fn target(&self, number: u64) -> PathBuf {
        let dir = self.generations.file_name().unwrap_or_default();
        Path::new(dir).join(format!("{number:05}"))
    }

    /// The generation the publish directory links to now, if any; an error when it is
    /// something else than this command made (or an empty directory, which is taken).
    pub(super) fn current(&self) -> Result<Option<u64>, BuildError> {
        let not_ours = |reason| BuildError::NotOurs {
            path: self.publish.clone(),
            reason,
        };
        let meta = match fs::symlink_metadata(&self.publish) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(BuildError::Read {
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
                    "a directory with files that build did not publish; give a new path",
                ))
            };
        }
        if !meta.file_type().is_symlink() {
            return Err(not_ours("not a directory build publishes to"));
        }
        let target = fs::read_link(&self.publish).map_err(|source| BuildError::Read {
            path: self.publish.clone(),
            source,
        })?;
        let number = target
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| target == self.target(*n))
            .ok_or_else(|| not_ours("a symbolic link that build did not make"))?;
        Ok(Some(number))
    }
}

pub(super) fn remove_dir(path: &Path) -> Result<(), BuildError> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(BuildError::Write {
            path: path.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Points the publish directory at generation `number`: a new link beside it, renamed
/// over it, which is atomic. An empty directory in its place is removed first.
pub(super) fn switch(layout: &Layout, number: u64) -> Result<(), BuildError> {
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| BuildError::Write { path, source }
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
        BuildError::Write {
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
pub(super) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
pub(super) fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "publishing switches generations by symbolic links, which need a Unix system",
    ))
}

/// Removes every generation but `keep` and the one before it, and leftovers of runs that
/// never switched.
pub(super) fn remove_old_generations(layout: &Layout, keep: u64, before: Option<u64>) {
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

/// Hard-links (or copies, across file systems) the files of `from` that `keep` names into
/// `to`: documents and packages of earlier runs that do not change.
pub(super) fn carry_over(
    from: &Path,
    to: &Path,
    keep: impl Fn(&str) -> bool,
) -> Result<(), BuildError> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(BuildError::Read {
                path: from.to_owned(),
                source,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| BuildError::Read {
            path: from.to_owned(),
            source,
        })?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(&keep) {
            continue;
        }
        let target = to.join(&name);
        if fs::hard_link(entry.path(), &target).is_err() {
            fs::copy(entry.path(), &target).map_err(|source| BuildError::Write {
                path: target.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Links the collection's published files into the generation, so that a web server
/// serves them where the documents say: a whole directory by one link when nothing under
/// it was skipped (usually one link per top-level entry, whatever the collection's size),
/// else a real directory whose entries are linked in the same way, so that nothing skipped
/// (a hidden file, a symbolic link, …) is served through a link to its directory.
pub(super) fn link_collection(
    collection: &Path,
    dir: &Path,
    resources: &[Published],
    skipped: &[Skipped],
) -> Result<(), BuildError> {
    // In path order, each once.
    let files: Vec<&str> = resources.iter().map(|p| p.path.as_str()).collect();
    // The directories holding something skipped, and theirs up to the top.
    let mut split = HashSet::new();
    for skipped in skipped {
        let mut ancestor = skipped.path.parent();
        while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
            split.insert(a.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"));
            ancestor = a.parent();
        }
    }
    link_level(collection, dir, "", &files, &split)
}

/// Links the entries of the directory `prefix` (`""` for the top) that hold published
/// files; see [`link_collection`].
pub(super) fn link_level(
    collection: &Path,
    dir: &Path,
    prefix: &str,
    files: &[&str],
    split: &HashSet<String>,
) -> Result<(), BuildError> {
    let start = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    // The files under `prefix` sort together, after `start`; so do those under each
    // child (or the child itself, a file), which are passed over at once.
    let mut files = &files[files.partition_point(|file| *file < start.as_str())..];
    while let Some(rest) = files
        .first()
        .and_then(|file| file.strip_prefix(start.as_str()))
    {
        let child = rest.split('/').next().unwrap_or(rest);
        let relative = format!("{start}{child}");
        let under = format!("{relative}/");
        let (its, others) =
            files.split_at(files.partition_point(|f| *f == relative || f.starts_with(&under)));
        files = others;
        let target = dir.join(&relative);
        let made = if split.contains(&relative) {
            fs::create_dir(&target)
        } else {
            symlink(&collection.join(&relative), &target)
        };
        made.map_err(|source| BuildError::Write {
            path: target.clone(),
            source,
        })?;
        if split.contains(&relative) {
            link_level(collection, dir, &relative, its, split)?;
        }
    }
    Ok(())
}
