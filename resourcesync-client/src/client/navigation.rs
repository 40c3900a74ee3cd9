//! Navigation: what each document is read for (from its head and what its parent
//! promised), and the documents and sets its entries lead to. The reading itself, as
//! the bytes arrive, is `reading`'s.

use std::collections::HashMap;
use std::collections::hash_map::Entry as Named;

use resourcesync_model::{Capability, Channel, DocumentHead, DocumentKind, Entry, Relation, Uri};

use super::incremental::raw;
use super::{
    Body, Candidate, Client, DocJob, Flight, Head, Job, Offered, Phase, Raw, Role, Set, What,
    document, hash,
};
use crate::config::Mode;
use crate::event::{DocumentRead, Event, ProblemKind};
use crate::inventory::Inventory;
use crate::request::RequestId;

impl<I: Inventory> Client<I> {
    /// Queues a document of `set`, listed by `parent`, whose job is `by` (none for a
    /// set's own step: its listing, its Change Lists).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_doc(
        &mut self,
        set: usize,
        uri: Uri,
        role: Role,
        depth: u32,
        expect: Option<Capability>,
        parent: Option<Uri>,
        by: Option<u64>,
    ) {
        match self.visited.entry(uri.as_str().to_owned()) {
            Named::Vacant(v) => {
                v.insert(by);
            }
            // Named again by the job that named it: that document read again (a retry
            // after its body was cut, wherever a redirect took it), or an entry it
            // repeats: read once, and no loop. Not by another job, even one that answers
            // with the same body (a part redirected to its index), nor one URI named
            // under two roles: those are loops.
            Named::Occupied(o) if by.is_some() && *o.get() == by => return,
            Named::Occupied(_) => {
                self.sets[set].failed = true;
                self.push_problem(Some(&uri), None, ProblemKind::Loop);
                return;
            }
        }
        if !self.count_document(set, &uri) {
            return;
        }
        self.serials += 1;
        self.sets[set].pending += 1;
        self.docs.push_back(Job {
            uri,
            what: What::Document(DocJob {
                set: Some(set),
                depth,
                expect,
                role,
                then: None,
                discovered: false,
                parent,
                via: None,
                serial: self.serials,
            }),
            attempt: 0,
            redirects: 0,
        });
    }

    /// Decides what a document is read for, from its head and what its parent promised.
    pub(super) fn on_head(
        &mut self,
        id: RequestId,
        job: &Job,
        head: &DocumentHead,
    ) -> Result<(), ProblemKind> {
        let What::Document(doc) = &job.what else {
            return Ok(());
        };
        let kind = head.kind();
        let capability = head.md.capability.clone();
        if let Some(expected) = &doc.expect {
            if capability.as_ref() != Some(expected) {
                return Err(ProblemKind::Unexpected {
                    expected: expected.clone(),
                    found: kind,
                });
            }
        }
        let mode = self.config.mode;
        let mut set = doc.set;
        let mut part_alone = false;
        if doc.role == Role::Any {
            match self.instead_of_start(head, kind, doc.via.is_some()) {
                Instead::There(instead, rel) => {
                    // Read the whole set instead: this document is not read on (and may
                    // be reached again from there).
                    self.visited.remove(job.uri.as_str());
                    self.push_root_doc(instead, Role::Any, None, false, Some(rel));
                    if self.flights.remove(&id).is_some() {
                        self.cancel(id);
                        self.root_pending = self.root_pending.saturating_sub(1);
                    }
                    return Ok(());
                }
                // The whole is refused (a problem said so): this part is read, its
                // resources synced, but it is not the listing: what the other parts
                // list must not be deleted for want of them.
                Instead::Refused => part_alone = true,
                // Led here by a list's `index` link, and no index: this is not the whole
                // listing that list is a part of.
                Instead::Here if doc.via == Some(Relation::Index) && !kind.is_index() => {
                    part_alone = true;
                    let what = "index (a list's index link names a document that is none)";
                    self.push_problem(Some(&job.uri), None, ProblemKind::NotOffered(what));
                }
                Instead::Here => {}
            }
        }
        // A list started at directly belongs to the set of the Capability List it
        // points `up` to, if it does: baseline and incremental runs then share it.
        let key = head
            .link(&Relation::Up)
            .map(|l| l.href.to_string())
            .unwrap_or_else(|| job.uri.to_string());
        let role = match (doc.role, kind) {
            (Role::Any, DocumentKind::SourceDescription) => Role::Any,
            (Role::Any, k) if mode == Mode::Explore && k != DocumentKind::CapabilityList => {
                if k == DocumentKind::Unknown {
                    return Err(ProblemKind::NotOffered(
                        "ResourceSync document (the start has no capability)",
                    ));
                }
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Explore
            }
            (Role::Any, DocumentKind::CapabilityList) => {
                set = Some(self.new_set(job.uri.as_str(), Phase::Capabilities));
                Role::Capabilities
            }
            (Role::Any, DocumentKind::ResourceList | DocumentKind::ResourceListIndex)
                if mode != Mode::Incremental =>
            {
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Listing
            }
            (Role::Any, DocumentKind::ResourceDump | DocumentKind::ResourceDumpIndex)
                if matches!(mode, Mode::Baseline { .. }) =>
            {
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Dump
            }
            (
                Role::Any,
                DocumentKind::ChangeList
                | DocumentKind::ChangeListIndex
                | DocumentKind::ChangeDump
                | DocumentKind::ChangeDumpIndex,
            ) if mode == Mode::Incremental => {
                let s = self.new_start_set(&key, &job.uri);
                if self.start_stream(s) {
                    set = Some(s);
                    Role::Changes
                } else {
                    // No checkpoint (a problem said so): the document is read on without
                    // a set, its entries ignored. Returning before its head is recorded
                    // made `read_document` ask for the head again, forever.
                    self.sets[s].phase = Phase::Finished;
                    Role::Any
                }
            }
            (Role::Any, DocumentKind::Unknown) if doc.discovered => {
                // A plain Sitemap found by discovery: not ResourceSync.
                self.warn(
                    Some(&job.uri),
                    None,
                    None,
                    "not a ResourceSync document; ignored".into(),
                );
                Role::Any
            }
            // A list or a dump started at without an `up` link (one with it was read
            // instead: `instead_of_start`), or whose `up` link was refused (said): no
            // change stream to follow, only baselines.
            (
                Role::Any,
                DocumentKind::ResourceList
                | DocumentKind::ResourceListIndex
                | DocumentKind::ResourceDump
                | DocumentKind::ResourceDumpIndex,
            ) if mode == Mode::Incremental => {
                return Err(ProblemKind::NoChanges(if part_alone {
                    "the start is a list whose Capability List is not read"
                } else {
                    "the start is a list that names no Capability List"
                }));
            }
            (Role::Any, _) => {
                return Err(ProblemKind::NotOffered(match mode {
                    Mode::Incremental => "Change List (the start is a document of another kind)",
                    _ => "Resource List (the start is a document of another kind)",
                }));
            }
            (role, _) => role,
        };
        if let (true, Some(s)) = (part_alone, set) {
            self.sets[s].failed = true;
        }
        if let (Role::Capabilities, Some(s)) = (role, set) {
            // Read anew (a follower's next run, a retry after a cut): what it offers now,
            // not beside what it offered before (a second Change List, said).
            self.sets[s].offered = Offered::default();
        }
        // The start was counted as a root job; it now belongs to its set (and a failure
        // later in its body is counted there).
        if let (None, Some(s)) = (doc.set, set) {
            self.root_pending = self.root_pending.saturating_sub(1);
            self.sets[s].pending += 1;
        }
        // Found, so no longer discovery's: a failure later is its set's (a Source
        // Description's: the sets it names past the failure are unread, `fail_job`), not
        // a reason to try the next way of discovery, which went on and took the sets
        // read for the whole.
        let found = doc.set.is_none() && (set.is_some() || kind == DocumentKind::SourceDescription);
        if let (true, Some(flight)) = (found, self.flights.get_mut(&id)) {
            if let What::Document(d) = &mut flight.job.what {
                d.then = None;
                // And a set's document of that role from now on: read again (a retry
                // after its body failed), it is not a start a second time.
                if let Some(s) = set {
                    d.set = Some(s);
                    d.role = role;
                }
            }
        }
        if let Some(Flight {
            body: Body::Document(d),
            ..
        }) = self.flights.get_mut(&id)
        {
            d.head = Some(Head {
                kind,
                set,
                at: head.md.at,
                until: head.md.until,
                role,
            });
        }
        if let Some(s) = set {
            if role == Role::Listing || role == Role::Dump {
                if let Some(at) = head.md.at {
                    let earliest = self.sets[s].at.map_or(at, |a| a.min(at));
                    self.sets[s].at = Some(earliest);
                }
            }
            if let Some(stream) = self.sets[s].stream.as_mut() {
                if let Some(link) = head.link(&Relation::Archives) {
                    if stream.archive.is_none() {
                        stream.archive = Some(link.href.clone());
                    }
                }
                if role == Role::Changes && kind == DocumentKind::ChangeList {
                    // The stream starts at a Change List: it is its own candidate. Read
                    // again (a retry), it starts over.
                    let own = Candidate {
                        uri: job.uri.clone(),
                        from: head.md.from,
                        until: head.md.until,
                        dump: false,
                        md: None,
                        loaded: Some(Vec::new()),
                        package: None,
                    };
                    match stream.candidates.iter_mut().find(|c| c.uri == job.uri) {
                        Some(c) => *c = own,
                        None => stream.candidates.push(own),
                    }
                }
                if role == Role::Changes && kind.is_index() {
                    stream.index_from = head.md.from;
                }
                if let Role::Candidate(c) = role {
                    // A candidate read again (a retry after its body failed) starts over:
                    // what the failed attempt read would count twice.
                    if let Some(c) = stream.candidates.get_mut(c) {
                        c.loaded = Some(Vec::new());
                        // What the list states of itself counts, as much as what its
                        // index said of it: the later start, the earlier end.
                        c.from = later(c.from, head.md.from);
                        c.until = match (c.until, head.md.until) {
                            (Some(a), Some(b)) => Some(a.min(b)),
                            (a, b) => a.or(b),
                        };
                    }
                }
            }
        }
        Ok(())
    }

    /// Where a run that starts at a list should read instead: a baseline or audit reads
    /// a Resource List's whole index (its `index` link), and a baseline a Resource
    /// Dump's, never one part (deleting what the other parts list); an incremental run
    /// reads the Capability List a Resource List or Dump points `up` to, where the Change
    /// Lists are.
    /// A document a link of this kind `led` to follows no such link again.
    fn instead_of_start(&mut self, head: &DocumentHead, kind: DocumentKind, led: bool) -> Instead {
        let rel = match (self.config.mode, kind) {
            (
                Mode::Incremental,
                DocumentKind::ResourceList
                | DocumentKind::ResourceListIndex
                | DocumentKind::ResourceDump
                | DocumentKind::ResourceDumpIndex,
            ) => Relation::Up,
            (Mode::Baseline { .. } | Mode::Audit, DocumentKind::ResourceList)
            | (Mode::Baseline { .. }, DocumentKind::ResourceDump) => Relation::Index,
            _ => return Instead::Here,
        };
        let Some(link) = head.link(&rel) else {
            return Instead::Here;
        };
        if led {
            // Led here by such a link already: a second would go round (a list whose
            // index link names itself, or two that name each other), and this is not
            // the whole the first link promised.
            let uri = link.href.clone();
            self.push_problem(Some(&uri), None, ProblemKind::Loop);
            return Instead::Refused;
        }
        let uri = link.href.clone();
        match self.checked(&uri) {
            Some(uri) => Instead::There(uri, rel),
            None => Instead::Refused,
        }
    }

    /// The set of a list the run started at: keyed by `key`, re-read from `start`.
    pub(super) fn new_start_set(&mut self, key: &str, start: &Uri) -> usize {
        let set = self.new_set(key, Phase::Reading);
        self.sets[set].start = start.clone();
        set
    }

    pub(super) fn new_set(&mut self, key: &str, phase: Phase) -> usize {
        if let Some(i) = self.sets.iter().position(|s| s.key == key) {
            return i;
        }
        let start = key.parse().unwrap_or_else(|_| self.config.start.clone());
        self.sets.push(Set {
            key: key.to_owned(),
            start,
            listed_by_capabilities: phase == Phase::Capabilities,
            offered: Offered::default(),
            pending: 0,
            at: None,
            failed: false,
            unread: false,
            unreconciled: false,
            reflected: HashMap::default(),
            changes_given_up: false,
            resource_failed: false,
            phase,
            stream: None,
            unsettled: 0,
            deferred: HashMap::new(),
            retried: false,
            refetch: Vec::new(),
            conflicted: HashMap::new(),
            unfetched: HashMap::new(),
            since: HashMap::new(),
            declined: Default::default(),
        });
        self.sets.len() - 1
    }

    pub(super) fn on_entry(&mut self, id: RequestId, n: u64, entry: Entry) {
        let Some((doc, job)) = document(&self.flights, id) else {
            return;
        };
        let Some(head) = &doc.head else { return };
        let (kind, set, role) = (head.kind, head.set, head.role);
        let depth = match &job.what {
            What::Document(d) => d.depth,
            _ => 0,
        };
        // What it names, it names as its job (read again, it names the same).
        let by = match &job.what {
            What::Document(d) => Some(d.serial),
            _ => None,
        };
        // The entries of lists, by the million, go straight to their role (a listing's
        // from `read_document`); the rest may name the document they are in.
        if let (Role::Changes | Role::Candidate(_), DocumentKind::ChangeList) = (role, kind) {
            self.collect_change(set, role, &entry);
            return;
        }
        let doc_uri = job.uri.clone();
        let capability = entry.md.as_ref().and_then(|md| md.capability.clone());
        match (role, kind) {
            (Role::Any, DocumentKind::SourceDescription) => {
                if capability != Some(Capability::CapabilityList) {
                    // Every entry of a Source Description is a Capability List (the
                    // standard's 8): this one, not read, may be a set's all the same.
                    self.root_unread = true;
                    self.warn(
                        Some(&doc_uri),
                        Some(n),
                        None,
                        "entry is not a Capability List; ignored".into(),
                    );
                    return;
                }
                // A start beneath the host's root names a part of it; the Source
                // Description is the host's, and what it lists is synced wherever it is,
                // but said when not under the start: a mistyped start URL would otherwise
                // sync another part of the host without a word.
                let start = &self.config.start;
                if self.config.discovers()
                    && start.path() != "/"
                    && !entry.loc.as_str().starts_with(start.as_str())
                {
                    let message = format!(
                        "the Capability List {} is not under the start URL {start}: synced \
                         all the same, as the host's Source Description lists it",
                        entry.loc
                    );
                    self.warn(Some(&doc_uri), Some(n), None, message);
                }
                match self.checked(&entry.loc) {
                    Some(uri) => {
                        let s = self.new_set(uri.as_str(), Phase::Capabilities);
                        self.push_doc(
                            s,
                            uri,
                            Role::Capabilities,
                            depth + 1,
                            Some(Capability::CapabilityList),
                            Some(doc_uri.clone()),
                            by,
                        );
                    }
                    // Refused (a problem said so): its set is not read.
                    None => self.root_unread = true,
                }
            }
            (Role::Capabilities, _) if capability.as_ref().is_some_and(|c| c.is_notification()) => {
                // A channel is a WebSub topic, not a document to read: it is told to the
                // caller (a follower subscribes to it). One without a hub link was
                // reported by the reader and cannot be subscribed to.
                if let Some(channel) = Channel::of_entry(&entry) {
                    self.events.push_back(Event::Channel {
                        capability_list: doc_uri,
                        channel,
                    });
                }
            }
            (Role::Capabilities, _) => {
                let Some(s) = set else { return };
                let uri = entry.loc.clone();
                let offered = &mut self.sets[s].offered;
                if let Some(c) = &capability {
                    offered.all.push((c.clone(), uri.clone()));
                }
                let slot = match capability {
                    Some(Capability::ResourceList) => &mut offered.resourcelist,
                    Some(Capability::ResourceDump) => &mut offered.resourcedump,
                    Some(Capability::ChangeList) => &mut offered.changelist,
                    Some(Capability::ChangeDump) => &mut offered.changedump,
                    Some(Capability::ChangeListArchive) => &mut offered.changelist_archive,
                    // Others (archives of lists and dumps, unknown) are not needed.
                    _ => return,
                };
                match slot {
                    None => *slot = Some(uri),
                    Some(first) if *first == uri => {}
                    // A second document of one capability, where the standard groups
                    // them in an index (11.2, 12.2): read as its parts would be, or,
                    // for the change stream, whose order two cannot state, said.
                    Some(_) => {
                        let Some(capability) = capability else { return };
                        let message = format!(
                            "a second {capability} in one Capability List (the standard \
                             groups them in an index): {}",
                            if matches!(
                                capability,
                                Capability::ResourceList | Capability::ResourceDump
                            ) {
                                "read as parts of one"
                            } else {
                                "the changes are not read"
                            }
                        );
                        offered.more.push((capability, uri));
                        self.warn(Some(&doc_uri), Some(n), None, message);
                    }
                }
            }
            (_, k) if k.is_index() => {
                // Every child of an index has the index's capability.
                let Some(s) = set else { return };
                if depth + 1 > self.config.bounds.max_depth {
                    self.sets[s].failed = true;
                    self.push_problem(
                        Some(&entry.loc),
                        Some(id),
                        ProblemKind::TooDeep(self.config.bounds.max_depth),
                    );
                    return;
                }
                let expect = k.capability();
                match role {
                    Role::Changes | Role::Archive
                        if k == DocumentKind::ChangeListIndex
                            || k == DocumentKind::ChangeDumpIndex =>
                    {
                        // Change lists (or dumps) become candidates, read in order later.
                        self.add_candidate(s, &entry, k == DocumentKind::ChangeDumpIndex);
                    }
                    _ => match self.checked(&entry.loc) {
                        Some(uri) => self.push_doc(
                            s,
                            uri,
                            role,
                            depth + 1,
                            expect,
                            Some(doc_uri.clone()),
                            by,
                        ),
                        // Refused (a problem said so): a part of the set's listing is not
                        // read, and what it lists must not be deleted for want of it.
                        None => self.sets[s].failed = true,
                    },
                }
            }
            (Role::Explore, archive) => {
                // An archive lists documents of the capability it archives.
                let archived = match archive {
                    DocumentKind::ResourceListArchive => Capability::ResourceList,
                    DocumentKind::ResourceDumpArchive => Capability::ResourceDump,
                    DocumentKind::ChangeListArchive => Capability::ChangeList,
                    DocumentKind::ChangeDumpArchive => Capability::ChangeDump,
                    _ => return,
                };
                let Some(s) = set else { return };
                if depth + 1 > self.config.bounds.max_depth {
                    self.sets[s].failed = true;
                    let max = self.config.bounds.max_depth;
                    self.push_problem(Some(&entry.loc), Some(id), ProblemKind::TooDeep(max));
                    return;
                }
                if let Some(uri) = self.checked(&entry.loc) {
                    self.push_doc(
                        s,
                        uri,
                        Role::Explore,
                        depth + 1,
                        Some(archived),
                        Some(doc_uri.clone()),
                        by,
                    );
                }
            }
            (Role::Dump, DocumentKind::ResourceDump) => {
                let Some(s) = set else { return };
                if let Some(uri) = self.checked(&entry.loc) {
                    self.sets[s].pending += 1;
                    self.docs.push_back(Job {
                        uri,
                        what: What::Package {
                            set: s,
                            md: entry.md.clone().map(Box::new),
                            candidate: None,
                        },
                        attempt: 0,
                        redirects: 0,
                    });
                } else {
                    // Refused: its bitstreams are not read (as for an index's child).
                    self.sets[s].failed = true;
                }
            }
            (Role::Changes, DocumentKind::ChangeDump)
            | (Role::Archive, DocumentKind::ChangeDumpArchive) => {
                if let Some(s) = set {
                    self.add_candidate(s, &entry, true);
                }
            }
            (Role::Archive, DocumentKind::ChangeListArchive) => {
                if let Some(s) = set {
                    self.add_candidate(s, &entry, false);
                }
            }
            _ => {}
        }
    }

    /// A change read from a Change List: kept with its candidate until its batch is
    /// applied.
    pub(super) fn collect_change(&mut self, set: Option<usize>, role: Role, entry: &Entry) {
        let Some(s) = set else { return };
        let Some(stream) = self.sets[s].stream.as_mut() else {
            return;
        };
        let c = match role {
            Role::Candidate(c) => c,
            _ => stream.candidates.len().saturating_sub(1),
        };
        if let Some(Some(loaded)) = stream.candidates.get_mut(c).map(|c| c.loaded.as_mut()) {
            loaded.push(raw(entry, None));
        }
    }

    /// A refused entry of a Change List, kept in its place in the stream.
    pub(super) fn collect_raw(&mut self, set: Option<usize>, role: Role, r: Raw) {
        let Some(s) = set else { return };
        let Some(stream) = self.sets[s].stream.as_mut() else {
            return;
        };
        let c = match role {
            Role::Candidate(c) => c,
            _ => stream.candidates.len().saturating_sub(1),
        };
        if let Some(Some(loaded)) = stream.candidates.get_mut(c).map(|c| c.loaded.as_mut()) {
            loaded.push(r);
        }
    }

    /// Counts one more document named in this run: false (the set failed, with a
    /// problem said once) past [`Bounds::max_documents`](crate::Bounds::max_documents).
    fn count_document(&mut self, set: usize, uri: &Uri) -> bool {
        self.documents += 1;
        let max = self.config.bounds.max_documents;
        if self.documents <= max {
            return true;
        }
        // Said once: every document past the bound would say it again. Said even where
        // the set had failed already: another failure does not tell that the bound
        // was met.
        self.sets[set].failed = true;
        if self.documents == max.saturating_add(1) {
            self.push_problem(Some(uri), None, ProblemKind::TooManyDocuments(max));
        }
        false
    }

    pub(super) fn add_candidate(&mut self, set: usize, entry: &Entry, dump: bool) {
        let named = hash(&entry.loc);
        let new = match self.sets[set].stream.as_mut() {
            Some(stream) => stream.named.insert(named),
            None => false,
        };
        if !new {
            return;
        }
        if !self.count_document(set, &entry.loc) {
            return;
        }
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        let md = entry.md.as_ref();
        stream.candidates.push(Candidate {
            uri: entry.loc.clone(),
            from: md.and_then(|m| m.from),
            until: md.and_then(|m| m.until),
            dump,
            md: entry.md.clone(),
            loaded: None,
            package: None,
        });
    }

    pub(super) fn document_read(&mut self, id: RequestId) {
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        let Body::Document(doc) = flight.body else {
            return;
        };
        let Some(head) = doc.head else { return };
        self.report.documents += 1;
        self.progress.documents += 1;
        let parent = match &flight.job.what {
            What::Document(d) => d.parent.clone(),
            _ => None,
        };
        self.events.push_back(Event::Document(DocumentRead {
            request: id,
            parent,
            uri: flight.job.uri.clone(),
            kind: head.kind,
            entries: doc.entries,
            at: head.at,
        }));
        match head.set {
            Some(s) => {
                if head.role == Role::Capabilities {
                    self.capabilities_read(s);
                }
                self.sets[s].pending = self.sets[s].pending.saturating_sub(1);
            }
            None => self.root_pending = self.root_pending.saturating_sub(1),
        }
        self.events.push_back(Event::Progress(self.progress()));
    }

    /// A set's Capability List was read: start its listing or change stream.
    pub(super) fn capabilities_read(&mut self, set: usize) {
        self.sets[set].phase = Phase::Reading;
        let offered = &self.sets[set].offered;
        if self.config.mode == Mode::Explore {
            let parent = self.capability_list_uri(set);
            let all = std::mem::take(&mut self.sets[set].offered.all);
            for (capability, uri) in all {
                if let Some(uri) = self.checked(&uri) {
                    self.push_doc(
                        set,
                        uri,
                        Role::Explore,
                        2,
                        Some(capability),
                        parent.clone(),
                        None,
                    );
                }
            }
            return;
        }
        let (uri, role, expect, what) = match self.config.mode {
            Mode::Baseline { prefer_dump } => {
                // A dry run fetches no resource, and a dump's packages hold them (a
                // `--dump --dry-run` downloaded every package to count what it holds):
                // it plans from the Resource List, which lists the same resources, where
                // there is one.
                let prefer_dump = prefer_dump && !self.config.dry_run;
                match (&offered.resourcelist, &offered.resourcedump) {
                    (_, Some(dump)) if prefer_dump || offered.resourcelist.is_none() => (
                        dump.clone(),
                        Role::Dump,
                        Capability::ResourceDump,
                        "Resource List or Dump",
                    ),
                    (Some(list), _) => (list.clone(), Role::Listing, Capability::ResourceList, ""),
                    _ => {
                        self.set_not_offered(set, "Resource List or Dump");
                        return;
                    }
                }
            }
            Mode::Audit => match &offered.resourcelist {
                Some(list) => (list.clone(), Role::Listing, Capability::ResourceList, ""),
                None => {
                    self.set_not_offered(set, "Resource List");
                    return;
                }
            },
            Mode::Explore => return,
            Mode::Incremental => {
                if offered.more_changes() {
                    // Said as a warning where it was read; which comes first of two
                    // Change Lists only an index states.
                    self.sets[set].failed = true;
                    self.sets[set].phase = Phase::Finished;
                    let uri = self.capability_list_uri(set);
                    let why = "its Capability List names more than one, where only an index states their order";
                    self.push_problem(uri.as_ref(), None, ProblemKind::NoChanges(why));
                    return;
                }
                let (uri, expect) = match (&offered.changelist, &offered.changedump) {
                    (Some(list), _) => (list.clone(), Capability::ChangeList),
                    (None, Some(dump)) => (dump.clone(), Capability::ChangeDump),
                    _ => {
                        self.sets[set].failed = true;
                        self.sets[set].phase = Phase::Finished;
                        let uri = self.capability_list_uri(set);
                        let why = "its Capability List lists neither";
                        self.push_problem(uri.as_ref(), None, ProblemKind::NoChanges(why));
                        return;
                    }
                };
                if !self.start_stream(set) {
                    self.sets[set].phase = Phase::Finished;
                    return;
                }
                (uri, Role::Changes, expect, "")
            }
        };
        let _ = what;
        // The parts of a listing named one by one in the Capability List, not in an
        // index (warned of where they were read), after the first.
        let more: Vec<Uri> = self.sets[set]
            .offered
            .more
            .iter()
            .filter(|(c, _)| *c == expect)
            .map(|(_, uri)| uri.clone())
            .collect();
        let parent = self.capability_list_uri(set);
        for uri in std::iter::once(uri).chain(more) {
            match self.checked(&uri) {
                Some(uri) => self.push_doc(
                    set,
                    uri,
                    role,
                    2,
                    Some(expect.clone()),
                    parent.clone(),
                    None,
                ),
                // Refused (a problem said so): a part of the listing is not read.
                None => self.sets[set].failed = true,
            }
        }
    }

    pub(super) fn set_not_offered(&mut self, set: usize, what: &'static str) {
        self.sets[set].failed = true;
        self.sets[set].phase = Phase::Finished;
        let uri = self.capability_list_uri(set);
        self.push_problem(uri.as_ref(), None, ProblemKind::NotOffered(what));
    }
}

/// The later of two stated starts, either of which may be missing.
pub(super) fn later(
    a: Option<resourcesync_model::W3cDateTime>,
    b: Option<resourcesync_model::W3cDateTime>,
) -> Option<resourcesync_model::W3cDateTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// What a run that starts at a list reads ([`Client::instead_of_start`]).
enum Instead {
    /// The list itself.
    Here,
    /// The document it links to (its whole, or its Capability List), by that link.
    There(Uri, Relation),
    /// Not the document it links to, which the policy refuses (a problem said so).
    Refused,
}
