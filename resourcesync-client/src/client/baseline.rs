//! Baseline and audit: a listing compared with the inventory, and what the inventory
//! holds that the listing no longer lists.

use resourcesync_model::{Entry, Uri};

use super::incremental::mirrors;
use super::{Client, hash};
use crate::config::Mode;
use crate::event::{Action, Event, ProblemKind, Standing};
use crate::inventory::{Comparison, Difference, Inventory};
use crate::local_path::LocalPathError;
use crate::request::RequestId;
use crate::state::Refetch;

impl<I: Inventory> Client<I> {
    /// One resource of a listing (a Resource List entry, or a bitstream of a Resource
    /// Dump package): compared with the inventory, and a change decided if it differs.
    pub(super) fn listed_entry(
        &mut self,
        set: usize,
        entry: &Entry,
        bitstream: Option<(RequestId, usize)>,
    ) {
        if !self.config.in_shard(&entry.loc) {
            return;
        }
        self.report.listed += 1;
        self.progress.listed += 1;
        // Kept only for what reads it once the listing is whole: deletions, an audit.
        let keep = match self.config.mode {
            Mode::Audit => true,
            Mode::Incremental | Mode::Explore => false,
            _ => self.config.delete,
        };
        if keep {
            self.listed.push(hash(&entry.loc));
        }
        let held = self.inventory.get(&entry.loc);
        let comparison = held.map(|h| h.compare(entry.md.as_ref(), entry.lastmod.as_ref()));
        // An audit of a Source that moved since its listing: what differs is judged
        // again once the Change Lists since the listing's `at` are read (see `moving`).
        if self.config.mode == Mode::Audit
            && !matches!(comparison, Some(Comparison::Same))
            && self.audit_reconciles(set)
        {
            let listed = Refetch::new(entry.loc.clone(), entry.md.clone(), entry.lastmod);
            self.sets[set].deferred.insert(entry.loc.clone(), listed);
            return;
        }
        let action = match comparison {
            Some(Comparison::Same) => {
                self.report.unchanged += 1;
                return;
            }
            // Nothing listed to compare (a `<loc>` alone, or a length that agrees): an
            // audit cannot tell, and says so in its own count rather than call a file
            // changed that a baseline stored a moment ago. A baseline fetches it again.
            Some(Comparison::Differs(Difference::Unknown)) if self.config.mode == Mode::Audit => {
                self.report.unverified += 1;
                return;
            }
            Some(Comparison::Differs(d)) => {
                if self.config.mode == Mode::Audit {
                    self.report.changed += 1;
                    self.events.push_back(Event::Audit {
                        uri: entry.loc.clone(),
                        standing: Standing::Changed(d),
                    });
                    return;
                }
                Action::Update
            }
            None => {
                if self.config.mode == Mode::Audit {
                    self.report.missing += 1;
                    self.events.push_back(Event::Audit {
                        uri: entry.loc.clone(),
                        standing: Standing::Missing,
                    });
                    return;
                }
                Action::Create
            }
        };
        let mirrors = mirrors(entry);
        if self
            .decide(set, action, entry, mirrors, bitstream)
            .is_none()
        {
            // Refused: not held, and not a creation the listing missed either.
            self.sets[set].declined.insert(hash(&entry.loc));
        }
    }

    /// After the whole listing was read: deletions (baseline) or extras (audit).
    pub(super) fn sweep(&mut self) {
        if self.sets.is_empty() {
            if self.report.problems == 0 {
                self.push_problem(
                    Some(&self.config.start.clone()),
                    None,
                    ProblemKind::NotOffered("Source Description"),
                );
            }
            return;
        }
        let audit = self.config.mode == Mode::Audit;
        if self.config.mode == Mode::Explore || (!audit && !self.config.delete) {
            return;
        }
        // An audit counts what it holds beyond the listing all the same: one created
        // since is said as extra, where no extra would be said in sync.
        let unreconciled = !audit && self.sets.iter().any(|s| s.unreconciled);
        if self.root_unread || unreconciled || self.sets.iter().any(|s| s.failed || s.unread) {
            if !audit {
                // Which of them: a run whose listing was read whole but whose writes
                // failed was told its listing was not read.
                let why = if self.root_unread {
                    "the Source Description was not read whole"
                } else if self.sets.iter().any(|s| s.unread) {
                    "the listing was not read whole (or an entry of the Change Lists since \
                     it could not be read)"
                } else if unreconciled && !self.sets.iter().any(|s| s.failed) {
                    "the Change Lists since the listing were not read to its time (what it \
                     does not list may have been created since)"
                } else {
                    // A document or a package of the listing (a resource that failed
                    // leaves the sweep to go ahead: `Set::resource_failed`).
                    "a document or a package of the listing failed (said above)"
                };
                self.warn(None, None, None, format!("{why}: nothing is deleted"));
            }
            return;
        }
        if !audit {
            // What the listing missed, as the Change Lists before its `at` say.
            for s in &mut self.sets {
                let kept = std::mem::take(&mut s.reflected).into_iter();
                let kept = kept.filter(|(_, (_, alive))| *alive);
                self.listed.extend(kept.map(|(h, _)| h));
            }
        }
        self.listed.sort_unstable();
        let listed = std::mem::take(&mut self.listed);
        // What the Change Lists deleted: counted once, with what the listing does not
        // list.
        let named = std::mem::take(&mut self.listed_deletions);
        let config = &self.config;
        let paths = &self.config.paths;
        let limit = if audit {
            u64::MAX
        } else {
            self.config.max_deletes
        };
        let mut count = named.len() as u64;
        let take = usize::try_from(limit).unwrap_or(usize::MAX);
        let mut gone: Vec<Uri> = named.values().take(take).cloned().collect();
        self.inventory.for_each(&mut |uri, _| {
            if !config.in_shard(uri)
                || listed.binary_search(&hash(uri)).is_ok()
                || named.contains_key(&hash(uri))
            {
                return;
            }
            // What is not the Source's to list is not ours to delete.
            if matches!(
                paths.local_path(uri),
                Err(LocalPathError::OtherAuthority { .. } | LocalPathError::OutsideBase { .. })
            ) {
                return;
            }
            count += 1;
            if count <= limit {
                gone.push(uri.clone());
            }
        });
        if audit {
            for uri in gone {
                self.report.extra += 1;
                self.events.push_back(Event::Audit {
                    uri,
                    standing: Standing::Extra,
                });
            }
            return;
        }
        if count > limit {
            self.push_problem(
                None,
                None,
                ProblemKind::DeleteLimit {
                    would: count,
                    limit,
                },
            );
            // The baseline is not done: no checkpoint, so that the next run is a
            // baseline again (with a limit the caller may raise), not an incremental
            // run that would never delete these.
            for set in &mut self.sets {
                set.failed = true;
            }
            return;
        }
        let set = 0;
        for uri in gone {
            self.decide(set, Action::Delete, &Entry::new(uri), Vec::new(), None);
        }
    }
}
