//! Incremental synchronization: a set's change stream planned from the checkpoint,
//! read in batches, collapsed, applied in order, and the checkpoint moved.

use std::collections::{HashMap, HashSet};

use resourcesync_model::{Capability, Change as Changed, Entry, Relation, Rule, Uri, W3cDateTime};

use super::{Client, Job, Origin, Phase, Raw, Role, Stream, What, hash};
use crate::config::Mode;
use crate::event::{Action, EntryRefusal, Event, ProblemKind};
use crate::inventory::{Comparison, Inventory};
use crate::request::RequestId;
use crate::state::{Checkpoint, Refetch, StreamPosition};

impl<I: Inventory> Client<I> {
    /// Sets up an incremental run's stream for `set`; false (with a problem) when the
    /// set has no checkpoint.
    pub(super) fn start_stream(&mut self, set: usize) -> bool {
        let Some(checkpoint) = self.state.checkpoint(&self.sets[set].key).copied() else {
            self.sets[set].failed = true;
            let uri = self.capability_list_uri(set);
            self.push_problem(uri.as_ref(), None, ProblemKind::NoCheckpoint);
            return false;
        };
        // What an earlier run left to fetch again, once (a run that follows the Change
        // Lists starts its stream again, and fetched them the first time).
        if !self.sets[set].retried && self.sets[set].deferred.is_empty() {
            let left = self.state.refetch.get(&self.sets[set].key).cloned();
            let deferred = left.into_iter().flatten().map(|r| (r.uri.clone(), r));
            self.sets[set].deferred.extend(deferred);
        }
        self.stream_from(set, checkpoint);
        true
    }

    /// Starts `set`'s change stream from `checkpoint`.
    pub(super) fn stream_from(&mut self, set: usize, checkpoint: Checkpoint) {
        self.sets[set].stream = Some(Stream {
            named: HashSet::default(),
            checkpoint,
            candidates: Vec::new(),
            archive: self.sets[set].offered.changelist_archive.clone(),
            archive_read: false,
            planned: false,
            next: 0,
            batch_start: 0,
            batch_entries: 0,
            cursor: None,
            covered: Some(checkpoint.datetime),
            index_from: None,
            issued: Vec::new(),
            failed_at: None,
            batch_end: None,
            applying: false,
            batch_packages: Vec::new(),
        });
    }

    /// Moves a set's change stream on as far as it can.
    pub(super) fn advance_stream(&mut self, set: usize) {
        loop {
            if self.sets[set].pending > 0 || self.sets[set].phase != Phase::Reading {
                return;
            }
            let failed = self.sets[set].failed;
            let Some(stream) = self.sets[set].stream.as_mut() else {
                self.sets[set].phase = Phase::Finished;
                return;
            };
            if failed && !stream.applying {
                // A document failed, or an incremental run's change: later changes wait
                // for the next run (a baseline's changes that fail do not stop it). A
                // baseline's resources that matched nothing are fetched once more first
                // (an incremental run's stay in the state for the next).
                if self.config.mode != Mode::Incremental && !self.refetch_deferred(set) {
                    return;
                }
                self.sets[set].phase = Phase::Finished;
                return;
            }
            if stream.applying {
                if self.changes.values().any(|p| p.set == set) {
                    return;
                }
                self.batch_settled(set);
                continue;
            }
            if !stream.planned {
                if let Err(kind) = self.plan(set) {
                    let uri = self.capability_list_uri(set);
                    self.gap(set, uri, kind);
                    return;
                }
                continue;
            }
            let Some(stream) = self.sets[set].stream.as_mut() else {
                return;
            };
            // Load the next candidates, then apply them together.
            if stream.next < stream.candidates.len() && stream.batch_entries < BATCH {
                let c = stream.next;
                let cand = &stream.candidates[c];
                if cand.loaded.is_some() {
                    stream.batch_entries += cand.loaded.as_ref().map_or(0, Vec::len);
                    stream.next += 1;
                    continue;
                }
                let (uri, dump, md) = (cand.uri.clone(), cand.dump, cand.md.clone());
                match self.checked(&uri) {
                    Some(uri) if dump => {
                        self.sets[set].pending += 1;
                        self.docs.push_back(Job {
                            uri,
                            what: What::Package {
                                set,
                                md: md.map(Box::new),
                                candidate: Some(c),
                            },
                            attempt: 0,
                            redirects: 0,
                        });
                    }
                    Some(uri) => {
                        if let Some(cand) = self.sets[set]
                            .stream
                            .as_mut()
                            .and_then(|s| s.candidates.get_mut(c))
                        {
                            cand.loaded = Some(Vec::new());
                        }
                        self.push_doc(
                            set,
                            uri,
                            Role::Candidate(c),
                            3,
                            Some(Capability::ChangeList),
                            None,
                            None,
                        );
                    }
                    None => {
                        self.sets[set].failed = true;
                        self.sets[set].phase = Phase::Finished;
                    }
                }
                return;
            }
            if stream.batch_start < stream.next {
                self.apply_batch(set);
                continue;
            }
            // Everything applied; then what matched nothing listed is fetched once more.
            if self.refetch_deferred(set) {
                self.sets[set].phase = Phase::Finished;
            }
            return;
        }
    }

    /// The change stream of `set` cannot be trusted past a gap (`kind`, stated at `uri`).
    /// An incremental run stops there, the set failed (the command takes a baseline).
    /// A baseline or an audit, which read the Change Lists only to reconcile a Source
    /// that moved since its listing, stands on its listing alone (its checkpoint the
    /// listing's `at`, as without them), said as a warning; what matched nothing listed
    /// is fetched once more, and a baseline deletes nothing where its listing is older
    /// than the set's checkpoint (what it does not list may have been created since:
    /// held from an incremental run).
    fn gap(&mut self, set: usize, uri: Option<Uri>, kind: ProblemKind) {
        if self.config.mode != Mode::Incremental {
            self.sets[set].stream = None;
            self.give_up_changes(set);
            let message = format!(
                "{kind}: the Change Lists do not reach back to the listing; what matched \
                 nothing listed is fetched once more"
            );
            self.warn(uri.as_ref(), None, None, message);
            if self.refetch_deferred(set) {
                self.sets[set].phase = Phase::Finished;
            }
            return;
        }
        self.sets[set].failed = true;
        self.sets[set].phase = Phase::Finished;
        self.push_problem(uri.as_ref(), None, kind);
    }

    /// Orders a set's candidates, reads the archive when the changes on offer start
    /// after the checkpoint, and refuses gaps.
    pub(super) fn plan(&mut self, set: usize) -> Result<(), ProblemKind> {
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return Ok(());
        };
        let checkpoint = stream.checkpoint.datetime;
        let mut earliest = stream.candidates.iter().filter_map(|c| c.from).min();
        // An index's own `from` states where what it lists starts, whatever its entries
        // (whose `from` is optional) say; the archive, once read, covers before it.
        if let (Some(index), false) = (stream.index_from, stream.archive_read) {
            earliest = Some(earliest.map_or(index, |e| e.max(index)));
        }
        // A list that starts at the checkpoint's datetime may not hold every change at
        // it: lists are closed and opened within one second, and an earlier one whose
        // interval ends there may hold some. So the archive is read then too.
        let missing_early = match earliest {
            Some(from) => from >= checkpoint,
            None => stream.candidates.is_empty(),
        };
        if missing_early && !stream.archive_read {
            if let Some(archive) = stream.archive.clone() {
                stream.archive_read = true;
                let Some(uri) = self.checked(&archive) else {
                    // Refused (a problem said so): the changes before those on offer
                    // are not known, at the checkpoint's second itself included.
                    return Err(ProblemKind::Gap {
                        checkpoint,
                        from: earliest,
                    });
                };
                self.push_doc(
                    set,
                    uri,
                    Role::Archive,
                    3,
                    Some(Capability::ChangeListArchive),
                    None,
                    None,
                );
                return Ok(());
            }
        }
        if let Some(from) = earliest {
            if from > checkpoint {
                return Err(ProblemKind::Gap {
                    checkpoint,
                    from: Some(from),
                });
            }
        }
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return Ok(());
        };
        stream
            .candidates
            .retain(|c| c.until.is_none_or(|u| u >= checkpoint));
        // By `from`; among lists that start together (closed and opened within one
        // second), the closed ones first, by `until`, and an open one last.
        stream
            .candidates
            .sort_by_key(|c| (c.from, c.until.is_none(), c.until));
        for pair in stream.candidates.windows(2) {
            if let (Some(until), Some(from)) = (pair[0].until, pair[1].from) {
                if from > until {
                    return Err(ProblemKind::Gap {
                        checkpoint: until,
                        from: Some(from),
                    });
                }
            }
        }
        // Re-number loaded candidates' roles: the one read as the stream's start keeps
        // its entries wherever it sorted to.
        stream.planned = true;
        Ok(())
    }

    /// Applies the loaded candidates `batch_start..next`: positions, collapse, decide.
    pub(super) fn apply_batch(&mut self, set: usize) {
        let baseline = matches!(self.config.mode, Mode::Baseline { .. });
        let audit = self.config.mode == Mode::Audit;
        if audit {
            // What the listing lists, to look up below.
            self.listed.sort_unstable();
        }
        let listing = &self.listed;
        let inventory = &self.inventory;
        let dry = &self.dry;
        let deleting = self.config.delete;
        let this = &mut self.sets[set];
        let deferred = &mut this.deferred;
        let declined = &this.declined;
        let reflected = &mut this.reflected;
        let Some(stream) = this.stream.as_mut() else {
            return;
        };
        // Coverage as the documents loaded state it (their own `from` and `until`, read
        // with them): each must start where those before it end, and state where it
        // starts. A gap stops the stream before the batch.
        let mut covered = stream.covered;
        for c in &stream.candidates[stream.batch_start..stream.next] {
            let gap = match (c.from, covered) {
                (None, _) => Some(None),
                (Some(from), Some(end)) if from > end => Some(Some(from)),
                _ => None,
            };
            if let Some(from) = gap {
                let checkpoint = covered.unwrap_or(stream.checkpoint.datetime);
                let uri = c.uri.clone();
                self.gap(set, Some(uri), ProblemKind::Gap { checkpoint, from });
                return;
            }
            // An open list (no `until`) covers everything after its start.
            covered = covered.zip(c.until).map(|(end, until)| end.max(until));
        }
        stream.covered = covered;
        let checkpoint = stream.checkpoint;
        let mut cursor = stream.cursor;
        let mut last = None;
        // Per resource, its last change: by its own datetime (a list out of chronological
        // order is a finding of its own, and its later change still wins), then by the
        // order written.
        let mut latest: HashMap<Uri, (StreamPosition, Option<W3cDateTime>, Raw)> = HashMap::new();
        let mut order: Vec<Uri> = Vec::new();
        let mut packages = Vec::new();
        let mut refusals = Vec::new();
        let mut this_unread = false;
        for c in stream.batch_start..stream.next {
            let cand = &mut stream.candidates[c];
            if let Some(p) = cand.package {
                packages.push(p);
            }
            // An entry without a datetime takes the one before it; the first of a
            // document, its `from`.
            if let Some(from) = cand.from {
                if cursor.is_none_or(|(at, _)| from > at) {
                    cursor = Some((from, 0));
                }
            }
            for mut r in cand.loaded.take().unwrap_or_default() {
                // An entry refused without its URI has a bound, not a datetime (see
                // `Raw::datetime`).
                let unknown = r.refused.is_some() && !r.known;
                let bound = if unknown { r.datetime.take() } else { None };
                let (at, next) = match (r.datetime.or(r.lastmod), cursor) {
                    // Out of order (a finding of its own): counted where the stream is.
                    (Some(dt), Some((at, next))) if dt <= at => (at, next),
                    (Some(dt), _) => (dt, 0),
                    (None, Some((at, next))) => (at, next),
                    (None, None) => (checkpoint.datetime, checkpoint.count),
                };
                let position = StreamPosition {
                    datetime: at,
                    index: next,
                };
                // A bound earlier than the entry before it: the list is out of order
                // there, and the unread change may be any (see `Raw::datetime`).
                let bound = bound.filter(|bound| *bound >= at);
                cursor = Some((at, next + 1));
                last = Some(position);
                // A change the checkpoint covers, in a baseline, is one before its
                // listing's `at`: the listing reflects it, unless the Source stamped the
                // listing later than what it holds (a file edited while its list was
                // written, a list written while the Source changed). So it still says
                // what a resource that matched nothing was last listed as, and it creates
                // one the listing missed (neither held nor deferred once the listing's
                // changes are settled). What is held and not listed, such a change keeps
                // from the sweep, unless a later one deleted it (`Set::reflected`).
                // An entry refused without its URI may be such a creation too: in a
                // baseline or an audit it is never taken as reflected.
                let missed = (unknown && (baseline || audit))
                    || (!unknown
                        && r.change != Some(Changed::Deleted)
                        && !deferred.contains_key(&r.uri)
                        && match (baseline, audit) {
                            // Once the listing's changes are settled, what it lists is held.
                            (true, _) => {
                                let h = hash(&r.uri);
                                // A dry run's listing decided what it lists, stored nothing.
                                let held = dry
                                    .get(&h)
                                    .copied()
                                    .unwrap_or_else(|| inventory.get(&r.uri).is_some());
                                !held && !declined.contains(&h)
                            }
                            (_, true) => listing.binary_search(&hash(&r.uri)).is_err(),
                            _ => false,
                        });
                // Without a bound (the last entry of an open list, or before one stamped
                // with nothing), it may be any change after the one before it: never
                // taken as applied, and said on every run until the list says more.
                let covered = checkpoint.covers(position)
                    && (!unknown
                        || bound.is_some_and(|datetime| {
                            checkpoint.covers(StreamPosition { datetime, index: 0 })
                        }));
                if covered && !missed {
                    // Applied before; its URI (the list's) is no resource's.
                    if unknown {
                        continue;
                    }
                    // What a baseline's listing reflects, or missed: a resource it does
                    // not list (held: not `missed`) that the last of these changes (by
                    // datetime, as `latest` orders them, across batches) created or
                    // updated is not swept away as unlisted. Kept only for a sweep.
                    if baseline && deleting {
                        let own = r.datetime.or(r.lastmod);
                        let alive = r.change != Some(Changed::Deleted);
                        match reflected.get(&hash(&r.uri)) {
                            Some((Some(kept), _)) if own.is_some_and(|own| own < *kept) => {}
                            _ => {
                                reflected.insert(hash(&r.uri), (own, alive));
                            }
                        }
                    }
                    if let Some(again) = deferred.get_mut(&r.uri) {
                        match r.change {
                            Some(Changed::Deleted) => {
                                deferred.remove(&r.uri);
                            }
                            _ => {
                                again.md = r.md.clone();
                                again.lastmod = r.lastmod;
                            }
                        }
                    } else if (baseline || audit) && r.change == Some(Changed::Deleted) {
                        // It takes back a creation the listing missed, unless that one is
                        // later by datetime (a list out of order).
                        let own = r.datetime.or(r.lastmod);
                        let later = |kept: &W3cDateTime| own.is_some_and(|own| own < *kept);
                        if !matches!(latest.get(&r.uri), Some((_, Some(kept), _)) if later(kept)) {
                            latest.remove(&r.uri);
                        }
                    }
                    continue;
                }
                if let Some(refusal) = r.refused {
                    // Refused for good (the Source wrote it so): counted, and the stream
                    // goes on past it, as past a URI the policy refuses. In a baseline,
                    // one whose URI is not known may have created what the listing does
                    // not list: no deletions follow.
                    if unknown && baseline {
                        this_unread = true;
                    }
                    refusals.push((r.known.then_some(r.uri), refusal));
                    continue;
                }
                let own = r.datetime.or(r.lastmod);
                match latest.get(&r.uri) {
                    None => order.push(r.uri.clone()),
                    // A change listed after a later one of the same resource: the later
                    // one stands.
                    Some((_, Some(kept), _)) if own.is_some_and(|own| own < *kept) => continue,
                    Some(_) => {}
                }
                latest.insert(r.uri.clone(), (position, own, r));
            }
        }
        stream.cursor = cursor;
        stream.batch_end = last;
        stream.batch_start = stream.next;
        stream.batch_entries = 0;
        stream.applying = true;
        stream.issued.clear();
        stream.failed_at = None;
        stream.batch_packages = packages;
        let mut ordered: Vec<(StreamPosition, Raw)> = order
            .into_iter()
            .filter_map(|u| latest.remove(&u))
            .map(|(position, _, r)| (position, r))
            .collect();
        ordered.sort_by_key(|a| a.0);
        if this_unread {
            self.sets[set].unread = true;
        }
        for (uri, refusal) in refusals {
            let uri = uri.or_else(|| refusal.document.clone());
            self.push_problem(uri.as_ref(), None, ProblemKind::EntryRefused(refusal));
        }
        for (position, r) in ordered {
            if !self.config.in_shard(&r.uri) {
                continue;
            }
            // A change listed later explains a body that matched nothing before, and
            // stands for a conflict met before it: the resource is taken as this change
            // says (a deletion is done with it; an update declined again is kept again).
            self.sets[set].deferred.remove(&r.uri);
            self.sets[set].conflicted.remove(&r.uri);
            // And for one that failed earlier in this run (a baseline's, left to fetch
            // again as it was listed): this change says what it is now.
            self.sets[set].unfetched.remove(&r.uri);
            // An audit only notes what the Source says the resource is now.
            if self.config.mode == Mode::Audit {
                let now = match r.change {
                    Some(Changed::Deleted) => None,
                    _ => Some(Refetch::new(r.uri.clone(), r.md.clone(), r.lastmod)),
                };
                self.listed.push(hash(&r.uri));
                self.sets[set].since.insert(r.uri.clone(), now);
                continue;
            }
            // A baseline reconciling through the Change Lists lists what they create or
            // update, so that what the listing missed is not swept away as unlisted (nor
            // as a deletion they named before).
            if baseline && self.config.delete && r.change != Some(Changed::Deleted) {
                self.listed.push(hash(&r.uri));
                self.listed_deletions.remove(&hash(&r.uri));
            }
            let held = self.inventory.get(&r.uri);
            let action = match (r.change, held) {
                // Not held: nothing of ours to delete (a file at its path is someone
                // else's, whatever the Source says).
                (Some(Changed::Deleted), None) => continue,
                (Some(Changed::Deleted), Some(_)) if !self.config.delete => {
                    self.report.kept += 1;
                    continue;
                }
                // A baseline's deletions are the sweep's to make, with its own.
                (Some(Changed::Deleted), Some(_)) if baseline => {
                    self.listed_deletions.insert(hash(&r.uri), r.uri.clone());
                    continue;
                }
                (Some(Changed::Deleted), Some(_)) => {
                    if self.deletions >= self.config.max_deletes {
                        // As rsync's --max-delete: the deletions allowed are made, and
                        // the stream stops before the next one; its checkpoint stays
                        // there, so a run with a higher limit goes on from it.
                        let limit = self.config.max_deletes;
                        self.push_problem(
                            Some(&r.uri),
                            None,
                            ProblemKind::DeleteLimitReached { limit },
                        );
                        self.sets[set].failed = true;
                        if let Some(stream) = self.sets[set].stream.as_mut() {
                            stream.failed_at =
                                Some(stream.failed_at.map_or(position, |f| f.min(position)));
                        }
                        break;
                    }
                    self.deletions += 1;
                    Action::Delete
                }
                (_, Some(h)) => match h.compare(r.md.as_ref(), r.lastmod.as_ref()) {
                    Comparison::Same => {
                        // A baseline counted what its listing holds already.
                        if !baseline {
                            self.report.unchanged += 1;
                        }
                        continue;
                    }
                    Comparison::Differs(_) => Action::Update,
                },
                (_, None) => Action::Create,
            };
            let mut entry = Entry::new(r.uri.clone());
            entry.md = r.md.clone();
            entry.lastmod = r.lastmod;
            if let Some(id) = self.decide(set, action, &entry, r.mirrors.clone(), r.bitstream) {
                // Only a creation the listing missed comes from before the checkpoint.
                if checkpoint.covers(position) {
                    if let Some(pending) = self.changes.get_mut(&id) {
                        pending.origin = Origin::Missed;
                    }
                }
                if let Some(stream) = self.sets[set].stream.as_mut() {
                    stream.issued.push((position, id));
                }
            }
        }
    }

    /// Every change of the batch is settled: move the checkpoint, release its packages.
    pub(super) fn batch_settled(&mut self, set: usize) {
        let dry = self.config.dry_run;
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        stream.applying = false;
        let new = match (stream.failed_at, stream.batch_end) {
            (Some(failed), _) => Some(failed.checkpoint_before()),
            (None, Some(end)) => Some(end.checkpoint_after()),
            (None, None) => None,
        };
        let failed = stream.failed_at.is_some();
        let packages = std::mem::take(&mut stream.batch_packages);
        let new = new.map(|new| self.vouched(new));
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        if let Some(new) = new {
            if !dry
                && new != stream.checkpoint
                && (new.datetime > stream.checkpoint.datetime
                    || (new.datetime == stream.checkpoint.datetime
                        && new.count > stream.checkpoint.count))
            {
                stream.checkpoint = new;
                // A baseline's checkpoint is saved whole at its end (with what it leaves
                // to fetch again), never before its listing is.
                if self.config.mode == Mode::Incremental {
                    let key = self.sets[set].key.clone();
                    self.state.sets.insert(key, new);
                    self.report.at = Some(new.datetime);
                    self.events.push_back(Event::Checkpoint);
                }
            }
        }
        for p in packages {
            self.packages.remove(&p);
            self.events.push_back(Event::Release { request: p });
        }
        if failed {
            // Later changes wait until this one is applied: stop here.
            self.sets[set].phase = Phase::Finished;
        }
    }
}

/// Changes read in one batch at most (their documents are read whole, then collapsed).
pub(super) const BATCH: usize = 200_000;

pub(super) fn raw(entry: &Entry, bitstream: Option<(RequestId, usize)>) -> Raw {
    // A Change List entry without `change` says what the resource is, not what happened
    // to it: stored as "created" it would be a guess (a real aggregator lists its archive
    // files so), so it is refused with its rule.
    let refused = entry.change().is_none().then(|| {
        Box::new(EntryRefusal {
            document: None,
            entry: None,
            rule: Rule::ChangeMandatory,
            reason: format!("{}: no change attribute: not applied", entry.loc),
        })
    });
    Raw {
        refused,
        known: true,
        uri: entry.loc.clone(),
        change: entry.change(),
        datetime: entry.datetime(),
        lastmod: entry.lastmod,
        md: entry.md.clone(),
        mirrors: mirrors(entry),
        bitstream,
    }
}

/// The `duplicate` links of an entry, in `pri` order (section 7.1).
pub(super) fn mirrors(entry: &Entry) -> Vec<Uri> {
    let mut links: Vec<_> = entry.links_with(&Relation::Duplicate);
    links.sort_by_key(|l| l.priority());
    links.into_iter().map(|l| l.href.clone()).collect()
}

impl Raw {
    /// A refused entry of a Change List, at its place in the stream.
    pub(super) fn refused(uri: Uri, refusal: EntryRefusal) -> Raw {
        Raw {
            refused: Some(Box::new(refusal)),
            known: false,
            uri,
            change: None,
            datetime: None,
            lastmod: None,
            md: None,
            mirrors: Vec::new(),
            bitstream: None,
        }
    }
}
