//! Changes: decided, fetched or extracted from a package, and settled by the caller's
//! confirmation.

use std::time::Instant;

use resourcesync_model::{
    Capability, Document, Entry, Finding, HashAlgorithm, Rule, Uri, W3cDateTime,
};

use super::Raw;
use super::incremental::raw;
use super::reading::{FIXITY_RULES, LOC_RULES, finding_of};
use super::{Client, Job, Origin, Pending, Unpacking, What, hash};
use crate::config::Mode;
use crate::event::{
    Action, ChangeId, Decision, EntryRefusal, Event, Extract, Placement, ProblemKind,
};
use crate::inventory::{Held, Inventory};
use crate::misuse::Misuse;
use crate::request::RequestId;
use crate::state::Refetch;

impl<I: Inventory> Client<I> {
    /// The caller applied `change` as the [`Event::Store`], [`Event::Extract`] or
    /// [`Event::Delete`] that named it said, and the client records it in the inventory
    /// in the same step (one call: a change confirmed is a change recorded).
    ///
    /// - A store or an extraction is recorded as `held`: [`Held::of`] the digests of what
    ///   was written and the change's `lastmod`. With `None` the client records what it
    ///   verified itself: a placement's digests ([`Placement::digests`]), an extraction's length
    ///   and hashes as the manifest lists them (the package's verified reader checked
    ///   them).
    /// - A deletion removes the record; `held` is not used.
    ///
    /// Then the run moves on: the checkpoint may move ([`Event::Checkpoint`]), and new
    /// requests and events may be due.
    ///
    /// Each change is confirmed once, after the event that instructs it: a change not
    /// instructed yet or settled already, and a `held` for a deletion, are a [`Misuse`]
    /// (nothing is recorded).
    pub fn applied(
        &mut self,
        change: ChangeId,
        held: Option<Held>,
        now: Instant,
    ) -> Result<(), Misuse> {
        let pending = self.awaiting(change)?;
        let record = match (pending.change.action, held) {
            (Action::Delete, Some(_)) => return Err(Misuse::HeldForDeletion(change)),
            (Action::Delete, None) => None,
            (_, Some(held)) => Some(held),
            (_, None) => Some(match &pending.digests {
                Some(digests) => Held::of(digests, pending.change.lastmod),
                None => Held::listed(pending.change.md.as_ref(), pending.change.lastmod),
            }),
        };
        let uri = pending.change.uri.clone();
        match record {
            Some(held) => self.inventory.record(uri, held),
            None => self.inventory.forget(&uri),
        }
        self.settle(change, None);
        self.advance(Some(now));
        Ok(())
    }

    /// The caller could not apply `change`; `reason` says why. The inventory is not
    /// changed, and the checkpoint stays before the change. The same misuses as
    /// [`applied`](Client::applied) are refused.
    pub fn failed(
        &mut self,
        change: ChangeId,
        reason: impl Into<String>,
        now: Instant,
    ) -> Result<(), Misuse> {
        self.awaiting(change)?;
        self.settle(change, Some(ProblemKind::NotApplied(reason.into())));
        self.advance(Some(now));
        Ok(())
    }

    /// The caller left `change`'s path as it was, on purpose: what is there is not the
    /// sync's to replace or delete; `reason` says what it found (a file the sync did not
    /// store at the path of a store or an extraction, a file changed since the sync
    /// stored it at the path of a deletion). A conflict: reported as a problem (the run
    /// is not complete) and counted ([`Report::conflicts`](crate::Report::conflicts)),
    /// but the run goes on past it, as past a change applied: the path is the user's
    /// until they resolve it. A store is not recorded, and the resource is kept in
    /// [`State::refetch`](crate::State::refetch): each later run fetches it again and
    /// meets the conflict again (it is not complete) until the user resolves it (takes
    /// their file away, or has the sync replace it). A deletion forgets the record (the
    /// file is no longer what the sync stored) and is done with. The same misuses as
    /// [`applied`](Client::applied) are refused.
    pub fn declined(
        &mut self,
        change: ChangeId,
        reason: impl Into<String>,
        now: Instant,
    ) -> Result<(), Misuse> {
        let pending = self.awaiting(change)?;
        let uri = pending.change.uri.clone();
        if pending.change.action == Action::Delete {
            self.inventory.forget(&uri);
        }
        self.settle(change, Some(ProblemKind::Conflict(reason.into())));
        self.advance(Some(now));
        Ok(())
    }

    /// The change `change`, if it waits for the caller's confirmation.
    fn awaiting(&self, change: ChangeId) -> Result<&Pending, Misuse> {
        match self.changes.get(&change) {
            Some(pending) if pending.instructed => Ok(pending),
            Some(_) => Err(Misuse::NotInstructed(change)),
            // Changes and requests are numbered from one counter: above it is no change
            // of this client.
            None if change.0 > self.next_id => Err(Misuse::UnknownChange(change)),
            None => Err(Misuse::ChangeSettled(change)),
        }
    }

    /// The manifest of the package received for `id` (announced by [`Event::Package`]),
    /// as the caller read it from the package ([`PackageManifest`]): the client decides
    /// what to take from it. [`Event::Extract`] names a bitstream by its number among the
    /// manifest's entries that have one ([`resourcesync_model::Entry::has_bitstream`]), in
    /// manifest order, which is how `resourcesync_package::Package::bitstream` numbers
    /// them.
    ///
    /// The manifest's findings are warnings, as a document's are. An entry its reader
    /// skipped is refused, as one of a list is: in a Resource Dump it may name a resource
    /// held, so nothing is deleted for want of it; in a Change Dump its change is not
    /// known, so it is refused where it stands in the stream (said, the run not
    /// complete), unless, in an incremental run, the checkpoint covers the next entry
    /// too (or the package's `until`, after the last). An entry whose `hash`
    /// or `length` could not be read is refused rather than extracted unchecked.
    ///
    /// A manifest for a request no [`Event::Package`] named, or a second one, is a
    /// [`Misuse`].
    pub fn handle_package(
        &mut self,
        id: RequestId,
        manifest: PackageManifest<'_>,
        now: Instant,
    ) -> Result<(), Misuse> {
        let Some(pending) = self.packages.get_mut(&id) else {
            return Err(Misuse::NoPackage(id));
        };
        if pending.manifest_read {
            return Err(Misuse::NoPackage(id));
        }
        pending.manifest_read = true;
        let package = pending.uri.clone();
        let PackageManifest {
            document: manifest,
            findings,
            skipped,
        } = manifest;
        let set = pending.set;
        let candidate = pending.candidate;
        // Each entry's bitstream number, counted as the package counts them.
        let numbers: Vec<Option<usize>> = manifest
            .entries
            .iter()
            .scan(0, |next, e| {
                let number = e.has_bitstream().then_some(*next);
                *next += usize::from(number.is_some());
                Some(number)
            })
            .collect();
        let expected = if candidate.is_some() {
            Capability::ChangeDumpManifest
        } else {
            Capability::ResourceDumpManifest
        };
        if manifest.head.md.capability.as_ref() != Some(&expected) {
            self.sets[set].failed = true;
            self.push_problem(
                None,
                Some(id),
                ProblemKind::Unexpected {
                    expected,
                    found: manifest.head.kind(),
                },
            );
            self.packages.remove(&id);
            self.events.push_back(Event::Release { request: id });
            self.package_gone(set);
            self.advance(Some(now));
            return Ok(());
        }
        // The latest the last entries can be stamped: the manifest's `until`, or the one
        // its Change Dump states for the package; of two, the later (a bound too early
        // would take an unread change as applied).
        let listed_until =
            candidate.and_then(|c| self.sets[set].stream.as_ref()?.candidates.get(c)?.until);
        let until = super::navigation::later(manifest.head.md.until, listed_until);
        let items = manifest_items(&package, manifest, findings, skipped, &numbers, until);
        for (entry, written) in items.iter().filter_map(Item::kept) {
            if let Some(path) = entry.md.as_ref().and_then(|md| md.path.as_ref()) {
                if !path.as_str().starts_with('/') {
                    self.warn(
                        Some(&package),
                        Some(written),
                        Some(Rule::PathLeadingSlash),
                        format!(
                            "bitstream path {:?} does not start with \"/\" (as the Python \
                             reference implementation writes them); read as if it did",
                            path.as_str()
                        ),
                    );
                }
            }
        }
        self.manifest_findings(&package, findings);
        match candidate {
            Some(c) => {
                let raws = items
                    .into_iter()
                    .map(|item| match item {
                        Item::Kept {
                            entry,
                            number,
                            refused,
                            ..
                        } => {
                            let mut r = raw(entry, number.map(|i| (id, i)));
                            if let Some(refusal) = refused {
                                r.refused = Some(Box::new(refusal));
                            }
                            r
                        }
                        // Its change is not known: refused where it stands in the stream,
                        // as an entry of a Change List that could not be read is.
                        Item::Skipped(refusal, bound) => {
                            let mut r = Raw::refused(package.clone(), refusal);
                            r.datetime = bound;
                            r
                        }
                    })
                    .collect();
                if let Some(stream) = self.sets[set].stream.as_mut() {
                    if let Some(cand) = stream.candidates.get_mut(c) {
                        cand.loaded = Some(raws);
                        cand.package = Some(id);
                        // The manifest states the package's coverage too.
                        let head = &manifest.head.md;
                        cand.from = super::navigation::later(cand.from, head.from);
                        cand.until = match (cand.until, head.until) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                }
            }
            None => {
                for item in items {
                    let (entry, number) = match item {
                        Item::Kept {
                            entry,
                            refused: Some(refusal),
                            ..
                        } => {
                            // Listed, so never deleted for want of a listing; not stored
                            // unchecked.
                            if self.config.in_shard(&entry.loc) {
                                self.report.listed += 1;
                                self.listed.push(hash(&entry.loc));
                            }
                            let kind = ProblemKind::EntryRefused(Box::new(refusal));
                            self.push_problem(Some(&entry.loc), Some(id), kind);
                            continue;
                        }
                        Item::Kept { entry, number, .. } => (entry, number),
                        // It may name a resource held: nothing is deleted for want of it.
                        Item::Skipped(refusal, _) => {
                            self.report.listed += 1;
                            self.sets[set].unread = true;
                            let kind = ProblemKind::EntryRefused(Box::new(refusal));
                            self.push_problem(Some(&package), Some(id), kind);
                            continue;
                        }
                    };
                    let deleted = entry.md.as_ref().and_then(|md| md.change)
                        == Some(resourcesync_model::Change::Deleted);
                    match number {
                        Some(i) => self.listed_entry(set, entry, Some((id, i))),
                        // A deletion, which only a Change Dump's manifest states: not listed.
                        None if deleted => self.warn(
                            None,
                            None,
                            None,
                            format!("{}: listed in the manifest as deleted; skipped", entry.loc),
                        ),
                        // Listed with no path (which the standard requires): the resource
                        // is the Source's all the same. Fetched from its URI, as a Resource
                        // List's entry is; skipped, it was deleted if held.
                        None => {
                            let message = format!(
                                "{}: listed in the manifest without a bitstream; fetched from \
                                 its URI",
                                entry.loc
                            );
                            self.warn(None, None, None, message);
                            self.listed_entry(set, entry, None);
                        }
                    }
                }
            }
        }
        self.package_gone(set);
        self.release_if_settled(id);
        self.advance(Some(now));
        Ok(())
    }

    /// The findings of `package`'s manifest, as warnings (no more than
    /// [`Bounds::max_warnings`](crate::Bounds::max_warnings) said, all counted). A path
    /// without its leading slash is said by `handle_package` in its own words.
    fn manifest_findings(&mut self, package: &Uri, findings: &[Finding]) {
        let max = self.config.bounds.max_warnings;
        let said = findings.iter().filter(|f| f.rule != Rule::PathLeadingSlash);
        for (i, finding) in said.enumerate() {
            self.report.warnings += 1;
            if i < max {
                self.events.push_back(Event::Warning(crate::event::Warning {
                    document: Some(package.clone()),
                    entry: finding.entry,
                    rule: Some(finding.rule),
                    message: finding.message.clone(),
                }));
            }
        }
    }

    /// Decides a change: checks the URI and its path, announces it, and in a real run
    /// asks for it (a fetch, an extraction, a deletion).
    pub(super) fn decide(
        &mut self,
        set: usize,
        action: Action,
        entry: &Entry,
        mirrors: Vec<Uri>,
        bitstream: Option<(RequestId, usize)>,
    ) -> Option<ChangeId> {
        if let Err(e) = self.config.policy.check(&entry.loc) {
            self.push_problem(Some(&entry.loc), None, ProblemKind::Refused(e));
            return None;
        }
        // A body is stored only after its digests are checked: one listed only with
        // digests this client does not compute (sha-1, sha-512 ...) would be stored
        // unchecked, so it is refused instead.
        let hashes = entry.md.as_ref().and_then(|md| md.hash.as_ref());
        if let (false, Some(hashes)) = (action == Action::Delete, hashes) {
            let checked = |h: &resourcesync_model::Hash| {
                matches!(h.algorithm(), HashAlgorithm::Md5 | HashAlgorithm::Sha256)
            };
            if !hashes.iter().any(checked) {
                let refusal = EntryRefusal {
                    document: None,
                    entry: None,
                    rule: Rule::HashUncheckable,
                    reason: format!(
                        "{}: listed with {hashes}, none of which this client checks (md5, \
                         sha-256): not stored unchecked",
                        entry.loc
                    ),
                };
                let kind = ProblemKind::EntryRefused(Box::new(refusal));
                self.push_problem(Some(&entry.loc), None, kind);
                return None;
            }
        }
        let path = match self.config.paths.local_path(&entry.loc) {
            Ok(path) => path,
            Err(e) => {
                self.push_problem(Some(&entry.loc), None, ProblemKind::Path(e));
                return None;
            }
        };
        if action != Action::Delete {
            if let Err(collision) = self.paths.insert(&entry.loc, &path) {
                self.push_problem(
                    Some(&entry.loc),
                    None,
                    ProblemKind::Collision(Box::new(collision)),
                );
                return None;
            }
        }
        self.next_id += 1;
        let id = ChangeId(self.next_id);
        let change = Decision {
            id,
            action,
            uri: entry.loc.clone(),
            path,
            md: entry.md.clone(),
            lastmod: entry.lastmod,
        };
        self.progress.planned += 1;
        self.events.push_back(Event::Change(change.clone()));
        if self.config.dry_run {
            self.progress.settled += 1;
            self.count(action);
            self.dry.insert(hash(&entry.loc), action != Action::Delete);
            return Some(id);
        }
        let package = bitstream.map(|(p, _)| p);
        match (action, bitstream) {
            (Action::Delete, _) => self.events.push_back(Event::Delete(change.clone())),
            (_, Some((package, index))) => {
                if let Some(p) = self.packages.get_mut(&package) {
                    p.unsettled += 1;
                }
                self.events.push_back(Event::Extract(Extract {
                    change: change.clone(),
                    package,
                    bitstream: index,
                }))
            }
            (_, None) => {
                let mut places = mirrors;
                places.retain(|m| self.config.policy.check(m).is_ok());
                // The mirrors first, the listed `loc` last. Without a mirror (most
                // entries) no vector is made: a listing of 10,000 entries held 10,000
                // empty ones of 96 bytes each until their requests were made.
                let first = if places.is_empty() {
                    entry.loc.clone()
                } else {
                    places.push(entry.loc.clone());
                    places.remove(0)
                };
                self.fetches.push_back(Job {
                    uri: first,
                    what: What::Resource {
                        change: id,
                        others: places,
                    },
                    attempt: 0,
                    redirects: 0,
                });
            }
        }
        self.sets[set].unsettled += 1;
        let origin = match self.config.mode {
            Mode::Baseline { .. } => Origin::Listed,
            _ => Origin::Changed,
        };
        self.changes.insert(
            id,
            Box::new(Pending {
                change,
                set,
                package,
                origin,
                // A deletion or an extraction is instructed at once; a fetch once its
                // body is verified (`fetched`).
                instructed: action == Action::Delete || bitstream.is_some(),
                digests: None,
            }),
        );
        Some(id)
    }

    pub(super) fn count(&mut self, action: Action) {
        match action {
            Action::Create => self.report.created += 1,
            Action::Update => self.report.updated += 1,
            Action::Delete => self.report.deleted += 1,
        }
    }

    /// A resource's body ended: checked against what was listed.
    pub(super) fn fetched(
        &mut self,
        id: RequestId,
        job: Job,
        digests: resourcesync_model::Measured,
        now: Instant,
    ) {
        match &job.what {
            What::Resource { change, .. } => {
                let change = *change;
                let Some(pending) = self.changes.get_mut(&change) else {
                    return;
                };
                match digests.verify(pending.change.md.as_ref()) {
                    Ok(()) => {
                        pending.instructed = true;
                        pending.digests = Some(digests);
                        let change = pending.change.clone();
                        self.events.push_back(Event::Store(Placement {
                            change,
                            request: id,
                            digests,
                        }));
                    }
                    Err(mismatch) => {
                        self.events.push_back(Event::Discard {
                            request: id,
                            change,
                        });
                        self.fail_job(job, ProblemKind::Fixity(mismatch), Some(id), now);
                    }
                }
            }
            What::Package { set, md, candidate } => match digests.verify(md.as_deref()) {
                Ok(()) => {
                    self.packages.insert(
                        id,
                        Unpacking {
                            uri: job.uri.clone(),
                            set: *set,
                            unsettled: 0,
                            manifest_read: false,
                            candidate: *candidate,
                        },
                    );
                    self.events.push_back(Event::Package { request: id });
                }
                Err(mismatch) => {
                    self.events.push_back(Event::Release { request: id });
                    self.fail_job(job, ProblemKind::Fixity(mismatch), Some(id), now);
                }
            },
            _ => {}
        }
    }

    pub(super) fn package_gone(&mut self, set: usize) {
        self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
    }

    pub(super) fn release_if_settled(&mut self, package: RequestId) {
        let Some(p) = self.packages.get(&package) else {
            return;
        };
        if p.manifest_read && p.unsettled == 0 && p.candidate.is_none() {
            self.packages.remove(&package);
            self.events.push_back(Event::Release { request: package });
        }
    }

    pub(super) fn settle_failed(&mut self, change: ChangeId) {
        self.settle(change, Some(ProblemKind::Failed(String::new())));
    }

    pub(super) fn settle(&mut self, change: ChangeId, failure: Option<ProblemKind>) {
        let Some(pending) = self.changes.remove(&change) else {
            return;
        };
        self.progress.settled += 1;
        let set = pending.set;
        self.sets[set].unsettled = self.sets[set].unsettled.saturating_sub(1);
        match failure {
            None => self.count(pending.change.action),
            Some(kind @ ProblemKind::Conflict(_)) => {
                // The path is the user's: not held, and not a creation a baseline's
                // listing missed either.
                self.sets[set].declined.insert(hash(&pending.change.uri));
                if pending.change.action != Action::Delete {
                    // Nor is the resource at the Destination: the next run fetches it
                    // again, and meets the conflict again until the user resolves it, so
                    // that no later run is complete while the path holds not the
                    // resource but the user's file. (A deletion declined is done with:
                    // the sync holds nothing of the resource, and the file is the user's.)
                    let change = &pending.change;
                    let again = Refetch::new(change.uri.clone(), change.md.clone(), change.lastmod);
                    self.sets[set].conflicted.insert(change.uri.clone(), again);
                }
                self.report.conflicts += 1;
                self.push_problem(Some(&pending.change.uri), None, kind);
            }
            Some(kind) => {
                if pending.origin == Origin::Refetch {
                    // Not fetched after all (the attempts ran out, the caller could not
                    // store it): still the next run's to fetch again.
                    let change = &pending.change;
                    let again = Refetch::new(change.uri.clone(), change.md.clone(), change.lastmod);
                    self.sets[set].refetch.push(again);
                }
                self.report.failed += 1;
                if let ProblemKind::NotApplied(_) = kind {
                    self.push_problem(Some(&pending.change.uri), None, kind);
                }
                if matches!(self.config.mode, Mode::Baseline { .. }) {
                    // A baseline's resource (listed, named by the Change Lists since the
                    // listing, fetched once more, or deleted by the sweep): what the
                    // Source lists is read on to its end all the same, and the sweep
                    // goes ahead (`Set::resource_failed`); the baseline takes no
                    // checkpoint, and records the resource to fetch again, so no change
                    // is passed over for good. No creation the listing missed either:
                    // the Change Lists before the listing's `at` do not ask for it again.
                    self.sets[set].resource_failed = true;
                    if pending.change.action == Action::Delete {
                        // The sweep's, charged to the first set: what it deletes is no
                        // one set's (nor is what no set lists), so no set's checkpoint
                        // moves past it.
                        for s in &mut self.sets {
                            s.resource_failed = true;
                        }
                    }
                    self.sets[set].declined.insert(hash(&pending.change.uri));
                    let change = &pending.change;
                    if change.action != Action::Delete && pending.origin != Origin::Refetch {
                        let again =
                            Refetch::new(change.uri.clone(), change.md.clone(), change.lastmod);
                        self.sets[set].unfetched.insert(change.uri.clone(), again);
                    }
                } else {
                    // An incremental run's change: the later ones wait for it.
                    self.sets[set].failed = true;
                    if let Some(stream) = self.sets[set].stream.as_mut() {
                        if let Some((pos, _)) = stream.issued.iter().find(|(_, c)| *c == change) {
                            stream.failed_at = Some(stream.failed_at.map_or(*pos, |f| f.min(*pos)));
                        }
                    }
                }
            }
        }
        if let Some(package) = pending.package {
            if let Some(p) = self.packages.get_mut(&package) {
                p.unsettled = p.unsettled.saturating_sub(1);
            }
            self.release_if_settled(package);
        }
    }
}

/// A package's manifest as the caller read it from the package, for
/// [`Client::handle_package`]: with `resourcesync_package::Package`,
/// `PackageManifest::new(package.manifest(), package.findings(), package.skipped())`.
/// The findings and the skipped entries matter: an entry the manifest's reader skipped
/// may name a resource held, which the client must not delete for want of it, and an
/// entry whose fixity was not read must not be extracted unchecked.
///
/// ```
/// use resourcesync_client::PackageManifest;
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
/// use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// let up = "http://example.com/capabilitylist.xml".parse()?;
/// head.links.push(Link::new(Relation::Up, up));
/// let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
/// let resource = Bitstream::new("http://example.com/res1".parse()?, "/res1".into());
/// writer.add(resource, &b"hello"[..])?;
/// let (zip, _) = writer.finish()?;
///
/// // As a driver does on `Event::Package`, before `handle_package`:
/// let package = Package::new(std::io::Cursor::new(zip))?;
/// let manifest = PackageManifest::new(package.manifest(), package.findings(), package.skipped());
/// assert_eq!(manifest.document.entries.len(), 1);
/// assert!(manifest.skipped.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct PackageManifest<'a> {
    /// The manifest: the entries its reader kept.
    pub document: &'a Document,
    /// The reader's findings, which number the entries as written (skipped ones
    /// included), from 1.
    pub findings: &'a [Finding],
    /// The numbers (from 1, in order) of the entries as written that the reader skipped
    /// (no `<loc>`, or one no reading makes a URI): they may name a resource the Source
    /// holds.
    pub skipped: &'a [u64],
}

impl<'a> PackageManifest<'a> {
    /// A manifest as read: the entries kept, the reader's findings, and the numbers of
    /// the entries it skipped.
    pub fn new(
        document: &'a Document,
        findings: &'a [Finding],
        skipped: &'a [u64],
    ) -> PackageManifest<'a> {
        PackageManifest {
            document,
            findings,
            skipped,
        }
    }

    /// A manifest with no finding and no entry skipped: one a program built, not one
    /// read from a Source's package, whose reader may have skipped entries (use
    /// [`new`](PackageManifest::new) for those).
    pub fn whole(document: &'a Document) -> PackageManifest<'a> {
        PackageManifest {
            document,
            findings: &[],
            skipped: &[],
        }
    }
}

/// An entry of a package's manifest as the client takes it, in manifest order.
enum Item<'a> {
    /// Kept by the reader: its number as written, its bitstream's number (if it has one),
    /// and why it is refused, if it is (a `hash` or `length` not read).
    Kept {
        entry: &'a Entry,
        written: u64,
        number: Option<usize>,
        refused: Option<EntryRefusal>,
    },
    /// Skipped by the reader: it names nothing known. In a Change Dump, the latest its
    /// change can be stamped: the next entry's datetime, or after the last the later of
    /// the manifest's `until` and its Change Dump's (see `Raw::datetime`).
    Skipped(EntryRefusal, Option<W3cDateTime>),
}

impl<'a> Item<'a> {
    fn kept(&self) -> Option<(&'a Entry, u64)> {
        match self {
            Item::Kept { entry, written, .. } => Some((entry, *written)),
            Item::Skipped(..) => None,
        }
    }
}

/// The manifest's entries, kept and skipped, in the order written, each kept one with
/// its bitstream's number from `numbers`; `until` bounds the skipped ones after the last
/// kept one.
fn manifest_items<'a>(
    package: &Uri,
    manifest: &'a Document,
    findings: &[Finding],
    skipped: &[u64],
    numbers: &[Option<usize>],
    until: Option<W3cDateTime>,
) -> Vec<Item<'a>> {
    let refusal = |entry: u64, (rule, reason): (Rule, String)| EntryRefusal {
        document: Some(package.clone()),
        entry: Some(entry),
        rule,
        reason,
    };
    let skip = |n: u64, bound: Option<W3cDateTime>| {
        let why = finding_of(findings, n, &LOC_RULES).unwrap_or_else(|| {
            (
                Rule::LocMandatory,
                "the entry has no loc that can be read".into(),
            )
        });
        Item::Skipped(refusal(n, why), bound)
    };
    let mut items = Vec::with_capacity(manifest.entries.len() + skipped.len());
    let mut skipped = skipped.iter().copied().peekable();
    let mut written = 0;
    for (entry, number) in manifest.entries.iter().zip(numbers) {
        written += 1;
        while let Some(n) = skipped.next_if(|n| *n <= written) {
            items.push(skip(n, entry.datetime().or(entry.lastmod)));
            written = written.max(n.saturating_add(1));
        }
        let refused = finding_of(findings, written, &FIXITY_RULES).map(|why| refusal(written, why));
        items.push(Item::Kept {
            entry,
            written,
            number: *number,
            refused,
        });
    }
    items.extend(skipped.map(|n| skip(n, until)));
    items
}
