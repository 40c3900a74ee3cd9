//! `<rs:md>`: metadata about a document or about one resource (section 7, Table 3).

use crate::{
    BitstreamPath, Capability, Change, Hashes, MediaType, W3cDateTime, extension::Attribute,
};

/// The attributes of an `<rs:md>` element, each typed.
///
/// The same element serves the document (`capability`, `at`, `completed`, `from`,
/// `until`) and its entries (all of Table 3). Which attribute may stand where is a rule of
/// the standard, checked by [`Checker`](crate::Checker), not a limit of this type, so that
/// a document that breaks it can still be read and reported.
///
/// ```
/// use resourcesync_model::{Capability, Md};
///
/// let md = Md {
///     capability: Some(Capability::ChangeList),
///     from: Some("2013-01-03T00:00:00Z".parse()?),
///     ..Md::default()
/// };
/// assert!(md.until.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Md {
    /// `capability`: what the document, or the document an entry points to, is.
    pub capability: Option<Capability>,
    /// `at`: when taking the snapshot started.
    pub at: Option<W3cDateTime>,
    /// `completed`: when taking the snapshot completed.
    pub completed: Option<W3cDateTime>,
    /// `from`: the start of the interval of changes covered.
    pub from: Option<W3cDateTime>,
    /// `until`: the end of the interval of changes covered; its presence closes a Change
    /// List.
    pub until: Option<W3cDateTime>,
    /// `change`: the kind of change.
    pub change: Option<Change>,
    /// `datetime`: when the change happened.
    pub datetime: Option<W3cDateTime>,
    /// `hash`: fixity of the representation.
    pub hash: Option<Hashes>,
    /// `length`: the content length of the representation, in bytes.
    pub length: Option<u64>,
    /// `path`: where the bitstream sits in a package.
    pub path: Option<BitstreamPath>,
    /// `type`: the media type of the representation.
    pub media_type: Option<MediaType>,
    /// `encoding`: the content coding applied, as in HTTP's `Content-Encoding`.
    pub encoding: Option<String>,
    /// Attributes in other namespaces.
    pub extensions: Vec<Attribute>,
}

impl Md {
    /// The four time attributes of Appendix A by name, in the order the standard lists
    /// them: `at`, `completed`, `from`, `until`.
    pub fn times(&self) -> [(&'static str, Option<&W3cDateTime>); 4] {
        [
            ("at", self.at.as_ref()),
            ("completed", self.completed.as_ref()),
            ("from", self.from.as_ref()),
            ("until", self.until.as_ref()),
        ]
    }
}
