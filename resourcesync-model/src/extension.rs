//! Attributes and elements in other namespaces, kept so that nothing read is lost.

/// An attribute in a namespace other than ResourceSync's, or one whose value could not be
/// typed, kept as written.
///
/// Section 7 lets communities add attributes in their own namespaces; a reader keeps them
/// here and a writer writes them back.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Attribute {
    /// The namespace URI; empty for an attribute in no namespace.
    pub namespace: String,
    /// The prefix it was written with, as a hint for writing it back.
    pub prefix: Option<String>,
    /// The local name.
    pub name: String,
    /// The value, unescaped.
    pub value: String,
}

/// An element in a namespace other than the Sitemap's and ResourceSync's, such as an image
/// or news sitemap extension, kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Element {
    /// The namespace URI.
    pub namespace: String,
    /// The prefix it was written with, as a hint for writing it back.
    pub prefix: Option<String>,
    /// The local name.
    pub name: String,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
    /// Its content as XML text, verbatim (escaped), so that nested markup survives.
    pub content: String,
}
