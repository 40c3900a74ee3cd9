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

use crate::{Attributes, Relation};

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
