//! `<url>` and `<sitemap>`: one entry of a document.

use crate::{
    BitstreamPath, Capability, Change, ChangeFreq, Hash, HashAlgorithm, Hashes, Link, Md,
    MediaType, Relation, Uri, W3cDateTime, extension::Element,
};

/// One `<url>` (in a `<urlset>`) or `<sitemap>` (in a `<sitemapindex>`) entry.
///
/// Built with [`Entry::new`] and `with_` methods: those named after an `<rs:md>` attribute
/// set it on the entry's `<rs:md>`, which they add when it is missing. The type is
/// `#[non_exhaustive]`; its fields are public to read and to set.
///
/// ```
/// use resourcesync_model::{Change, Entry, Link, Relation};
///
/// let entry = Entry::new("http://example.com/res1".parse()?)
///     .with_change(Change::Created)
///     .with_datetime("2013-01-03T09:00:00Z".parse()?)
///     .with_length(8876)
///     .with_hash("md5:1584abdf8ebdc9802ac0c6a7402c03b6".parse()?)
///     .with_link(Link::new(Relation::Duplicate, "http://mirror.example.com/res1".parse()?));
/// assert_eq!(entry.change(), Some(Change::Created));
/// assert_eq!(entry.md.as_ref().and_then(|md| md.length), Some(8876));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
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

    /// Sets `<lastmod>`.
    #[must_use]
    pub fn with_lastmod(mut self, lastmod: W3cDateTime) -> Entry {
        self.lastmod = Some(lastmod);
        self
    }

    /// Sets `<changefreq>`.
    #[must_use]
    pub fn with_changefreq(mut self, changefreq: ChangeFreq) -> Entry {
        self.changefreq = Some(changefreq);
        self
    }

    /// Sets the whole `<rs:md>`.
    #[must_use]
    pub fn with_md(mut self, md: Md) -> Entry {
        self.md = Some(md);
        self
    }

    /// Adds an `<rs:ln>`.
    #[must_use]
    pub fn with_link(mut self, link: Link) -> Entry {
        self.links.push(link);
        self
    }

    /// Adds an element in another namespace.
    #[must_use]
    pub fn with_extension(mut self, element: Element) -> Entry {
        self.extensions.push(element);
        self
    }

    /// The entry's `<rs:md>`, added empty when missing.
    pub fn md_mut(&mut self) -> &mut Md {
        self.md.get_or_insert_with(Md::default)
    }

    /// The `length` of its `<rs:md>`, if any.
    pub fn length(&self) -> Option<u64> {
        self.md.as_ref().and_then(|md| md.length)
    }

    /// The `datetime` of its `<rs:md>`, if any.
    pub fn datetime(&self) -> Option<W3cDateTime> {
        self.md.as_ref().and_then(|md| md.datetime)
    }

    /// The `hash` of its `<rs:md>`, if any.
    pub fn hashes(&self) -> Option<&Hashes> {
        self.md.as_ref().and_then(|md| md.hash.as_ref())
    }

    /// The digest of its `<rs:md>` for one algorithm, if listed.
    ///
    /// ```
    /// use resourcesync_model::{Entry, HashAlgorithm};
    ///
    /// let entry = Entry::new("http://example.com/res1".parse()?)
    ///     .with_hash("md5:1584abdf8ebdc9802ac0c6a7402c03b6".parse()?);
    /// let md5 = entry.hash(&HashAlgorithm::Md5).map(|h| h.hex());
    /// assert_eq!(md5.as_deref(), Some("1584abdf8ebdc9802ac0c6a7402c03b6"));
    /// assert!(entry.hash(&HashAlgorithm::Sha256).is_none());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn hash(&self, algorithm: &HashAlgorithm) -> Option<&Hash> {
        self.hashes().and_then(|h| h.get(algorithm))
    }

    /// The `change` attribute, if any.
    pub fn change(&self) -> Option<crate::Change> {
        self.md.as_ref().and_then(|md| md.change)
    }

    /// Whether a package's manifest entry names a bitstream: it has a `path` and is no
    /// deletion (a resource deleted in a Change Dump Manifest has no bitstream). A package
    /// numbers its bitstreams from 0 in manifest order among the entries for which this
    /// holds, so a reader of the manifest alone numbers them the same way.
    ///
    /// ```
    /// use resourcesync_model::{Change, Entry};
    ///
    /// let entry = Entry::new("http://example.com/res1".parse()?);
    /// assert!(!entry.has_bitstream());
    /// let stored = entry.with_path("/resources/res1".into());
    /// assert!(stored.has_bitstream());
    /// assert!(!stored.with_change(Change::Deleted).has_bitstream());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn has_bitstream(&self) -> bool {
        self.md
            .as_ref()
            .is_some_and(|md| md.path.is_some() && md.change != Some(crate::Change::Deleted))
    }

    /// The links with a relation, highest priority first (stable for equal priorities).
    pub fn links_with(&self, rel: &Relation) -> Vec<&Link> {
        let mut links: Vec<&Link> = self.links.iter().filter(|l| &l.rel == rel).collect();
        links.sort_by_key(|l| l.priority());
        links
    }
}

macro_rules! entry_with {
    ($($(#[$doc:meta])* $method:ident: $field:ident: $value:ty,)*) => {
        impl Entry {
            $(
                $(#[$doc])*
                ///
                /// On the entry's `<rs:md>`, added when missing.
                #[must_use]
                pub fn $method(mut self, value: $value) -> Entry {
                    self.md_mut().$field = Some(value);
                    self
                }
            )*
        }
    };
}
crate::md::md_attributes!(entry_with);
