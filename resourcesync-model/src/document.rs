//! A whole document: its head (root, `<rs:md>`, `<rs:ln>`) and its entries.

use crate::{Capability, DocumentKind, Entry, Link, Md, Relation, Root, extension};

/// Everything in a document before its first entry: the root element, the document's
/// `<rs:md>` and `<rs:ln>` elements, and extensions.
///
/// A streaming reader yields this first and the entries one at a time after it, so that a
/// document of any size is handled in constant memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
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

    /// The head of a document of this kind; `None` for [`DocumentKind::Unknown`].
    pub fn of_kind(kind: DocumentKind) -> Option<DocumentHead> {
        Some(DocumentHead::new(kind.root()?, kind.capability()?))
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
/// let mut doc = Document::new(DocumentHead::of_kind(DocumentKind::ResourceList).unwrap());
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
