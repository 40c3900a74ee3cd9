//! Namespace scopes, kept by the reader itself.
//!
//! quick-xml's `NsReader` opens a scope and searches a binding stack for every element.
//! A ResourceSync document declares its namespaces on the root and almost never again, so
//! this keeps a scope per element as one integer, looks for declarations only in elements
//! whose attributes contain `xmlns`, and resolves a prefix against a handful of bindings.

use quick_xml::events::BytesStart;

/// The XML namespace, bound to `xml` in every document.
pub(crate) const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

/// What a prefix resolves to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resolved<'a> {
    /// No prefix and no default namespace (or an attribute without prefix).
    Unbound,
    /// A namespace URI.
    Bound(&'a str),
    /// A prefix without a declaration in scope.
    Unknown(String),
}

/// Why a namespace declaration is refused.
#[derive(Debug)]
pub(crate) enum DeclarationError {
    /// `xmlns:p=""`, which XML Namespaces 1.0 forbids, or a reserved prefix rebound.
    Invalid(String),
    /// More bindings in scope than allowed.
    TooMany(usize),
    /// The value could not be read.
    Value(quick_xml::Error),
}

/// The two namespaces a reader looks for on every element, known by number so that
/// classifying an element compares no URIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    Sitemap,
    ResourceSync,
    Other,
}

impl Known {
    fn of(uri: &str) -> Known {
        match uri {
            resourcesync_model::SITEMAP_NAMESPACE => Known::Sitemap,
            resourcesync_model::RS_NAMESPACE => Known::ResourceSync,
            _ => Known::Other,
        }
    }
}

/// Splits `prefix:local` at its colon. A byte loop: names are short, and std's char
/// searcher and memchr both cost more to set up than the search.
fn split_name(qname: &str) -> Option<(&str, &str)> {
    let at = qname.bytes().position(|b| b == b':')?;
    Some((&qname[..at], &qname[at + 1..]))
}

pub(crate) struct Namespaces {
    /// (prefix, URI, which): `""` is the default namespace, and an empty URI undeclares it.
    bindings: Vec<(Box<str>, Box<str>, Known)>,
    /// For each open element, how many bindings there were before it.
    scopes: Vec<usize>,
    max_bindings: usize,
}

impl Namespaces {
    pub(crate) fn new(max_bindings: usize) -> Namespaces {
        Namespaces {
            bindings: Vec::new(),
            scopes: Vec::new(),
            max_bindings,
        }
    }

    /// Opens the element's scope, with any namespaces it declares.
    pub(crate) fn push(&mut self, e: &BytesStart<'_>) -> Result<(), DeclarationError> {
        self.scopes.push(self.bindings.len());
        // Most elements have no attributes, and the others rarely declare namespaces.
        // Looking for an `x` that starts `xmlns` beats both `str::contains` (whose
        // searcher setup dominated reading) and a memmem finder built per call.
        let raw = e.attributes_raw().as_bytes();
        if !memchr::memchr_iter(b'x', raw).any(|at| raw[at..].starts_with(b"xmlns")) {
            return Ok(());
        }
        for attr in e.attributes().with_checks(false) {
            let attr = attr.map_err(|err| DeclarationError::Value(err.into()))?;
            let key = attr.key.as_ref();
            let prefix = match key.strip_prefix("xmlns") {
                Some("") => "",
                Some(rest) => match rest.strip_prefix(':') {
                    Some(p) => p,
                    None => continue,
                },
                None => continue,
            };
            let uri = attr
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(DeclarationError::Value)?;
            if (!prefix.is_empty() && uri.is_empty())
                || prefix == "xmlns"
                || (prefix == "xml") != (uri == XML_NAMESPACE)
            {
                return Err(DeclarationError::Invalid(key.to_owned()));
            }
            if self.bindings.len() >= self.max_bindings {
                return Err(DeclarationError::TooMany(self.max_bindings));
            }
            self.bindings
                .push((prefix.into(), uri.as_ref().into(), Known::of(&uri)));
        }
        Ok(())
    }

    /// How many bindings are in scope: the same number as at some element means the same
    /// bindings, since they are only added by an element and only taken away with it.
    pub(crate) fn len(&self) -> usize {
        self.bindings.len()
    }

    /// Whether the Sitemap namespace is the default one and `rs` is bound to
    /// ResourceSync's, as nearly every document has it.
    pub(crate) fn is_conventional(&self) -> bool {
        self.lookup("") == Some(resourcesync_model::SITEMAP_NAMESPACE)
            && self.lookup("rs") == Some(resourcesync_model::RS_NAMESPACE)
    }

    /// How many elements are open: what `truncate` goes back to.
    pub(crate) fn depth(&self) -> usize {
        self.scopes.len()
    }

    /// Closes the elements opened after `depth`, undoing their declarations.
    pub(crate) fn truncate(&mut self, depth: usize) {
        while self.scopes.len() > depth {
            self.pop();
        }
    }

    /// Closes the innermost element's scope.
    pub(crate) fn pop(&mut self) {
        if let Some(len) = self.scopes.pop() {
            self.bindings.truncate(len);
        }
    }

    fn binding(&self, prefix: &str) -> Option<&(Box<str>, Box<str>, Known)> {
        // Empty strings are compared by length alone: `""` in a `Box<str>` has a dangling
        // pointer, and glibc's AVX-512 memcmp does a masked load from it even for zero
        // bytes, which costs a microcode assist every time (a quarter of reading time).
        self.bindings
            .iter()
            .rev()
            .find(|(p, ..)| p.len() == prefix.len() && (prefix.is_empty() || **p == *prefix))
    }

    fn lookup(&self, prefix: &str) -> Option<&str> {
        if prefix == "xml" {
            return Some(XML_NAMESPACE);
        }
        self.binding(prefix).map(|(_, uri, _)| &**uri)
    }

    /// Which of the two namespaces an element is in, or `None` when it is unbound (no
    /// prefix, no default namespace), with its local name: the fast path of classifying.
    /// An undeclared prefix counts as `Other`; `element` reports it.
    pub(crate) fn known_element<'n>(&self, qname: &'n str) -> (Option<Known>, &'n str) {
        let (prefix, local) = split_name(qname).unwrap_or(("", qname));
        match self.binding(prefix) {
            Some((_, uri, _)) if prefix.is_empty() && uri.is_empty() => (None, local),
            Some((.., known)) => (Some(*known), local),
            None if prefix.is_empty() => (None, local),
            None => (Some(Known::Other), local),
        }
    }

    /// An element's namespace and local name: unprefixed names take the default namespace.
    pub(crate) fn element<'n>(&self, qname: &'n str) -> (Resolved<'_>, &'n str) {
        match split_name(qname) {
            Some((prefix, local)) => (self.prefixed(prefix), local),
            None => match self.lookup("") {
                Some(uri) if !uri.is_empty() => (Resolved::Bound(uri), qname),
                _ => (Resolved::Unbound, qname),
            },
        }
    }

    /// An attribute's namespace and local name: unprefixed attributes are in no namespace.
    pub(crate) fn attribute<'n>(&self, qname: &'n str) -> (Resolved<'_>, &'n str) {
        match split_name(qname) {
            Some((prefix, local)) => (self.prefixed(prefix), local),
            None => (Resolved::Unbound, qname),
        }
    }

    fn prefixed(&self, prefix: &str) -> Resolved<'_> {
        match self.lookup(prefix) {
            Some(uri) => Resolved::Bound(uri),
            None => Resolved::Unknown(prefix.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(s: &str) -> BytesStart<'_> {
        let name_len = s.find(' ').unwrap_or(s.len());
        BytesStart::from_content(s, name_len)
    }

    #[test]
    fn scopes_nest_and_close() {
        let mut ns = Namespaces::new(8);
        ns.push(&start(r#"urlset xmlns="urn:sitemap" xmlns:rs="urn:rs""#))
            .unwrap();
        assert_eq!(ns.element("url").0, Resolved::Bound("urn:sitemap"));
        assert_eq!(ns.element("rs:md"), (Resolved::Bound("urn:rs"), "md"));
        assert_eq!(ns.attribute("at"), (Resolved::Unbound, "at"));
        ns.push(&start(r#"x xmlns:rs="urn:other" xmlns="""#))
            .unwrap();
        assert_eq!(ns.element("rs:md").0, Resolved::Bound("urn:other"));
        assert_eq!(ns.element("url").0, Resolved::Unbound);
        ns.pop();
        assert_eq!(ns.element("rs:md").0, Resolved::Bound("urn:rs"));
        assert_eq!(ns.element("q:x").0, Resolved::Unknown("q".into()));
        assert_eq!(ns.element("xml:lang").0, Resolved::Bound(XML_NAMESPACE));
    }

    #[test]
    fn bad_declarations_are_refused() {
        let mut ns = Namespaces::new(1);
        assert!(ns.push(&start(r#"a xmlns:p="""#)).is_err());
        assert!(ns.push(&start(r#"a xmlns:xml="urn:x""#)).is_err());
        assert!(ns.push(&start(r#"a xmlns:xmlns="urn:x""#)).is_err());
        assert!(matches!(
            ns.push(&start(r#"a xmlns:a="urn:a" xmlns:b="urn:b""#)),
            Err(DeclarationError::TooMany(1))
        ));
    }
}
