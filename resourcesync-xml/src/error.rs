//! Errors of reading and writing: what went wrong, and where.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Where in a document something happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Position {
    /// Offset in bytes from the start of the (decompressed) document.
    pub byte: u64,
    /// 1-based line.
    pub line: u64,
    /// 1-based column, in bytes.
    pub column: u64,
    /// The 1-based number of the entry being read, if any.
    pub entry: Option<u64>,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)?;
        if let Some(entry) = self.entry {
            write!(f, ", entry {entry}")?;
        }
        Ok(())
    }
}

/// Why a document could not be read as a ResourceSync document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be opened ([`Reader::open`](crate::Reader::open)); the error's
    /// [`path`](Error::path) names it.
    #[error("cannot open: {0}")]
    Open(io::Error),
    /// The bytes could not be read. (The message includes the cause's, so it is not
    /// also the error's `source`: no chain prints it twice.)
    #[error("read failed: {0}")]
    Io(io::Error),
    /// The text is not well-formed XML, as quick-xml found.
    #[error("not well-formed XML: {0}")]
    Xml(quick_xml::Error),
    /// A `<!DOCTYPE>`: DTDs and the entities they declare are never processed.
    #[error("DOCTYPE declarations are refused: no DTD or entity is ever expanded")]
    DocType,
    /// An entity reference other than the five XML predefines.
    #[error("unknown entity reference &{0};")]
    UnknownEntity(String),
    /// A character reference XML's grammar refuses: a sign, no digits, or a number that
    /// is no character (`&#x+41;`, `&#;`, `&#xD800;`).
    #[error("invalid character reference &{0};")]
    CharacterReference(String),
    /// A character XML 1.0 forbids, such as NUL or another control character.
    #[error("character U+{0:04X} is not allowed in XML")]
    ForbiddenCharacter(u32),
    /// A declared encoding other than UTF-8.
    #[error("unsupported encoding \"{0}\": ResourceSync documents are read as UTF-8")]
    Encoding(String),
    /// No root element.
    #[error("empty document: no root element")]
    Empty,
    /// The XML declaration somewhere other than at the very start.
    #[error("the XML declaration must come first")]
    MisplacedDeclaration,
    /// Text where only elements may stand (cut to 40 characters).
    #[error("unexpected text \"{0}\"")]
    UnexpectedText(String),
    /// A CDATA section where only elements may stand.
    #[error("unexpected CDATA section")]
    UnexpectedCData,
    /// An element where it cannot stand, such as markup inside `<loc>` or `<rs:md>`, or a
    /// `<urlset>` inside the root. The name as written.
    #[error("unexpected element <{0}>")]
    UnexpectedElement(String),
    /// An entry's start tag inside an entry. The name as written.
    #[error("an entry inside an entry: <{0}>")]
    NestedEntry(String),
    /// An end tag before the root element. The name as written.
    #[error("end tag </{0}> before the root element")]
    UnexpectedEndTag(String),
    /// An element after the end of the root element, such as a second root. The name as
    /// written.
    #[error("element <{0}> after the root element")]
    AfterRoot(String),
    /// The input ended inside the root element.
    #[error("the document ends before </{0}>")]
    Unclosed(String),
    /// The root is not `<urlset>` or `<sitemapindex>` of the Sitemap protocol.
    #[error("not a sitemap: the root element is <{name}> in {}", in_namespace(.namespace.as_deref()))]
    NotSitemap {
        /// The root's local name.
        name: String,
        /// The root's namespace, if any.
        namespace: Option<String>,
    },
    /// A namespace declaration XML Namespaces forbids (`xmlns:p=""`, a reserved prefix).
    #[error("invalid namespace declaration {0}")]
    Namespace(String),
    /// More namespace bindings in scope than the reader keeps.
    #[error("more than {0} namespace bindings in scope")]
    TooManyNamespaces(usize),
    /// A prefix used without a declaration.
    #[error("undeclared namespace prefix \"{0}\"")]
    UndeclaredPrefix(String),
    /// More entries than the limit allows.
    #[error("more than {0} entries")]
    TooManyEntries(u64),
    /// More bytes than the limit allows (counted after decompression).
    #[error("more than {0} bytes")]
    TooLarge(u64),
    /// Elements nested deeper than the limit.
    #[error("elements nested deeper than {0}")]
    TooDeep(usize),
    /// One text or attribute value longer than the limit.
    #[error("a value longer than {0} bytes")]
    ValueTooLong(usize),
    /// One piece of XML — a tag, a run of text, a comment, a processing instruction or a
    /// CDATA section — longer than the limit.
    #[error("a tag, text, comment, processing instruction or CDATA section longer than {0} bytes")]
    EventTooLong(u64),
    /// More child elements in one entry, or in the head, than the limit allows.
    #[error("more than {0} child elements in one entry or in the head")]
    TooManyChildren(usize),
    /// More attributes on one element than the limit allows.
    #[error("more than {0} attributes on one element")]
    TooManyAttributes(usize),
    /// One entry, or the head, longer than the limit.
    #[error("{what} longer than {limit} bytes")]
    EntryTooLong {
        /// `"an entry"` or `"the head"`.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
}

/// An error of reading, with the place it happened, and the file for a reader that
/// opened one ([`Reader::open`](crate::Reader::open)).
///
/// One pointer wide, so that the reader's results stay small on the path where nothing
/// goes wrong.
///
/// ```
/// use resourcesync_xml::{ErrorKind, Reader};
///
/// let xml = b"<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n<url><loc>&bogus;</loc></url></urlset>";
/// let error = Reader::from_slice(xml).read_to_document().unwrap_err();
/// assert!(matches!(error.kind(), ErrorKind::UnknownEntity(name) if name == "bogus"));
/// assert_eq!((error.position().line, error.position().entry), (2, Some(1)));
/// assert!(error.path().is_none());
/// assert_eq!(error.to_string(), "line 2, column 11, entry 1: unknown entity reference &bogus;");
/// assert!(matches!(error.into_kind(), ErrorKind::UnknownEntity(_)));
/// ```
#[derive(Debug)]
pub struct Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    kind: ErrorKind,
    position: Position,
    path: Option<PathBuf>,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, position: Position) -> Error {
        Error(Box::new(Inner {
            kind,
            position,
            path: None,
        }))
    }

    /// The error, naming the file it happened in.
    pub(crate) fn in_file(mut self, path: Option<&Path>) -> Error {
        self.0.path = path.map(Path::to_path_buf);
        self
    }

    /// The file the document was read from, when the reader opened it
    /// ([`Reader::open`](crate::Reader::open)).
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// Where it went wrong.
    pub fn position(&self) -> Position {
        self.0.position
    }

    /// What went wrong, taking it out of the error.
    pub fn into_kind(self) -> ErrorKind {
        self.0.kind
    }

    pub(crate) fn position_mut(&mut self) -> &mut Position {
        &mut self.0.position
    }
}

impl fmt::Display for Error {
    /// `path: line 2, column 11, entry 1: what went wrong`, without the path when there is
    /// none, and without the place for a file that could not be opened.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.0.path {
            write!(f, "{}: ", path.display())?;
        }
        if !matches!(self.0.kind, ErrorKind::Open(_)) {
            write!(f, "{}: ", self.0.position)?;
        }
        write!(f, "{}", self.0.kind)
    }
}

/// The message names the place and the kind, and the kind's message includes its cause,
/// so there is no `source`: an error chain prints each cause once.
impl std::error::Error for Error {}

fn in_namespace(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("namespace \"{ns}\""),
        None => "no namespace".into(),
    }
}

/// An error of writing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The sink failed. (The message includes the cause's, so it is not also the
    /// error's `source`.)
    #[error("write failed: {0}")]
    Io(io::Error),
    /// A document would break a limit of the Sitemap protocol.
    #[error("{what} would exceed the limit of {limit}")]
    Limit {
        /// What: entries or bytes.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// An extension attribute or element that cannot be written so that it reads back as
    /// itself.
    #[error("{place}: {error}")]
    Extension {
        /// Where: `rs:md`, `rs:ln`, `the root` or `an extension element`.
        place: &'static str,
        /// What is wrong with it.
        error: crate::ExtensionError,
    },
    /// A value with a character XML cannot carry, even escaped: a C0 control character
    /// other than tab, line feed and carriage return, U+FFFE or U+FFFF.
    #[error("{place}: character U+{code:04X} is not allowed in XML")]
    ForbiddenCharacter {
        /// The attribute or element whose value it is.
        place: String,
        /// The character's code point.
        code: u32,
    },
    /// What would break a rule of the standard, refused by a writer that refuses errors
    /// ([`WriteOptions::refuse_errors`](crate::WriteOptions::refuse_errors)): nothing of
    /// it was written.
    #[error("{} refused: {}", refused_what(*.entry), first_and_more(.findings))]
    Refused {
        /// The 1-based number of the entry refused, or `None` for the head or the end of
        /// the document.
        entry: Option<u64>,
        /// The error findings, at least one.
        findings: Vec<resourcesync_model::Finding>,
    },
    /// A [`SetStore`](crate::SetStore) could not name or store a set's document: the
    /// store's own error, kept whole (downcast it to the store's error type).
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// The entries cannot be written as asked, for instance a set without entries or a
    /// part scheme that gives an invalid URI.
    #[error("{0}")]
    Invalid(String),
}

fn refused_what(entry: Option<u64>) -> String {
    match entry {
        Some(n) => format!("entry {n}"),
        None => "document".to_owned(),
    }
}

fn first_and_more(findings: &[resourcesync_model::Finding]) -> String {
    match findings {
        [] => "no finding".to_owned(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

impl From<io::Error> for WriteError {
    fn from(e: io::Error) -> WriteError {
        WriteError::Io(e)
    }
}
