//! What makes an extension writable: it must read back as itself.
//!
//! Extension attributes and elements are open data (section 7 lets communities add their
//! own), so a caller can build any. The writer checks each before writing it: a name that
//! is not an XML name, a namespace XML reserves, an element the reader would take for a
//! Sitemap or ResourceSync element, content that is not well-formed, balanced XML with
//! every prefix declared — each would give a document that a reader refuses or reads as
//! something else. Content is checked by reading it with quick-xml under the namespace
//! bindings the writer puts in scope, the way the reader will.

use quick_xml::events::{BytesStart, Event};
use resourcesync_model::{Attribute, Element, RS_NAMESPACE, SITEMAP_NAMESPACE};

pub(crate) use crate::namespace::XML_NAMESPACE;
use crate::namespace::{Namespaces, Resolved};
use crate::reader::{bad_char_reference, char_reference, check_chars, is_sitemap_name};

/// The namespace of namespace declarations, which no element or attribute may be in.
const XMLNS_NAMESPACE: &str = "http://www.w3.org/2000/xmlns/";

/// Nesting inside one extension element, at most: the reader's default depth limit less
/// the root, the entry and the element itself.
const MAX_CONTENT_DEPTH: usize = 29;
/// Bytes of one extension element's content, at most: the reader's default value limit.
const MAX_CONTENT_LEN: usize = 1 << 20;

/// Why an extension element or attribute cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtensionError {
    /// A local name or prefix that is not an XML name without a colon.
    #[error("\"{0}\" is not an XML name")]
    Name(String),
    /// A namespace that XML reserves (that of `xmlns`, or the XML namespace for an
    /// element), or a namespace URI with characters XML cannot carry.
    #[error("namespace \"{0}\" cannot be used here")]
    Namespace(String),
    /// An element the reader would read as a Sitemap or ResourceSync element, not as an
    /// extension.
    #[error("<{name}> in namespace \"{namespace}\" is not an extension")]
    NotAnExtension {
        /// Its namespace.
        namespace: String,
        /// Its local name.
        name: String,
    },
    /// An attribute in the ResourceSync namespace, or in no namespace where the element
    /// has a typed attribute of that name with a value: the reader would read it as that
    /// attribute, or find it twice.
    #[error("attribute {0} would be read as the element's own attribute")]
    Shadows(String),
    /// Two attributes of one name and namespace on one element.
    #[error("attribute {0} is given twice")]
    Repeated(String),
    /// Content that is not well-formed XML content, or that a reader would not keep as
    /// written (comments and processing instructions are not kept).
    #[error("content: {0}")]
    Content(String),
}

/// Checks the attributes of one element and that their names stay unique. `known` says
/// whether the element reads a no-namespace attribute of this name with this value as one
/// of its own (`rs:md`'s `length`, say).
pub(crate) fn check_attributes(
    attributes: &[Attribute],
    known: &dyn Fn(&str, &str) -> bool,
) -> Result<(), ExtensionError> {
    for (i, attr) in attributes.iter().enumerate() {
        check_name(&attr.name)?;
        check_text(&attr.value)?;
        match attr.namespace.as_str() {
            "" if attr.name == "xmlns" => return Err(ExtensionError::Name(attr.name.clone())),
            "" if known(&attr.name, &attr.value) => {
                return Err(ExtensionError::Shadows(attr.name.clone()));
            }
            RS_NAMESPACE => return Err(ExtensionError::Shadows(attr.name.clone())),
            ns => check_namespace(ns, true)?,
        }
        if attributes[..i]
            .iter()
            .any(|a| a.namespace == attr.namespace && a.name == attr.name)
        {
            return Err(ExtensionError::Repeated(attr.name.clone()));
        }
    }
    Ok(())
}

/// Checks one extension element: its name and namespace, its attributes, and its
/// content, read under the bindings the writer gives it: the Sitemap namespace as the
/// default, `rs`, and `prefix` for the element's own namespace (`None` when it is written
/// unprefixed).
pub(crate) fn check_element(element: &Element, prefix: Option<&str>) -> Result<(), ExtensionError> {
    check_name(&element.name)?;
    check_namespace(&element.namespace, false)?;
    let reserved = match element.namespace.as_str() {
        SITEMAP_NAMESPACE => is_sitemap_name(&element.name),
        RS_NAMESPACE => matches!(element.name.as_str(), "md" | "ln"),
        _ => false,
    };
    if reserved {
        return Err(ExtensionError::NotAnExtension {
            namespace: element.namespace.clone(),
            name: element.name.clone(),
        });
    }
    check_attributes(&element.attributes, &|_, _| false)?;
    if element.content.is_empty() {
        return Ok(());
    }
    if element.content.len() > MAX_CONTENT_LEN {
        return Err(content(format!("longer than {MAX_CONTENT_LEN} bytes")));
    }
    let mut scopes = Namespaces::new(128);
    let mut root = format!("urlset xmlns=\"{SITEMAP_NAMESPACE}\" xmlns:rs=\"{RS_NAMESPACE}\"");
    match prefix {
        Some(p) => root.push_str(&format!(" xmlns:{p}=\"x\"")),
        None if element.namespace.is_empty() => root.push_str(" xmlns=\"\""),
        None => {}
    }
    let bindings = BytesStart::from_content(root.as_str(), "urlset".len());
    scopes
        .push(&bindings)
        .map_err(|_| ExtensionError::Namespace(element.namespace.clone()))?;
    check_content(&element.content, &mut scopes)
}

fn content(reason: impl Into<String>) -> ExtensionError {
    ExtensionError::Content(reason.into())
}

/// Reads content as the reader will: balanced, every prefix declared, only XML's five
/// entities and valid character references, no character XML forbids, nothing the
/// reader would drop.
fn check_content(text: &str, scopes: &mut Namespaces) -> Result<(), ExtensionError> {
    let mut reader = quick_xml::Reader::from_str(text);
    let config = reader.config_mut();
    config.check_end_names = true;
    config.expand_empty_elements = false;
    config.trim_text(false);
    let mut depth = 0usize;
    loop {
        let event = reader.read_event().map_err(|e| content(e.to_string()))?;
        let empty = matches!(event, Event::Empty(_));
        match event {
            Event::Start(e) | Event::Empty(e) => {
                scopes.push(&e).map_err(|_| {
                    content(format!(
                        "invalid namespace declaration in <{}>",
                        e.name().as_ref()
                    ))
                })?;
                if let (Resolved::Unknown(p), _) = scopes.element(e.name().as_ref()) {
                    return Err(content(format!("undeclared prefix \"{p}\"")));
                }
                for attr in e.attributes() {
                    let attr = attr.map_err(|e| content(e.to_string()))?;
                    let key = attr.key.as_ref();
                    if key != "xmlns" && !key.starts_with("xmlns:") {
                        if let (Resolved::Unknown(p), _) = scopes.attribute(key) {
                            return Err(content(format!("undeclared prefix \"{p}\"")));
                        }
                    }
                    check_references(&attr.value)?;
                    let value = attr
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| content(e.to_string()))?;
                    check_text(&value)?;
                }
                if empty {
                    scopes.pop();
                } else {
                    depth += 1;
                    if depth > MAX_CONTENT_DEPTH {
                        return Err(content(format!("nested deeper than {MAX_CONTENT_DEPTH}")));
                    }
                }
            }
            Event::End(_) => {
                scopes.pop();
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| content("an end tag without its start tag"))?;
            }
            Event::Text(t) => {
                check_text(&t)?;
                if t.contains("]]>") {
                    return Err(content("\"]]>\" in text"));
                }
            }
            Event::CData(c) => check_text(&c)?,
            Event::GeneralRef(r) => match &*r {
                "amp" | "lt" | "gt" | "apos" | "quot" => {}
                other => {
                    let c = char_reference(other)
                        .ok_or_else(|| content(format!("reference &{other}; is not XML's")))?;
                    check_text(c.encode_utf8(&mut [0; 4]))?;
                }
            },
            Event::Comment(_) => return Err(content("a comment, which a reader does not keep")),
            Event::PI(_) => {
                return Err(content(
                    "a processing instruction, which a reader does not keep",
                ));
            }
            Event::Decl(_) | Event::DocType(_) => {
                return Err(content("an XML declaration or DOCTYPE"));
            }
            Event::Eof if depth == 0 => return Ok(()),
            Event::Eof => return Err(content("an element without its end tag")),
        }
    }
}

/// Character references in an attribute value, by XML's grammar (quick-xml's unescaping
/// takes a sign): the reader's own check.
fn check_references(raw: &str) -> Result<(), ExtensionError> {
    match bad_char_reference(raw) {
        Some(reference) => Err(content(format!("reference &{reference}; is not XML's"))),
        None => Ok(()),
    }
}

fn check_text(s: &str) -> Result<(), ExtensionError> {
    check_chars(s).map_err(|code| content(format!("character U+{code:04X} is not allowed in XML")))
}

fn check_namespace(ns: &str, attribute: bool) -> Result<(), ExtensionError> {
    let reserved = ns == XMLNS_NAMESPACE || (!attribute && ns == XML_NAMESPACE);
    if reserved || check_chars(ns).is_err() {
        return Err(ExtensionError::Namespace(ns.to_owned()));
    }
    Ok(())
}

/// An XML name without a colon (an NCName): what a local name or a prefix must be.
pub(crate) fn is_ncname(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(is_name_start) && chars.all(|c| is_name_start(c) || is_name_char(c))
}

fn check_name(name: &str) -> Result<(), ExtensionError> {
    if is_ncname(name) {
        Ok(())
    } else {
        Err(ExtensionError::Name(name.to_owned()))
    }
}

/// XML 1.0 (fifth edition) NameStartChar, without the colon.
fn is_name_start(c: char) -> bool {
    matches!(c,
        'A'..='Z' | '_' | 'a'..='z' | '\u{C0}'..='\u{D6}' | '\u{D8}'..='\u{F6}'
        | '\u{F8}'..='\u{2FF}' | '\u{370}'..='\u{37D}' | '\u{37F}'..='\u{1FFF}'
        | '\u{200C}'..='\u{200D}' | '\u{2070}'..='\u{218F}' | '\u{2C00}'..='\u{2FEF}'
        | '\u{3001}'..='\u{D7FF}' | '\u{F900}'..='\u{FDCF}' | '\u{FDF0}'..='\u{FFFD}'
        | '\u{10000}'..='\u{EFFFF}')
}

/// The rest of XML 1.0's NameChar.
fn is_name_char(c: char) -> bool {
    matches!(c, '-' | '.' | '0'..='9' | '\u{B7}' | '\u{300}'..='\u{36F}' | '\u{203F}'..='\u{2040}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(namespace: &str, name: &str, content: &str) -> Element {
        Element {
            namespace: namespace.into(),
            prefix: None,
            name: name.into(),
            attributes: Vec::new(),
            content: content.into(),
        }
    }

    #[test]
    fn names() {
        for good in ["a", "_x", "a-b.c1", "é", "a\u{B7}"] {
            assert!(is_ncname(good), "{good}");
        }
        for bad in ["", "1a", "-a", "a:b", "a b", "a<", "a\"", "a=b"] {
            assert!(!is_ncname(bad), "{bad}");
        }
    }

    #[test]
    fn content_is_read_as_the_reader_will() {
        let ok = [
            "text",
            "<x:b xmlns:x=\"urn:b\">1</x:b>",
            "<p:c/>",
            "<rs:note/>",
            "a &amp; b &#65; &#x42;",
            "<![CDATA[<raw>]]>",
        ];
        for content in ok {
            let e = element("urn:a", "a", content);
            check_element(&e, Some("p")).unwrap_or_else(|err| panic!("{content}: {err}"));
        }
        let bad = [
            "</url></urlset>",
            "<a>",
            "a & b",
            "&foo;",
            "&#x+41;",
            "<q:b/>",
            "<b q:c=\"1\"/>",
            "<!-- c -->",
            "<?pi x?>",
            "\u{1}",
            "<b a=\"1\" a=\"2\"/>",
            "a ]]> b",
            "<b xmlns:p=\"\"/>",
        ];
        for content in bad {
            let e = element("urn:a", "a", content);
            assert!(check_element(&e, Some("p")).is_err(), "{content}");
        }
    }

    #[test]
    fn elements_the_reader_would_take_for_its_own() {
        assert!(check_element(&element(SITEMAP_NAMESPACE, "url", ""), None).is_err());
        assert!(check_element(&element(RS_NAMESPACE, "md", ""), Some("ns1")).is_err());
        assert!(check_element(&element(SITEMAP_NAMESPACE, "priority", "0.5"), None).is_ok());
        assert!(check_element(&element(XMLNS_NAMESPACE, "a", ""), Some("ns1")).is_err());
    }
}
