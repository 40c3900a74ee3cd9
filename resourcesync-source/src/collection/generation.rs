//! The collection's files linked into a generation, and the documents of earlier runs
//! carried over into it.

use super::*;

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
        // Only what the publisher wrote there, a regular file: a link planted among the
        // documents would be carried into every later generation (and followed by a copy)
        // and served.
        let regular = entry.file_type().is_ok_and(|kind| kind.is_file());
        if !regular {
            return Err(BuildError::Read {
                path: entry.path(),
                source: io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not a file the publisher wrote (a symbolic link, or not a regular file): \
                     not carried into the next generation; remove it",
                ),
            });
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
    resources: &[Published<'_>],
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
