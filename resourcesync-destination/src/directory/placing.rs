//! Placing and removing DIR's files: a body moved into its path, or adopted, or refused
//! as a conflict; a file the sync stored removed with the directories it leaves empty;
//! the directories on the way made and checked, by handle.

use super::*;

/// One body on its way to its path: what [`DirectoryDestination::place`] tries, twice
/// at most.
struct Placement<'a> {
    /// The finished temporary file's name.
    temp: &'a str,
    change: &'a Decision,
    digests: &'a Measured,
    /// What the sync stored at the path, if anything.
    held: Option<Held>,
    /// The change's path, made once.
    target: &'a Path,
    /// Whether the journal's line was written.
    journaled: bool,
}

impl DirectoryDestination {
    /// Moves the finished temporary file `temp` to the change's path, unless that path
    /// holds what no sync stored (see the [module](self)); `journaled` if its journal
    /// line was written already ([`prepare`](Self::prepare)).
    pub(super) fn place(
        &mut self,
        temp: &str,
        change: &Decision,
        digests: &Measured,
        held: Option<Held>,
        journaled: bool,
    ) -> Result<(), Outcome> {
        let target = change.path.to_path_buf();
        if target.file_name().is_none() {
            return Err(Outcome::Failed(io::Error::other("a path without a name")));
        };
        let mut placement = Placement {
            temp,
            change,
            digests,
            held,
            target: &target,
            journaled,
        };
        let mut again = true;
        loop {
            let parent = self.parent_of(placement.target).map_err(Outcome::Failed)?;
            match self.place_in(&mut placement, &parent) {
                // A directory this run made was removed since (emptied by a deletion, or
                // by someone else, who may have put it back with files of theirs): made
                // or found again, and everything decided again there, where what the
                // handle on the old one said no longer holds.
                Err(Outcome::Failed(e)) if e.kind() == io::ErrorKind::NotFound && again => {
                    again = false;
                    if let Some(parent) = placement.target.parent() {
                        self.made.remove(parent);
                    }
                }
                other => return other,
            }
        }
    }

    /// The placement's journal line, unless it was written already (ahead, by
    /// [`prepare`](Self::prepare); a placement tried again in a directory made again
    /// writes it once).
    fn journal_once(&mut self, placement: &mut Placement<'_>) -> Result<(), Outcome> {
        if !placement.journaled {
            self.journal(placement.change, placement.digests)
                .map_err(Outcome::Failed)?;
            placement.journaled = true;
        }
        Ok(())
    }

    /// [`place`](Self::place) in the directory `parent` (DIR itself for `None`).
    fn place_in(
        &mut self,
        placement: &mut Placement<'_>,
        parent: &Option<Arc<Dir>>,
    ) -> Result<(), Outcome> {
        let Placement {
            temp,
            digests,
            held,
            target,
            ..
        } = *placement;
        // `place` made sure the path has a name.
        let name = target.file_name().unwrap_or_default();
        // A new file: moved into place only if nothing is there, in one step, so a file
        // someone else makes at its name meanwhile is never replaced (and no `stat`
        // first). The journal's line comes first, as for every placement; where the
        // move finds something there, the checks below decide, and a line left for a
        // file that is not the sync's is harmless: a replay records it only if the
        // file holds the listed bytes, which is what adoption does.
        if held.is_none() && !self.replace_foreign {
            self.journal_once(placement)?;
            let dir = parent.as_deref().unwrap_or(&self.root);
            match rename_new(&self.bodies.tmp, temp, dir, name) {
                Ok(true) => return Ok(()),
                // Something there, the directory removed since, or a file system that
                // cannot (or a name it refuses): as below.
                Ok(false) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound
                    ) => {}
                Err(e) => return Err(Outcome::Failed(e)),
            }
        }
        let dir = parent.as_deref().unwrap_or(&self.root);
        // Nothing at the path: the move must not replace what someone makes there
        // before it.
        let absent = match dir.symlink_metadata(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(Outcome::Failed(e)),
            // Replaced: a file, a link, a special file; never a directory, which holds
            // what is not the sync's to remove (as below).
            Ok(meta) if self.replace_foreign && !meta.is_dir() => false,
            // Held: the sync's own file, replaced if it still holds what the inventory
            // records (what the sync stored; a file a baseline's `verify` found changed
            // is recorded as holding what no file holds). Edited since: kept, as a
            // deletion would keep it. The length first, which the metadata has: an edit mostly changes it.
            Ok(meta) if meta.is_file() && held.is_some() => {
                if let Some(held) = held
                    && !self.unchanged(target, meta.len(), &held)?
                {
                    // Already the new bytes (placed by a run whose journal line was
                    // lost, or copied in by hand): taken as they are, as adoption does.
                    if meta.len() == digests.length
                        && digest_file(&self.root, target, digests.algorithms())
                            .is_ok_and(|f| f == *digests)
                    {
                        let _ = self.bodies.tmp.remove_file(temp);
                        self.journal_once(placement)?;
                        return Ok(());
                    }
                    return Err(Outcome::Conflict(
                        "changed since the sync stored it: kept, not replaced".into(),
                    ));
                }
                false
            }
            Ok(meta) if meta.is_file() => {
                match digest_file(&self.root, target, digests.algorithms()) {
                    // The listed bytes already: adopted as they are (the line is written:
                    // only a new file comes here).
                    Ok(found) if found == *digests => {
                        let _ = self.bodies.tmp.remove_file(temp);
                        self.journal_once(placement)?;
                        return Ok(());
                    }
                    Ok(_) => {
                        return Err(Outcome::Conflict(
                            "a file no sync stored, with other bytes: left as it is".into(),
                        ));
                    }
                    Err(e) => return Err(Outcome::Failed(e)),
                }
            }
            Ok(meta) => {
                // A sync makes directories (the parents of what it stores), so one
                // may be its own: where the Source's `d/y` became a file `d`, the
                // directory goes once what the sync stored in it is deleted (--delete),
                // and a later run places the file. Links and special files no sync makes.
                let what = if meta.is_symlink() {
                    "a symbolic link no sync made"
                } else if meta.is_dir() {
                    "a directory (a file goes here once it is gone)"
                } else {
                    "a special file no sync made"
                };
                return Err(Outcome::Conflict(format!("{what}: left as it is")));
            }
        };
        self.journal_once(placement)?;
        let new = absent && !self.replace_foreign;
        let dir = parent.as_deref().unwrap_or(&self.root);
        move_into(&self.bodies.tmp, temp, dir, name, new).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists if new => Outcome::Conflict(
                "a file appeared at its path while it was placed: left as it is".into(),
            ),
            _ => Outcome::Failed(e),
        })
    }

    /// Removes the file at `path` if it holds what the sync stored there (`held`), and
    /// the directories it leaves empty.
    pub(super) fn delete(&mut self, path: &LocalPath, held: Option<Held>) -> Result<(), Outcome> {
        let target = path.to_path_buf();
        if let Some(parent) = target.parent()
            && let Err(e) = self.checked(parent)
        {
            // A directory on the way is missing: so is the file.
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(()),
                _ => Err(Outcome::Failed(e)),
            };
        }
        let len = match self.root.symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Outcome::Failed(e)),
            Ok(meta) if !meta.is_file() => {
                return Err(Outcome::Conflict(
                    "not the file the sync stored (a link, a directory): kept".into(),
                ));
            }
            Ok(meta) => meta.len(),
        };
        // No record of what the sync stored (a lookup that failed, an inventory of the
        // caller's that lost it): nothing proves the file is the sync's to delete.
        let Some(held) = held else {
            return Err(Outcome::Conflict(
                "no record of what the sync stored there: kept".into(),
            ));
        };
        if !self.unchanged(&target, len, &held)? {
            return Err(Outcome::Conflict(
                "changed since the sync stored it: kept, no longer the sync's".into(),
            ));
        }
        match self.root.remove_file(&target) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(Outcome::Failed(e)),
            _ => {}
        }
        let mut dir = target.parent();
        while let Some(d) = dir {
            if d.as_os_str().is_empty() || self.root.remove_dir(d).is_err() {
                break;
            }
            self.made.remove(d);
            dir = d.parent();
        }
        Ok(())
    }

    /// Whether the file at `target`, `len` bytes long, still holds what `held` records:
    /// the length first (no read when it differs, as after most edits), then the digests.
    fn unchanged(&self, target: &Path, len: u64, held: &Held) -> Result<bool, Outcome> {
        if held.length.is_some_and(|l| l != len) {
            return Ok(false);
        }
        holds_file(&self.root, target, held).map_err(Outcome::Failed)
    }

    /// Makes the directory of `target` (relative to the root), checking that none on the
    /// way is a symbolic link; once per directory and run. Returns a handle on it; `None`
    /// for a file at the root.
    fn parent_of(&mut self, target: &Path) -> io::Result<Option<Arc<Dir>>> {
        let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) else {
            return Ok(None);
        };
        // Found, the usual case: no path copied (a hot path, once per file).
        if let Some(dir) = self.made.get(parent) {
            return Ok(Some(dir.clone()));
        }
        match self.checked(parent) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.root.create_dir_all(parent)?;
                self.checked(parent)?;
            }
            other => other?,
        }
        // Every level was just checked to be a directory, not a link; the last is opened
        // without following one, should it have been swapped in since.
        let dir = Arc::new(self.root.open_dir_nofollow(parent)?);
        self.made.insert(parent.to_owned(), dir.clone());
        Ok(Some(dir))
    }

    /// Checks that every directory of `dir` (relative to the root) is one, not a link.
    pub(super) fn checked(&self, dir: &Path) -> io::Result<()> {
        let mut at = PathBuf::new();
        for component in dir.components() {
            let Component::Normal(name) = component else {
                return Err(io::Error::other("not a plain relative path"));
            };
            at.push(name);
            let meta = self.root.symlink_metadata(&at)?;
            if !meta.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is {}, not a directory of DIR's own",
                    at.display(),
                    if meta.is_symlink() {
                        "a symbolic link"
                    } else {
                        "a file"
                    }
                )));
            }
        }
        Ok(())
    }
}
