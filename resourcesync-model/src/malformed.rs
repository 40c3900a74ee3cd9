//! What a reader found present but could not read: so that one fault makes one finding.
//!
//! A reader that meets `at="yesterday"` reports a [`Rule::DatetimeSyntax`] finding and
//! leaves `at` empty; without more, the [`Checker`] would then also report that the
//! mandatory `at` is missing. A reader passes the names of such attributes, and the links
//! it dropped, with the head ([`Checker::with_malformed`]) or the entry
//! ([`Checker::check_entry_with`]), and the checker takes them as present for every rule
//! that requires or recommends them.
//!
//! [`Rule::DatetimeSyntax`]: crate::Rule::DatetimeSyntax
//! [`Checker`]: crate::Checker
//! [`Checker::with_malformed`]: crate::Checker::with_malformed
//! [`Checker::check_entry_with`]: crate::Checker::check_entry_with

use std::fmt;

use crate::Relation;

/// An attribute of `<rs:md>` or `<rs:ln>` defined by the standard (section 7, Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum AttributeName {
    /// `at`
    At,
    /// `capability`
    Capability,
    /// `change`
    Change,
    /// `completed`
    Completed,
    /// `datetime`
    Datetime,
    /// `encoding`
    Encoding,
    /// `from`
    From,
    /// `hash`
    Hash,
    /// `href`
    Href,
    /// `length`
    Length,
    /// `modified`
    Modified,
    /// `path`
    Path,
    /// `pri`
    Pri,
    /// `rel`
    Rel,
    /// `type`
    Type,
    /// `until`
    Until,
}

impl AttributeName {
    /// Every attribute of Table 3, in alphabetical order.
    pub const ALL: [AttributeName; 16] = [
        AttributeName::At,
        AttributeName::Capability,
        AttributeName::Change,
        AttributeName::Completed,
        AttributeName::Datetime,
        AttributeName::Encoding,
        AttributeName::From,
        AttributeName::Hash,
        AttributeName::Href,
        AttributeName::Length,
        AttributeName::Modified,
        AttributeName::Path,
        AttributeName::Pri,
        AttributeName::Rel,
        AttributeName::Type,
        AttributeName::Until,
    ];

    /// The attribute's name as written in a document.
    pub fn as_str(self) -> &'static str {
        match self {
            AttributeName::At => "at",
            AttributeName::Capability => "capability",
            AttributeName::Change => "change",
            AttributeName::Completed => "completed",
            AttributeName::Datetime => "datetime",
            AttributeName::Encoding => "encoding",
            AttributeName::From => "from",
            AttributeName::Hash => "hash",
            AttributeName::Href => "href",
            AttributeName::Length => "length",
            AttributeName::Modified => "modified",
            AttributeName::Path => "path",
            AttributeName::Pri => "pri",
            AttributeName::Rel => "rel",
            AttributeName::Type => "type",
            AttributeName::Until => "until",
        }
    }

    /// The attribute with this name (case-sensitive, as XML names are), if the standard
    /// defines one.
    ///
    /// ```
    /// use resourcesync_model::AttributeName;
    ///
    /// assert_eq!(AttributeName::from_name("at"), Some(AttributeName::At));
    /// assert_eq!(AttributeName::from_name("lenght"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<AttributeName> {
        AttributeName::ALL.into_iter().find(|a| a.as_str() == name)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for AttributeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of [`AttributeName`]s, one bit each: `Copy`, no allocation.
///
/// ```
/// use resourcesync_model::{AttributeName, Attributes};
///
/// let mut set = Attributes::NONE;
/// set.insert(AttributeName::At);
/// let set = set.with(AttributeName::Change);
/// assert!(set.contains(AttributeName::At) && set.contains(AttributeName::Change));
/// assert!(!set.contains(AttributeName::From));
/// assert_eq!(set.iter().collect::<Vec<_>>(), [AttributeName::At, AttributeName::Change]);
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Attributes(u32);

impl Attributes {
    /// The empty set.
    pub const NONE: Attributes = Attributes(0);

    /// Adds an attribute.
    pub fn insert(&mut self, attribute: AttributeName) {
        self.0 |= attribute.bit();
    }

    /// The set with an attribute added.
    #[must_use]
    pub fn with(mut self, attribute: AttributeName) -> Attributes {
        self.insert(attribute);
        self
    }

    /// Whether the set holds an attribute.
    pub fn contains(self, attribute: AttributeName) -> bool {
        self.0 & attribute.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The attributes of the set, in alphabetical order.
    pub fn iter(self) -> impl Iterator<Item = AttributeName> {
        AttributeName::ALL
            .into_iter()
            .filter(move |a| self.contains(*a))
    }
}

impl fmt::Debug for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<AttributeName> for Attributes {
    fn from_iter<I: IntoIterator<Item = AttributeName>>(iter: I) -> Attributes {
        iter.into_iter()
            .fold(Attributes::NONE, |set, a| set.with(a))
    }
}

/// What a reader found present but malformed in a document's head or in one entry, and
/// so reported already: the checker takes these as present, and does not report them as
/// missing too.
///
/// The default is "nothing malformed", which is what [`Checker::new`] and
/// [`Checker::check_entry`] assume.
///
/// [`Checker::new`]: crate::Checker::new
/// [`Checker::check_entry`]: crate::Checker::check_entry
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Malformed<'a> {
    /// Attributes of the `<rs:md>` (the document's, or the entry's) whose values could not
    /// be read.
    pub md: Attributes,
    /// For each `<rs:ln>` kept in [`DocumentHead::links`] or [`Entry::links`], in the same
    /// order, its attributes whose values could not be read. It may be shorter than the
    /// links (the rest have none), so a reader only builds it when a link has one.
    ///
    /// [`DocumentHead::links`]: crate::DocumentHead::links
    /// [`Entry::links`]: crate::Entry::links
    pub links: &'a [Attributes],
    /// The relations of the links that were dropped because their `href` could not be
    /// read: an `<rs:ln rel="up">` with a broken `href` is not also a missing `up` link.
    pub dropped_links: &'a [Relation],
}

impl Malformed<'_> {
    /// The malformed attributes of the `i`th kept link.
    pub fn link(&self, i: usize) -> Attributes {
        self.links.get(i).copied().unwrap_or_default()
    }

    /// Whether a link with this relation was dropped.
    pub fn dropped(&self, rel: &Relation) -> bool {
        self.dropped_links.contains(rel)
    }
}
