//! `<rs:ln>`: a link from a document or an entry to a related resource (sections 7, 14).

use crate::{
    BitstreamPath, Hashes, MediaType, Priority, Relation, Uri, W3cDateTime, extension::Attribute,
};

/// The attributes of an `<rs:ln>` element, each typed.
///
/// Built with [`Link::new`] and one `with_` method per optional attribute; the type is
/// `#[non_exhaustive]`, its fields public to read and to set.
///
/// ```
/// use resourcesync_model::{Link, Priority, Relation};
///
/// let mirror = Link::new(Relation::Duplicate, "http://mirror.example.com/res1".parse()?);
/// assert_eq!(mirror.priority(), Priority::DEFAULT);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Link {
    /// `rel`: the relation of the target to the document or resource.
    pub rel: Relation,
    /// `href`: the target.
    pub href: Uri,
    /// `pri`: the priority among links with the same relation.
    pub pri: Option<Priority>,
    /// `modified`: when the target was last modified.
    pub modified: Option<W3cDateTime>,
    /// `hash`: fixity of the target.
    pub hash: Option<Hashes>,
    /// `length`: the content length of the target, in bytes.
    pub length: Option<u64>,
    /// `type`: the media type of the target.
    pub media_type: Option<MediaType>,
    /// `path`: where the target sits in a package (patches in Change Dumps, section 14.4).
    pub path: Option<BitstreamPath>,
    /// `encoding`: the content coding of the target.
    pub encoding: Option<String>,
    /// Attributes in other namespaces.
    pub extensions: Vec<Attribute>,
}

impl Link {
    /// A link with only its two mandatory attributes.
    pub fn new(rel: Relation, href: Uri) -> Link {
        Link {
            rel,
            href,
            pri: None,
            modified: None,
            hash: None,
            length: None,
            media_type: None,
            path: None,
            encoding: None,
            extensions: Vec::new(),
        }
    }

    /// Adds an attribute in another namespace.
    #[must_use]
    pub fn with_extension(mut self, attribute: Attribute) -> Link {
        self.extensions.push(attribute);
        self
    }

    /// The priority, [`Priority::DEFAULT`] when `pri` is absent (section 7).
    pub fn priority(&self) -> Priority {
        self.pri.unwrap_or_default()
    }
}

crate::md::with_attributes!(Link {
    /// Sets `pri`.
    with_pri: pri: Priority,
    /// Sets `modified`.
    with_modified: modified: W3cDateTime,
    /// Sets `hash`.
    with_hash: hash: Hashes,
    /// Sets `length`.
    with_length: length: u64,
    /// Sets `type`.
    with_media_type: media_type: MediaType,
    /// Sets `path`.
    with_path: path: BitstreamPath,
    /// Sets `encoding`.
    with_encoding: encoding: String,
});
