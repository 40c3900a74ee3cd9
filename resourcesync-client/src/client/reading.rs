//! Reading: a document's entries taken from its reader as they are read (the bytes are
//! fed in `transport`, as they arrive; here only a listing's held pieces, when it is
//! read on after it was set aside while its resources' requests were many), what the
//! reader skipped, refused or found, and a document that fails.

use std::time::Instant;

use resourcesync_model::{DocumentKind, Finding, Rule, Uri, W3cDateTime};
use resourcesync_xml::Next;

use super::{Client, DECIDED_AHEAD, Head, Raw, Role, document, document_mut};
use crate::event::{EntryRefusal, Event, ProblemKind, Warning};
use crate::inventory::Inventory;
use crate::request::RequestId;

impl<I: Inventory> Client<I> {
    /// Reads document `id` on from what its reader was fed: its head (which decides what
    /// it is read for), then its entries, each handed on, until the reader needs more
    /// bytes, the document fails, or a Resource List's entries wait for the fetches
    /// queued (set aside: [`park`](Self::park)). `end`: its body is whole.
    pub(super) fn read_document(&mut self, id: RequestId, end: bool, now: Instant) {
        loop {
            let Some((doc, job)) = document_mut(&mut self.flights, id) else {
                return;
            };
            if doc.head.is_none() {
                match doc.feed.head() {
                    Ok(Some(head)) => {
                        let head = head.clone();
                        let job = job.clone();
                        if let Err(kind) = self.on_head(id, &job, &head) {
                            self.document_failed(id, kind, now);
                            return;
                        }
                        continue;
                    }
                    Ok(None) => return,
                    Err(e) => {
                        self.document_failed(id, ProblemKind::Document(e.into()), now);
                        return;
                    }
                }
            }
            // A listing's entries wait while enough of its resources are queued.
            let listing_read_on = matches!(
                &doc.head,
                Some(Head {
                    role: Role::Listing,
                    kind: DocumentKind::ResourceList,
                    set: Some(_),
                    ..
                })
            );
            if listing_read_on && self.fetches.len() >= DECIDED_AHEAD {
                self.take_findings(id);
                self.park(id, end);
                return;
            }
            match doc.feed.next_entry() {
                Ok(Next::Entry(entry)) => {
                    doc.entries += 1;
                    let n = doc.entries;
                    // The reader's findings come with the entry they are about.
                    let findings = !doc.feed.findings().is_empty();
                    // Its number as the reader counts (entries it skipped included), and
                    // whether a value that fixity needs could not be read.
                    let number = doc.feed.entries_read();
                    let unreadable = findings
                        .then(|| finding_of(doc.feed.findings(), number, &FIXITY_RULES))
                        .flatten();
                    let skipped = number > n + doc.skipped;
                    // A listing's entries, by the million, go straight to their set
                    // (as `on_entry` would send them), without looking the flight up
                    // again.
                    let listing = match &doc.head {
                        Some(Head {
                            role: Role::Listing,
                            kind: DocumentKind::ResourceList,
                            set,
                            ..
                        }) => Some(*set),
                        _ => None,
                    };
                    let stamped = entry.datetime().or(entry.lastmod);
                    if skipped {
                        self.skipped(id, number.saturating_sub(1), stamped);
                    }
                    if let Some((rule, message)) = unreadable {
                        let at = Some(&entry.loc);
                        self.refuse_entry(id, Some(number), at, rule, message, stamped);
                        self.take_findings(id);
                        continue;
                    }
                    match listing {
                        Some(Some(s)) => self.listed_entry(s, &entry, None),
                        Some(None) => {}
                        None => self.on_entry(id, n, entry),
                    }
                    if findings {
                        self.take_findings(id);
                    }
                }
                // The pieces held while parked, one at a time; then the end, if it came.
                Ok(Next::NeedMore) if !doc.held.is_empty() || doc.ended_held => {
                    let fed = match doc.held.pop_front() {
                        Some(piece) => doc.feed.feed(&piece),
                        None => {
                            doc.ended_held = false;
                            doc.feed.finish()
                        }
                    };
                    if let Err(e) = fed {
                        self.document_failed(id, ProblemKind::Document(e.into()), now);
                        return;
                    }
                }
                Ok(Next::NeedMore) => {
                    self.take_findings(id);
                    return;
                }
                Ok(Next::End) => {
                    let until = self.candidate_until(id);
                    self.skipped(id, u64::MAX, until);
                    self.take_findings(id);
                    if end {
                        self.document_read(id);
                    }
                    return;
                }
                // What a later reader may add: nothing to take yet.
                Ok(_) => {
                    self.take_findings(id);
                    return;
                }
                Err(e) => {
                    self.document_failed(id, ProblemKind::Document(e.into()), now);
                    return;
                }
            }
        }
    }

    /// Stops reading the listing of `id` until the fetches queued drain
    /// ([`resume_parked`](Self::resume_parked)); once its body `end`ed, its flight is
    /// set aside.
    fn park(&mut self, id: RequestId, end: bool) {
        let ended = match end {
            true => self.flights.remove(&id),
            false => None,
        };
        match self.parked.iter_mut().find(|p| p.id == id) {
            Some(parked) => parked.ended = parked.ended.take().or(ended),
            None => self.parked.push_back(super::Parked { id, ended }),
        }
    }

    /// Reads on the listings set aside ([`park`](Self::park)) while fewer than half of
    /// [`DECIDED_AHEAD`] fetches wait, in the order they were set aside; one set aside
    /// again when the queue fills goes to the back.
    pub(super) fn resume_parked(&mut self, now: Instant) {
        while self.fetches.len() < DECIDED_AHEAD / 2 {
            let Some(super::Parked { id, ended }) = self.parked.pop_front() else {
                return;
            };
            let end = ended.is_some();
            if let Some(flight) = ended {
                self.flights.insert(id, flight);
            }
            // A listing still arriving whose flight ended meanwhile (failed, cancelled)
            // is no longer in `flights`: nothing to read.
            self.read_document(id, end, now);
            if end {
                // Ended: a failure found now cancels a request whose driver is done with
                // it, as one found at its end does (`handle_end`).
                self.closed.remove(&id);
            }
            self.advance(Some(now));
        }
    }

    /// Refuses the entries the reader skipped (no `<loc>`, or one that no reading makes a
    /// URI) up to entry `upto` (the reader's count): each counted, with its rule. In a
    /// Change List, `bound` is the latest their changes can be stamped: the next entry's
    /// datetime, or the list's `until` after the last.
    fn skipped(&mut self, id: RequestId, upto: u64, bound: Option<W3cDateTime>) {
        let Some((doc, _)) = document_mut(&mut self.flights, id) else {
            return;
        };
        let seen = doc.feed.entries_read().min(upto);
        let accounted = doc.entries.saturating_sub(u64::from(upto != u64::MAX)) + doc.skipped;
        if seen <= accounted {
            return;
        }
        let numbers = accounted + 1..=seen;
        doc.skipped += seen - accounted;
        let kept = std::mem::take(&mut doc.loc_findings);
        let found: Vec<(u64, Option<(Rule, String)>)> = numbers
            .map(|n| {
                let earlier = kept
                    .iter()
                    .find(|(at, _, _)| *at == n)
                    .map(|(_, rule, message)| (*rule, message.clone()));
                (
                    n,
                    earlier.or_else(|| finding_of(doc.feed.findings(), n, &LOC_RULES)),
                )
            })
            .collect();
        for (n, found) in found {
            let (rule, message) = found.unwrap_or_else(|| {
                (
                    Rule::LocMandatory,
                    "the entry has no loc that can be read".into(),
                )
            });
            self.refuse_entry(id, Some(n), None, rule, message, bound);
        }
    }

    /// The `until` of the Change List read for `id`: the later of its own and the one
    /// its index states for it (a bound too early would take an unread change as
    /// applied); none for an open list.
    fn candidate_until(&self, id: RequestId) -> Option<W3cDateTime> {
        let (doc, _) = document(&self.flights, id)?;
        let head = doc.head.as_ref()?;
        let indexed = match (head.set, head.role) {
            (Some(s), Role::Candidate(c)) => (self.sets[s].stream.as_ref())
                .and_then(|stream| stream.candidates.get(c))
                .and_then(|candidate| candidate.md.as_ref())
                .and_then(|md| md.until),
            _ => None,
        };
        super::navigation::later(head.until, indexed)
    }

    /// Refuses entry `n` of the document of `id`: counted and reported with its rule.
    /// One of a listing whose URI is not known stops deletions (it may name a resource
    /// held); one of a Change List is refused where it stands in the stream, after the
    /// changes before it, stamped `at` (its own datetime, or for one whose URI is not
    /// known the latest it can be: see `Raw::datetime`).
    fn refuse_entry(
        &mut self,
        id: RequestId,
        n: Option<u64>,
        uri: Option<&Uri>,
        rule: Rule,
        reason: String,
        at: Option<W3cDateTime>,
    ) {
        let Some((doc, job)) = document(&self.flights, id) else {
            return;
        };
        let refusal = EntryRefusal {
            document: Some(job.uri.clone()),
            entry: n,
            rule,
            reason,
        };
        let Some(head) = &doc.head else { return };
        let (set, role, kind) = (head.set, head.role, head.kind);
        if let (Some(s), Role::Changes | Role::Candidate(_), DocumentKind::ChangeList) =
            (set, role, kind)
        {
            let mut r = Raw::refused(uri.unwrap_or(&job.uri).clone(), refusal);
            r.known = uri.is_some();
            r.datetime = at;
            self.collect_raw(Some(s), role, r);
            return;
        }
        if let Some(s) = set {
            if role == Role::Listing {
                self.report.listed += 1;
            }
            match uri {
                // Listed, if refused: never deleted for want of a listing.
                Some(uri) if role == Role::Listing => self.listed.push(super::hash(uri)),
                // A package of a Resource Dump: what it holds is not read, and must not
                // be deleted for want of it.
                Some(_) if role == Role::Dump => self.sets[s].failed = true,
                // What a Capability List offers (a part of the listing, the Change
                // Lists since it): not read, and what it names must not be deleted for
                // want of it.
                _ if role == Role::Capabilities => self.sets[s].unread = true,
                Some(_) => {}
                None => self.sets[s].unread = true,
            }
            if kind.is_index() {
                // A part of the listing is not read.
                self.sets[s].failed = true;
            }
        }
        if set.is_none() && kind == DocumentKind::SourceDescription {
            // A Capability List it names, not read: its set's files must not be deleted
            // by the others' sweep.
            self.root_unread = true;
        }
        let about = uri.cloned().or_else(|| refusal.document.clone());
        self.push_problem(
            about.as_ref(),
            Some(id),
            ProblemKind::EntryRefused(Box::new(refusal)),
        );
    }

    fn take_findings(&mut self, id: RequestId) {
        let max = self.config.bounds.max_warnings;
        let Some((doc, job)) = document_mut(&mut self.flights, id) else {
            return;
        };
        if doc.feed.findings().is_empty() {
            return;
        }
        let findings = doc.feed.take_findings();
        let uri = job.uri.clone();
        // What a skipped entry was skipped for, until `skipped` counts it (a few: past
        // the bound, a refusal names no more than its rule).
        let accounted = doc.entries + doc.skipped;
        for f in &findings {
            if let (Some(n), true) = (f.entry, LOC_RULES.contains(&f.rule)) {
                if n > accounted && doc.loc_findings.len() < MAX_KEPT_FINDINGS {
                    doc.loc_findings.push((n, f.rule, f.message.clone()));
                }
            }
        }
        for finding in findings {
            doc.warnings += 1;
            self.report.warnings += 1;
            if doc.warnings <= max {
                self.events.push_back(Event::Warning(Warning {
                    document: Some(uri.clone()),
                    entry: finding.entry,
                    rule: Some(finding.rule),
                    message: finding.message,
                }));
            }
        }
    }

    pub(super) fn document_failed(&mut self, id: RequestId, kind: ProblemKind, now: Instant) {
        if let Some(flight) = self.flights.remove(&id) {
            self.cancel(id);
            let mut job = flight.job;
            // A broken document is not retried: it would break the same way.
            job.attempt = self.config.bounds.attempts;
            self.fail_job(job, kind, Some(id), now);
        }
    }
}

/// Findings that leave an entry's fixity unknown: a `hash` or `length` present but not
/// read. Stored, the entry would be stored unchecked.
pub(super) const FIXITY_RULES: [Rule; 4] = [
    Rule::HashSyntax,
    Rule::HashDigestLength,
    Rule::HashConflict,
    Rule::LengthSyntax,
];

/// Findings kept per document for the entries skipped, until they are counted.
const MAX_KEPT_FINDINGS: usize = 1000;

/// Findings that the reader skipped an entry for.
pub(super) const LOC_RULES: [Rule; 2] = [Rule::UriSyntax, Rule::LocMandatory];

/// The first finding about entry `n` of one of `rules`: its rule and message.
pub(super) fn finding_of(findings: &[Finding], n: u64, rules: &[Rule]) -> Option<(Rule, String)> {
    findings
        .iter()
        .find(|f| f.entry == Some(n) && rules.contains(&f.rule))
        .map(|f| (f.rule, f.message.clone()))
}
