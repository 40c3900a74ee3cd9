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
/// Built with [`Md::new`] and one `with_` method per attribute; the type is
/// `#[non_exhaustive]` so that an attribute added by a later version of the standard does not
/// break callers. Its fields are public to read and to set.
///
/// ```
/// use resourcesync_model::{Capability, Md};
///
/// let md = Md::new()
///     .with_capability(Capability::ChangeList)
///     .with_from("2013-01-03T00:00:00Z".parse()?);
/// assert!(md.until.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
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

/// Defines a `with_` method per `Option` attribute of a builder-style type, each
/// documented with the attribute's name as written in a document.
macro_rules! with_attributes {
    ($ty:ident { $($(#[$doc:meta])* $method:ident: $field:ident: $value:ty,)* }) => {
        impl $ty {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $method(mut self, value: $value) -> $ty {
                    self.$field = Some(value);
                    self
                }
            )*
        }
    };
}
pub(crate) use with_attributes;

/// Defines, on [`Entry`](crate::Entry), the same `with_` methods as on `Md`, each setting the
/// attribute on the entry's `<rs:md>` (added when missing).
macro_rules! md_attributes {
    ($callback:ident) => {
        $callback! {
            /// Sets `capability`.
            with_capability: capability: Capability,
            /// Sets `at`.
            with_at: at: W3cDateTime,
            /// Sets `completed`.
            with_completed: completed: W3cDateTime,
            /// Sets `from`.
            with_from: from: W3cDateTime,
            /// Sets `until`.
            with_until: until: W3cDateTime,
            /// Sets `change`.
            with_change: change: Change,
            /// Sets `datetime`.
            with_datetime: datetime: W3cDateTime,
            /// Sets `hash`.
            with_hash: hash: Hashes,
            /// Sets `length`.
            with_length: length: u64,
            /// Sets `path`.
            with_path: path: BitstreamPath,
            /// Sets `type`.
            with_media_type: media_type: MediaType,
            /// Sets `encoding`.
            with_encoding: encoding: String,
        }
    };
}
pub(crate) use md_attributes;

macro_rules! md_with {
    ($($(#[$doc:meta])* $method:ident: $field:ident: $value:ty,)*) => {
        with_attributes!(Md { $($(#[$doc])* $method: $field: $value,)* });
    };
}
md_attributes!(md_with);

impl Md {
    /// An `<rs:md>` without attributes, to add them to with the `with_` methods.
    pub fn new() -> Md {
        Md::default()
    }

    /// Adds an attribute in another namespace.
    #[must_use]
    pub fn with_extension(mut self, attribute: Attribute) -> Md {
        self.extensions.push(attribute);
        self
    }

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
