//! What the client tells its caller: [`Event`]s, from [`Client::poll_event`](crate::Client::poll_event).
//!
//! Two kinds: instructions the caller carries out and then confirms ([`Event::Store`],
//! [`Event::Extract`], [`Event::Delete`], each followed by
//! [`Client::applied`](crate::Client::applied) or [`Client::failed`](crate::Client::failed)),
//! and reports ([`Event::Change`], [`Event::Document`], [`Event::Channel`], [`Event::Warning`],
//! [`Event::Problem`], [`Event::Audit`], [`Event::Checkpoint`], [`Event::Done`]).

use std::fmt;
use std::sync::Arc;

use resourcesync_model::{
    Capability, Channel, DocumentKind, FixityMismatch, Md, Rule, Uri, UriError, W3cDateTime,
};
use serde::Serialize;

use crate::discovery::WellKnownError;
use crate::inventory::Difference;
use crate::local_path::{LocalPath, LocalPathError, PathCollision};
use crate::policy::PolicyError;
use crate::request::RequestId;

/// A change the client makes to the Destination, named in the events that announce and
/// instruct it and in the caller's confirmation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ChangeId(pub(crate) u64);

impl fmt::Display for ChangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "change {}", self.0)
    }
}

/// What a change does to a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Action {
    /// The resource is new to the Destination.
    Create,
    /// The Destination holds another version.
    Update,
    /// The Source no longer has it.
    Delete,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        })
    }
}

/// A change the client decided on: which resource, what happens to it, where it lives
/// under the destination, and the metadata the Source listed for it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Decision {
    /// Names the change in the events that follow and in the caller's confirmation.
    pub id: ChangeId,
    /// What happens.
    pub action: Action,
    /// The resource.
    pub uri: Uri,
    /// Its path relative to the destination.
    pub path: LocalPath,
    /// What the Source listed (length, hashes, type, datetime), if anything.
    pub md: Option<Md>,
    /// The `lastmod` the Source listed, to keep with the resource.
    pub lastmod: Option<W3cDateTime>,
}

/// Store what was received: the body of `request`, which the caller kept as it arrived
/// (a temporary file), passed every check and is the resource `change.uri`. Move it to
/// `change.path` (atomically: rename), then call
/// [`Client::applied`](crate::Client::applied), which records [`digests`](Placement::digests)
/// in the inventory.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Placement {
    /// The change.
    pub change: Decision,
    /// The request whose body is the resource.
    pub request: RequestId,
    /// Length and digests of the body, to keep in the inventory.
    #[serde(serialize_with = "digests")]
    pub digests: resourcesync_model::Measured,
}

/// Take a resource from a package: bitstream `bitstream` (its number among the entries
/// of the manifest that have one, in manifest order, as
/// `resourcesync_package::Package::bitstream` numbers them) of the package whose manifest
/// the caller handed over with [`Client::handle_package`](crate::Client::handle_package)
/// for `package` is the resource `change.uri`; copy it to `change.path` through
/// `resourcesync-package`'s verified reader, then confirm.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Extract {
    /// The change.
    pub change: Decision,
    /// The request whose body was the package.
    pub package: RequestId,
    /// The bitstream's number: `resourcesync_package::Package::bitstream(bitstream)`.
    pub bitstream: usize,
}

/// How an audited resource stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Standing {
    /// Listed and held, but another version is held.
    Changed(Difference),
    /// Listed, not held.
    Missing,
    /// Held, not listed.
    Extra,
}

impl fmt::Display for Standing {
    /// `changed (length)`, `missing` or `extra`: how a held resource stands in an audit.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Standing::Changed(difference) => write!(f, "changed ({difference})"),
            Standing::Missing => f.write_str("missing"),
            Standing::Extra => f.write_str("extra"),
        }
    }
}

/// Something wrong: a refusal, a failure, a broken promise of the Source. The run goes
/// on where it can; [`Report::problems`] counts these.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Problem {
    /// The URI it is about, if one.
    pub uri: Option<Uri>,
    /// The request it is about, if one.
    pub request: Option<RequestId>,
    /// What.
    pub kind: ProblemKind,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.uri {
            Some(uri) => write!(f, "{uri}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

/// What a [`Problem`] is.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The policy refuses the URI (or a redirect to it): not fetched.
    #[error(transparent)]
    Refused(PolicyError),
    /// The URI has no safe local path: not created, updated or deleted.
    #[error(transparent)]
    Path(LocalPathError),
    /// Two resources would share one file on a case-insensitive or normalizing file
    /// system: the second is not written.
    #[error(transparent)]
    Collision(Box<PathCollision>),
    /// The response had this status (after the attempts allowed).
    #[error("HTTP status {0}")]
    Status(u16),
    /// The request failed (after the attempts allowed): the caller's reason.
    #[error("request failed: {0}")]
    Failed(String),
    /// The body is not what the Source listed; it is not committed.
    #[error("fixity: {0}")]
    Fixity(FixityMismatch),
    /// A document could not be read: the reader's error, which names the place.
    #[error("document: {0}")]
    Document(DocumentError),
    /// The start has no well-known URI to discover a Source Description at (it is no
    /// http or https URI with an authority).
    #[error(transparent)]
    WellKnown(WellKnownError),
    /// A URI to discover the Source at could not be made from the start.
    #[error(transparent)]
    Uri(UriError),
    /// A document is reached a second time in one run (an index loop).
    #[error("document reached twice (a loop)")]
    Loop,
    /// Documents nest deeper than the bound.
    #[error("documents nest deeper than {0}")]
    TooDeep(u32),
    /// The Source names more documents (lists, indexes, Change Lists of an index) than
    /// one run reads ([`Bounds::max_documents`](crate::Bounds::max_documents)): an index
    /// of indexes names its children's children by the billion, and what is queued
    /// would grow with them. The set fails; what was read stays.
    #[error(
        "the Source names more than {0} documents, more than one run reads (Bounds::max_documents)"
    )]
    TooManyDocuments(u64),
    /// A document is not what its parent promised (or a package's manifest not the
    /// manifest its dump promised).
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// The capability promised.
        expected: Capability,
        /// What the document is.
        found: DocumentKind,
    },
    /// The Source offers no document to do this with (no Resource List for a baseline,
    /// no Change List for an incremental sync), or discovery found nothing.
    #[error("the Source offers no {0}")]
    NotOffered(&'static str),
    /// Discovery found no Source Description: every place it looked, and what it found
    /// there (section 6.3: the well-known URI of the host, then the one under the start's
    /// path, robots.txt, the start's own page).
    #[error("the Source offers no Source Description: tried {}", attempts(.tried))]
    NotDiscovered {
        /// Each place, in the order tried.
        tried: Vec<Attempt>,
    },
    /// An incremental sync without a checkpoint: run a baseline first.
    #[error("no checkpoint for this set: a baseline must come first")]
    NoCheckpoint,
    /// An incremental sync of a Source that offers no change stream (no Change List or
    /// Change Dump in its Capability List, or a start at a list that names no Capability
    /// List): the standard's way to keep such a Destination in step is a baseline each
    /// time, which the command takes instead.
    #[error(
        "the Source offers no Change List or Change Dump ({0}): only baselines keep up with it"
    )]
    NoChanges(&'static str),
    /// The changes on offer do not cover the time since the checkpoint: some changes were
    /// never seen, or may not have been. A new baseline is needed; nothing past the gap
    /// was applied. Coverage is what the documents state: a Change List (or a Change
    /// Dump, an index) whose `from` is later than where the lists before it end, or one
    /// that states no `from` at all (Python resync's publisher rewrites one Change List
    /// without it), is a gap, whichever of the index entry, the index or the list says so.
    #[error("{}", gap_message(checkpoint, from))]
    Gap {
        /// The checkpoint's datetime, or where the lists before the gap end.
        checkpoint: W3cDateTime,
        /// The earliest change on offer (or where a document after a hole starts); none
        /// for a document that states no `from`.
        from: Option<W3cDateTime>,
    },
    /// More deletions than allowed: none were made.
    #[error("{would} deletions, more than the {limit} allowed: none made")]
    DeleteLimit {
        /// Deletions the run would have made.
        would: u64,
        /// The limit.
        limit: u64,
    },
    /// An incremental run made the deletions allowed, and stopped before the next one:
    /// the changes from there on wait for a run with a higher limit.
    #[error("the {limit} deletions allowed are made; the changes from this one on wait")]
    DeleteLimitReached {
        /// The limit.
        limit: u64,
    },
    /// A resource listed without a length sent more than the bytes allowed
    /// ([`Bounds::max_unlisted_bytes`](crate::Bounds::max_unlisted_bytes)).
    #[error("more than the {limit} bytes allowed for a resource listed without a length")]
    TooLarge {
        /// The bytes allowed.
        limit: u64,
    },
    /// The caller could not apply a change.
    #[error("not applied: {0}")]
    NotApplied(String),
    /// An entry of a listing, a Change List or a manifest is refused: it breaks a rule in
    /// a way that leaves nothing safe to do with it (a `<loc>` that no reading makes a
    /// URI, a Change List entry without `change`, a digest that cannot be read or
    /// checked). Counted in [`Report::refused`]; the run is not complete.
    #[error("{0}")]
    EntryRefused(Box<EntryRefusal>),
    /// The caller left the path as it was: what is there is not the sync's to replace
    /// or delete (a file the sync did not store, or one changed since it stored it).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The resource's body matched nothing the Source listed for it, fetched again after
    /// every list was read (the Resource List, then the Change Lists since its `at`): it
    /// changed after all of them (or is deleted, or the Source lies about it). Not
    /// stored, and no failure: the checkpoint moves on (the change is later than anything
    /// listed), and the resource is kept in [`State::refetch`](crate::State::refetch), so
    /// that the next run fetches it again.
    #[error(
        "{cause}; it matches nothing the Source lists (changed since?): fetched again next run"
    )]
    ChangedSinceListed {
        /// The last fetch's own problem: a fixity mismatch, a 404 or 410.
        cause: Box<ProblemKind>,
    },
}

/// One place discovery looked for a Source Description, and what it found there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Attempt {
    /// What was asked for.
    pub uri: Uri,
    /// What came of it: a status, or what the response lacked.
    pub outcome: String,
}

fn attempts(tried: &[Attempt]) -> String {
    let each: Vec<String> = tried
        .iter()
        .map(|a| format!("{} ({})", a.uri, a.outcome))
        .collect();
    each.join(", ")
}

/// A refused entry ([`ProblemKind::EntryRefused`]): where it is, and the rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct EntryRefusal {
    /// The document it is in (none for a package's manifest).
    pub document: Option<Uri>,
    /// Its number in the document, counting from 1, when known.
    pub entry: Option<u64>,
    /// The rule it breaks.
    pub rule: Rule,
    /// What is wrong, and what was done.
    pub reason: String,
}

impl fmt::Display for EntryRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("entry ")?;
        if let Some(n) = self.entry {
            write!(f, "{n} ")?;
        }
        if let Some(document) = &self.document {
            write!(f, "of {document} ")?;
        }
        write!(f, "refused ({}): {}", self.rule, self.reason)
    }
}

fn gap_message(checkpoint: &W3cDateTime, from: &Option<W3cDateTime>) -> String {
    match from {
        Some(from) => {
            format!("changes before {from} are no longer offered, the checkpoint is {checkpoint}")
        }
        None => format!(
            "a change document states no `from`: the changes since {checkpoint} are not known \
             to be covered"
        ),
    }
}

/// Why a document could not be read: the XML reader's error, kept whole (what went wrong,
/// and where: [`position`](DocumentError::position)). Cheap to clone: events that carry
/// it share one.
#[derive(Clone, Debug)]
pub struct DocumentError(Arc<resourcesync_xml::Error>);

impl DocumentError {
    /// The reader's error.
    pub fn error(&self) -> &resourcesync_xml::Error {
        &self.0
    }

    /// What went wrong.
    pub fn kind(&self) -> &resourcesync_xml::ErrorKind {
        self.0.kind()
    }

    /// Where in the document: byte, line, column, entry.
    pub fn position(&self) -> resourcesync_xml::Position {
        self.0.position()
    }
}

impl From<resourcesync_xml::Error> for DocumentError {
    fn from(error: resourcesync_xml::Error) -> DocumentError {
        DocumentError(Arc::new(error))
    }
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for DocumentError {
    /// The same error at the same place (the reader's errors hold IO errors, which have
    /// no equality of their own: compared by their message).
    fn eq(&self, other: &DocumentError) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.position() == other.position() && self.to_string() == other.to_string())
    }
}

/// A warning: the Source's documents break a rule, or the client worked around
/// something. The run is not affected.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Warning {
    /// The document, if the warning is about one.
    pub document: Option<Uri>,
    /// The entry in it, counting from 1, if about one.
    pub entry: Option<u64>,
    /// The rule broken, if a rule.
    pub rule: Option<Rule>,
    /// What.
    pub message: String,
}

impl fmt::Display for Warning {
    /// `DOCUMENT, entry N: [RULE] MESSAGE`, each part when there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.document, self.entry) {
            (Some(document), Some(entry)) => write!(f, "{document}, entry {entry}: ")?,
            (Some(document), None) => write!(f, "{document}: ")?,
            (None, Some(entry)) => write!(f, "entry {entry}: ")?,
            (None, None) => {}
        }
        if let Some(rule) = &self.rule {
            write!(f, "[{rule}] ")?;
        }
        f.write_str(&self.message)
    }
}

impl Warning {
    /// A warning about `entry` of `document`, breaking `rule`; for a driver's own
    /// warnings and for tests of what prints them ([`WarningSummary`](crate::WarningSummary)).
    pub fn new(
        document: Option<Uri>,
        entry: Option<u64>,
        rule: Option<Rule>,
        message: impl Into<String>,
    ) -> Warning {
        Warning {
            document,
            entry,
            rule,
            message: message.into(),
        }
    }
}

/// A document read to its end.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DocumentRead {
    /// The request it came in.
    pub request: RequestId,
    /// Its URI.
    pub uri: Uri,
    /// The document that listed it, if one did (none for where the run started).
    pub parent: Option<Uri>,
    /// What it is.
    pub kind: DocumentKind,
    /// Entries read.
    pub entries: u64,
    /// Its `at`, if it has one.
    pub at: Option<W3cDateTime>,
}

impl Report {
    /// An audit's finding in words: `in sync`, `not in sync`, or, when the audit did not
    /// finish (the Source out of reach, say) and found no difference in what it
    /// compared, `not known to be in sync (the audit did not finish)`: it compared too
    /// little to say either. `None` for a run that is no audit.
    pub fn standing(&self) -> Option<&'static str> {
        let in_sync = self.in_sync?;
        let differs = self.changed + self.missing + self.extra > 0;
        Some(match (in_sync, self.complete || differs) {
            (true, _) => "in sync",
            (false, true) => "not in sync",
            (false, false) => "not known to be in sync (the audit did not finish)",
        })
    }
}

impl fmt::Display for Report {
    /// The counts, and complete or incomplete (an audit's standing too): the summary
    /// line of `resourcesync sync` without the mode and the time.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} created, {} updated, {} deleted, {} unchanged, {} failed, {} refused, \
             {} conflicts, {} not deleted, {} bytes, {} requests, {}",
            self.created,
            self.updated,
            self.deleted,
            self.unchanged,
            self.failed,
            self.refused,
            self.conflicts,
            self.kept,
            self.bytes,
            self.requests,
            if self.complete {
                "complete"
            } else {
                "incomplete"
            },
        )?;
        // Said only when there are such, so that the line is otherwise as before.
        if self.moved > 0 {
            write!(f, ", {} moved at the Source", self.moved)?;
        }
        if let Some(standing) = self.standing() {
            write!(
                f,
                ", {} changed, {} missing, {} extra, {standing}",
                self.changed, self.missing, self.extra,
            )?;
            if self.unverified > 0 {
                write!(f, ", {} unverified", self.unverified)?;
            }
        }
        Ok(())
    }
}

/// What a run did, in numbers, with [`Event::Done`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Report {
    /// Everything the run set out to do was done (or, in a dry run, decided): no
    /// failure, no refusal, no gap.
    pub complete: bool,
    /// For an audit: the Destination is in step with the Source.
    pub in_sync: Option<bool>,
    /// The Source time the run refers to: the listing's `at` (baseline, audit), the last
    /// change applied (incremental).
    pub at: Option<W3cDateTime>,
    /// Documents read.
    pub documents: u64,
    /// Resources listed (in this shard).
    pub listed: u64,
    /// Listed and held as listed.
    pub unchanged: u64,
    /// Created, updated, deleted: confirmed by the caller (in a dry run, decided).
    pub created: u64,
    /// See `created`.
    pub updated: u64,
    /// See `created`.
    pub deleted: u64,
    /// Changes that failed (fetch, fixity, the caller).
    pub failed: u64,
    /// Changes the caller declined: the path held what the sync did not store
    /// ([`Client::declined`](crate::Client::declined)).
    pub conflicts: u64,
    /// Deletions a Change List or Change Dump listed of resources held, not made: the
    /// run was not allowed to delete ([`Config::delete`](crate::Config::delete)).
    pub kept: u64,
    /// Resources whose bytes matched nothing listed, even when fetched once more after
    /// the Change Lists since the listing were read: the Source changed them while the
    /// run read it ([`ProblemKind::ChangedSinceListed`], said as a problem each). Neither
    /// stored nor counted as failed (nothing went wrong here): the next run fetches them
    /// again, and the run is incomplete.
    pub moved: u64,
    /// Entries refused: their URI by the policy or the path mapper, or the entry itself
    /// for a rule it breaks ([`ProblemKind::EntryRefused`]).
    pub refused: u64,
    /// Audit: listed and held, another version.
    pub changed: u64,
    /// Audit: listed, not held.
    pub missing: u64,
    /// Audit: listed and held, with nothing listed to compare the held copy with (no
    /// hash the inventory knows, no `lastmod`; a length, if listed, agrees). Not counted
    /// as changed: the audit cannot tell, and [`in_sync`](Report::in_sync) speaks only of
    /// what it can (held where listed, nothing changed that it can see).
    pub unverified: u64,
    /// Audit: held, not listed.
    pub extra: u64,
    /// Requests made.
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Warnings, reported or not.
    pub warnings: u64,
    /// Problems.
    pub problems: u64,
}

/// Where the run stands, for progress bars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Progress {
    /// Documents read.
    pub documents: u64,
    /// Resources listed so far.
    pub listed: u64,
    /// Changes decided so far.
    pub planned: u64,
    /// Changes confirmed, failed or refused so far.
    pub settled: u64,
    /// Body bytes received so far.
    pub bytes: u64,
    /// Requests in flight.
    pub in_flight: usize,
}

/// What the client tells its caller. Serialized (for programs that read a driver's
/// output) as an object whose `event` member names the variant in kebab case.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Event {
    /// A change was decided (in every run, dry or not). A real run follows it with a
    /// request for the resource and then [`Event::Store`], or with [`Event::Extract`] or
    /// [`Event::Delete`].
    Change(Decision),
    /// Store a verified body; then confirm.
    Store(Placement),
    /// Discard the body received for `request`: it failed a check, or the request was
    /// retried elsewhere. Nothing to confirm.
    Discard {
        /// The request.
        request: RequestId,
        /// The change it was for.
        change: ChangeId,
    },
    /// Take a resource out of a package; then confirm.
    Extract(Extract),
    /// The package received for this request is no longer needed: every bitstream taken
    /// from it is settled (or it failed its checks).
    Release {
        /// The request the package came in.
        request: RequestId,
    },
    /// Delete the resource; then confirm.
    Delete(Decision),
    /// The body of this request is a package, verified against what the Source listed:
    /// open it (`resourcesync_package::Package`) and hand its manifest over with
    /// [`Client::handle_package`](crate::Client::handle_package), as a
    /// [`PackageManifest::new`](crate::PackageManifest::new) of the package's manifest,
    /// findings and skipped entries.
    Package {
        /// The request the package came in.
        request: RequestId,
    },
    /// Abort this request: it took too long, or its target was refused (a quiet
    /// request is retried under another id).
    Cancel {
        /// The request.
        request: RequestId,
    },
    /// A document was read.
    Document(DocumentRead),
    /// A Capability List advertises a notification channel (Change Notification 1.0.1 or
    /// Framework Notification 1.0.1, section 5): where a follower subscribes to have
    /// changes pushed. Nothing is fetched from it.
    Channel {
        /// The Capability List that advertises it.
        capability_list: Uri,
        /// The topic, its hub and what it carries.
        channel: Channel,
    },
    /// An audited resource that is not in step.
    Audit {
        /// The resource.
        uri: Uri,
        /// How it stands.
        standing: Standing,
    },
    /// The state moved: save [`Client::state`](crate::Client::state) now, if you save it.
    Checkpoint,
    /// A warning.
    Warning(Warning),
    /// A problem.
    Problem(Problem),
    /// Where the run stands; after each document.
    Progress(Progress),
    /// The run is over.
    Done(Report),
}

/// A body's length and digests as the `length` and `hash` attributes would give them.
fn digests<S: serde::Serializer>(
    digests: &resourcesync_model::Measured,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let mut out = serializer.serialize_struct("Digests", 2)?;
    out.serialize_field("length", &digests.length)?;
    let hash = digests.hashes().map(|h| h.to_string());
    out.serialize_field("hash", &hash)?;
    out.end()
}

impl Serialize for Problem {
    /// `uri`, `request`, `kind` (the variant in kebab case) and `message` (its text).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Problem", 4)?;
        out.serialize_field("uri", &self.uri)?;
        out.serialize_field("request", &self.request)?;
        out.serialize_field("kind", self.kind.name())?;
        out.serialize_field("message", &self.kind.to_string())?;
        out.end()
    }
}

impl ProblemKind {
    /// The variant's name in kebab case, as serialized.
    pub fn name(&self) -> &'static str {
        match self {
            ProblemKind::Refused(_) => "refused",
            ProblemKind::Path(_) => "path",
            ProblemKind::Collision(_) => "collision",
            ProblemKind::Status(_) => "status",
            ProblemKind::Failed(_) => "failed",
            ProblemKind::Fixity(_) => "fixity",
            ProblemKind::Document(_) => "document",
            ProblemKind::WellKnown(_) => "well-known",
            ProblemKind::Uri(_) => "uri",
            ProblemKind::Loop => "loop",
            ProblemKind::TooDeep(_) => "too-deep",
            ProblemKind::TooManyDocuments(_) => "too-many-documents",
            ProblemKind::Unexpected { .. } => "unexpected",
            ProblemKind::NotOffered(_) => "not-offered",
            ProblemKind::NotDiscovered { .. } => "not-discovered",
            ProblemKind::NoCheckpoint => "no-checkpoint",
            ProblemKind::NoChanges(_) => "no-changes",
            ProblemKind::Gap { .. } => "gap",
            ProblemKind::DeleteLimit { .. } => "delete-limit",
            ProblemKind::DeleteLimitReached { .. } => "delete-limit-reached",
            ProblemKind::TooLarge { .. } => "too-large",
            ProblemKind::NotApplied(_) => "not-applied",
            ProblemKind::Conflict(_) => "conflict",
            ProblemKind::EntryRefused(_) => "entry-refused",
            ProblemKind::ChangedSinceListed { .. } => "changed-since-listed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialize_as_tagged_objects() {
        let problem = Event::Problem(Problem {
            uri: Some("https://example.com/a".parse().unwrap()),
            request: Some(RequestId(3)),
            kind: ProblemKind::Status(503),
        });
        assert_eq!(
            serde_json::to_string(&problem).unwrap(),
            r#"{"event":"problem","uri":"https://example.com/a","request":3,"kind":"status","message":"HTTP status 503"}"#
        );
        let cancel = Event::Cancel {
            request: RequestId(7),
        };
        assert_eq!(
            serde_json::to_string(&cancel).unwrap(),
            r#"{"event":"cancel","request":7}"#
        );
        assert_eq!(
            serde_json::to_string(&Event::Checkpoint).unwrap(),
            r#"{"event":"checkpoint"}"#
        );
    }
}
