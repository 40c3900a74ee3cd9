//! `<url>` and `<sitemap>`: one entry of a document.

use crate::{ChangeFreq, Link, Md, Relation, Uri, W3cDateTime, extension::Element};

/// One `<url>` (in a `<urlset>`) or `<sitemap>` (in a `<sitemapindex>`) entry.
///
/// ```
/// use resourcesync_model::{Change, Entry, Md};
///
/// let mut entry = Entry::new("http://example.com/res1".parse()?);
/// entry.md = Some(Md { change: Some(Change::Created), ..Md::default() });
/// assert_eq!(entry.change(), Some(Change::Created));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Entry {
    /// `<loc>`: the URI of the resource, document or package.
    pub loc: Uri,
    /// `<lastmod>`: when the resource was last modified.
    pub lastmod: Option<W3cDateTime>,
    /// `<changefreq>`: a hint of how often the resource changes.
    pub changefreq: Option<ChangeFreq>,
    /// `<rs:md>`: metadata about the resource.
    pub md: Option<Md>,
    /// `<rs:ln>`: links to related resources, in document order.
    pub links: Vec<Link>,
    /// Elements in other namespaces.
    pub extensions: Vec<Element>,
}

impl Entry {
    /// An entry with only its `<loc>`.
    pub fn new(loc: Uri) -> Entry {
        Entry {
            loc,
            lastmod: None,
            changefreq: None,
            md: None,
            links: Vec::new(),
            extensions: Vec::new(),
        }
    }

    /// The `change` attribute, if any.
    pub fn change(&self) -> Option<crate::Change> {
        self.md.as_ref().and_then(|md| md.change)
    }

    /// The links with a relation, highest priority first (stable for equal priorities).
    pub fn links_with(&self, rel: &Relation) -> Vec<&Link> {
        let mut links: Vec<&Link> = self.links.iter().filter(|l| &l.rel == rel).collect();
        links.sort_by_key(|l| l.priority());
        links
    }
}
