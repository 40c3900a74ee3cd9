//! A whole document: its head (root, `<rs:md>`, `<rs:ln>`) and its entries.

use crate::{Capability, DocumentKind, Entry, Link, Md, Relation, Root, W3cDateTime, extension};

/// Everything in a document before its first entry: the root element, the document's
/// `<rs:md>` and `<rs:ln>` elements, and extensions.
///
/// A streaming reader yields this first and the entries one at a time after it, so that a
/// document of any size is handled in constant memory.
///
/// Built with [`DocumentHead::of_kind`] and `with_` methods; `#[non_exhaustive]`, its fields
/// public to read and to set.
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
///
/// let head = DocumentHead::of_kind(DocumentKind::ChangeList)
///     .with_from("2013-01-02T00:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// assert_eq!(head.kind(), DocumentKind::ChangeList);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct DocumentHead {
    /// `<urlset>` or `<sitemapindex>`.
    pub root: Root,
    /// The document's `<rs:md>`.
    pub md: Md,
    /// The document's `<rs:ln>` elements, in document order.
    pub links: Vec<Link>,
    /// Attributes of the root element in other namespaces.
    pub attributes: Vec<extension::Attribute>,
    /// Elements in other namespaces at document level.
    pub extensions: Vec<extension::Element>,
}

impl DocumentHead {
    /// A head with a root and a capability and nothing else.
    pub fn new(root: Root, capability: Capability) -> DocumentHead {
        DocumentHead {
            root,
            md: Md {
                capability: Some(capability),
                ..Md::default()
            },
            links: Vec::new(),
            attributes: Vec::new(),
            extensions: Vec::new(),
        }
    }

    /// A head with a root and nothing else, not even a capability: where a reader starts.
    pub fn of_root(root: Root) -> DocumentHead {
        DocumentHead {
            root,
            md: Md::default(),
            links: Vec::new(),
            attributes: Vec::new(),
            extensions: Vec::new(),
        }
    }

    /// The head of a document of this kind: its root and its capability.
    ///
    /// For [`DocumentKind::Unknown`], which names no capability, it is a `<urlset>` without
    /// one, whose [`kind`](DocumentHead::kind) is `Unknown` again; a writer refuses to
    /// publish it, since section 7 requires the capability.
    pub fn of_kind(kind: DocumentKind) -> DocumentHead {
        match (kind.root(), kind.capability()) {
            (Some(root), Some(capability)) => DocumentHead::new(root, capability),
            _ => DocumentHead::of_root(Root::UrlSet),
        }
    }

    /// Sets the document's `at`: when taking the snapshot started.
    #[must_use]
    pub fn with_at(mut self, at: W3cDateTime) -> DocumentHead {
        self.md.at = Some(at);
        self
    }

    /// Sets the document's `completed`: when taking the snapshot completed.
    #[must_use]
    pub fn with_completed(mut self, completed: W3cDateTime) -> DocumentHead {
        self.md.completed = Some(completed);
        self
    }

    /// Sets the document's `from`: the start of the changes it covers.
    #[must_use]
    pub fn with_from(mut self, from: W3cDateTime) -> DocumentHead {
        self.md.from = Some(from);
        self
    }

    /// Sets the document's `until`: the end of the changes it covers.
    #[must_use]
    pub fn with_until(mut self, until: W3cDateTime) -> DocumentHead {
        self.md.until = Some(until);
        self
    }

    /// Adds an `<rs:ln>` to the document.
    #[must_use]
    pub fn with_link(mut self, link: Link) -> DocumentHead {
        self.links.push(link);
        self
    }

    /// What the document is, from its root and capability.
    pub fn kind(&self) -> DocumentKind {
        DocumentKind::new(self.root, self.md.capability.as_ref())
    }

    /// The first link with a relation (`up`, `index`, …).
    pub fn link(&self, rel: &Relation) -> Option<&Link> {
        self.links.iter().find(|l| &l.rel == rel)
    }
}

/// A whole document in memory. For large documents prefer streaming the head and then the
/// entries, which [`Checker`](crate::Checker) supports rule by rule.
///
/// ```
/// use resourcesync_model::{Document, DocumentHead, DocumentKind, Entry};
///
/// let mut doc = Document::new(DocumentHead::of_kind(DocumentKind::ResourceList));
/// doc.entries.push(Entry::new("http://example.com/res1".parse()?));
/// assert_eq!(doc.head.kind(), DocumentKind::ResourceList);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Document {
    /// The root, `<rs:md>` and `<rs:ln>` of the document.
    pub head: DocumentHead,
    /// The `<url>` or `<sitemap>` entries, in document order.
    pub entries: Vec<Entry>,
}

impl Document {
    /// A document with a head and no entries.
    pub fn new(head: DocumentHead) -> Document {
        Document {
            head,
            entries: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_of_every_kind_is_of_that_kind() {
        for kind in DocumentKind::DEFINED
            .into_iter()
            .chain([DocumentKind::Unknown])
        {
            let head = DocumentHead::of_kind(kind);
            assert_eq!(head.kind(), kind, "{kind:?}");
            assert_eq!(head.md.capability, kind.capability(), "{kind:?}");
        }
        // The one head without a capability is a <urlset>, as a reader starts one.
        assert_eq!(
            DocumentHead::of_kind(DocumentKind::Unknown),
            DocumentHead::of_root(Root::UrlSet)
        );
    }
}
