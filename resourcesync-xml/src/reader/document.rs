//! The document's structure as the parser reads it: the head, the root and its children,
//! each entry and its children, their text.

use super::*;

impl<I: Input> Parser<I> {
    /// Reads the next entry into `slot` (`None` after the last). An entry is built where it
    /// is to stay, its `rs:md` included: entries are large, and moving them costs.
    pub(super) fn next_entry_into(
        &mut self,
        buf: &mut Vec<u8>,
        slot: &mut Option<Entry>,
    ) -> Result<(), Error> {
        if self.head.is_none() {
            self.read_head(buf)?;
        }
        loop {
            match self.state {
                State::Prolog | State::Head => return Err(self.error(ErrorKind::Empty)),
                State::Done => {
                    self.end_document(buf)?;
                    *slot = None;
                    return Ok(());
                }
                State::EntryStarted { empty } => {
                    self.state = State::Entries;
                    if self.read_entry(buf, empty, slot)? {
                        return Ok(());
                    }
                }
                State::Entries => self.read_between_entries(buf)?,
            }
        }
    }

    /// After the root: reads to the end of input and ends the checks, once.
    pub(super) fn end_document(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        if !self.finished {
            self.finished = true;
            self.read_epilog(buf)?;
            if let Some(checker) = self.checker.take() {
                checker.finish(&mut self.findings);
                let bytes = self.input.bytes_read();
                if bytes > MAX_BYTES {
                    let end = self.place(self.position());
                    self.finding(
                        Rule::MaxBytes,
                        format!("{bytes} bytes, uncompressed: more than {MAX_BYTES}"),
                        end,
                    );
                }
            }
        }
        Ok(())
    }

    // --- positions and errors ---

    /// Where the event being handled started. A slice input counts lines only when a
    /// finding or error needs them: see `place`.
    pub(super) fn position(&self) -> Position {
        let (byte, line, column) = self.event_at;
        Position {
            byte,
            line,
            column,
            entry: matches!(self.state, State::Entries | State::EntryStarted { .. })
                .then_some(self.entries)
                .filter(|n| *n > 0),
        }
    }

    #[cold]
    pub(super) fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.place(self.position())).in_file(self.path.as_deref())
    }

    /// Remembers where the next event starts: quick-xml consumes its input exactly up to
    /// the end of each event, so this is the end of the previous one.
    ///
    /// While an entry or the head is read, this is also where its length is checked: it
    /// is kept in memory whole.
    pub(super) fn mark(&mut self) -> Result<(), Error> {
        self.event_at = self.input.mark();
        if let Some((start, what)) = self.scope {
            if self.event_at.0 - start > self.limits.max_entry_len {
                return Err(self.error(ErrorKind::EntryTooLong {
                    what,
                    limit: self.limits.max_entry_len,
                }));
            }
        }
        Ok(())
    }

    /// A position with its line and column, counted now if the input did not.
    pub(super) fn place(&self, mut p: Position) -> Position {
        if p.line == 0 {
            (p.line, p.column) = self.input.line_column(p.byte);
        }
        p
    }

    #[cold]
    pub(super) fn xml_error(&self, e: quick_xml::Error) -> Error {
        let kind = match e {
            _ if self.input.over_limit() => ErrorKind::TooLarge(self.limits.max_bytes),
            _ if self.input.over_event() => ErrorKind::EventTooLong(self.limits.max_event_len),
            quick_xml::Error::Io(io) => {
                ErrorKind::Io(std::io::Error::new(io.kind(), io.to_string()))
            }
            quick_xml::Error::Namespace(quick_xml::name::NamespaceError::UnknownPrefix(p)) => {
                ErrorKind::UndeclaredPrefix(p)
            }
            other => ErrorKind::Xml(other),
        };
        let mut error = self.error(kind);
        let position = error.position_mut();
        position.byte = self.input.error_position().max(position.byte);
        error
    }

    pub(super) fn declaration_error(&self, e: DeclarationError) -> Error {
        match e {
            DeclarationError::Invalid(key) => self.error(ErrorKind::Namespace(key)),
            DeclarationError::TooMany(n) => self.error(ErrorKind::TooManyNamespaces(n)),
            DeclarationError::Value(e) => self.xml_error(e),
        }
    }

    pub(super) fn finding(&mut self, rule: Rule, message: String, at: Position) {
        let at = self.place(at);
        self.findings.push(Finding {
            message,
            entry: at.entry,
            position: Some(TextPosition {
                line: at.line,
                column: at.column,
            }),
            ..Finding::new(rule, at.entry)
        });
    }

    pub(super) fn value_finding(&mut self, error: &dyn RuleError, at: Position) {
        self.finding(error.rule(), error.to_string(), at);
    }

    // --- events ---

    /// The element's tag, from its namespace and local name.
    pub(super) fn classify(&self, start: &BytesStart<'_>) -> Result<Tag, Error> {
        // With the root's conventional bindings in scope, names as written say it all.
        if self.ns.len() == self.conventional_bindings {
            match start.name().0 {
                "url" => return Ok(Tag::Url),
                "loc" => return Ok(Tag::Loc),
                "lastmod" => return Ok(Tag::Lastmod),
                "rs:md" => return Ok(Tag::Md),
                "rs:ln" => return Ok(Tag::Ln),
                "sitemap" => return Ok(Tag::Sitemap),
                "changefreq" => return Ok(Tag::Changefreq),
                _ => {}
            }
        }
        let (known, local) = self.ns.known_element(start.name().0);
        let sitemap = match known {
            Some(Known::Sitemap) => true,
            None => self.lenient,
            Some(Known::ResourceSync) => {
                return Ok(match local {
                    "md" => Tag::Md,
                    "ln" => Tag::Ln,
                    _ if is_sitemap_name(local) => Tag::MisplacedSitemap,
                    _ => Tag::Other,
                });
            }
            Some(Known::Other) => {
                // An undeclared prefix is an error, not an extension.
                if let (Resolved::Unknown(prefix), _) = self.ns.element(start.name().0) {
                    return Err(self.error(ErrorKind::UndeclaredPrefix(prefix)));
                }
                false
            }
        };
        Ok(match local {
            "md" | "ln" => Tag::MisplacedRs,
            "url" if sitemap => Tag::Url,
            "loc" if sitemap => Tag::Loc,
            "lastmod" if sitemap => Tag::Lastmod,
            "sitemap" if sitemap => Tag::Sitemap,
            "changefreq" if sitemap => Tag::Changefreq,
            "urlset" if sitemap => Tag::UrlSet,
            "sitemapindex" if sitemap => Tag::SitemapIndex,
            _ if !sitemap && is_sitemap_name(local) => Tag::MisplacedSitemap,
            _ => Tag::Other,
        })
    }

    // --- the head ---

    pub(super) fn read_head(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        self.read_root(buf)?;
        if self.state == State::Head {
            let mut parts = HeadParts::default();
            let first_entry = match self.read_root_children(buf, Some(&mut parts), false)? {
                Child::Entry(first) => Some(first),
                Child::End | Child::More => None,
            };
            self.end_head(Some(parts), first_entry)
        } else {
            self.end_head(None, None)
        }
    }

    /// Completes the head from the root's children read before the first entry (`None`
    /// for an empty root), starts that entry, and starts checking.
    pub(super) fn end_head(
        &mut self,
        parts: Option<HeadParts>,
        first_entry: Option<(Tag, bool, Position)>,
    ) -> Result<(), Error> {
        let mut malformed = MalformedParts::default();
        if let Some(parts) = parts {
            if let Some(head) = &mut self.head {
                if let Some(md) = parts.md {
                    head.md = md;
                }
                head.links = parts.links;
                head.extensions = parts.extensions;
            }
            self.enter(first_entry)?;
            malformed = parts.malformed;
        }
        let Some(head) = &self.head else {
            return Err(self.error(ErrorKind::Empty));
        };
        if let Some(options) = self.check {
            self.checker = Some(Box::new(Checker::with_malformed(
                head,
                options,
                malformed.as_malformed(),
                &mut self.findings,
            )));
        }
        Ok(())
    }

    /// Reads the root's children up to the next entry's start tag, which it returns
    /// (`Child::Entry`), or to the root's end (`Child::End`). Before the first entry, `head`
    /// takes the document's metadata, links and extensions; after it (`None`), see
    /// `read_between_entries`.
    ///
    /// With `one`, it returns after one event or child element that is neither
    /// (`Child::More`): a push reader calls it once it holds that much of the document. (One loop
    /// over `read_root_child`, its only caller, rather than a second copy of the loop for
    /// the push reader.)
    pub(super) fn read_root_children(
        &mut self,
        buf: &mut Vec<u8>,
        mut head: Option<&mut HeadParts>,
        one: bool,
    ) -> Result<Child, Error> {
        loop {
            match self.read_root_child(buf, head.as_deref_mut())? {
                Child::More if !one => {}
                child => return Ok(child),
            }
        }
    }

    /// Reads one event, or one child element, of the root: see `read_root_children`.
    pub(super) fn read_root_child(
        &mut self,
        buf: &mut Vec<u8>,
        mut head: Option<&mut HeadParts>,
    ) -> Result<Child, Error> {
        let event = next_event!(self, buf);
        let (e, empty) = match event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                self.ns.pop();
                return Ok(Child::End);
            }
            other => {
                self.between_children(other)?;
                return Ok(Child::More);
            }
        };
        self.ns
            .push(&e)
            .map_err(|err| self.declaration_error(err))?;
        let at = self.position();
        let tag = self.classify(&e)?;
        if let Some(parts) = head.as_deref_mut() {
            if !matches!(tag, Tag::Url | Tag::Sitemap) {
                parts.children += 1;
                self.check_children(parts.children)?;
            }
        }
        match tag {
            tag @ (Tag::Url | Tag::Sitemap) => {
                self.stray_attributes(&e, at)?;
                if empty {
                    self.ns.pop();
                }
                return Ok(Child::Entry((tag, empty, at)));
            }
            tag @ (Tag::Loc | Tag::Lastmod | Tag::Changefreq) => {
                // A <loc> or <lastmod> outside any entry: kept as an extension.
                drop(e);
                self.read_text_into(buf, empty)?;
                let Some(parts) = head.as_deref_mut() else {
                    return Ok(Child::More);
                };
                let name = match tag {
                    Tag::Loc => "loc",
                    Tag::Lastmod => "lastmod",
                    _ => "changefreq",
                };
                parts.extensions.push(Element {
                    namespace: SITEMAP_NAMESPACE.into(),
                    prefix: None,
                    name: name.into(),
                    attributes: Vec::new(),
                    content: crate::writer::escape_text(self.text()).into_owned(),
                });
            }
            Tag::Md => {
                let Some(parts) = head.as_deref_mut() else {
                    self.after_first_entry(&e, at);
                    self.rs_attributes(&e, at, &mut Md::default())?;
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                    return Ok(Child::More);
                };
                if parts.md.is_some() {
                    self.rs_attributes(&e, at, &mut Md::default())?;
                    self.finding(
                        Rule::MdNotRepeatable,
                        "the document has more than one rs:md; the first is kept".into(),
                        at,
                    );
                } else {
                    parts.malformed.md =
                        self.rs_attributes(&e, at, parts.md.insert(Md::default()))?;
                }
                drop(e);
                self.end_of_empty_element(buf, empty)?;
            }
            Tag::Ln => {
                let Some(parts) = head.as_deref_mut() else {
                    self.after_first_entry(&e, at);
                    let _ = self.link_attributes(&e, at)?;
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                    return Ok(Child::More);
                };
                let read = self.link_attributes(&e, at)?;
                parts.malformed.add(read, &mut parts.links);
                drop(e);
                self.end_of_empty_element(buf, empty)?;
            }
            Tag::UrlSet | Tag::SitemapIndex => {
                return Err(self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned())));
            }
            tag @ (Tag::MisplacedRs | Tag::MisplacedSitemap | Tag::Other) => {
                let mut element = self.extension_start(&e, tag, at)?;
                drop(e);
                self.extension_content(buf, &mut element, empty)?;
                if let Some(parts) = head {
                    parts.extensions.push(element);
                }
            }
        }
        Ok(Child::More)
    }

    pub(super) fn read_root(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        let mut first = true;
        while self.state == State::Prolog {
            match next_event!(self, buf) {
                Event::Decl(decl) if first => match decl.encoding() {
                    Some(Ok(enc)) if !enc.eq_ignore_ascii_case("utf-8") => {
                        return Err(self.error(ErrorKind::Encoding(enc.into_owned())));
                    }
                    Some(Err(e)) => return Err(self.xml_error(e.into())),
                    _ => {}
                },
                Event::Decl(_) => return Err(self.error(ErrorKind::MisplacedDeclaration)),
                Event::DocType(_) => return Err(self.error(ErrorKind::DocType)),
                Event::Comment(_) | Event::PI(_) => {}
                Event::Text(t) if is_xml_space(&t) => {}
                Event::Text(t) => {
                    return Err(self.error(ErrorKind::UnexpectedText(clip(&t))));
                }
                Event::GeneralRef(r) => {
                    return Err(self.error(ErrorKind::UnexpectedText(format!("&{};", &*r))));
                }
                Event::CData(_) => return Err(self.error(ErrorKind::UnexpectedCData)),
                Event::Start(e) => {
                    self.ns
                        .push(&e)
                        .map_err(|err| self.declaration_error(err))?;
                    self.start_root(&e, false)?;
                }
                Event::Empty(e) => {
                    self.ns
                        .push(&e)
                        .map_err(|err| self.declaration_error(err))?;
                    self.start_root(&e, true)?;
                }
                Event::End(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedEndTag(e.name().as_ref().to_owned()))
                    );
                }
                Event::Eof => return Err(self.error(ErrorKind::Empty)),
            }
            first = false;
        }
        Ok(())
    }

    /// After the root: only white space, comments and processing instructions, then the
    /// end of input.
    pub(super) fn read_epilog(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        loop {
            match next_event!(self, buf) {
                Event::Eof => return Ok(()),
                Event::Comment(_) | Event::PI(_) => {}
                Event::Start(e) | Event::Empty(e) => {
                    return Err(self.error(ErrorKind::AfterRoot(e.name().as_ref().to_owned())));
                }
                event => self.expect_space(event)?,
            }
        }
    }

    pub(super) fn start_root(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<(), Error> {
        let (ns, local) = self.ns.element(e.name().0);
        let ns = match ns {
            Resolved::Bound(ns) => Some(ns.to_owned()),
            Resolved::Unbound => None,
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let root = match local {
            "urlset" => Root::UrlSet,
            "sitemapindex" => Root::SitemapIndex,
            _ => None.ok_or_else(|| {
                self.error(ErrorKind::NotSitemap {
                    name: local.to_owned(),
                    namespace: ns.clone(),
                })
            })?,
        };
        match ns.as_deref() {
            Some(SITEMAP_NAMESPACE) => {}
            None => {
                // Sitemaps in the wild often forget the namespace; reading them as the
                // Sitemap's is what every consumer does, but it is reported.
                self.lenient = true;
                let at = self.position();
                self.finding(
                    Rule::SitemapNamespace,
                    format!("<{local}> is in no namespace; read as a Sitemap"),
                    at,
                );
            }
            Some(other) => {
                return Err(self.error(ErrorKind::NotSitemap {
                    name: local.to_owned(),
                    namespace: Some(other.to_owned()),
                }));
            }
        }
        if self.ns.is_conventional() {
            self.conventional_bindings = self.ns.len();
        }
        self.root_name = e.name().as_ref().to_owned();
        let mut head = DocumentHead::of_root(root);
        let at = self.position();
        head.attributes = self.plain_attributes(e, at)?;
        self.head = Some(Box::new(head));
        self.state = if empty { State::Done } else { State::Head };
        if !empty {
            self.scope = Some((at.byte, "the head"));
        }
        Ok(())
    }

    pub(super) fn start_entry(&mut self, tag: Tag, empty: bool, mut at: Position) {
        self.entries += 1;
        at.entry = Some(self.entries);
        self.entry_position = at;
        self.scope = Some((at.byte, "an entry"));
        self.state = State::EntryStarted { empty };
        let expected = match self.head.as_ref().map(|h| h.root) {
            Some(Root::SitemapIndex) => Tag::Sitemap,
            _ => Tag::Url,
        };
        if tag != expected {
            self.finding(
                Rule::EntryElement,
                format!(
                    "a <{}> entry in a <{}>",
                    if tag == Tag::Url { "url" } else { "sitemap" },
                    if expected == Tag::Url {
                        "urlset"
                    } else {
                        "sitemapindex"
                    }
                ),
                at,
            );
        }
    }

    // --- entries ---

    /// Reads up to the next entry's start tag, or the end of the root. Between entries,
    /// document-level metadata is reported (the head has been handed out: it cannot be
    /// placed, and guessing would misread the document); it and other children are read,
    /// so that their markup is checked and bounded, and dropped.
    pub(super) fn read_between_entries(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        match self.read_root_children(buf, None, false)? {
            Child::Entry(next) => self.enter(Some(next)),
            Child::End | Child::More => self.enter(None),
        }
    }

    /// Document-level metadata after the first entry: reported, and read (so that its
    /// values are checked) but dropped, since the head has been handed out.
    #[cold]
    pub(super) fn after_first_entry(&mut self, e: &BytesStart<'_>, at: Position) {
        let at = Position { entry: None, ..at };
        self.finding(
            Rule::HeadBeforeEntries,
            format!(
                "<{}> after the first entry; ignored, as the document's metadata comes first",
                e.name().as_ref()
            ),
            at,
        );
    }

    /// Starts the entry whose start tag was read, or ends the document at the root's end.
    pub(super) fn enter(&mut self, next: Option<(Tag, bool, Position)>) -> Result<(), Error> {
        self.scope = None;
        match next {
            Some((tag, empty, at)) => {
                if self.entries >= self.limits.max_entries {
                    return Err(self.error(ErrorKind::TooManyEntries(self.limits.max_entries)));
                }
                self.start_entry(tag, empty, at);
            }
            None => self.state = State::Done,
        }
        Ok(())
    }

    /// Reads an entry into `slot`; false when it was skipped for want of a `<loc>`.
    pub(super) fn read_entry(
        &mut self,
        buf: &mut Vec<u8>,
        empty: bool,
        slot: &mut Option<Entry>,
    ) -> Result<bool, Error> {
        let start = self.entry_position;
        *slot = None;
        let mut parts = EntryParts::default();
        if !empty {
            self.read_entry_children(buf, &mut parts, slot)?;
        }
        self.scope = None;
        let Some(entry) = slot else {
            if parts.locs == 0 {
                self.finding(
                    Rule::LocMandatory,
                    "the entry has no loc; skipped".into(),
                    start,
                );
            }
            if let Some(checker) = &mut self.checker {
                checker.skip_entry(&mut self.findings);
            }
            return Ok(false);
        };
        entry.lastmod = parts.lastmod;
        entry.changefreq = parts.changefreq;
        entry.links = mem::take(&mut parts.links);
        entry.extensions = mem::take(&mut parts.extensions);
        if let Some(checker) = &mut self.checker {
            let before = self.findings.len();
            checker.check_entry_with(entry, parts.malformed.as_malformed(), &mut self.findings);
            if self.findings.len() > before {
                let start = self.place(start);
                for f in &mut self.findings[before..] {
                    f.position.get_or_insert(TextPosition {
                        line: start.line,
                        column: start.column,
                    });
                }
            }
        }
        Ok(true)
    }

    /// Reads an entry's children up to its end tag: the hot path of reading, one flat
    /// loop over events into `buf`, where the head and the gaps between entries go through
    /// `read_child`.
    pub(super) fn read_entry_children(
        &mut self,
        buf: &mut Vec<u8>,
        parts: &mut EntryParts,
        slot: &mut Option<Entry>,
    ) -> Result<(), Error> {
        loop {
            let event = next_event!(self, buf);
            let (e, empty) = match event {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                other => {
                    self.between_children(other)?;
                    continue;
                }
            };
            self.ns
                .push(&e)
                .map_err(|err| self.declaration_error(err))?;
            let at = self.position();
            parts.children += 1;
            self.check_children(parts.children)?;
            match self.classify(&e)? {
                tag @ (Tag::Loc | Tag::Lastmod | Tag::Changefreq) => {
                    self.stray_attributes(&e, at)?;
                    drop(e);
                    self.read_text_into(buf, empty)?;
                    self.entry_text(tag, at, parts, slot);
                }
                Tag::Md => {
                    // Into the entry once its <loc> has made it.
                    let md = match slot {
                        Some(entry) => &mut entry.md,
                        None => &mut parts.md,
                    };
                    if md.is_some() {
                        self.rs_attributes(&e, at, &mut Md::default())?;
                        self.finding(
                            Rule::MdNotRepeatable,
                            "the entry has more than one rs:md; the first is kept".into(),
                            at,
                        );
                    } else {
                        // Built where it stays: an `Md` is large, and moving it costs.
                        parts.malformed.md =
                            self.rs_attributes(&e, at, md.insert(Md::default()))?;
                    }
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                }
                Tag::Ln => {
                    let read = self.link_attributes(&e, at)?;
                    parts.malformed.add(read, &mut parts.links);
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                }
                Tag::Url | Tag::Sitemap => {
                    return Err(self.error(ErrorKind::NestedEntry(e.name().as_ref().to_owned())));
                }
                Tag::UrlSet | Tag::SitemapIndex => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                tag @ (Tag::MisplacedRs | Tag::MisplacedSitemap | Tag::Other) => {
                    let mut element = self.extension_start(&e, tag, at)?;
                    drop(e);
                    self.extension_content(buf, &mut element, empty)?;
                    parts.extensions.push(element);
                }
            }
        }
    }

    /// Reads the value of an entry's `<loc>`, `<lastmod>` or `<changefreq>` from `self.text`.
    pub(super) fn entry_text(
        &mut self,
        tag: Tag,
        at: Position,
        parts: &mut EntryParts,
        slot: &mut Option<Entry>,
    ) {
        let text = self.text();
        match tag {
            Tag::Loc => {
                parts.locs += 1;
                if parts.locs > 1 {
                    self.finding(
                        Rule::LocMandatory,
                        "more than one loc; the first is kept".into(),
                        at,
                    );
                } else {
                    // A `<loc>` written unescaped (a raw space in a file name, as Python
                    // resync's publisher writes them) is read as the URL standard reads
                    // it, with a finding that says so: skipping it would leave a resource
                    // the Source lists unread and uncounted.
                    let read = Uri::parse(text).map(|loc| (loc, None)).or_else(|err| {
                        Uri::from_unescaped(text)
                            .map(|loc| (loc, Some(err.clone())))
                            .map_err(|_| err)
                    });
                    match read {
                        Ok((loc, repaired)) => {
                            if let Some(err) = repaired {
                                self.finding(
                                    err.rule(),
                                    format!(
                                        "{err}; read as \"{loc}\", percent-encoded as the URL \
                                         standard does"
                                    ),
                                    at,
                                );
                            }
                            let mut entry = Entry::new(loc);
                            // An rs:md read before the <loc> (rare): from now on, the entry's.
                            entry.md = parts.md.take();
                            *slot = Some(entry);
                        }
                        Err(err) => self.value_finding(&err, at),
                    }
                }
            }
            Tag::Lastmod => match text.parse() {
                Ok(t) => parts.lastmod = Some(t),
                Err(err) => self.value_finding(&err, at),
            },
            _ => match text.parse() {
                Ok(c) => parts.changefreq = Some(c),
                Err(err) => self.value_finding(&err, at),
            },
        }
    }

    /// Closes `rs:md` or `rs:ln`: an empty element's scope, or the content of one written
    /// with an end tag, which may only be white space.
    pub(super) fn end_of_empty_element(
        &mut self,
        buf: &mut Vec<u8>,
        empty: bool,
    ) -> Result<(), Error> {
        if empty {
            self.ns.pop();
            return Ok(());
        }
        loop {
            match next_event!(self, buf) {
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                Event::Start(e) | Event::Empty(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                other => self.between_children(other)?,
            }
        }
    }

    /// An event other than a start or end tag where elements are expected: comments,
    /// processing instructions and white space are passed over, anything else refused.
    pub(super) fn between_children(&mut self, event: Event<'_>) -> Result<(), Error> {
        match event {
            Event::Comment(_) | Event::PI(_) => Ok(()),
            Event::DocType(_) => Err(self.error(ErrorKind::DocType)),
            Event::Decl(_) => Err(self.error(ErrorKind::MisplacedDeclaration)),
            Event::Eof => Err(self.error(ErrorKind::Unclosed(self.root_name.clone()))),
            other => self.expect_space(other),
        }
    }

    /// Reads the text of a simple element (`<loc>`, `<lastmod>`, `<changefreq>`) into
    /// `self.text`, references resolved, up to and including its end tag (closing its
    /// scope), with `buf` for the events. Markup inside is an error.
    pub(super) fn read_text_into(&mut self, buf: &mut Vec<u8>, empty: bool) -> Result<(), Error> {
        self.text.clear();
        if empty {
            self.ns.pop();
            return Ok(());
        }
        loop {
            let event = next_event!(self, buf);
            match event {
                Event::Text(t) => {
                    // Text without line breaks, controls or `U+FFFx` is its own content.
                    if needs_attention(t.as_bytes(), 0) {
                        let content = t.xml10_content();
                        self.push_text(&content)?;
                    } else {
                        self.push_checked_text(&t)?;
                    }
                }
                Event::CData(c) => {
                    let content = c.xml10_content();
                    self.push_text(&content)?;
                }
                Event::GeneralRef(reference) => {
                    let c = self.resolve_reference(&reference)?;
                    self.push_text(c.encode_utf8(&mut [0; 4]))?;
                }
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                Event::Start(e) | Event::Empty(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                Event::Comment(_) | Event::PI(_) => {}
                other => self.between_children(other)?,
            }
        }
    }
}
