//! Capabilities, document roots and the document kinds they make together.

use std::fmt;
use std::str::FromStr;

/// The value of a `capability` attribute (section 7, the Archives specification and the
/// two Notification specifications).
///
/// The vocabulary is open: a value the standards do not define is kept as
/// [`Capability::Other`] so that a document using it can still be read and written back;
/// the rule [`Rule::CapabilityUnknown`](crate::Rule::CapabilityUnknown) flags it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Capability {
    /// `description`: a Source Description (section 8).
    Description,
    /// `capabilitylist`: a Capability List (section 9).
    CapabilityList,
    /// `resourcelist`: a Resource List or its index (section 10).
    ResourceList,
    /// `resourcedump`: a Resource Dump or its index (section 11.1).
    ResourceDump,
    /// `resourcedump-manifest`: a Resource Dump Manifest (section 11.2).
    ResourceDumpManifest,
    /// `changelist`: a Change List or its index (section 12).
    ChangeList,
    /// `changedump`: a Change Dump or its index (section 13.1).
    ChangeDump,
    /// `changedump-manifest`: a Change Dump Manifest (section 13.2).
    ChangeDumpManifest,
    /// `resourcelist-archive` (Archives, section 3).
    ResourceListArchive,
    /// `resourcedump-archive` (Archives, section 4).
    ResourceDumpArchive,
    /// `changelist-archive` (Archives, section 5).
    ChangeListArchive,
    /// `changedump-archive` (Archives, section 6).
    ChangeDumpArchive,
    /// `change-notification`: a change notification, or the Capability List entry that
    /// advertises its channel (Change Notification 1.0.1, sections 3 and 5). Versions 0.8.1
    /// to 1.0 of that specification wrote `changelist-notification` in the payload; it is
    /// read as this value and written as `change-notification`.
    ChangeNotification,
    /// `framework-notification`: a framework notification, or the Capability List entry
    /// that advertises its channel (Framework Notification 1.0.1, sections 3 and 5).
    FrameworkNotification,
    /// Any other value, kept as written.
    Other(String),
}

impl Capability {
    /// Every capability the standards define, in the order of the standards.
    pub const DEFINED: [Capability; 14] = [
        Capability::Description,
        Capability::CapabilityList,
        Capability::ResourceList,
        Capability::ResourceDump,
        Capability::ResourceDumpManifest,
        Capability::ChangeList,
        Capability::ChangeDump,
        Capability::ChangeDumpManifest,
        Capability::ResourceListArchive,
        Capability::ResourceDumpArchive,
        Capability::ChangeListArchive,
        Capability::ChangeDumpArchive,
        Capability::ChangeNotification,
        Capability::FrameworkNotification,
    ];

    /// The name Change Notification 0.8.1 to 1.0 gave [`Capability::ChangeNotification`],
    /// read as it.
    pub const CHANGELIST_NOTIFICATION: &'static str = "changelist-notification";

    /// The attribute value.
    pub fn as_str(&self) -> &str {
        match self {
            Capability::Description => "description",
            Capability::CapabilityList => "capabilitylist",
            Capability::ResourceList => "resourcelist",
            Capability::ResourceDump => "resourcedump",
            Capability::ResourceDumpManifest => "resourcedump-manifest",
            Capability::ChangeList => "changelist",
            Capability::ChangeDump => "changedump",
            Capability::ChangeDumpManifest => "changedump-manifest",
            Capability::ResourceListArchive => "resourcelist-archive",
            Capability::ResourceDumpArchive => "resourcedump-archive",
            Capability::ChangeListArchive => "changelist-archive",
            Capability::ChangeDumpArchive => "changedump-archive",
            Capability::ChangeNotification => "change-notification",
            Capability::FrameworkNotification => "framework-notification",
            Capability::Other(s) => s,
        }
    }

    /// The defined capability a near-miss value was meant to be, or `None` for a defined
    /// value and for any other undefined one.
    ///
    /// A value is a near miss when it differs from a defined value only by letter case
    /// (`ResourceList`), by separators (`resource_list`, `Resource List`,
    /// `ResourceDumpManifest`), or by a small edit: one insertion, deletion, substitution or
    /// transposition of adjacent letters (Damerau-Levenshtein, optimal string alignment),
    /// two for the defined values of twelve or more letters. The defined values are at
    /// least four edits apart, so a near miss is never near two of them. A value that is a
    /// defined one with a hyphenated prefix or suffix (`x-changelist`,
    /// `resourcelist-v2`) is taken as a deliberate extension, as `resourcelist-archive`
    /// extends `resourcelist`, and is not a near miss.
    ///
    /// ```
    /// use resourcesync_model::Capability;
    ///
    /// assert_eq!(Capability::from("ResourceList").meant(), Some(Capability::ResourceList));
    /// assert_eq!(Capability::from("chnagelist").meant(), Some(Capability::ChangeList));
    /// assert_eq!(Capability::from("mirrorlist").meant(), None);
    /// assert_eq!(Capability::ResourceList.meant(), None);
    /// ```
    pub fn meant(&self) -> Option<Capability> {
        let Capability::Other(value) = self else {
            return None;
        };
        // The longest defined value has 21 letters; anything much longer is no near miss,
        // and a hostile megabyte-long value costs nothing.
        if value.len() > 32 {
            return None;
        }
        let lower = value.to_ascii_lowercase();
        let squashed: String = lower
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | ' ' | '.'))
            .collect();
        let mut best: Option<(usize, Capability)> = None;
        for c in Capability::DEFINED {
            let name = c.as_str();
            if lower == name || squashed == name.replace('-', "") {
                return Some(c);
            }
            let allowed = if name.len() >= 12 { 2 } else { 1 };
            let distance = edit_distance(lower.as_bytes(), name.as_bytes(), allowed);
            if distance <= allowed && best.as_ref().is_none_or(|(d, _)| distance < *d) {
                best = Some((distance, c));
            }
        }
        let (_, meant) = best?;
        let name = meant.as_str();
        let extension = lower
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('-'))
            || lower
                .strip_suffix(name)
                .is_some_and(|rest| rest.ends_with('-'));
        (!extension).then_some(meant)
    }

    /// Whether a Capability List may enumerate this capability: the four core capabilities
    /// (section 9), the four archives (Archives, section 2.1) and the two notification
    /// channels (Change Notification and Framework Notification, section 5).
    pub fn is_listable(&self) -> bool {
        matches!(
            self,
            Capability::ResourceList
                | Capability::ResourceDump
                | Capability::ChangeList
                | Capability::ChangeDump
                | Capability::ResourceListArchive
                | Capability::ResourceDumpArchive
                | Capability::ChangeListArchive
                | Capability::ChangeDumpArchive
                | Capability::ChangeNotification
                | Capability::FrameworkNotification
        )
    }

    /// Whether this is a notification channel's capability: a Capability List entry with it
    /// names a WebSub topic, not a document, and links to its hub.
    pub fn is_notification(&self) -> bool {
        matches!(
            self,
            Capability::ChangeNotification | Capability::FrameworkNotification
        )
    }
}

/// The optimal-string-alignment distance of `a` and `b` (insertions, deletions,
/// substitutions and transpositions of adjacent bytes), or `limit + 1` as soon as it is
/// known to be over `limit`.
fn edit_distance(a: &[u8], b: &[u8], limit: usize) -> usize {
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    // Three rows of the classic table: two back for transpositions.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(before[j - 2] + 1);
            }
            current[j] = d;
        }
        if current.iter().min().is_some_and(|&m| m > limit) {
            return limit + 1;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()].min(limit + 1)
}

impl FromStr for Capability {
    type Err = std::convert::Infallible;

    /// Never fails: an undefined value becomes [`Capability::Other`], and
    /// [`Capability::CHANGELIST_NOTIFICATION`] the value that replaced it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == Capability::CHANGELIST_NOTIFICATION {
            return Ok(Capability::ChangeNotification);
        }
        Ok(Capability::DEFINED
            .into_iter()
            .find(|c| c.as_str() == s)
            .unwrap_or_else(|| Capability::Other(s.to_owned())))
    }
}

impl From<&str> for Capability {
    fn from(s: &str) -> Self {
        match s.parse() {
            Ok(c) => c,
            Err(never) => match never {},
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

crate::rules::serde_as_text!(Capability);

/// The root element of a ResourceSync document: the two formats of the Sitemap protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(clippy::exhaustive_enums)] // the Sitemap protocol has exactly these two
pub enum Root {
    /// `<urlset>`, whose entries are `<url>` elements.
    UrlSet,
    /// `<sitemapindex>`, whose entries are `<sitemap>` elements.
    SitemapIndex,
}

impl Root {
    /// The root element's local name.
    pub fn element(self) -> &'static str {
        match self {
            Root::UrlSet => "urlset",
            Root::SitemapIndex => "sitemapindex",
        }
    }

    /// The local name of this root's entry elements.
    pub fn entry_element(self) -> &'static str {
        match self {
            Root::UrlSet => "url",
            Root::SitemapIndex => "sitemap",
        }
    }
}

/// What a document is: it follows from its root and its capability.
///
/// ```
/// use resourcesync_model::{Capability, DocumentKind, Root};
///
/// let kind = DocumentKind::new(Root::SitemapIndex, Some(&Capability::ChangeList));
/// assert_eq!(kind, DocumentKind::ChangeListIndex);
/// assert_eq!(kind.section(), "12.2");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum DocumentKind {
    /// A Source Description (section 8).
    SourceDescription,
    /// A Source Description Index (section 8).
    SourceDescriptionIndex,
    /// A Capability List (section 9).
    CapabilityList,
    /// A Capability List in index form, which section 9 says Sources should not generate.
    CapabilityListIndex,
    /// A Resource List (section 10.1).
    ResourceList,
    /// A Resource List Index (section 10.2).
    ResourceListIndex,
    /// A Resource Dump (section 11.1).
    ResourceDump,
    /// A Resource Dump Index (section 11.1).
    ResourceDumpIndex,
    /// A Resource Dump Manifest (section 11.2).
    ResourceDumpManifest,
    /// A Change List (section 12.1).
    ChangeList,
    /// A Change List Index (section 12.2).
    ChangeListIndex,
    /// A Change Dump (section 13.1).
    ChangeDump,
    /// A Change Dump Index (section 13.1).
    ChangeDumpIndex,
    /// A Change Dump Manifest (section 13.2).
    ChangeDumpManifest,
    /// A Resource List Archive (Archives, section 3).
    ResourceListArchive,
    /// A Resource List Archive Index (Archives, section 3.1).
    ResourceListArchiveIndex,
    /// A Resource Dump Archive (Archives, section 4).
    ResourceDumpArchive,
    /// A Resource Dump Archive Index (Archives, section 4).
    ResourceDumpArchiveIndex,
    /// A Change List Archive (Archives, section 5).
    ChangeListArchive,
    /// A Change List Archive Index (Archives, section 5).
    ChangeListArchiveIndex,
    /// A Change Dump Archive (Archives, section 6).
    ChangeDumpArchive,
    /// A Change Dump Archive Index (Archives, section 6).
    ChangeDumpArchiveIndex,
    /// A change notification (Change Notification 1.0.1, section 3).
    ChangeNotification,
    /// A framework notification (Framework Notification 1.0.1, section 3).
    FrameworkNotification,
    /// A document without a capability, with one the standards do not define, or with a
    /// manifest or notification capability on a `<sitemapindex>`. It is kept, not refused.
    Unknown,
}

impl DocumentKind {
    /// The kind of a document with this root and document-level capability.
    pub fn new(root: Root, capability: Option<&Capability>) -> DocumentKind {
        use Capability as C;
        use DocumentKind as K;
        let Some(capability) = capability else {
            return K::Unknown;
        };
        match (root, capability) {
            (Root::UrlSet, C::Description) => K::SourceDescription,
            (Root::SitemapIndex, C::Description) => K::SourceDescriptionIndex,
            (Root::UrlSet, C::CapabilityList) => K::CapabilityList,
            (Root::SitemapIndex, C::CapabilityList) => K::CapabilityListIndex,
            (Root::UrlSet, C::ResourceList) => K::ResourceList,
            (Root::SitemapIndex, C::ResourceList) => K::ResourceListIndex,
            (Root::UrlSet, C::ResourceDump) => K::ResourceDump,
            (Root::SitemapIndex, C::ResourceDump) => K::ResourceDumpIndex,
            (Root::UrlSet, C::ResourceDumpManifest) => K::ResourceDumpManifest,
            (Root::UrlSet, C::ChangeList) => K::ChangeList,
            (Root::SitemapIndex, C::ChangeList) => K::ChangeListIndex,
            (Root::UrlSet, C::ChangeDump) => K::ChangeDump,
            (Root::SitemapIndex, C::ChangeDump) => K::ChangeDumpIndex,
            (Root::UrlSet, C::ChangeDumpManifest) => K::ChangeDumpManifest,
            (Root::UrlSet, C::ResourceListArchive) => K::ResourceListArchive,
            (Root::SitemapIndex, C::ResourceListArchive) => K::ResourceListArchiveIndex,
            (Root::UrlSet, C::ResourceDumpArchive) => K::ResourceDumpArchive,
            (Root::SitemapIndex, C::ResourceDumpArchive) => K::ResourceDumpArchiveIndex,
            (Root::UrlSet, C::ChangeListArchive) => K::ChangeListArchive,
            (Root::SitemapIndex, C::ChangeListArchive) => K::ChangeListArchiveIndex,
            (Root::UrlSet, C::ChangeDumpArchive) => K::ChangeDumpArchive,
            (Root::SitemapIndex, C::ChangeDumpArchive) => K::ChangeDumpArchiveIndex,
            (Root::UrlSet, C::ChangeNotification) => K::ChangeNotification,
            (Root::UrlSet, C::FrameworkNotification) => K::FrameworkNotification,
            (
                Root::SitemapIndex,
                C::ResourceDumpManifest
                | C::ChangeDumpManifest
                | C::ChangeNotification
                | C::FrameworkNotification,
            )
            | (_, C::Other(_)) => K::Unknown,
        }
    }

    /// The root element this kind has, or `None` for [`DocumentKind::Unknown`].
    pub fn root(self) -> Option<Root> {
        use DocumentKind as K;
        match self {
            K::Unknown => None,
            K::SourceDescriptionIndex
            | K::CapabilityListIndex
            | K::ResourceListIndex
            | K::ResourceDumpIndex
            | K::ChangeListIndex
            | K::ChangeDumpIndex
            | K::ResourceListArchiveIndex
            | K::ResourceDumpArchiveIndex
            | K::ChangeListArchiveIndex
            | K::ChangeDumpArchiveIndex => Some(Root::SitemapIndex),
            _ => Some(Root::UrlSet),
        }
    }

    /// Whether the root is `<sitemapindex>`.
    pub fn is_index(self) -> bool {
        self.root() == Some(Root::SitemapIndex)
    }

    /// The document-level capability this kind carries, or `None` for
    /// [`DocumentKind::Unknown`].
    pub fn capability(self) -> Option<Capability> {
        use DocumentKind as K;
        Some(match self {
            K::SourceDescription | K::SourceDescriptionIndex => Capability::Description,
            K::CapabilityList | K::CapabilityListIndex => Capability::CapabilityList,
            K::ResourceList | K::ResourceListIndex => Capability::ResourceList,
            K::ResourceDump | K::ResourceDumpIndex => Capability::ResourceDump,
            K::ResourceDumpManifest => Capability::ResourceDumpManifest,
            K::ChangeList | K::ChangeListIndex => Capability::ChangeList,
            K::ChangeDump | K::ChangeDumpIndex => Capability::ChangeDump,
            K::ChangeDumpManifest => Capability::ChangeDumpManifest,
            K::ResourceListArchive | K::ResourceListArchiveIndex => Capability::ResourceListArchive,
            K::ResourceDumpArchive | K::ResourceDumpArchiveIndex => Capability::ResourceDumpArchive,
            K::ChangeListArchive | K::ChangeListArchiveIndex => Capability::ChangeListArchive,
            K::ChangeDumpArchive | K::ChangeDumpArchiveIndex => Capability::ChangeDumpArchive,
            K::ChangeNotification => Capability::ChangeNotification,
            K::FrameworkNotification => Capability::FrameworkNotification,
            K::Unknown => return None,
        })
    }

    /// The section of the standard that defines this kind (`"Archives 3"` for the Archives
    /// specification, `"Change Notification 3"` and `"Framework Notification 3"` for the
    /// notifications), or `"7"` for an unknown kind.
    pub fn section(self) -> &'static str {
        use DocumentKind as K;
        match self {
            K::SourceDescription | K::SourceDescriptionIndex => "8",
            K::CapabilityList | K::CapabilityListIndex => "9",
            K::ResourceList => "10.1",
            K::ResourceListIndex => "10.2",
            K::ResourceDump | K::ResourceDumpIndex => "11.1",
            K::ResourceDumpManifest => "11.2",
            K::ChangeList => "12.1",
            K::ChangeListIndex => "12.2",
            K::ChangeDump | K::ChangeDumpIndex => "13.1",
            K::ChangeDumpManifest => "13.2",
            K::ResourceListArchive => "Archives 3",
            K::ResourceListArchiveIndex => "Archives 3.1",
            K::ResourceDumpArchive | K::ResourceDumpArchiveIndex => "Archives 4",
            K::ChangeListArchive | K::ChangeListArchiveIndex => "Archives 5",
            K::ChangeDumpArchive | K::ChangeDumpArchiveIndex => "Archives 6",
            K::ChangeNotification => "Change Notification 3",
            K::FrameworkNotification => "Framework Notification 3",
            K::Unknown => "7",
        }
    }

    /// The name the standard gives this kind, such as `"Change List Index"`.
    pub fn name(self) -> &'static str {
        use DocumentKind as K;
        match self {
            K::SourceDescription => "Source Description",
            K::SourceDescriptionIndex => "Source Description Index",
            K::CapabilityList => "Capability List",
            K::CapabilityListIndex => "Capability List Index",
            K::ResourceList => "Resource List",
            K::ResourceListIndex => "Resource List Index",
            K::ResourceDump => "Resource Dump",
            K::ResourceDumpIndex => "Resource Dump Index",
            K::ResourceDumpManifest => "Resource Dump Manifest",
            K::ChangeList => "Change List",
            K::ChangeListIndex => "Change List Index",
            K::ChangeDump => "Change Dump",
            K::ChangeDumpIndex => "Change Dump Index",
            K::ChangeDumpManifest => "Change Dump Manifest",
            K::ResourceListArchive => "Resource List Archive",
            K::ResourceListArchiveIndex => "Resource List Archive Index",
            K::ResourceDumpArchive => "Resource Dump Archive",
            K::ResourceDumpArchiveIndex => "Resource Dump Archive Index",
            K::ChangeListArchive => "Change List Archive",
            K::ChangeListArchiveIndex => "Change List Archive Index",
            K::ChangeDumpArchive => "Change Dump Archive",
            K::ChangeDumpArchiveIndex => "Change Dump Archive Index",
            K::ChangeNotification => "Change Notification",
            K::FrameworkNotification => "Framework Notification",
            K::Unknown => "unknown document",
        }
    }

    /// Every kind the standards define, [`DocumentKind::Unknown`] excluded.
    pub const DEFINED: [DocumentKind; 24] = [
        DocumentKind::SourceDescription,
        DocumentKind::SourceDescriptionIndex,
        DocumentKind::CapabilityList,
        DocumentKind::CapabilityListIndex,
        DocumentKind::ResourceList,
        DocumentKind::ResourceListIndex,
        DocumentKind::ResourceDump,
        DocumentKind::ResourceDumpIndex,
        DocumentKind::ResourceDumpManifest,
        DocumentKind::ChangeList,
        DocumentKind::ChangeListIndex,
        DocumentKind::ChangeDump,
        DocumentKind::ChangeDumpIndex,
        DocumentKind::ChangeDumpManifest,
        DocumentKind::ResourceListArchive,
        DocumentKind::ResourceListArchiveIndex,
        DocumentKind::ResourceDumpArchive,
        DocumentKind::ResourceDumpArchiveIndex,
        DocumentKind::ChangeListArchive,
        DocumentKind::ChangeListArchiveIndex,
        DocumentKind::ChangeDumpArchive,
        DocumentKind::ChangeDumpArchiveIndex,
        DocumentKind::ChangeNotification,
        DocumentKind::FrameworkNotification,
    ];

    /// Whether this kind is a notification, pushed to a Destination rather than fetched.
    pub fn is_notification(self) -> bool {
        matches!(
            self,
            DocumentKind::ChangeNotification | DocumentKind::FrameworkNotification
        )
    }
}

impl fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_root_and_capability_agree() {
        for kind in DocumentKind::DEFINED {
            let root = kind.root().unwrap();
            let cap = kind.capability().unwrap();
            assert_eq!(DocumentKind::new(root, Some(&cap)), kind);
        }
        assert_eq!(
            DocumentKind::new(Root::SitemapIndex, Some(&Capability::ChangeDumpManifest)),
            DocumentKind::Unknown
        );
        for notification in [
            Capability::ChangeNotification,
            Capability::FrameworkNotification,
        ] {
            assert_eq!(
                DocumentKind::new(Root::SitemapIndex, Some(&notification)),
                DocumentKind::Unknown
            );
        }
        assert_eq!(DocumentKind::new(Root::UrlSet, None), DocumentKind::Unknown);
        assert_eq!(
            DocumentKind::new(Root::UrlSet, Some(&Capability::from("mirror"))),
            DocumentKind::Unknown
        );
    }

    #[test]
    fn edit_distances() {
        for (a, b, d) in [
            ("changelist", "changelist", 0),
            ("chnagelist", "changelist", 1),
            ("changelst", "changelist", 1),
            ("changelists", "changelist", 1),
            ("xhangelist", "changelist", 1),
            ("hcnagelist", "changelist", 2),
            ("resourcelist", "resourcedump", 4),
        ] {
            assert_eq!(edit_distance(a.as_bytes(), b.as_bytes(), 5), d, "{a} {b}");
        }
        assert_eq!(edit_distance(b"resourcelist", b"changedump", 2), 3);
    }

    #[test]
    fn defined_values_are_far_apart() {
        for a in Capability::DEFINED {
            for b in Capability::DEFINED {
                if a != b {
                    let d = edit_distance(a.as_str().as_bytes(), b.as_str().as_bytes(), 10);
                    assert!(d >= 4, "{a} {b}: {d}");
                }
            }
        }
    }

    #[test]
    fn capability_text_round_trips() {
        for c in Capability::DEFINED {
            assert_eq!(Capability::from(c.as_str()), c);
        }
        assert_eq!(Capability::from("x-custom").as_str(), "x-custom");
        // Change Notification 1.0's name is read as 1.0.1's, and written as 1.0.1 writes it.
        let old = Capability::from(Capability::CHANGELIST_NOTIFICATION);
        assert_eq!(old, Capability::ChangeNotification);
        assert_eq!(old.as_str(), "change-notification");
    }
}
