//! The catalogue of the standard's rules, and the findings that report a broken one.
//!
//! Each [`Rule`] has a stable [`id`](Rule::id), a [`Severity`] (an error for a MUST or a
//! mandatory element or attribute, a warning for a SHOULD or a recommended one), the
//! section of the standard it comes from and a message. Sections are those of ANSI/NISO
//! Z39.99-2017; `Archives N` names a section of the ResourceSync Archives specification,
//! `Change Notification N` and `Framework Notification N` one of the two Notification
//! specifications (1.0.1);
//! `Sitemap protocol` and `RFC N x.y` name a specification the standard builds on, for a
//! rule whose text is there and not in the standard. A rule that no text states (one that
//! guards a Destination against hostile input) says so in its documentation and message.

use std::fmt;

/// How serious a broken rule is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[allow(clippy::exhaustive_enums)] // the standard has MUST and SHOULD, nothing else
pub enum Severity {
    /// A SHOULD, or a recommended element or attribute, is not followed.
    Warning,
    /// A MUST, or a mandatory element or attribute, is broken.
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// An error that breaks a rule of the catalogue: every value type's parse error is one.
pub trait RuleError: std::error::Error {
    /// The rule the offending value breaks.
    fn rule(&self) -> Rule;
}

macro_rules! catalogue {
    ($(
        $(#[$meta:meta])*
        $variant:ident = ($id:literal, $severity:ident, $section:literal, $message:literal)
    ),+ $(,)?) => {
        /// A rule of the standard. The catalogue grows with the standard's coverage, so
        /// the enum is non-exhaustive; ids never change meaning.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Rule {
            $($(#[$meta])* $variant),+
        }

        impl Rule {
            /// Every rule, in catalogue order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),+];

            /// The stable identifier, such as `"changelist-order"`.
            pub fn id(self) -> &'static str {
                match self { $(Rule::$variant => $id),+ }
            }

            /// Error for a MUST or mandatory item, warning for a SHOULD or recommended one.
            pub fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity),+ }
            }

            /// The section(s) of the standard the rule comes from.
            pub fn section(self) -> &'static str {
                match self { $(Rule::$variant => $section),+ }
            }

            /// What the rule requires, in one sentence.
            pub fn message(self) -> &'static str {
                match self { $(Rule::$variant => $message),+ }
            }

            /// The rule with this id.
            pub fn from_id(id: &str) -> Option<Rule> {
                Rule::ALL.iter().copied().find(|r| r.id() == id)
            }
        }
    };
}

catalogue! {
    // Values (section 7, Table 3).
    /// Time attributes and `<lastmod>` are W3C Datetimes, with an offset on any time.
    DatetimeSyntax = ("datetime-syntax", Error, "7",
        "datetimes must be W3C Datetimes, with a time zone designator on any time"),
    /// `at`, `completed`, `from`, `until` are best complete UTC datetimes.
    DatetimeForm = ("datetime-recommended-form", Warning, "7",
        "at, completed, from and until should be complete UTC datetimes (YYYY-MM-DDThh:mm:ss[.s]Z)"),
    /// `hash` is a whitespace-delimited list of `algorithm:hexdigest`.
    HashSyntax = ("hash-syntax", Error, "7",
        "hash must be a whitespace-delimited list of algorithm:hex-digest tokens"),
    /// A digest in base64 (`md5:1B2M2Y8AsgTpgAmY7PhCfg==`), as some Sources write them:
    /// section 7 asks for hex. Read (its bytes are the digest's) and checked as any other,
    /// and reported.
    HashBase64 = ("hash-base64", Error, "7",
        "a digest must be hex-encoded; this one is base64, read as such"),
    /// A digest of a known algorithm has that algorithm's length.
    HashDigestLength = ("hash-digest-length", Error, "7",
        "a digest must have the length of its algorithm (md5 32, sha-1 40, sha-256 64 hex digits, and so on)"),
    /// One digest per algorithm in a `hash` attribute: the values are "fixity information
    /// for a resource representation", and one representation has one digest per
    /// algorithm. The same digest twice is accepted.
    HashConflict = ("hash-conflict", Error, "7",
        "hash must not give two different digests for one algorithm"),
    /// A hash algorithm outside IANA's hash name registries is kept but flagged. Section 7
    /// only gives `md5:` and `sha-256:` as examples: no text of the standard requires a
    /// registered name, but a Destination cannot check a digest of an algorithm it does not
    /// know.
    HashAlgorithmUnknown = ("hash-algorithm-unknown", Warning, "7",
        "hash algorithms should be ones of IANA's Hash Function Textual Names or Named Information registries (not a rule of the standard's text)"),
    /// Digests a Destination can check: one whose listed digests are all of algorithms it
    /// does not compute cannot tell a corrupt body from a good one. Not a rule of the
    /// standard's text: it guards a Destination, which refuses such an entry rather than
    /// store it unchecked.
    HashUncheckable = ("hash-uncheckable", Warning, "7",
        "an entry's digests should include one a Destination can check (md5 or sha-256); none is checked here (not a rule of the standard's text)"),
    /// `length` is a non-negative integer.
    LengthSyntax = ("length-syntax", Error, "7",
        "length must be a non-negative integer that fits 64 bits"),
    /// `pri` is an integer from 1 to 999,999.
    PriorityRange = ("pri-range", Error, "7",
        "pri must be an integer from 1 to 999999"),
    /// `change` is created, updated or deleted.
    ChangeValue = ("change-value", Error, "7",
        "change must be created, updated or deleted"),
    /// `<changefreq>` is one of the Sitemap protocol's values.
    ChangefreqValue = ("changefreq-value", Error, "7",
        "changefreq must be always, hourly, daily, weekly, monthly, yearly or never"),
    /// A capability the standards do not define is kept but flagged.
    CapabilityUnknown = ("capability-unknown", Warning, "7",
        "capability should be a value the standards define"),
    /// A capability that is a near miss of a defined value (`ResourceList`, `chnagelist`):
    /// see [`Capability::meant`](crate::Capability::meant). The document is checked as
    /// the kind meant.
    CapabilityMisspelt = ("capability-misspelt", Error, "7",
        "capability must be a defined value, written as the standards write it"),
    /// `rel` is a registered relation name or a URI.
    RelationSyntax = ("rel-syntax", Error, "7",
        "rel must be a registered relation type or an absolute URI"),
    /// `type` is a media type.
    MediaTypeSyntax = ("type-syntax", Error, "7",
        "type must be a media type (type/subtype)"),
    /// `<loc>` and `href` are absolute URIs.
    UriSyntax = ("uri-syntax", Error, "7",
        "loc and href must be absolute URIs"),
    /// URIs are less than 2,048 characters long: a rule of the Sitemap protocol, which the
    /// standard builds on, not of the standard's own text.
    UriLength = ("uri-length", Warning, "Sitemap protocol",
        "URIs should be less than 2048 characters long (Sitemap protocol)"),
    /// URIs that run code or name local files. No text of the standard forbids them; they
    /// never name a Source's resources, and a Destination that follows one runs code or
    /// reads its own files.
    UriScheme = ("uri-unsafe-scheme", Error, "7",
        "loc and href must not use the javascript, vbscript, data or file schemes (not a rule of the standard's text: such URIs never name a Source's resources)"),
    /// URIs other than http and https, but for `duplicate` links, which section 14.2 lets
    /// point to a mirror reached by another protocol. No text of the standard requires
    /// http; its `length` and `encoding` are defined by HTTP responses (section 7).
    UriSchemeNotHttp = ("uri-scheme-not-http", Warning, "7",
        "loc and href should be http or https URIs (not a rule of the standard's text: the standard works over HTTP)"),
    /// A userinfo in the authority hides the real host (`http://a.example@b.example/` is
    /// a request to b.example). RFC 3986 deprecates `user:password` there; the standard
    /// says nothing.
    UriUserinfo = ("uri-userinfo", Warning, "RFC 3986 3.2.1",
        "loc and href should not have a userinfo before the host (RFC 3986; not a rule of the standard's text)"),
    /// Bidirectional formatting characters, which RFC 3987 forbids in IRIs: they make a
    /// URI display as another.
    UriBidi = ("uri-bidi", Error, "RFC 3987 4.1",
        "URIs must not contain bidirectional formatting characters (RFC 3987)"),

    // Structure, as read from XML (checked by readers such as resourcesync-xml).
    /// The root and entries are in the Sitemap namespace (bound in section 4, used by
    /// every format of section 7).
    SitemapNamespace = ("sitemap-namespace", Error, "4, 7",
        "urlset, sitemapindex, url, sitemap, loc, lastmod and changefreq must be in the Sitemap namespace"),
    /// `md` and `ln` are in the ResourceSync namespace.
    ResourceSyncNamespace = ("rs-namespace", Error, "4, 7",
        "md and ln elements must be in the ResourceSync namespace http://www.openarchives.org/rs/terms/"),
    /// ResourceSync attributes carry no namespace prefix.
    AttributePrefix = ("attribute-no-prefix", Error, "7",
        "ResourceSync attributes must not have a namespace prefix"),
    /// Entries of the right element for the root.
    EntryElement = ("entry-element", Error, "7",
        "a urlset holds url entries and a sitemapindex holds sitemap entries"),
    /// Every entry has a `<loc>`.
    LocMandatory = ("loc-mandatory", Error, "7",
        "each entry must have exactly one loc element"),
    /// Every `<rs:ln>` has `rel` and `href`.
    LinkRelHrefMandatory = ("link-rel-href-mandatory", Error, "7",
        "each rs:ln must have rel and href attributes"),
    /// A package's bitstream has the length and hashes its manifest gives.
    BitstreamFixity = ("bitstream-fixity", Error, "11.2, 13.2",
        "a bitstream in a package must have the length and hashes its manifest entry gives"),
    /// Every file in a package is one its manifest describes.
    UnlistedFile = ("unlisted-file", Warning, "11.2, 13.2",
        "a package should hold only the bitstreams its manifest describes"),
    /// One `<rs:md>` per document and per entry.
    MdNotRepeatable = ("md-not-repeatable", Error, "7",
        "a document or an entry has at most one rs:md element"),
    /// The document's `<rs:md>` and `<rs:ln>` stand before its first entry.
    HeadBeforeEntries = ("head-before-entries", Warning, "7",
        "the document's rs:md and rs:ln should come before its first entry (shown by section 7's figure and required by the schema; no sentence of the standard states it)"),
    /// Attributes in no namespace are ones the standards define.
    AttributeUnknown = ("attribute-unknown", Warning, "7, Sitemap protocol",
        "attributes in no namespace should be ones the standards define for the element; others are kept but not understood"),
    /// A document is at most 52,428,800 bytes, uncompressed.
    MaxBytes = ("max-bytes", Error, "7, Sitemap protocol",
        "a document must not be larger than 52,428,800 bytes (50 MiB), uncompressed"),

    // Documents.
    /// The document's `<rs:md>` has a `capability`.
    CapabilityMandatory = ("capability-mandatory", Error, "7",
        "the document's rs:md must have a capability attribute"),
    /// Manifests are `<urlset>` documents.
    ManifestIndex = ("manifest-not-index", Error, "11.2, 13.2",
        "a manifest must have the urlset root element"),
    /// Notifications are `<urlset>` documents: a burst of changes is split into several
    /// notifications, never into an index.
    NotificationIndex = ("notification-not-index", Error, "Change Notification 3, Framework Notification 3",
        "a notification must have the urlset root element; a burst is split into several notifications"),
    /// Capability Lists are not split into indexes.
    CapabilityListIndex = ("capabilitylist-index", Warning, "9",
        "Sources should not generate a sitemapindex Capability List"),
    /// A document holds at most 50,000 entries.
    MaxEntries = ("max-entries", Error, "7",
        "a document must not have more than 50000 entries"),

    // Time attributes (Appendix A and section 7).
    /// `at` on documents that are snapshots.
    AtMandatory = ("at-mandatory", Error, "Appendix A",
        "the document's rs:md must have an at attribute"),
    /// `from` on documents that cover an interval of changes.
    FromMandatory = ("from-mandatory", Error, "Appendix A, Change Notification 3",
        "the document's rs:md must have a from attribute"),
    /// `until` on change notifications: with `from`, it bounds the changes a notification
    /// carries, and consecutive notifications tile time with their intervals.
    UntilMandatory = ("until-mandatory", Error, "Change Notification 3",
        "a change notification's rs:md must have an until attribute"),
    /// No `at` or `completed` on documents about changes: section 7 says they are "not
    /// used for" them (Appendix A only leaves their cells empty).
    AtNotUsed = ("at-not-used", Error, "7",
        "at and completed are not used on this document's rs:md"),
    /// No `from` or `until` on snapshot documents: section 7 says they are "not used for"
    /// them.
    FromNotUsed = ("from-not-used", Error, "7",
        "from and until are not used on this document's rs:md"),
    /// No `at` or `completed` on entries of this kind of document: on entries, section 7
    /// says they are "only used for" Resource List Indexes, Resource Dumps and Resource
    /// Dump Indexes (and the Archives add Resource List and Resource Dump Archives).
    EntryAtNotUsed = ("entry-at-not-used", Error, "7",
        "at and completed are not used on the entries of this document"),
    /// No `from` or `until` on entries of this kind of document: on entries, section 7
    /// says they are "only used for" Change List Indexes, Change Dumps and Change Dump
    /// Indexes (and the Archives add Change List and Change Dump Archives).
    EntryFromNotUsed = ("entry-from-not-used", Error, "7",
        "from and until are not used on the entries of this document"),
    /// `from` on the entries of Change List Indexes, Change Dumps and their indexes.
    EntryFromRecommended = ("entry-from-recommended", Warning, "Appendix A",
        "entries of this document should have rs:md with a from attribute"),
    /// `at` on the entries of Resource List and Resource Dump Archives.
    EntryAtRecommended = ("entry-at-recommended", Warning, "Archives 3, 4",
        "entries of this archive should have rs:md with an at attribute"),
    /// `completed` is not before `at`. Section 7 has no sentence that says so: it says
    /// the two "express an interval" during which the snapshot was taken.
    CompletedBeforeAt = ("completed-before-at", Error, "7",
        "completed must not be before at (section 7: at and completed express an interval)"),
    /// `until` is not before `from`. Section 7 has no sentence that says so: `from` and
    /// `until` bound the changes "since" one and "up until" the other.
    UntilBeforeFrom = ("until-before-from", Error, "7",
        "until must not be before from (section 7: from and until bound an interval)"),
    /// A change's `datetime` lies within the document's `from` and `until`.
    DatetimeOutsideInterval = ("datetime-in-interval", Error, "7",
        "datetime must be equal to or after from, and before or equal to until"),

    // Order.
    /// Change List entries in forward chronological order.
    ChangeListOrder = ("changelist-order", Error, "12.1",
        "Change List entries must be in forward chronological order"),
    /// Change List Index entries in forward chronological order.
    ChangeListIndexOrder = ("changelist-index-order", Error, "12.2",
        "a Change List Index must enumerate Change Lists in forward chronological order"),
    /// Change Dump entries in forward chronological order.
    ChangeDumpOrder = ("changedump-order", Warning, "13.1",
        "Change Dump entries should be in forward chronological order"),
    /// Change Dump Index entries in forward chronological order, as for Change List
    /// Indexes.
    ChangeDumpIndexOrder = ("changedump-index-order", Error, "13.1, 12.2",
        "a Change Dump Index must enumerate Change Dumps in forward chronological order"),
    /// Change Dump Manifest entries in forward chronological order.
    ChangeDumpManifestOrder = ("changedump-manifest-order", Error, "13.2",
        "Change Dump Manifest entries must be in forward chronological order"),
    /// Change List Archive entries in chronological order.
    ChangeListArchiveOrder = ("changelist-archive-order", Error, "Archives 5",
        "the pointers in a Change List Archive must be in chronological order"),
    /// Change notification entries in forward chronological order.
    ChangeNotificationOrder = ("change-notification-order", Error, "Change Notification 3",
        "change notification entries must be in forward chronological order"),
    /// Change Dump Archive entries in chronological order.
    ChangeDumpArchiveOrder = ("changedump-archive-order", Error, "Archives 6",
        "the pointers in a Change Dump Archive must be in chronological order"),

    // Links.
    /// The `up` link to the Capability List (or, from it, to the Source Description).
    UpLinkMandatory = ("up-link-mandatory", Error, "9, 10.1, 10.2, 11.1, 11.2, 12.1, 12.2, 13.1, 13.2, Archives 3-6",
        "the document must have an rs:ln with rel=\"up\""),
    /// The `index` link to the parent index, where one exists.
    IndexLinkRecommended = ("index-link-recommended", Warning, "10.1, 11.1, 12.1, 13.1, Archives 3-6",
        "a document that is part of an index should have an rs:ln with rel=\"index\""),
    /// The `describedby` link of Source Descriptions and Capability Lists.
    DescribedbyLinkRecommended = ("describedby-link-recommended", Warning, "8, 9",
        "the document should have an rs:ln with rel=\"describedby\""),
    /// The `describedby` link on each Capability List of a Source Description.
    EntryDescribedbyRecommended = ("entry-describedby-recommended", Warning, "8",
        "each Capability List entry should have an rs:ln with rel=\"describedby\""),
    /// The `type` of a patch link.
    PatchLinkType = ("patch-link-type", Error, "14.4",
        "a patch link must have a type attribute"),
    /// The `path` of a patch link in a Change Dump Manifest.
    PatchLinkPath = ("patch-link-path", Error, "14.4",
        "a patch link in a Change Dump Manifest must have a path attribute"),
    /// Patch links only where they are applicable: on the entries of Change Lists and of
    /// Change Dump Manifests (a Change Dump's patches are described in its packages'
    /// manifests), and of change notifications, whose entries are a Change List's with the
    /// links of sections 7 and 14 (Change Notification, section 3).
    PatchLinkNotApplicable = ("patch-link-not-applicable", Warning, "14.4",
        "patch links are only applicable to Change Lists, Change Dumps (in their manifests) and change notifications"),
    /// A `duplicate` link does not repeat the attributes of `<rs:md>`: the mirror's
    /// values are expected to be the resource's.
    DuplicateLinkAttributes = ("duplicate-link-attributes", Warning, "14.2",
        "a duplicate link should omit the rs:md attributes (hash, length, type, encoding, path)"),
    /// The `type` of an `alternate` link.
    AlternateLinkType = ("alternate-link-type", Warning, "14.3",
        "an alternate link should have a type attribute"),
    /// TimeGate links carry no other attributes.
    TimegateLinkAttributes = ("timegate-link-attributes", Warning, "14.6",
        "a timegate link should have no attributes but rel and href"),

    // Entries.
    /// `change` on the entries of Change Lists, Change Dump Manifests and notifications.
    ChangeMandatory = ("change-mandatory", Error, "12.1, 13.2, Change Notification 3, Framework Notification 3",
        "each entry must have rs:md with a change attribute"),
    /// `change` is only used in Change Lists, Change Dump Manifests and notifications.
    ChangeNotUsed = ("change-not-used", Warning, "7",
        "change is only used on the entries of Change Lists, Change Dump Manifests and notifications"),
    /// A framework notification entry names the kind of the document that changed.
    FrameworkNotificationEntryCapability = ("framework-notification-entry-capability", Error, "Framework Notification 3",
        "each framework notification entry must have rs:md with the capability of the document that changed"),
    /// A Resource Dump Manifest describes the bitstreams of a snapshot: a deleted resource
    /// has none, and every entry must have the `path` of one.
    ResourceDumpManifestDeleted = ("resourcedump-manifest-deleted", Error, "11.2",
        "a Resource Dump Manifest entry must describe a bitstream in the package, not a deletion"),
    /// The same `<loc>` twice where each entry stands for a different resource, document
    /// or package. Change Lists and Change Dump Manifests list a resource once per change
    /// and are not checked. The sections say "one `<url>` per" resource, Capability List,
    /// capability, bitstream, package or listed document; none says "must".
    LocDuplicate = ("loc-duplicate", Warning, "8, 9, 10.1, 10.2, 11.1, 11.2, 12.2, 13.1, Archives 3-6",
        "a document should list each resource once: the same loc is listed twice"),
    /// `path` on manifest entries (not on deletions).
    PathMandatory = ("path-mandatory", Error, "11.2, 13.2",
        "each manifest entry must have rs:md with a path attribute (except deletions)"),
    /// `path` starts with a slash.
    PathLeadingSlash = ("path-leading-slash", Error, "11.2, 13.2",
        "path must start with a slash"),
    /// `path` stays inside the package.
    PathClimbsOut = ("path-climbs-out", Error, "11.2, 13.2",
        "path must be relative to the package root, with no .. segment above it"),
    /// `path` names a file: not the package root, a directory or a network path
    /// ([`BitstreamPath::names_no_file`](crate::BitstreamPath::names_no_file)), which the
    /// package reader refuses by the same test. Section 7: the path is "the relative file
    /// system path where the bitstream would reside if the ZIP were unpacked".
    PathNamesNoFile = ("path-names-no-file", Error, "7, 11.2, 13.2",
        "path must name a file in the package: not its root (/), a directory (ending in /) or a network path (//host/share)"),
    /// Two bitstream entries of a manifest with one path (compared as
    /// [`BitstreamPath::name_in_package`](crate::BitstreamPath::name_in_package) names
    /// them, with or without the leading slash): a manifest has a `<url>` for each
    /// bitstream (section 6.1), so one of them describes no bitstream of its own. The
    /// package reader refuses it.
    PathDuplicate = ("path-duplicate", Error, "6.1, 11.2, 13.2",
        "each bitstream entry of a manifest must have a path of its own: the same path is listed twice"),
    /// `path` is only used in manifests.
    PathOutsideManifest = ("path-outside-manifest", Warning, "7",
        "path is only used in Resource Dump Manifests and Change Dump Manifests"),
    /// `type` on manifest entries.
    ManifestTypeRecommended = ("manifest-type-recommended", Warning, "11.2, 13.2",
        "manifest entries should have a type attribute"),
    /// `capability` on Capability List entries.
    CapabilityListEntryCapability = ("capabilitylist-entry-capability", Error, "9",
        "each Capability List entry must have rs:md with a capability attribute"),
    /// One entry per capability.
    CapabilityListDuplicate = ("capabilitylist-duplicate", Error, "9, Archives 2.1",
        "a Capability List must only contain one entry per capability"),
    /// Capability List entries point at capability documents or notification channels.
    CapabilityListEntryKind = ("capabilitylist-entry-kind", Error, "9, Archives 2.1, Change Notification 5",
        "a Capability List entry must point at a capability document (resourcelist, resourcedump, changelist, changedump or an archive) or a notification channel"),
    /// A notification channel's entry in a Capability List names its topic in `<loc>` and
    /// its hub in an `<rs:ln rel="hub">`: without the hub a Destination cannot subscribe.
    NotificationChannelHub = ("notification-channel-hub", Error, "Change Notification 5, Framework Notification 5",
        "a notification channel's Capability List entry must have an rs:ln with rel=\"hub\" to its hub"),
    /// A Source Description entry without `<rs:md>`. The text contradicts itself: section
    /// 8 calls the entry's `<rs:md>` optional, section 7 makes `capability` "mandatory in
    /// Source Descriptions and Capability Lists" on entries. A warning, not an error: a
    /// document that follows section 8 is not refused by its writer nor reported broken,
    /// and a Destination loses nothing (an entry of a Source Description points at a
    /// Capability List by its place); adding `capability="capabilitylist"` satisfies both
    /// sections, as every example of the standard does.
    SourceDescriptionEntryMd = ("description-entry-md", Warning, "7, 8",
        "a Source Description entry should have rs:md with capability=\"capabilitylist\": section 7 makes the capability mandatory, section 8 the rs:md optional"),
    /// Source Description entries point at Capability Lists: their optional `<rs:md>` must
    /// have `capability="capabilitylist"`.
    SourceDescriptionEntryCapability = ("description-entry-capability", Error, "8",
        "a Source Description entry's rs:md must have capability=\"capabilitylist\""),
    /// `type` and `length` of a dump's packages.
    DumpPackageMetadata = ("dump-package-metadata", Warning, "11.1, 13.1",
        "each package should have rs:md with type and length attributes"),
    /// All packages of a dump in one format.
    DumpPackageFormat = ("dump-package-format", Warning, "11.1, 13.1",
        "a dump should only point to packages of the same format"),
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Rule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Rule::from_id(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown rule {s}")))
    }
}

/// A place in a document's text, filled in by readers that know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TextPosition {
    /// 1-based line.
    pub line: u64,
    /// 1-based column, counted in bytes of the (decompressed) text, as the XML reader
    /// counts them: a column after a non-ASCII character is greater than its character
    /// count.
    pub column: u64,
}

/// One broken rule: which, where, and the detail of this occurrence.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Finding {
    /// The rule broken.
    pub rule: Rule,
    /// The section that applies to this document (one of the rule's sections).
    pub section: &'static str,
    /// What is wrong here, naming the offending values.
    pub message: String,
    /// The 1-based number of the entry, or `None` for the document level.
    pub entry: Option<u64>,
    /// Where in the text, when the reader knows.
    pub position: Option<TextPosition>,
}

impl Finding {
    /// A finding with the rule's own section and message.
    pub fn new(rule: Rule, entry: Option<u64>) -> Finding {
        Finding {
            rule,
            section: rule.section(),
            message: rule.message().to_owned(),
            entry,
            position: None,
        }
    }

    /// A finding for a value that failed to parse, with the error's message.
    pub fn from_error(error: &dyn RuleError, entry: Option<u64>) -> Finding {
        Finding {
            message: error.to_string(),
            ..Finding::new(error.rule(), entry)
        }
    }

    /// The rule's severity.
    pub fn severity(&self) -> Severity {
        self.rule.severity()
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} [{}, section {}]",
            self.severity(),
            self.rule,
            self.section
        )?;
        if let Some(entry) = self.entry {
            write!(f, " entry {entry}")?;
        }
        if let Some(p) = self.position {
            write!(f, " line {} column {}", p.line, p.column)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A [`Finding`] as deserialized: serde cannot produce a `&'static str` from borrowed
/// input, so the section is read as text and mapped to the catalogue's own string.
#[cfg(feature = "serde")]
#[derive(serde::Deserialize)]
struct FindingText {
    rule: Rule,
    section: String,
    message: String,
    entry: Option<u64>,
    position: Option<TextPosition>,
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Finding {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let f = FindingText::deserialize(d)?;
        let section = Rule::ALL
            .iter()
            .map(|r| r.section())
            .chain(crate::DocumentKind::DEFINED.iter().map(|k| k.section()))
            .find(|known| *known == f.section)
            .ok_or_else(|| D::Error::custom(format!("unknown section {}", f.section)))?;
        Ok(Finding {
            rule: f.rule,
            section,
            message: f.message,
            entry: f.entry,
            position: f.position,
        })
    }
}

/// Cuts untrusted input for an error message, so that a hostile megabyte-long value does not
/// become a megabyte-long message.
pub(crate) fn clip(s: &str) -> String {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        None => s.to_owned(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}

/// Serde as text for a type with `Display` and `FromStr`.
macro_rules! serde_as_text {
    ($t:ty) => {
        #[cfg(feature = "serde")]
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(crate) use serde_as_text;
