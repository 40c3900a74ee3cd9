//! The attributes of `<rs:md>` and `<rs:ln>` (section 7, Table 3), in one table.
//!
//! Each row of the table below names an attribute, the type of its value and the field
//! that holds it in [`Md`], in [`Link`] or in both. Everything that goes by attribute is
//! generated from it: [`AttributeName`] and its names, which element has which attribute,
//! reading a value into its field ([`AttributeName::read_md`], [`AttributeName::read_ln`]),
//! the value a writer writes ([`AttributeName::md_value`], [`AttributeName::ln_value`]),
//! and the bit of the attribute in an [`Attributes`] set. A reader, a writer and the
//! [`Checker`](crate::Checker) go through it, so adding an attribute is adding a row (and
//! its field in `Md` or `Link`): no list of names is kept anywhere else.

use std::fmt;

use crate::{
    Attribute, BitstreamPath, Capability, Change, Hashes, Link, Md, MediaType, Priority, Relation,
    Rule, RuleError, Uri, W3cDateTime, parse_length,
};

/// One of the two elements of the ResourceSync namespace, which carry the attributes of
/// Table 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RsElement {
    /// `<rs:md>`: metadata about the document or an entry.
    Md,
    /// `<rs:ln>`: a link from the document or an entry.
    Ln,
}

impl RsElement {
    /// The element's name as the standard writes it: `rs:md`, `rs:ln`.
    pub fn as_str(self) -> &'static str {
        match self {
            RsElement::Md => "rs:md",
            RsElement::Ln => "rs:ln",
        }
    }

    /// The attributes of this element, in the order a writer writes them.
    pub fn attributes(self) -> impl Iterator<Item = AttributeName> {
        AttributeName::ALL
            .into_iter()
            .filter(move |a| a.is_on(self))
    }
}

impl fmt::Display for RsElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value of an attribute of `<rs:md>` or `<rs:ln>`, borrowed from the [`Md`] or
/// [`Link`] that holds it: what a writer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttributeValue<'a> {
    /// `capability`.
    Capability(&'a Capability),
    /// `at`, `completed`, `from`, `until`, `datetime`, `modified`.
    DateTime(&'a W3cDateTime),
    /// `change`.
    Change(Change),
    /// `hash`.
    Hashes(&'a Hashes),
    /// `length`.
    Length(u64),
    /// `type`.
    MediaType(&'a MediaType),
    /// `path`.
    Path(&'a BitstreamPath),
    /// `encoding`.
    Encoding(&'a str),
    /// `rel`.
    Relation(&'a Relation),
    /// `href`.
    Uri(&'a Uri),
    /// `pri`.
    Priority(Priority),
}

impl<'a> AttributeValue<'a> {
    /// The value's text, for the values a model type holds as text; `None` for those it
    /// holds parsed (datetimes, hashes, `length`, `pri`), which are written with
    /// [`Display`](fmt::Display).
    #[inline]
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            AttributeValue::Capability(c) => Some(c.as_str()),
            AttributeValue::Change(c) => Some(c.as_str()),
            AttributeValue::MediaType(t) => Some(t.as_str()),
            AttributeValue::Path(p) => Some(p.as_str()),
            AttributeValue::Encoding(e) => Some(e),
            AttributeValue::Relation(r) => Some(r.as_str()),
            AttributeValue::Uri(u) => Some(u.as_str()),
            AttributeValue::DateTime(_)
            | AttributeValue::Hashes(_)
            | AttributeValue::Length(_)
            | AttributeValue::Priority(_) => None,
        }
    }
}

impl fmt::Display for AttributeValue<'_> {
    /// The value as a document holds it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttributeValue::DateTime(t) => t.fmt(f),
            AttributeValue::Hashes(h) => h.fmt(f),
            AttributeValue::Length(n) => n.fmt(f),
            AttributeValue::Priority(p) => p.fmt(f),
            other => f.write_str(other.as_str().unwrap_or_default()),
        }
    }
}

/// The type of an attribute's value: how it is parsed from a document's text, and
/// borrowed for writing. Parsing keeps to each type's own parser, so that reading an
/// attribute and parsing its value with `FromStr` agree. The impls are `#[inline]`, so
/// that a reader calls the parsers themselves, across the crate boundary, as it did before
/// the table.
trait Value: Sized {
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>>;
    fn view(&self) -> AttributeValue<'_>;
}

/// A parse error, boxed: errors are rare, and a box keeps every attribute's result two
/// words wide, so that it is returned in registers.
#[cold]
fn boxed(e: impl RuleError + 'static) -> Box<dyn RuleError> {
    Box::new(e)
}

impl Value for Capability {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        // Any capability can be read; one the standard does not define is a finding of
        // the checker, not of the value.
        Ok(Capability::from(text))
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Capability(self)
    }
}

impl Value for W3cDateTime {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::DateTime(self)
    }
}

impl Value for Change {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Change(*self)
    }
}

impl Value for Hashes {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Hashes(self)
    }
}

/// `length`, by [`parse_length`]: `u64`'s own parser accepts a sign.
impl Value for u64 {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        parse_length(text).map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Length(*self)
    }
}

impl Value for MediaType {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::MediaType(self)
    }
}

impl Value for BitstreamPath {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        // Kept as written: whether a path is safe is the checker's rule.
        Ok(BitstreamPath::new(text))
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Path(self)
    }
}

/// `encoding`, kept as written.
impl Value for String {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        Ok(text.to_owned())
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Encoding(self)
    }
}

impl Value for Relation {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Relation(self)
    }
}

impl Value for Uri {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        Uri::parse(text).map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Uri(self)
    }
}

impl Value for Priority {
    #[inline]
    fn parse_value(text: &str) -> Result<Self, Box<dyn RuleError>> {
        text.parse().map_err(boxed)
    }
    fn view(&self) -> AttributeValue<'_> {
        AttributeValue::Priority(*self)
    }
}

/// What takes the attributes an [`Md`] or a [`Link`] holds, one at a time
/// ([`AttributeName::for_each_in_md`]): a writer, or any closure.
pub trait AttributeSink {
    /// One attribute and its value.
    fn attribute(&mut self, attribute: AttributeName, value: AttributeValue<'_>);
}

impl<F: FnMut(AttributeName, AttributeValue<'_>)> AttributeSink for F {
    #[inline]
    fn attribute(&mut self, attribute: AttributeName, value: AttributeValue<'_>) {
        self(attribute, value);
    }
}

/// An attribute read into an element that does not have it, such as `rel` into an
/// [`Md`] ([`AttributeName::read_md`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{element} has no attribute {attribute}")]
pub struct NotOnElement {
    /// The attribute.
    pub attribute: AttributeName,
    /// The element it was read into.
    pub element: RsElement,
}

impl RuleError for NotOnElement {
    fn rule(&self) -> Rule {
        Rule::AttributeUnknown
    }
}

/// Whether a row names a field: `present!()` is false, `present!(field)` true.
macro_rules! present {
    () => {
        false
    };
    ($($field:tt)+) => {
        true
    };
}

/// The value of a row's field in a struct, for writing: `None` without a field.
macro_rules! value_of {
    ($s:ident) => {
        None
    };
    ($s:ident . $field:ident) => {
        $s.$field.as_ref().map(Value::view)
    };
    ($s:ident . $field:ident required) => {
        Some($s.$field.view())
    };
}

/// Parses a value into a row's field of `$s`; the field is left as it was when the value
/// does not parse. Without a field, the element does not have the attribute.
macro_rules! read_into {
    ($ty:ty, $s:ident, $text:ident, $attribute:expr, $element:expr) => {
        Err(Box::new(NotOnElement {
            attribute: $attribute,
            element: $element,
        }))
    };
    ($ty:ty, $s:ident . $field:ident, $text:ident, $attribute:expr, $element:expr) => {{
        $s.$field = Some(<$ty as Value>::parse_value($text)?);
        Ok(())
    }};
}

/// Moves an optional `rs:ln` field from a [`PartialLink`] into a [`Link`]; `rel` and
/// `href` are moved by `Link::new`.
macro_rules! move_field {
    ($link:ident, $parts:ident, $field:ident) => {
        $link.$field = $parts.$field;
    };
    ($link:ident, $parts:ident, $field:ident required) => {};
}

/// The table: one row per attribute, `Variant = "name": Type => md.field, ln.field;`,
/// with `md.field` (its field in [`Md`]), `ln.field` (in [`Link`] and [`PartialLink`]) or
/// both, and `(required)` after a field of `Link` that is not an `Option`. The rows'
/// order is the order a writer writes the attributes.
macro_rules! table {
    ($(
        $(#[$meta:meta])*
        $variant:ident = $name:literal: $ty:ty
            => $(md.$md:ident)? $(,)? $(ln.$ln:ident $(($required:ident))?)?;
    )+) => {
        /// An attribute of `<rs:md>` or `<rs:ln>` defined by the standard (section 7,
        /// Table 3), in the order a writer writes them: the standard's examples' order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum AttributeName {
            $($(#[$meta])* $variant),+
        }

        impl AttributeName {
            /// Every attribute of Table 3, in the order a writer writes them.
            pub const ALL: [AttributeName; [$($name),+].len()] = [$(AttributeName::$variant),+];

            /// The attribute's name as written in a document.
            #[inline]
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AttributeName::$variant => $name),+
                }
            }

            /// The attribute with this name (case-sensitive, as XML names are), if the
            /// standard defines one.
            ///
            /// ```
            /// use resourcesync_model::AttributeName;
            ///
            /// assert_eq!(AttributeName::from_name("at"), Some(AttributeName::At));
            /// assert_eq!(AttributeName::from_name("lenght"), None);
            /// ```
            #[inline]
            pub fn from_name(name: &str) -> Option<AttributeName> {
                match name {
                    $($name => Some(AttributeName::$variant),)+
                    _ => None,
                }
            }

            /// Whether `element` has this attribute.
            #[inline]
            pub fn is_on(self, element: RsElement) -> bool {
                match element {
                    RsElement::Md => match self {
                        $(AttributeName::$variant => present!($($md)?)),+
                    },
                    RsElement::Ln => match self {
                        $(AttributeName::$variant => present!($($ln)?)),+
                    },
                }
            }

            /// The attribute's value in `md`, if it is there (and `<rs:md>` has it).
            #[inline]
            pub fn md_value(self, md: &Md) -> Option<AttributeValue<'_>> {
                match self {
                    $(AttributeName::$variant => value_of!(md $(.$md)?)),+
                }
            }

            /// The attribute's value in `link`, if it is there (and `<rs:ln>` has it).
            #[inline]
            pub fn ln_value(self, link: &Link) -> Option<AttributeValue<'_>> {
                match self {
                    $(AttributeName::$variant => value_of!(link $(.$ln $($required)?)?)),+
                }
            }

            /// Hands `sink` each attribute that `md` holds a value of, in the order a
            /// writer writes them ([`ALL`](AttributeName::ALL)).
            ///
            /// ```
            /// use resourcesync_model::{AttributeName, AttributeValue, Change, Md};
            ///
            /// let mut md = Md::default();
            /// md.length = Some(8876);
            /// md.change = Some(Change::Created);
            /// let mut written = Vec::new();
            /// AttributeName::for_each_in_md(&md, &mut |a: AttributeName, value: AttributeValue<'_>| {
            ///     written.push(format!("{a}=\"{value}\""))
            /// });
            /// assert_eq!(written, [r#"change="created""#, r#"length="8876""#]);
            /// ```
            // Unrolled, one test per field: a loop over `ALL` with `md_value` took a
            // dispatch per attribute of the table, 6 % of writing an entry.
            #[inline]
            pub fn for_each_in_md(md: &Md, sink: &mut impl AttributeSink) {
                $($(
                    if let Some(value) = value_of!(md.$md) {
                        sink.attribute(AttributeName::$variant, value);
                    }
                )?)+
            }

            /// As [`for_each_in_md`](AttributeName::for_each_in_md), for a link: `rel` and
            /// `href` always.
            #[inline]
            pub fn for_each_in_link(link: &Link, sink: &mut impl AttributeSink) {
                $($(
                    if let Some(value) = value_of!(link.$ln $($required)?) {
                        sink.attribute(AttributeName::$variant, value);
                    }
                )?)+
            }

            /// Reads `text` into this attribute's field of `md`, as the value of the
            /// attribute written on `<rs:md>`. A value that breaks a rule of the standard is
            /// that rule's error, and leaves the field as it was, as does an attribute
            /// `<rs:md>` does not have ([`NotOnElement`]).
            ///
            /// ```
            /// use resourcesync_model::{AttributeName, Md, Rule};
            ///
            /// let mut md = Md::default();
            /// assert!(AttributeName::Length.read_md(&mut md, "8876").is_ok());
            /// assert_eq!(md.length, Some(8876));
            /// let error = AttributeName::At.read_md(&mut md, "yesterday").unwrap_err();
            /// assert_eq!((error.rule(), &md.at), (Rule::DatetimeSyntax, &None));
            /// let error = AttributeName::Rel.read_md(&mut md, "up").unwrap_err();
            /// assert_eq!(error.to_string(), "rs:md has no attribute rel");
            /// ```
            #[inline]
            pub fn read_md(self, md: &mut Md, text: &str) -> Result<(), Box<dyn RuleError>> {
                match self {
                    $(AttributeName::$variant =>
                        read_into!($ty, md $(.$md)?, text, self, RsElement::Md)),+
                }
            }

            /// As [`read_md`](AttributeName::read_md), into a link being read.
            #[inline]
            pub fn read_ln(
                self,
                link: &mut PartialLink,
                text: &str,
            ) -> Result<(), Box<dyn RuleError>> {
                match self {
                    $(AttributeName::$variant =>
                        read_into!($ty, link $(.$ln)?, text, self, RsElement::Ln)),+
                }
            }

            /// Whether `text` is a valid value of this attribute.
            pub fn is_valid(self, text: &str) -> bool {
                match self {
                    $(AttributeName::$variant => <$ty as Value>::parse_value(text).is_ok()),+
                }
            }
        }

        /// The attributes of an `<rs:ln>` as they are read, in any order: a [`Link`] once
        /// its mandatory `rel` and `href` are there ([`into_link`](PartialLink::into_link)).
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct PartialLink {
            $($(
                #[doc = concat!("`", $name, "`, once read.")]
                pub $ln: Option<$ty>,
            )?)+
            /// Attributes in other namespaces, and those kept as written.
            pub extensions: Vec<Attribute>,
        }

        impl PartialLink {
            /// The link, or the parts back when `rel` or `href` is missing.
            // The parts come back whole, unboxed: they are taken apart at once, and a box
            // would cost an allocation per link without `href`.
            #[allow(clippy::result_large_err)]
            pub fn into_link(mut self) -> Result<Link, PartialLink> {
                let (rel, href) = match (self.rel.take(), self.href.take()) {
                    (Some(rel), Some(href)) => (rel, href),
                    (rel, href) => return Err(PartialLink { rel, href, ..self }),
                };
                let mut link = Link::new(rel, href);
                let parts = self;
                $($(move_field!(link, parts, $ln $($required)?);)?)+
                link.extensions = parts.extensions;
                Ok(link)
            }
        }
    };
}

table! {
    /// `capability` (`rs:md`): what the document, or the document an entry points to, is.
    Capability = "capability": Capability => md.capability;
    /// `at` (`rs:md`): when taking the snapshot started.
    At = "at": W3cDateTime => md.at;
    /// `completed` (`rs:md`): when taking the snapshot completed.
    Completed = "completed": W3cDateTime => md.completed;
    /// `from` (`rs:md`): the start of the interval of changes covered.
    From = "from": W3cDateTime => md.from;
    /// `until` (`rs:md`): the end of the interval of changes covered.
    Until = "until": W3cDateTime => md.until;
    /// `change` (`rs:md`): the kind of change.
    Change = "change": Change => md.change;
    /// `datetime` (`rs:md`): when the change happened.
    Datetime = "datetime": W3cDateTime => md.datetime;
    /// `rel` (`rs:ln`, mandatory): the relation of the target.
    Rel = "rel": Relation => ln.rel(required);
    /// `href` (`rs:ln`, mandatory): the target.
    Href = "href": Uri => ln.href(required);
    /// `pri` (`rs:ln`): the priority among links with the same relation.
    Pri = "pri": Priority => ln.pri;
    /// `modified` (`rs:ln`): when the target was last modified.
    Modified = "modified": W3cDateTime => ln.modified;
    /// `hash` (both): fixity of the representation.
    Hash = "hash": Hashes => md.hash, ln.hash;
    /// `length` (both): the content length in bytes.
    Length = "length": u64 => md.length, ln.length;
    /// `type` (both): the media type.
    Type = "type": MediaType => md.media_type, ln.media_type;
    /// `path` (both): where the bitstream sits in a package.
    Path = "path": BitstreamPath => md.path, ln.path;
    /// `encoding` (both): the content coding, as in HTTP's `Content-Encoding`.
    Encoding = "encoding": String => md.encoding, ln.encoding;
}

impl AttributeName {
    #[inline]
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

// One bit per attribute: a row more than the bits would need a wider set.
const _: () = assert!(AttributeName::ALL.len() <= u32::BITS as usize);

impl Attributes {
    /// The empty set.
    pub const NONE: Attributes = Attributes(0);

    /// Adds an attribute.
    #[inline]
    pub fn insert(&mut self, attribute: AttributeName) {
        self.0 |= attribute.bit();
    }

    /// The set with an attribute added.
    #[must_use]
    #[inline]
    pub fn with(mut self, attribute: AttributeName) -> Attributes {
        self.insert(attribute);
        self
    }

    /// Whether the set holds an attribute.
    #[inline]
    pub fn contains(self, attribute: AttributeName) -> bool {
        self.0 & attribute.bit() != 0
    }

    /// Whether the set is empty.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The attributes of the set, in the order of [`AttributeName::ALL`].
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
