//! Attributes and extension content as the parser reads them: the `rs:md` and `rs:ln`
//! attributes, unknown and stray ones (with the name they are most likely a misspelling
//! of), and elements of other namespaces kept as they are.

use super::*;

impl<I: Input> Parser<I> {
    /// Refuses an element inside extension content whose name or attributes use a prefix
    /// without a declaration: kept as text, it would be written back as a document no
    /// namespace-aware reader accepts.
    pub(super) fn check_prefixes(&self, e: &BytesStart<'_>) -> Result<(), Error> {
        if let (Resolved::Unknown(p), _) = self.ns.element(e.name().as_ref()) {
            return Err(self.error(ErrorKind::UndeclaredPrefix(p)));
        }
        if !e.attributes_raw().contains(':') {
            return Ok(());
        }
        for (n, attr) in e.attributes().with_checks(false).enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            let key = attr.key.as_ref();
            if !key.starts_with("xmlns") {
                if let (Resolved::Unknown(p), _) = self.ns.attribute(key) {
                    return Err(self.error(ErrorKind::UndeclaredPrefix(p)));
                }
            }
        }
        Ok(())
    }

    /// Refuses the child element that makes an entry's or the head's children too many:
    /// they are kept in memory until the entry is handed out.
    pub(super) fn check_children(&self, children: usize) -> Result<(), Error> {
        if children > self.limits.max_children {
            return Err(self.error(ErrorKind::TooManyChildren(self.limits.max_children)));
        }
        Ok(())
    }

    /// Refuses the attribute that makes an element's attributes too many: they are kept,
    /// and finding a repeated name takes time that grows with their square.
    pub(super) fn check_attributes(&self, attributes: usize) -> Result<(), Error> {
        if attributes > self.limits.max_attributes {
            return Err(self.error(ErrorKind::TooManyAttributes(self.limits.max_attributes)));
        }
        Ok(())
    }

    /// Accepts white space, and refuses any other text, as content between elements.
    pub(super) fn expect_space(&self, event: Event<'_>) -> Result<(), Error> {
        match event {
            Event::Text(t) if is_xml_space(&t) => Ok(()),
            Event::Text(t) => Err(self.error(ErrorKind::UnexpectedText(clip(&t)))),
            Event::CData(_) => Err(self.error(ErrorKind::UnexpectedCData)),
            Event::GeneralRef(r) => {
                Err(self.error(ErrorKind::UnexpectedText(format!("&{};", &*r))))
            }
            _ => Ok(()),
        }
    }

    /// The text last read by `read_text_into`, without the white space around it.
    pub(super) fn text(&self) -> &str {
        // XML's white space is ASCII's but for form feed, which the text cannot hold (it
        // is a forbidden character): the byte-wise trim is the cheaper.
        self.text.trim_ascii()
    }

    pub(super) fn push_text(&mut self, s: &str) -> Result<(), Error> {
        check_chars(s).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?;
        self.push_checked_text(s)
    }

    /// Adds text whose characters are known to be allowed.
    pub(super) fn push_checked_text(&mut self, s: &str) -> Result<(), Error> {
        if self.text.len() + s.len() > self.limits.max_value_len {
            return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
        }
        self.text.push_str(s);
        Ok(())
    }

    pub(super) fn resolve_reference(&self, reference: &str) -> Result<char, Error> {
        let c = match reference {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "apos" => '\'',
            "quot" => '"',
            r if r.starts_with('#') => char_reference(r)
                .ok_or_else(|| self.error(ErrorKind::CharacterReference(clip(r))))?,
            other => return Err(self.error(ErrorKind::UnknownEntity(clip(other)))),
        };
        check_chars(c.encode_utf8(&mut [0; 4]))
            .map_err(|code| self.error(ErrorKind::ForbiddenCharacter(code)))?;
        Ok(c)
    }

    // --- attributes ---

    pub(super) fn attribute_value<'v>(
        &self,
        attr: &quick_xml::events::attributes::Attribute<'v>,
    ) -> Result<Cow<'v, str>, Error> {
        if attr.value.len() > self.limits.max_value_len {
            return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
        }
        // One vectorised pass: a value without `&`, without bytes below 0x20 (tab, CR and
        // LF are normalized to spaces, the others are forbidden) and without 0xEF (the
        // lead byte of U+FFFE and U+FFFF) is its own normalized value, and valid.
        if !needs_attention(attr.value.as_bytes(), b'&') {
            return Ok(attr.value.clone());
        }
        if let Some(reference) = bad_char_reference(&attr.value) {
            return Err(self.error(ErrorKind::CharacterReference(clip(reference))));
        }
        let value =
            attr.normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| match e {
                    quick_xml::Error::Escape(
                        quick_xml::escape::EscapeError::UnrecognizedEntity(_, name),
                    ) => self.error(ErrorKind::UnknownEntity(clip(&name))),
                    other => self.xml_error(other),
                })?;
        check_chars(&value).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?;
        Ok(value)
    }

    /// Reads one attribute: `None` for a namespace declaration, a ResourceSync attribute
    /// by local name and value (a prefixed one is read, and reported), or an extension.
    pub(super) fn attribute<'v>(
        &mut self,
        attr: &'v quick_xml::events::attributes::Attribute<'v>,
        at: Position,
    ) -> Result<Option<Attr<'v>>, Error> {
        let key = attr.key.as_ref();
        if key == "xmlns" || key.starts_with("xmlns:") {
            return Ok(None);
        }
        let value = self.attribute_value(attr)?;
        let (ns, local) = self.ns.attribute(key);
        let namespace = match ns {
            Resolved::Unbound => return Ok(Some(Attr::Rs(local, value))),
            Resolved::Bound(RS_NAMESPACE) => None,
            Resolved::Bound(ns) => Some(ns.to_owned()),
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let Some(namespace) = namespace else {
            self.finding(
                Rule::AttributePrefix,
                format!("attribute {key} has a namespace prefix"),
                at,
            );
            return Ok(Some(Attr::Rs(local, value)));
        };
        Ok(Some(Attr::Extension(Attribute {
            namespace,
            prefix: attr.key.prefix().map(|p| p.into_inner().to_owned()),
            name: local.to_owned(),
            value: value.into_owned(),
        })))
    }

    /// Every attribute of an element kept as written, for roots and extensions.
    pub(super) fn plain_attributes(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
    ) -> Result<Vec<Attribute>, Error> {
        let mut out = Vec::new();
        for (n, attr) in e.attributes().enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            match self.attribute(&attr, at)? {
                None => {}
                Some(Attr::Extension(a)) => out.push(a),
                Some(Attr::Rs(name, value)) => out.push(Attribute {
                    namespace: String::new(),
                    prefix: None,
                    name: name.to_owned(),
                    value: value.into_owned(),
                }),
            }
        }
        Ok(out)
    }

    /// Reads the attributes of `rs:md` or `rs:ln` into `into`, and returns those present
    /// but malformed (reported here, so that the checker does not report them missing
    /// too). An attribute that is not read into the model (malformed, unknown) is kept as
    /// written, so that writing the document back loses nothing.
    pub(super) fn rs_attributes<T: ReadInto>(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
        into: &mut T,
    ) -> Result<Attributes, Error> {
        let mut malformed = Attributes::NONE;
        let mut seen = Seen::default();
        for (n, attr) in e.attributes().with_checks(false).enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            let (name, value) = match self.attribute(&attr, at)? {
                None => continue,
                Some(Attr::Extension(a)) => {
                    seen.other = true;
                    into.extensions().push(a);
                    continue;
                }
                Some(Attr::Rs(name, value)) => (name, value),
            };
            let known = AttributeName::from_name(name).filter(|a| a.is_on(T::ELEMENT));
            seen.note(&attr, name, known);
            match known {
                Some(attribute) => match into.read(attribute, &value) {
                    Ok(()) => continue,
                    Err(error) => {
                        malformed.insert(attribute);
                        self.value_finding(error.as_ref(), at);
                    }
                },
                None => self.unknown_attribute(&attr, name, T::ELEMENT, at),
            }
            into.extensions().push(Attribute {
                namespace: String::new(),
                prefix: None,
                name: name.to_owned(),
                value: value.into_owned(),
            });
        }
        self.check_duplicates(e, seen)?;
        Ok(malformed)
    }

    pub(super) fn link_attributes(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
    ) -> Result<LinkRead, Error> {
        let mut parts = PartialLink::default();
        let malformed = self.rs_attributes(e, at, &mut parts)?;
        match parts.into_link() {
            Ok(link) => Ok(LinkRead::Kept(link, malformed)),
            Err(parts) => {
                let broken = malformed.contains(AttributeName::Rel)
                    || malformed.contains(AttributeName::Href);
                if !broken {
                    self.finding(
                        Rule::LinkRelHrefMandatory,
                        "an rs:ln without rel or href; skipped".into(),
                        at,
                    );
                }
                // A link whose relation was read but whose href was not is not also
                // missing.
                Ok(LinkRead::Dropped(parts.rel.filter(|_| broken)))
            }
        }
    }

    /// Reports an attribute in no namespace that the element does not have, naming the
    /// one probably meant (`lenght` for `length`): kept as an extension, it would
    /// otherwise go unnoticed and, say, the fixity it was to carry be lost. An attribute
    /// prefixed with the ResourceSync namespace is reported as such already.
    #[cold]
    pub(super) fn unknown_attribute(
        &mut self,
        attr: &quick_xml::events::attributes::Attribute<'_>,
        name: &str,
        element: RsElement,
        at: Position,
    ) {
        let key = attr.key.as_ref();
        let known: Vec<&str> = element.attributes().map(AttributeName::as_str).collect();
        let message = match closest(name, &known) {
            Some(meant) => format!(
                "unknown attribute {key} on {element}; did you mean {meant}? It is kept, not understood"
            ),
            None => format!("unknown attribute {key} on {element}; it is kept, not understood"),
        };
        self.finding(Rule::AttributeUnknown, message, at);
    }

    /// Reports the attributes of a Sitemap element that has none (`<url>`, `<loc>` …):
    /// the model has no place for them, so they are not kept. Namespace declarations are
    /// not attributes here.
    #[inline]
    pub(super) fn stray_attributes(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
    ) -> Result<(), Error> {
        if e.attributes_raw().is_empty() {
            return Ok(());
        }
        self.report_stray_attributes(e, at)
    }

    #[cold]
    pub(super) fn report_stray_attributes(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
    ) -> Result<(), Error> {
        for (n, attr) in e.attributes().enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            if self.attribute(&attr, at)?.is_some() {
                self.finding(
                    Rule::AttributeUnknown,
                    format!(
                        "attribute {} on <{}>: the Sitemap protocol defines none; ignored",
                        attr.key.as_ref(),
                        e.name().as_ref()
                    ),
                    at,
                );
            }
        }
        Ok(())
    }

    /// Refuses an element that repeats an attribute. `rs:md` and `rs:ln` are read without
    /// quick-xml's own check (it keeps a list of names per element); their known names are
    /// checked by `Seen`, and only an element with other attributes is checked again here.
    pub(super) fn check_duplicates(&self, e: &BytesStart<'_>, seen: Seen) -> Result<(), Error> {
        // quick-xml's check finds the repeat and says where it is.
        if seen.other || seen.repeated {
            for attr in e.attributes() {
                attr.map_err(|err| self.xml_error(err.into()))?;
            }
        }
        Ok(())
    }

    // --- extensions ---

    /// Reads an element outside the Sitemap and ResourceSync vocabularies, keeping its
    /// content as XML text.
    pub(super) fn extension_start(
        &mut self,
        e: &BytesStart<'_>,
        tag: Tag,
        at: Position,
    ) -> Result<Element, Error> {
        let (ns, local) = self.ns.element(e.name().0);
        let namespace = match ns {
            Resolved::Bound(ns) => ns.to_owned(),
            Resolved::Unbound => String::new(),
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let name = local.to_owned();
        let misplaced = match tag {
            Tag::MisplacedRs => Some((Rule::ResourceSyncNamespace, "ResourceSync's")),
            Tag::MisplacedSitemap => Some((Rule::SitemapNamespace, "the Sitemap's")),
            _ => None,
        };
        if let Some((rule, whose)) = misplaced {
            let written = e.name();
            let written = written.as_ref();
            let message = if namespace.is_empty() {
                format!("<{written}> is in no namespace, not {whose}; kept as an extension")
            } else {
                format!(
                    "<{written}> is in namespace \"{namespace}\", not {whose}; kept as an extension"
                )
            };
            self.finding(rule, message, at);
        }
        let prefix = e.name().prefix().map(|p| p.into_inner().to_owned());
        let attributes = self.plain_attributes(e, at)?;
        Ok(Element {
            namespace,
            prefix,
            name,
            attributes,
            content: String::new(),
        })
    }

    /// Reads an extension element's content as XML text, bounded in depth and length, up
    /// to and including its end tag (closing its scope), with `buf` for the events.
    pub(super) fn extension_content(
        &mut self,
        buf: &mut Vec<u8>,
        element: &mut Element,
        empty: bool,
    ) -> Result<(), Error> {
        if empty {
            self.ns.pop();
            return Ok(());
        }
        let mut depth = 1usize;
        loop {
            let event = next_event!(self, buf);
            match &event {
                Event::Comment(_)
                | Event::PI(_)
                | Event::DocType(_)
                | Event::Decl(_)
                | Event::Eof => {
                    // Passed over (comments, processing instructions) or refused.
                    self.between_children(event)?;
                    continue;
                }
                Event::Start(e) => {
                    self.ns.push(e).map_err(|err| self.declaration_error(err))?;
                    self.check_prefixes(e)?;
                    depth += 1;
                    if depth > self.limits.max_depth {
                        return Err(self.error(ErrorKind::TooDeep(self.limits.max_depth)));
                    }
                }
                Event::Empty(e) => {
                    // Its declarations are checked, and go out of scope at once.
                    self.ns.push(e).map_err(|err| self.declaration_error(err))?;
                    self.check_prefixes(e)?;
                    self.ns.pop();
                }
                Event::End(_) => {
                    self.ns.pop();
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Event::GeneralRef(reference) => {
                    self.resolve_reference(reference)?;
                }
                Event::Text(t) => {
                    check_chars(t).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?
                }
                Event::CData(_) => {}
            }
            crate::writer::write_event(&mut element.content, &event);
            if element.content.len() > self.limits.max_value_len {
                return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
            }
        }
    }
}

/// The name in `known` that `name` is most likely a misspelling of: the same but for
/// case, or at most one edit (two for longer names) away, counting a swap of two
/// neighbours as one edit.
pub(super) fn closest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(k);
    }
    let allowed = if name.chars().count() > 5 { 2 } else { 1 };
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Optimal string alignment distance between two short names: insertions, deletions,
/// substitutions and swaps of neighbours, by characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 {
        return usize::MAX;
    }
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Which attributes of an `rs:md` or `rs:ln` have been read, to find repeats.
#[derive(Clone, Copy, Default)]
pub(super) struct Seen {
    /// The known unprefixed names.
    pub(super) known: Attributes,
    /// Some known name came twice.
    pub(super) repeated: bool,
    /// Some attribute was prefixed or unknown: the names need quick-xml's full check.
    pub(super) other: bool,
}

impl Seen {
    /// Notes an attribute read as `name`, the element's attribute `known` if it has one.
    pub(super) fn note(
        &mut self,
        attr: &quick_xml::events::attributes::Attribute<'_>,
        name: &str,
        known: Option<AttributeName>,
    ) {
        let unprefixed = attr.key.as_ref().len() == name.len();
        match known {
            Some(attribute) if unprefixed => {
                self.repeated |= self.known.contains(attribute);
                self.known.insert(attribute);
            }
            _ => self.other = true,
        }
    }
}

/// What an attribute of `rs:md` or `rs:ln` is read into: an [`Md`], or the
/// [`PartialLink`] a [`Link`] is made of.
pub(super) trait ReadInto {
    const ELEMENT: RsElement;
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>>;
    fn extensions(&mut self) -> &mut Vec<Attribute>;
}

impl ReadInto for Md {
    const ELEMENT: RsElement = RsElement::Md;
    #[inline]
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>> {
        attribute.read_md(self, text)
    }
    fn extensions(&mut self) -> &mut Vec<Attribute> {
        &mut self.extensions
    }
}

impl ReadInto for PartialLink {
    const ELEMENT: RsElement = RsElement::Ln;
    #[inline]
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>> {
        attribute.read_ln(self, text)
    }
    fn extensions(&mut self) -> &mut Vec<Attribute> {
        &mut self.extensions
    }
}

/// What `rs:ln` gave.
// Returned and taken apart at once, never stored: boxing the link would only add an
// allocation per link.
#[allow(clippy::large_enum_variant)]
pub(super) enum LinkRead {
    /// A link, with its attributes that were present but malformed.
    Kept(Link, Attributes),
    /// No link: its `href` was malformed (with the relation, when that was read), or
    /// `rel` or `href` was missing or malformed.
    Dropped(Option<Relation>),
}

/// What was present but malformed in the head or an entry, for the checker
/// ([`Malformed`]), built as the children are read.
#[derive(Default)]
pub(super) struct MalformedParts {
    pub(super) md: Attributes,
    /// One per kept link, but only once some link has a malformed attribute.
    pub(super) links: Vec<Attributes>,
    pub(super) dropped_links: Vec<Relation>,
}

impl MalformedParts {
    /// Adds a link read, keeping it in `links` when it was kept.
    pub(super) fn add(&mut self, read: LinkRead, links: &mut Vec<Link>) {
        match read {
            LinkRead::Kept(link, malformed) => {
                if malformed != Attributes::NONE {
                    self.links.resize(links.len(), Attributes::NONE);
                    self.links.push(malformed);
                }
                links.push(link);
            }
            LinkRead::Dropped(rel) => self.dropped_links.extend(rel),
        }
    }

    pub(super) fn as_malformed(&self) -> Malformed<'_> {
        Malformed {
            md: self.md,
            links: &self.links,
            dropped_links: &self.dropped_links,
        }
    }
}

/// The children of the root before the first entry, as they are read.
#[derive(Default)]
pub(super) struct HeadParts {
    pub(super) malformed: MalformedParts,
    /// How many child elements there were.
    pub(super) children: usize,
    pub(super) md: Option<Md>,
    pub(super) links: Vec<Link>,
    pub(super) extensions: Vec<Element>,
}

/// The parts of an entry as its children are read, but for its `<loc>` and `rs:md`: the
/// entry is made when its `<loc>` is read, and an `rs:md` after it is read into it.
#[derive(Default)]
pub(super) struct EntryParts {
    pub(super) malformed: MalformedParts,
    /// How many child elements there were.
    pub(super) children: usize,
    /// How many `<loc>` there were.
    pub(super) locs: u32,
    pub(super) md: Option<Md>,
    pub(super) lastmod: Option<resourcesync_model::W3cDateTime>,
    pub(super) changefreq: Option<resourcesync_model::ChangeFreq>,
    pub(super) links: Vec<Link>,
    pub(super) extensions: Vec<Element>,
}

/// One attribute, read.
pub(super) enum Attr<'v> {
    /// Unprefixed (or prefixed with the ResourceSync namespace): local name and value.
    Rs(&'v str, Cow<'v, str>),
    /// In another namespace.
    Extension(Attribute),
}
