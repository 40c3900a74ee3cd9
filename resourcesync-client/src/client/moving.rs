//! Sources that move while a Destination reads them: a resource rewritten or deleted after
//! the Resource List that lists it (a Source that writes its Resource List rarely and
//! carries it forward with Change Lists, as `resourcesync-source`'s `Publisher` does by
//! default; files served live behind a publication).
//!
//! A baseline does not fail such a resource. It defers it ([`Set::deferred`]), and once
//! the listing's changes are all settled, reads the Change Lists since the listing's `at`
//! in the same run (whenever the Source offers them; a Change Dump only when something
//! was deferred), as an incremental run would from a checkpoint there: a later change
//! listed for a deferred resource explains it, and the resource is taken as that change
//! says (fetched and checked against its digests; a deletion is a deletion, not a 404);
//! what changed or appeared since the listing is taken too, and so is a creation before
//! its `at` that the listing does not hold (a listing stamped later than what it holds).
//! The checkpoint is then where those Change Lists end. What nothing explains is fetched
//! once more, against what was listed for it (a transfer that went wrong once is not the
//! Source's motion); a body that still matches nothing changed after every list the run
//! read: [`ProblemKind::ChangedSinceListed`], no failure. The checkpoint moves on all the
//! same (that change is later than everything listed, so later than the checkpoint too),
//! and [`State::refetch`](crate::State::refetch) keeps the resource, which the next run
//! fetches again: checked against a later change its Change Lists list for it, or without
//! one against what was listed.
//!
//! An incremental run's own Change List entries are not deferred: a mismatch there is a
//! failure and the checkpoint stays before it, so that the next run reads that change
//! (and any later one) again.
//!
//! An audit judges alike: when the set offers Change Lists and the listing says its `at`,
//! what differs from the listing waits, the Change Lists since that `at` are read, and
//! each resource is judged against the latest the Source says of it (a Destination that
//! followed the Change Lists is in sync with a Resource List that is old).
//!
//! A baseline started at a Resource List itself knows no Change List (it read no
//! Capability List): what matches nothing is fetched once more, then kept for the next
//! run, which, incremental, reads the Capability List its `up` link names.

use resourcesync_model::{Capability, Entry, Uri};

use super::{Client, Origin, Phase, Role, Set};
use crate::config::Mode;
use crate::event::{Action, Event, ProblemKind, Standing};
use crate::inventory::{Comparison, Inventory};
use crate::request::RequestId;
use crate::state::{Checkpoint, Refetch};

impl<I: Inventory> Client<I> {
    /// A fetch for `change` ended in `kind` for good (every place tried): whether the
    /// Source's motion explains it, and so it was taken care of here rather than failed.
    pub(super) fn moved(
        &mut self,
        change: crate::event::ChangeId,
        id: Option<RequestId>,
        kind: &ProblemKind,
    ) -> bool {
        // A body that is not the one listed, or none where one was listed; a refusal,
        // a timeout or a server error says nothing about the Source's motion.
        let mismatch = matches!(
            kind,
            ProblemKind::Fixity(_) | ProblemKind::Status(404 | 410)
        );
        let origin = self.changes.get(&change).map(|p| p.origin);
        let gone = matches!(kind, ProblemKind::Status(404 | 410));
        if !mismatch || matches!(origin, None | Some(Origin::Changed)) {
            return false;
        }
        let Some(pending) = self.changes.remove(&change) else {
            return false;
        };
        self.progress.settled += 1;
        let set = pending.set;
        self.sets[set].unsettled = self.sets[set].unsettled.saturating_sub(1);
        if pending.origin == Origin::Missed && gone {
            // As the listing says: not there.
            return true;
        }
        let listed = &pending.change;
        let again = Refetch::new(listed.uri.clone(), listed.md.clone(), listed.lastmod);
        if matches!(pending.origin, Origin::Listed | Origin::Missed) {
            self.sets[set].deferred.insert(again.uri.clone(), again);
            return true;
        }
        self.sets[set].refetch.push(again);
        self.report.moved += 1;
        let cause = Box::new(kind.clone());
        self.push_problem(
            Some(&listed.uri),
            id,
            ProblemKind::ChangedSinceListed { cause },
        );
        true
    }

    /// A baseline's set whose listing was read: once its changes are settled, reads the
    /// Change Lists since the listing's `at` when a resource matched nothing listed, then
    /// fetches what they do not explain once more; finished after that.
    pub(super) fn reconcile(&mut self, set: usize) {
        let s = &self.sets[set];
        if s.failed {
            // Something else failed: no checkpoint, and no Change List read; what matched
            // nothing is fetched once more all the same, and said if it still does.
            if self.refetch_deferred(set) {
                self.sets[set].phase = Phase::Finished;
            }
            return;
        }
        if s.unsettled > 0 {
            return;
        }
        if s.at.is_some() && s.offered.more_changes() {
            // Which of two Change Lists comes first only an index states (said where
            // the Capability List was read): what was created since is not known.
            self.give_up_changes(set);
        }
        if self.sets[set].changes_given_up {
            // Its Change Lists were given up (that, or a gap): what matched nothing is
            // fetched once more, and they are not read again.
            if self.refetch_deferred(set) {
                self.sets[set].phase = Phase::Finished;
            }
            return;
        }
        let audit = self.config.mode == Mode::Audit;
        // Change Lists are read in any case: what changed since the listing is what the
        // Source is now, and a listing may miss a resource created before its `at` (a
        // list written while the Source changes, stamped when it was done: Python's
        // resync-simulator). A Change Dump only for what matched nothing, or what a run
        // since the listing stored (its packages are large), and never in an audit (it
        // fetches documents only).
        //
        // A run since the listing's `at` (an incremental one: the checkpoint is past it)
        // stored what the listing may not list; where no Change List this run reads
        // says what (none offered but a Change Dump or an archive, or a start at a list
        // whose Capability List was not read), the sweep deletes nothing.
        let past = self.moved_past(set);
        let s = &self.sets[set];
        let changes = match (&s.offered.changelist, &s.offered.changedump) {
            (Some(list), _) => Some((list.clone(), Capability::ChangeList)),
            (None, Some(dump)) if !audit && (past || !s.deferred.is_empty()) => {
                Some((dump.clone(), Capability::ChangeDump))
            }
            _ => None,
        };
        let (at, archive) = (s.at, s.offered.changelist_archive.clone());
        if changes.is_none() && past {
            self.sets[set].unreconciled = true;
        }
        if let (Some(at), Some((uri, expect))) = (at, changes) {
            // Read as an incremental run would from a checkpoint at the listing's `at`:
            // `advance_stream` takes the set on from here.
            self.stream_from(set, Checkpoint::at(at));
            if let Some(stream) = self.sets[set].stream.as_mut() {
                stream.archive = archive;
            }
            match self.checked(&uri) {
                Some(uri) => {
                    let parent = self.capability_list_uri(set);
                    self.push_doc(set, uri, Role::Changes, 2, Some(expect), parent, None);
                }
                // Refused (a problem said so): what was deferred is fetched once more,
                // and what was created since is not known.
                None => {
                    self.give_up_changes(set);
                    if let Some(stream) = self.sets[set].stream.as_mut() {
                        stream.planned = true;
                    }
                }
            }
            // On at once: with no document pending (refused, or a loop) no input would
            // come to move it.
            self.advance_stream(set);
            return;
        }
        if self.refetch_deferred(set) {
            self.sets[set].phase = Phase::Finished;
        }
    }

    /// Whether a run since the listing's `at` stored what the listing of `set` may not
    /// list: the set's checkpoint is past that `at` (an incremental run's; a listing
    /// that lags behind).
    pub(super) fn moved_past(&self, set: usize) -> bool {
        let s = &self.sets[set];
        match (s.at, self.state.checkpoint(&s.key)) {
            (Some(at), Some(checkpoint)) => checkpoint.datetime > at,
            _ => false,
        }
    }

    /// The Change Lists since the listing of `set` are given up: not read again, and
    /// the sweep deletes nothing where a run since the listing stored what it may not
    /// list ([`Client::moved_past`]).
    pub(super) fn give_up_changes(&mut self, set: usize) {
        self.sets[set].changes_given_up = true;
        if self.moved_past(set) {
            self.sets[set].unreconciled = true;
        }
    }

    /// Fetches once more each resource of `set` that matched nothing listed and that no
    /// later change explained, against what was listed for it: whether the set has
    /// nothing left to settle.
    pub(super) fn refetch_deferred(&mut self, set: usize) -> bool {
        let Set {
            unsettled,
            retried,
            deferred,
            ..
        } = &self.sets[set];
        if *unsettled > 0 {
            return false;
        }
        if self.config.mode == Mode::Audit {
            self.audit_moved(set);
            return true;
        }
        // A dry run decides them as a run would (what an earlier run kept for this one:
        // a resource that moved, a conflict), fetching nothing: its counts are the run's.
        if *retried || deferred.is_empty() {
            return true;
        }
        self.sets[set].retried = true;
        let mut deferred: Vec<Refetch> = self.sets[set].deferred.drain().map(|(_, r)| r).collect();
        deferred.sort_by(|a, b| a.uri.cmp(&b.uri));
        for again in deferred {
            if !self.config.in_shard(&again.uri) {
                self.sets[set].refetch.push(again);
                continue;
            }
            let action = match self.inventory.get(&again.uri) {
                None => Action::Create,
                Some(held) => match held.compare(again.md.as_ref(), again.lastmod.as_ref()) {
                    // Held as listed already (stored since, by another run).
                    Comparison::Same => continue,
                    Comparison::Differs(_) => Action::Update,
                },
            };
            let mut entry = Entry::new(again.uri);
            entry.md = again.md;
            entry.lastmod = again.lastmod;
            if let Some(id) = self.decide(set, action, &entry, Vec::new(), None) {
                if let Some(pending) = self.changes.get_mut(&id) {
                    pending.origin = Origin::Refetch;
                }
            }
        }
        self.sets[set].unsettled == 0
    }

    /// Whether an audit of `set` judges what differs from the listing only once the
    /// Change Lists since its `at` are read: the set offers them (a Change Dump is not
    /// read: its packages are no documents), and the listing says its `at`.
    pub(super) fn audit_reconciles(&self, set: usize) -> bool {
        let s = &self.sets[set];
        s.at.is_some() && s.offered.changelist.is_some()
    }

    /// An audit's judgement of `set` once its Change Lists are read: each resource as the
    /// latest of its listing and its changes says, against the inventory.
    pub(super) fn audit_moved(&mut self, set: usize) {
        let deferred: Vec<Refetch> = self.sets[set].deferred.drain().map(|(_, r)| r).collect();
        let since: Vec<(Uri, Option<Refetch>)> = self.sets[set].since.drain().collect();
        let mut judged: Vec<(Uri, Option<Standing>)> = Vec::new();
        for listed in deferred {
            let standing = self.standing(&listed.uri, Some(&listed));
            judged.push((listed.uri, standing));
        }
        for (uri, now) in since {
            let standing = self.standing(&uri, now.as_ref());
            judged.push((uri, standing));
        }
        judged.sort_by(|a, b| a.0.cmp(&b.0));
        for (uri, standing) in judged {
            let Some(standing) = standing else { continue };
            match standing {
                Standing::Changed(_) => self.report.changed += 1,
                Standing::Missing => self.report.missing += 1,
                _ => self.report.extra += 1,
            }
            self.events.push_back(Event::Audit { uri, standing });
        }
    }

    /// How the inventory holds `uri` against what the Source says it is (`None`:
    /// deleted); `None` when in step.
    fn standing(&self, uri: &Uri, listed: Option<&Refetch>) -> Option<Standing> {
        let held = self.inventory.get(uri);
        match (listed, held) {
            (None, None) => None,
            (None, Some(_)) => Some(Standing::Extra),
            (Some(_), None) => Some(Standing::Missing),
            (Some(l), Some(h)) => match h.compare(l.md.as_ref(), l.lastmod.as_ref()) {
                Comparison::Same => None,
                Comparison::Differs(d) => Some(Standing::Changed(d)),
            },
        }
    }
}
