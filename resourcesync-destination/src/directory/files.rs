//! DIR's files opened as its own: by handle, no link followed, regular files only; their
//! digests, and a package's bitstream copied into place.

use super::*;

/// The temporary file's name of a request's body: `request-<number>`, the id's text with
/// a hyphen (made twice a file: written without its `Display` and a replace).
pub(crate) fn temp_name(id: RequestId) -> String {
    use std::fmt::Write;
    let mut name = String::with_capacity(28);
    name.push_str("request-");
    let _ = write!(name, "{}", id.number());
    name
}

/// Moves the body `temp` (in `tmp`) into `dir` as `name`: with `new`, only if nothing is
/// at `name` ([`rename_new`], an error of kind `AlreadyExists` if something is, left as
/// it is; where the file system cannot, a plain rename, the caller having checked);
/// without, replacing what is there.
pub(super) fn move_into(
    tmp: &Dir,
    temp: &str,
    dir: &Dir,
    name: &std::ffi::OsStr,
    new: bool,
) -> io::Result<()> {
    if new && rename_new(tmp, temp, dir, name)? {
        return Ok(());
    }
    tmp.rename(temp, dir, name)
}

/// Moves the body `temp` (in `tmp`) into `dir` as `name` only if nothing is at `name`,
/// the check and the move in one step (`renameat2` with `RENAME_NOREPLACE`): `Ok(true)`
/// once moved; an error of kind `AlreadyExists` where something is there, left as it is;
/// `Ok(false)`, nothing moved, where the system or the file system cannot (`EINVAL`,
/// which a file system also says of a name it cannot hold; the caller checks, then
/// renames, and that rename says what is wrong with the name).
pub(super) fn rename_new(
    tmp: &Dir,
    temp: &str,
    dir: &Dir,
    name: &std::ffi::OsStr,
) -> io::Result<bool> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{RenameFlags, renameat_with};
        // By handle and by single names: nothing on the way to resolve, and a link at
        // `name` is something there, not followed.
        match renameat_with(tmp, temp, dir, name, RenameFlags::NOREPLACE) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        let _ = (tmp, temp, dir, name);
        Ok(false)
    }
}

/// The rules of names of the file system `tmp` is on: a file made under one name, looked
/// for under another that differs in case, then in normalization.
pub(super) fn probe(tmp: &Dir) -> io::Result<FileSystem> {
    let same = |made: &str, other: &str| -> io::Result<bool> {
        tmp.write(made, b"")?;
        let found = tmp.symlink_metadata(other).is_ok();
        tmp.remove_file(made)?;
        Ok(found)
    };
    let case_insensitive = same("probe-Case", "probe-cASE")?;
    // U+00E9 composed, and e with U+0301 decomposed.
    let normalizing = same("probe-\u{e9}", "probe-e\u{301}")?;
    Ok(FileSystem::new(
        cfg!(windows),
        case_insensitive,
        normalizing,
    ))
}

/// Opens `name` under `kept` (`.resourcesync/`) as one of this program's own files with
/// `options`: never through a symbolic link, never waiting on a FIFO (opened
/// non-blocking), and only if what it opened is a regular file (not a FIFO, a device or
/// a directory, which could be read without end or hang the run).
pub(super) fn own_file(
    kept: &Dir,
    name: &str,
    options: &mut cap_std::fs::OpenOptions,
) -> io::Result<std::fs::File> {
    let file = regular_file(kept, Path::new(name), options)?;
    // A hard link to a file elsewhere would have this program write there.
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if file.metadata()?.nlink() > 1 {
            return Err(io::Error::other(format!(
                "{name} has other names (a hard link): not this program's own file"
            )));
        }
    }
    Ok(file)
}

/// Opens `path` under `dir` with `options` as a regular file: not through a symbolic
/// link at its end (the directories on the way are the caller's to check), never waiting
/// on a FIFO (opened non-blocking), and only if what it opened is a regular file.
pub(super) fn regular_file(
    dir: &Dir,
    path: &Path,
    options: &mut cap_std::fs::OpenOptions,
) -> io::Result<std::fs::File> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
    options.follow(FollowSymlinks::No);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = dir.open_with(path, options)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file (a FIFO, a device or a directory)",
            path.display()
        )));
    }
    Ok(file.into_std())
}

/// Opens (making it if missing) the directory `name` under `parent`, which must be a
/// directory and not a symbolic link. `shown` is `parent`'s path, for the errors.
pub(super) fn own_dir(parent: &Dir, name: &Path, shown: &Path) -> Result<Dir, DestinationError> {
    match parent.create_dir(name) {
        // Made now, or there already (by another run at the same moment too, shards
        // starting together): used if it is a directory, not a link to one.
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(DestinationError::Io {
                path: shown.join(name),
                source,
            });
        }
    }
    existing_own_dir(parent, name, shown)
}

/// [`own_dir`] for a run that makes nothing: `name` in `parent` must be there, a
/// directory (not a symbolic link to one).
pub(super) fn existing_own_dir(
    parent: &Dir,
    name: &Path,
    shown: &Path,
) -> Result<Dir, DestinationError> {
    let path = shown.join(name);
    match parent.symlink_metadata(name) {
        Ok(meta) if meta.is_dir() => parent
            .open_dir(name)
            .map_err(|source| DestinationError::Io { path, source }),
        Ok(_) => Err(DestinationError::NotOwnDirectory { path }),
        Err(source) => Err(DestinationError::Io { path, source }),
    }
}

/// The length and the digests `algorithms` of the file at `path` under `root`: opened
/// as a regular file only ([`regular_file`]), so that a FIFO or a link swapped in since
/// its metadata was read is neither waited on nor followed.
pub(super) fn digest_file(root: &Dir, path: &Path, algorithms: Algorithms) -> io::Result<Measured> {
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    let mut file = regular_file(root, path, &mut options)?;
    let mut measure = Measure::new(algorithms);
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(measure.finish());
        }
        measure.update(&buf[..n]);
    }
}

/// Whether the file at `path` under `root` is what `held` records (each of its fields
/// that it has), read for the digests `held` records. A record with neither a length
/// nor a digest proves nothing, and so not that the file is the sync's.
pub(super) fn holds_file(root: &Dir, path: &Path, held: &Held) -> io::Result<bool> {
    if held.length.is_none() && held.md5.is_none() && held.sha256.is_none() {
        return Ok(false);
    }
    let found = digest_file(root, path, held.algorithms())?;
    Ok(holds(held, &found))
}

/// Whether `found` is what `held` records (each of its fields that it has; `found`
/// computed for [`Held::algorithms`]). A record with neither a length nor a digest
/// proves nothing, and so not that the file is the sync's.
pub(crate) fn holds(held: &Held, found: &Measured) -> bool {
    (held.length.is_some() || held.md5.is_some() || held.sha256.is_some())
        && held.length.is_none_or(|l| l == found.length)
        && held.md5.is_none_or(|d| found.md5 == Some(d))
        && held.sha256.is_none_or(|d| found.sha256 == Some(d))
}

/// Copies bitstream `i` of `package` to the temporary file `temp`, verified as it is
/// read.
pub(crate) fn copy_bitstream(
    package: &mut Package<io::BufReader<std::fs::File>>,
    i: usize,
    bodies: &Bodies,
    temp: &str,
) -> io::Result<Measured> {
    let mut reader = package.bitstream(i).map_err(io::Error::other)?;
    let mut file = bodies.tmp.create(temp)?.into_std();
    let mut fixity = Fixity::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        fixity.update(&buf[..n]);
        file.write_all(&buf[..n])?;
    }
    file.sync_all()?;
    Ok(fixity.finish().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bodys_temporary_name_is_its_requests_text_with_a_hyphen() {
        // The form the bodies' temporary files have had since the first release.
        let id = crate::directory::test_support::first_request("http://example.com/").id;
        assert_eq!(temp_name(id), id.to_string().replace(' ', "-"));
        assert_eq!(temp_name(id), format!("request-{}", id.number()));
    }

    #[test]
    fn a_new_file_is_moved_only_where_nothing_is() {
        let dir = tempfile::tempdir().unwrap();
        let open = |name: &str| {
            std::fs::create_dir(dir.path().join(name)).unwrap();
            Dir::open_ambient_dir(dir.path().join(name), ambient_authority()).unwrap()
        };
        let (tmp, to) = (open("tmp"), open("to"));
        tmp.write("1", b"new").unwrap();
        to.write("theirs", b"theirs").unwrap();
        #[cfg(unix)]
        to.symlink("theirs", "link").unwrap();
        match rename_new(&tmp, "1", &to, "theirs".as_ref()) {
            // Where the system cannot, nothing moved: the caller checks first.
            Ok(false) => assert!(tmp.exists("1")),
            moved => {
                let e = moved.unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::AlreadyExists, "{e}");
                assert_eq!(to.read("theirs").unwrap(), b"theirs");
                assert!(tmp.exists("1"));
                // A link there is something there, not followed.
                #[cfg(unix)]
                assert!(rename_new(&tmp, "1", &to, "link".as_ref()).is_err());
                assert!(rename_new(&tmp, "1", &to, "ours".as_ref()).unwrap());
                assert_eq!(to.read("ours").unwrap(), b"new");
            }
        }
        assert_eq!(to.read("theirs").unwrap(), b"theirs");
    }
}
