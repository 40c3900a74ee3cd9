//! Checking a document against the standard's rules, entry by entry.
//!
//! The rules that span a document (Appendix A, order, one entry per capability, the
//! interval of a change's datetime) are checked by a [`Checker`] that sees the head once
//! and then each entry in turn. It keeps only what the next entry needs (the previous
//! entry's time, the document's interval, the capabilities seen in a Capability List, the
//! first package format of a dump), so a document of any size is checked in constant
//! memory while it streams.

use std::collections::hash_map::Entry as Slot;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

use crate::capability::{Capability, DocumentKind, DocumentKind as K};
use crate::rules::{Finding, Rule};
use crate::{
    AttributeName as A, Attributes, Change, Document, DocumentHead, Entry, HashAlgorithm, Link,
    Malformed, Md, Relation, RsElement, W3cDateTime, uri,
};

mod values;

use values::*;

/// The most entries a document may hold (section 7, after the Sitemap protocol).
pub const MAX_ENTRIES: u64 = 50_000;

/// The most bytes a document may take, uncompressed (section 7, after the Sitemap
/// protocol's 50 MB): 52,428,800. Only a reader sees bytes; see [`Rule::MaxBytes`].
pub const MAX_BYTES: u64 = 52_428_800;

/// What the checker cannot see in the document itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckOptions {
    /// The document is one part of an index (for instance, it was reached from a Resource
    /// List Index), so the recommended `index` link is expected. Without this, the
    /// standard's "in case an index exists" cannot be decided and the rule is not checked.
    pub part_of_index: bool,
}

impl CheckOptions {
    /// Options for a document that is, or is not, part of an index.
    pub fn part_of_index(part_of_index: bool) -> CheckOptions {
        CheckOptions { part_of_index }
    }
}

/// How an attribute of Appendix A may be used at some level of some document.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Mandatory,
    Recommended,
    Optional,
    NotUsed,
    /// The standards say nothing; nothing is checked.
    Unchecked,
}

/// Appendix A, Table 4 (mandatory, recommended, optional), section 7 (not used) and the
/// Archives specification's entries: how `at` and `from` are used on the document's
/// `<rs:md>` and on its entries' `<rs:md>`.
/// Returns `(top at, top from, entry at, entry from)`.
fn time_attributes(kind: K) -> (Use, Use, Use, Use) {
    use Use::*;
    match kind {
        K::ResourceList => (Mandatory, NotUsed, NotUsed, NotUsed),
        K::ResourceListIndex | K::ResourceDump | K::ResourceDumpIndex => {
            (Mandatory, NotUsed, Optional, NotUsed)
        }
        K::ResourceDumpManifest => (Mandatory, NotUsed, NotUsed, NotUsed),
        K::ChangeList | K::ChangeDumpManifest => (NotUsed, Mandatory, NotUsed, NotUsed),
        K::ChangeListIndex | K::ChangeDump | K::ChangeDumpIndex => {
            (NotUsed, Mandatory, NotUsed, Recommended)
        }
        K::ResourceListArchive | K::ResourceDumpArchive => {
            (Unchecked, Unchecked, Recommended, NotUsed)
        }
        K::ChangeListArchive | K::ChangeDumpArchive => (Unchecked, Unchecked, NotUsed, Optional),
        // Change Notification, section 3: from and until mandatory (until is checked apart,
        // as `UntilMandatory`); Framework Notification, section 3: both optional. Neither
        // says anything of `at`, nor of the entries' time attributes but `datetime`.
        K::ChangeNotification => (Unchecked, Mandatory, Unchecked, Unchecked),
        K::FrameworkNotification => (Unchecked, Optional, Unchecked, Unchecked),
        _ => (Unchecked, Unchecked, Unchecked, Unchecked),
    }
}

/// Which attribute orders the entries of a document.
#[derive(Clone, Copy)]
enum OrderKey {
    /// The change's `datetime` (Change Lists, Change Dump Manifests, change notifications).
    Datetime,
    /// The start `from` of the interval an entry covers (indexes, dumps, archives).
    From,
}

impl OrderKey {
    fn of(self, md: &Md) -> Option<&W3cDateTime> {
        match self {
            OrderKey::Datetime => md.datetime.as_ref(),
            OrderKey::From => md.from.as_ref(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            OrderKey::Datetime => "datetime",
            OrderKey::From => "from",
        }
    }
}

/// The order rule of a kind, and the attribute it orders by.
fn order_rule(kind: K) -> Option<(Rule, OrderKey)> {
    Some(match kind {
        K::ChangeList => (Rule::ChangeListOrder, OrderKey::Datetime),
        K::ChangeDumpManifest => (Rule::ChangeDumpManifestOrder, OrderKey::Datetime),
        K::ChangeNotification => (Rule::ChangeNotificationOrder, OrderKey::Datetime),
        K::ChangeListIndex => (Rule::ChangeListIndexOrder, OrderKey::From),
        K::ChangeDump => (Rule::ChangeDumpOrder, OrderKey::From),
        K::ChangeDumpIndex => (Rule::ChangeDumpIndexOrder, OrderKey::From),
        K::ChangeListArchive => (Rule::ChangeListArchiveOrder, OrderKey::From),
        K::ChangeDumpArchive => (Rule::ChangeDumpArchiveOrder, OrderKey::From),
        _ => return None,
    })
}

/// Kinds whose `up` link is mandatory: every capability document, manifest and archive,
/// and the Capability List itself (to the Source Description). A notification's is
/// optional (Change Notification and Framework Notification, section 3).
fn up_link_mandatory(kind: K) -> bool {
    !matches!(
        kind,
        K::SourceDescription
            | K::SourceDescriptionIndex
            | K::Unknown
            | K::ChangeNotification
            | K::FrameworkNotification
    )
}

/// Kinds whose entries are changes: `change` is mandatory on them, a resource may be
/// listed once per change, and a change's `datetime` lies within the document's interval.
fn lists_changes(kind: K) -> bool {
    matches!(
        kind,
        K::ChangeList | K::ChangeDumpManifest | K::ChangeNotification | K::FrameworkNotification
    )
}

/// Kinds that may be a part of an index and then should link to it.
fn may_have_index(kind: K) -> bool {
    matches!(
        kind,
        K::ResourceList
            | K::ResourceDump
            | K::ChangeList
            | K::ChangeDump
            | K::ResourceListArchive
            | K::ResourceDumpArchive
            | K::ChangeListArchive
            | K::ChangeDumpArchive
    )
}

fn is_manifest(kind: K) -> bool {
    matches!(kind, K::ResourceDumpManifest | K::ChangeDumpManifest)
}

/// The `<rs:md>` of an entry that has none: built once, not for every entry checked.
static EMPTY_MD: Md = Md {
    capability: None,
    at: None,
    completed: None,
    from: None,
    until: None,
    change: None,
    datetime: None,
    hash: None,
    length: None,
    path: None,
    media_type: None,
    encoding: None,
    extensions: Vec::new(),
};

/// Checks one document, head and entries, rule by rule.
///
/// Create it with the document's head (which it checks at once), pass each entry in
/// document order to [`check_entry`](Checker::check_entry), and call
/// [`finish`](Checker::finish) at the end. Findings are appended to a vector the caller
/// owns, so the caller decides whether to keep, print or count them.
///
/// ```
/// use resourcesync_model::{Change, Checker, DocumentHead, DocumentKind, Entry, Rule};
///
/// let head = DocumentHead::of_kind(DocumentKind::ChangeList)
///     .with_from("2013-01-03T00:00:00Z".parse()?);
/// let mut findings = Vec::new();
/// let mut checker = Checker::new(&head, &mut findings);
/// // The head has no `up` link.
/// assert_eq!(findings[0].rule, Rule::UpLinkMandatory);
///
/// for time in ["2013-01-03T18:00:00Z", "2013-01-03T11:00:00Z"] {
///     let entry = Entry::new("http://example.com/res1".parse()?)
///         .with_change(Change::Updated)
///         .with_datetime(time.parse()?);
///     checker.check_entry(&entry, &mut findings);
/// }
/// checker.finish(&mut findings);
/// assert_eq!(findings[1].rule, Rule::ChangeListOrder);
/// assert_eq!(findings[1].entry, Some(2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Checker {
    kind: K,
    from: Option<W3cDateTime>,
    until: Option<W3cDateTime>,
    entries: u64,
    /// The order key of the last entry that had one.
    previous: Option<W3cDateTime>,
    /// Capabilities seen so far, in a Capability List only: bounded by its entries.
    capabilities: HashSet<Capability>,
    /// The media type of a dump's first package.
    package_type: Option<String>,
    /// The `<loc>`s seen, in the kinds that list each resource once.
    locs: Option<LocSet>,
    /// The bitstreams' paths seen, in manifests, by their names in the package.
    paths: Option<LocSet>,
}

impl Checker {
    /// Starts checking a document with default [`CheckOptions`], checking its head.
    pub fn new(head: &DocumentHead, findings: &mut Vec<Finding>) -> Checker {
        Checker::with_options(head, CheckOptions::default(), findings)
    }

    /// Starts checking a document, checking its head.
    pub fn with_options(
        head: &DocumentHead,
        options: CheckOptions,
        findings: &mut Vec<Finding>,
    ) -> Checker {
        Checker::with_malformed(head, options, Malformed::default(), findings)
    }

    /// Starts checking a document whose reader found some of the head's attributes present
    /// but malformed, or dropped some of its links, and reported them: those are taken as
    /// present, so that a malformed `at` is not also a missing one. See [`Malformed`].
    ///
    /// ```
    /// use resourcesync_model::*;
    ///
    /// // <rs:md capability="resourcelist" at="yesterday"/>: the reader reported the
    /// // datetime and left `at` empty.
    /// let mut head = DocumentHead::of_kind(DocumentKind::ResourceList);
    /// head.links.push(Link::new(Relation::Up, "http://example.com/caps.xml".parse()?));
    /// let malformed = Malformed { md: Attributes::NONE.with(AttributeName::At), ..Malformed::default() };
    /// let mut findings = Vec::new();
    /// Checker::with_malformed(&head, CheckOptions::default(), malformed, &mut findings);
    /// assert!(findings.is_empty());
    /// Checker::new(&head, &mut findings);
    /// assert_eq!(findings[0].rule, Rule::AtMandatory);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_malformed(
        head: &DocumentHead,
        options: CheckOptions,
        malformed: Malformed<'_>,
        findings: &mut Vec<Finding>,
    ) -> Checker {
        // A near miss of a defined capability is reported, and the document checked as the
        // kind meant, so that the rules of that kind are not silently turned off.
        let kind = match head.md.capability.as_ref().and_then(Capability::meant) {
            Some(meant) => K::new(head.root, Some(&meant)),
            None => head.kind(),
        };
        let checker = Checker {
            kind,
            from: head.md.from,
            until: head.md.until,
            entries: 0,
            previous: None,
            capabilities: HashSet::new(),
            package_type: None,
            locs: (!lists_changes(kind) && kind != K::Unknown).then(LocSet::default),
            paths: is_manifest(kind).then(LocSet::default),
        };
        checker.check_head(head, options, malformed, findings);
        checker
    }

    /// The kind of the document being checked: the kind its capability means, when that
    /// is a near miss of a defined value ([`Capability::meant`]), else
    /// [`DocumentHead::kind`].
    pub fn kind(&self) -> DocumentKind {
        self.kind
    }

    /// How many entries have been checked.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    fn check_head(
        &self,
        head: &DocumentHead,
        options: CheckOptions,
        malformed: Malformed<'_>,
        out: &mut Vec<Finding>,
    ) {
        let kind = self.kind;
        let md = &head.md;
        let bad = malformed.md;
        // A link is there when it was kept, or dropped for a malformed href.
        let has_link = |rel: &Relation| head.link(rel).is_some() || malformed.dropped(rel);
        match &md.capability {
            None if bad.contains(A::Capability) => {}
            None => out.push(Finding::new(Rule::CapabilityMandatory, None)),
            Some(capability @ Capability::Other(_)) => {
                out.push(undefined_capability(capability, None));
            }
            Some(Capability::ResourceDumpManifest | Capability::ChangeDumpManifest)
                if head.root == crate::Root::SitemapIndex =>
            {
                out.push(Finding::new(Rule::ManifestIndex, None));
            }
            Some(capability)
                if head.root == crate::Root::SitemapIndex
                    && capability
                        .meant()
                        .as_ref()
                        .unwrap_or(capability)
                        .is_notification() =>
            {
                out.push(Finding {
                    section: if *capability.meant().as_ref().unwrap_or(capability)
                        == Capability::ChangeNotification
                    {
                        "Change Notification 3"
                    } else {
                        "Framework Notification 3"
                    },
                    ..Finding::new(Rule::NotificationIndex, None)
                });
            }
            Some(_) => {}
        }
        if kind == K::CapabilityListIndex {
            out.push(Finding::new(Rule::CapabilityListIndex, None));
        }

        let (at, from, _, _) = time_attributes(kind);
        let name = kind.name();
        if at == Use::Mandatory && md.at.is_none() && !bad.contains(A::At) {
            out.push(Finding {
                message: format!("a {name}'s rs:md must have an at attribute"),
                ..Finding::new(Rule::AtMandatory, None)
            });
        }
        let notification = kind == K::ChangeNotification;
        if from == Use::Mandatory && md.from.is_none() && !bad.contains(A::From) {
            out.push(Finding {
                section: if notification {
                    kind.section()
                } else {
                    "Appendix A"
                },
                message: format!("a {name}'s rs:md must have a from attribute"),
                ..Finding::new(Rule::FromMandatory, None)
            });
        }
        if notification && md.until.is_none() && !bad.contains(A::Until) {
            out.push(Finding::new(Rule::UntilMandatory, None));
        }
        if at == Use::NotUsed && (md.at.is_some() || md.completed.is_some()) {
            out.push(Finding {
                message: format!("at and completed are not used on a {name}'s rs:md"),
                ..Finding::new(Rule::AtNotUsed, None)
            });
        }
        if from == Use::NotUsed && (md.from.is_some() || md.until.is_some()) {
            out.push(Finding {
                message: format!("from and until are not used on a {name}'s rs:md"),
                ..Finding::new(Rule::FromNotUsed, None)
            });
        }
        check_intervals(md, None, out);

        if up_link_mandatory(kind) && !has_link(&Relation::Up) {
            out.push(Finding {
                section: kind.section(),
                message: format!("a {name} must have an rs:ln with rel=\"up\""),
                ..Finding::new(Rule::UpLinkMandatory, None)
            });
        }
        if options.part_of_index && may_have_index(kind) && !has_link(&Relation::Index) {
            out.push(Finding {
                section: kind.section(),
                message: format!(
                    "a {name} that is part of an index should have an rs:ln with rel=\"index\""
                ),
                ..Finding::new(Rule::IndexLinkRecommended, None)
            });
        }
        if matches!(kind, K::SourceDescription | K::CapabilityList)
            && !has_link(&Relation::DescribedBy)
        {
            out.push(Finding {
                section: kind.section(),
                message: format!("a {name} should have an rs:ln with rel=\"describedby\""),
                ..Finding::new(Rule::DescribedbyLinkRecommended, None)
            });
        }
        if let Some(change) = md.change {
            out.push(Finding {
                message: format!(
                    "change=\"{change}\" on the document's rs:md: change is only used on entries"
                ),
                ..Finding::new(Rule::ChangeNotUsed, None)
            });
        }
        for (i, link) in head.links.iter().enumerate() {
            check_link(kind, link, None, malformed.link(i), out);
        }
    }

    /// Checks the next entry, in document order.
    pub fn check_entry(&mut self, entry: &Entry, out: &mut Vec<Finding>) {
        self.check_entry_with(entry, Malformed::default(), out);
    }

    /// Checks the next entry, in document order, whose reader found some attributes present
    /// but malformed, or dropped some links, and reported them: those are taken as present,
    /// so that a malformed `change` is not also a missing one. See [`Malformed`].
    pub fn check_entry_with(
        &mut self,
        entry: &Entry,
        malformed: Malformed<'_>,
        out: &mut Vec<Finding>,
    ) {
        self.skip_entry(out);
        let bad = malformed.md;
        let n = Some(self.entries);
        let kind = self.kind;
        check_uri(&entry.loc, UriPlace::Loc, n, out);
        let md = entry.md.as_ref().unwrap_or(&EMPTY_MD);

        self.check_entry_times(md, bad, n, out);
        check_intervals(md, n, out);
        self.check_order(md, n, out);
        if let Some(locs) = &mut self.locs {
            if let Some(first) = locs.insert(entry.loc.as_str(), self.entries) {
                out.push(Finding {
                    section: kind.section(),
                    message: format!(
                        "loc \"{}\" is listed again; entry {first} lists it first",
                        crate::rules::clip(entry.loc.as_str())
                    ),
                    ..Finding::new(Rule::LocDuplicate, n)
                });
            }
        }

        // In a Source Description, any capability but capabilitylist is an error of its own.
        if let Some(capability @ Capability::Other(_)) = &md.capability {
            if kind != K::SourceDescription || capability.meant().is_some() {
                out.push(undefined_capability(capability, n));
            }
        }
        if lists_changes(kind) && md.change.is_none() && !bad.contains(A::Change) {
            out.push(Finding {
                section: kind.section(),
                message: format!(
                    "each {} entry must have rs:md with a change attribute",
                    kind.name()
                ),
                ..Finding::new(Rule::ChangeMandatory, n)
            });
        }
        let deleted = md.change == Some(Change::Deleted);
        match md.change {
            None => {}
            Some(_) if lists_changes(kind) || kind == K::Unknown => {}
            // One fault, one finding: a deletion in a Resource Dump Manifest is an error
            // of its own, not also a change where none is used, nor a missing path.
            Some(Change::Deleted) if kind == K::ResourceDumpManifest => out.push(Finding {
                message: format!(
                    "loc \"{}\" is listed as deleted in a Resource Dump Manifest, which describes the bitstreams of a snapshot",
                    crate::rules::clip(entry.loc.as_str())
                ),
                ..Finding::new(Rule::ResourceDumpManifestDeleted, n)
            }),
            Some(change) => out.push(Finding {
                message: format!(
                    "change=\"{change}\" on an entry of a {}: change is only used in Change Lists and Change Dump Manifests",
                    kind.name()
                ),
                ..Finding::new(Rule::ChangeNotUsed, n)
            }),
        }
        if is_manifest(kind) && !deleted {
            if md.path.is_none() && !bad.contains(A::Path) {
                out.push(Finding {
                    section: kind.section(),
                    ..Finding::new(Rule::PathMandatory, n)
                });
            }
            if md.media_type.is_none() && !bad.contains(A::Type) {
                out.push(Finding {
                    section: kind.section(),
                    ..Finding::new(Rule::ManifestTypeRecommended, n)
                });
            }
        }
        if let Some(path) = &md.path {
            check_path(kind, path, "rs:md", n, out);
        }
        if let Some(first) = self.insert_path(entry) {
            out.push(Finding {
                section: kind.section(),
                message: format!(
                    "path \"{}\" is listed again; entry {first} lists it first",
                    crate::rules::clip(md.path.as_ref().map_or("", |p| p.as_str()))
                ),
                ..Finding::new(Rule::PathDuplicate, n)
            });
        }
        if let Some(hash) = &md.hash {
            check_hash_algorithms(hash, n, out);
        }
        match kind {
            K::CapabilityList => self.check_capability_list_entry(md, bad, n, out),
            K::SourceDescription => {
                // The entry's rs:md is optional (section 8), but when present it must
                // say capabilitylist; without one, a warning (`SourceDescriptionEntryMd`
                // says why).
                if entry.md.is_none() {
                    out.push(Finding::new(Rule::SourceDescriptionEntryMd, n));
                }
                if entry.md.is_some() && md.capability.is_none() && !bad.contains(A::Capability) {
                    out.push(Finding {
                        message: "a Source Description entry's rs:md has no capability; it must have capability=\"capabilitylist\"".into(),
                        ..Finding::new(Rule::SourceDescriptionEntryCapability, n)
                    });
                }
                if let Some(capability) = &md.capability {
                    let meant = capability.meant();
                    if *meant.as_ref().unwrap_or(capability) != Capability::CapabilityList {
                        out.push(Finding {
                            message: format!(
                                "a Source Description entry's capability must be capabilitylist, not \"{}\"",
                                crate::rules::clip(capability.as_str())
                            ),
                            ..Finding::new(Rule::SourceDescriptionEntryCapability, n)
                        });
                    }
                }
                if !entry.links.iter().any(|l| l.rel == Relation::DescribedBy)
                    && !malformed.dropped(&Relation::DescribedBy)
                {
                    out.push(Finding::new(Rule::EntryDescribedbyRecommended, n));
                }
            }
            K::ResourceDump | K::ChangeDump => self.check_package(md, bad, n, out),
            K::FrameworkNotification if md.capability.is_none() && !bad.contains(A::Capability) => {
                out.push(Finding::new(Rule::FrameworkNotificationEntryCapability, n));
            }
            _ => {}
        }
        if kind == K::CapabilityList {
            check_channel_hub(entry, malformed, n, out);
        }
        for (i, link) in entry.links.iter().enumerate() {
            check_link(kind, link, n, malformed.link(i), out);
        }
    }

    /// Checks the next entry as [`check_entry`](Checker::check_entry) does, then hands the
    /// entry's findings to `refuse`: if it returns `true`, the entry is taken back and the
    /// checker left as it was before it (the entry's number, time, `<loc>`, capability
    /// and package type forgotten), so that the next entry is checked as if this one had
    /// never come. The findings stay in `out` either way. Returns whether the entry was
    /// kept.
    ///
    /// For writers, which refuse an entry that would break the standard and may go on
    /// with the next.
    ///
    /// ```
    /// use resourcesync_model::{Change, Checker, DocumentHead, DocumentKind, Entry, Severity};
    ///
    /// let head = DocumentHead::of_kind(DocumentKind::ChangeList)
    ///     .with_from("2013-01-03T00:00:00Z".parse()?);
    /// let mut findings = Vec::new();
    /// let mut checker = Checker::new(&head, &mut findings);
    /// findings.clear();
    /// let refuse_errors = |f: &[resourcesync_model::Finding]| {
    ///     f.iter().any(|f| f.severity() == Severity::Error)
    /// };
    /// let entry = |time: &str| -> Result<Entry, Box<dyn std::error::Error>> {
    ///     Ok(Entry::new("http://example.com/res1".parse()?)
    ///         .with_change(Change::Updated)
    ///         .with_datetime(time.parse()?))
    /// };
    /// assert!(checker.check_entry_unless(&entry("2013-01-03T18:00:00Z")?, &mut findings, refuse_errors));
    /// // Out of order: refused, and forgotten.
    /// assert!(!checker.check_entry_unless(&entry("2013-01-03T11:00:00Z")?, &mut findings, refuse_errors));
    /// assert_eq!(findings[0].entry, Some(2));
    /// // The next entry is entry 2 again, compared with 18:00, not with 11:00.
    /// assert!(!checker.check_entry_unless(&entry("2013-01-03T12:00:00Z")?, &mut findings, refuse_errors));
    /// assert_eq!(findings[1].entry, Some(2));
    /// assert!(checker.check_entry_unless(&entry("2013-01-03T19:00:00Z")?, &mut findings, refuse_errors));
    /// assert_eq!(checker.entries(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_entry_unless(
        &mut self,
        entry: &Entry,
        out: &mut Vec<Finding>,
        refuse: impl FnOnce(&[Finding]) -> bool,
    ) -> bool {
        let start = out.len();
        // What `check_entry` may change, kept to undo it: a clone of the whole checker
        // would copy its table of `<loc>`s for every entry.
        let (entries, previous) = (self.entries, self.previous);
        let had_type = self.package_type.is_some();
        let locs = self.locs.as_ref().map_or(0, |l| l.first.len());
        let paths = self.paths.as_ref().map_or(0, |p| p.first.len());
        let capabilities = self.capabilities.len();
        self.check_entry(entry, out);
        if !refuse(&out[start..]) {
            return true;
        }
        (self.entries, self.previous) = (entries, previous);
        if !had_type {
            self.package_type = None;
        }
        if let Some(set) = self.locs.as_mut().filter(|l| l.first.len() > locs) {
            set.remove(entry.loc.as_str());
        }
        if let Some(set) = self.paths.as_mut().filter(|p| p.first.len() > paths) {
            if let Some(path) = entry.md.as_ref().and_then(|md| md.path.as_ref()) {
                set.remove(path.name_in_package());
            }
        }
        if self.capabilities.len() > capabilities {
            if let Some(written) = entry.md.as_ref().and_then(|md| md.capability.as_ref()) {
                let meant = written.meant();
                self.capabilities.remove(meant.as_ref().unwrap_or(written));
            }
        }
        false
    }

    /// Counts an entry that could not be read (a reader reported why), so that the entries
    /// after it keep their numbers. It counts towards [`MAX_ENTRIES`] too.
    pub fn skip_entry(&mut self, out: &mut Vec<Finding>) {
        self.entries += 1;
        if self.entries == MAX_ENTRIES + 1 {
            out.push(Finding {
                message: format!("more than {MAX_ENTRIES} entries"),
                ..Finding::new(Rule::MaxEntries, Some(self.entries))
            });
        }
    }

    /// Ends the check. Every rule is decided entry by entry, so this adds nothing today;
    /// it exists so that a rule that needs the whole document can be added without
    /// changing callers.
    pub fn finish(self, _out: &mut Vec<Finding>) {}

    fn check_entry_times(&self, md: &Md, bad: Attributes, n: Option<u64>, out: &mut Vec<Finding>) {
        let (_, _, at, from) = time_attributes(self.kind);
        let name = self.kind.name();
        if at == Use::NotUsed && (md.at.is_some() || md.completed.is_some()) {
            out.push(Finding {
                message: format!("at and completed are not used on the entries of a {name}"),
                ..Finding::new(Rule::EntryAtNotUsed, n)
            });
        }
        if from == Use::NotUsed && (md.from.is_some() || md.until.is_some()) {
            out.push(Finding {
                message: format!("from and until are not used on the entries of a {name}"),
                ..Finding::new(Rule::EntryFromNotUsed, n)
            });
        }
        if from == Use::Recommended && md.from.is_none() && !bad.contains(A::From) {
            out.push(Finding {
                message: format!("entries of a {name} should have rs:md with a from attribute"),
                ..Finding::new(Rule::EntryFromRecommended, n)
            });
        }
        if at == Use::Recommended && md.at.is_none() && !bad.contains(A::At) {
            out.push(Finding {
                section: self.kind.section(),
                message: format!("entries of a {name} should have rs:md with an at attribute"),
                ..Finding::new(Rule::EntryAtRecommended, n)
            });
        }
        if let Some(datetime) = &md.datetime {
            if lists_changes(self.kind) {
                let before = self.from.as_ref().filter(|from| datetime.precedes(from));
                let after = self.until.as_ref().filter(|until| until.precedes(datetime));
                if let Some(bound) = before {
                    out.push(Finding {
                        message: format!(
                            "datetime {datetime} is before the document's from {bound}"
                        ),
                        ..Finding::new(Rule::DatetimeOutsideInterval, n)
                    });
                }
                if let Some(bound) = after {
                    out.push(Finding {
                        message: format!(
                            "datetime {datetime} is after the document's until {bound}"
                        ),
                        ..Finding::new(Rule::DatetimeOutsideInterval, n)
                    });
                }
            }
        }
    }

    fn check_order(&mut self, md: &Md, n: Option<u64>, out: &mut Vec<Finding>) {
        let Some((rule, key)) = order_rule(self.kind) else {
            return;
        };
        // An entry without a time cannot be placed; the next one is compared with the
        // last entry that had one (Example 19 lists an update without a datetime).
        let Some(time) = key.of(md) else {
            return;
        };
        // Wholly before, so that `2013-01-03` after `2013-01-03T11:00:00Z` is in order: the
        // day may be any time of that day.
        if let Some(previous) = &self.previous {
            if time.precedes(previous) {
                out.push(Finding {
                    message: format!(
                        "{} {time} is before the previous entry's {previous}",
                        key.name()
                    ),
                    ..Finding::new(rule, n)
                });
            }
        }
        self.previous = Some(*time);
    }

    fn check_capability_list_entry(
        &mut self,
        md: &Md,
        bad: Attributes,
        n: Option<u64>,
        out: &mut Vec<Finding>,
    ) {
        let Some(written) = &md.capability else {
            if !bad.contains(A::Capability) {
                out.push(Finding::new(Rule::CapabilityListEntryCapability, n));
            }
            return;
        };
        // A near miss was reported as such; the entry is checked as the capability meant.
        let meant = written.meant();
        let capability = meant.as_ref().unwrap_or(written);
        if !capability.is_listable() && !matches!(capability, Capability::Other(_)) {
            out.push(Finding {
                message: format!(
                    "a Capability List entry must point at a capability document, not a {capability}"
                ),
                ..Finding::new(Rule::CapabilityListEntryKind, n)
            });
        }
        if !self.capabilities.insert(capability.clone()) {
            out.push(Finding {
                message: format!("capability {capability} is listed more than once"),
                ..Finding::new(Rule::CapabilityListDuplicate, n)
            });
        }
    }

    /// Remembers the path of a manifest entry's bitstream by its name in the package;
    /// returns the entry that listed it before. A deletion has no bitstream, and a path
    /// that names no file is a finding of its own (`PathNamesNoFile`), not also a
    /// duplicate.
    fn insert_path(&mut self, entry: &Entry) -> Option<u32> {
        let paths = self.paths.as_mut()?;
        let path = entry.md.as_ref()?.path.as_ref()?;
        if !entry.has_bitstream() || path.names_no_file().is_some() {
            return None;
        }
        paths.insert(path.name_in_package(), self.entries)
    }

    fn check_package(&mut self, md: &Md, bad: Attributes, n: Option<u64>, out: &mut Vec<Finding>) {
        let has_type = md.media_type.is_some() || bad.contains(A::Type);
        let has_length = md.length.is_some() || bad.contains(A::Length);
        if !has_type || !has_length {
            out.push(Finding {
                section: self.kind.section(),
                ..Finding::new(Rule::DumpPackageMetadata, n)
            });
        }
        if let Some(t) = &md.media_type {
            let essence = t.essence().to_ascii_lowercase();
            match &self.package_type {
                None => self.package_type = Some(essence),
                Some(first) if *first != essence => out.push(Finding {
                    section: self.kind.section(),
                    message: format!("package of type {essence} in a dump of {first} packages"),
                    ..Finding::new(Rule::DumpPackageFormat, n)
                }),
                Some(_) => {}
            }
        }
    }
}

/// A notification channel's Capability List entry links to its hub (Change Notification and
/// Framework Notification, section 5).
fn check_channel_hub(
    entry: &Entry,
    malformed: Malformed<'_>,
    n: Option<u64>,
    out: &mut Vec<Finding>,
) {
    let Some(written) = entry.md.as_ref().and_then(|md| md.capability.as_ref()) else {
        return;
    };
    let meant = written.meant();
    let capability = meant.as_ref().unwrap_or(written);
    if !capability.is_notification()
        || entry.links.iter().any(|l| l.rel == Relation::Hub)
        || malformed.dropped(&Relation::Hub)
    {
        return;
    }
    out.push(Finding {
        message: format!(
            "the {capability} channel \"{}\" has no rs:ln with rel=\"hub\": a Destination cannot subscribe to it",
            crate::rules::clip(entry.loc.as_str())
        ),
        ..Finding::new(Rule::NotificationChannelHub, n)
    });
}

/// Checks a whole document in memory with default options; see [`Checker`] for streaming.
///
/// ```
/// use resourcesync_model::{check, Document, DocumentHead, DocumentKind, Rule};
///
/// let doc = Document::new(DocumentHead::of_kind(DocumentKind::ResourceList));
/// let rules: Vec<Rule> = check(&doc).into_iter().map(|f| f.rule).collect();
/// assert_eq!(rules, [Rule::AtMandatory, Rule::UpLinkMandatory]);
/// ```
pub fn check(document: &Document) -> Vec<Finding> {
    check_with(document, CheckOptions::default())
}

/// Checks a whole document in memory.
pub fn check_with(document: &Document, options: CheckOptions) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut checker = Checker::with_options(&document.head, options, &mut findings);
    for entry in &document.entries {
        checker.check_entry(entry, &mut findings);
    }
    checker.finish(&mut findings);
    findings
}
