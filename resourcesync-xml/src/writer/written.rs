//! Documents this crate's writer wrote, read back as it laid them out: their entries'
//! bytes, to write again without making them again.

use super::*;

/// The entries of a document this crate's writer wrote, each as its bytes (its element
/// and the line break after it), in order: for [`Writer::write_written`] and
/// [`SetWriter::write_written`](crate::SetWriter::write_written), to write them again
/// without making them again. `None` when the document is not laid out as this crate
/// writes one (its entries one after the other, each on a line of its own, up to the
/// root's end tag); the entries are not read or checked.
///
/// ```
/// use resourcesync_model::{Document, DocumentHead, DocumentKind, Entry};
/// use resourcesync_xml::{Writer, written_entries, write_document};
///
/// let mut document = Document::new(DocumentHead::of_kind(DocumentKind::ResourceList));
/// document.entries.push(Entry::new("http://example.com/a".parse()?));
/// document.entries.push(Entry::new("http://example.com/b".parse()?));
/// let xml = write_document(Vec::new(), &document)?.output;
///
/// let entries = written_entries(&xml).expect("written by this crate");
/// assert_eq!(entries[1], b"<url><loc>http://example.com/b</loc></url>\n");
/// let mut writer = Writer::new(Vec::new(), &document.head)?;
/// for entry in entries {
///     writer.write_written(entry)?;
/// }
/// assert_eq!(writer.finish()?.output, xml);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn written_entries(document: &[u8]) -> Option<Vec<&[u8]>> {
    let root = if memchr::memmem::rfind(document, b"</urlset>").is_some() {
        Root::UrlSet
    } else {
        Root::SitemapIndex
    };
    let (start, end) = element_tags(root.entry_element());
    let root_end = format!("</{}>", root.element());
    let body_end = memchr::memmem::rfind(document, root_end.as_bytes())?;
    let body = &document[..body_end];
    let Some(first) = memchr::memmem::find(body, start.as_bytes()) else {
        return Some(Vec::new());
    };
    let mut entries = Vec::new();
    let mut at = first;
    let close = [end.as_bytes(), b"\n"].concat();
    for found in memchr::memmem::find_iter(&body[first..], &close) {
        let stop = first + found + close.len();
        if !body[at..].starts_with(start.as_bytes()) {
            return None;
        }
        entries.push(&body[at..stop]);
        at = stop;
    }
    (at == body.len()).then_some(entries)
}

/// A `<urlset>` document this crate wrote, read back and split into its entries as they
/// were written: what [`SetWriter::write_written_entries`](crate::SetWriter::write_written_entries)
/// takes unchanged entries from, by reference, without copying or checking them again.
///
/// Made only by [`WrittenDocument::new`], which checks that each entry is one `<url>`
/// element as [`write_written`](Writer::write_written) requires (its start tag first, its
/// end tag, then a line break, ending it and nowhere before) and that the entries follow
/// one another up to the document's end tag. (As with [`written_entries`], what precedes
/// the first entry is taken for the head: a document with no `<url>` has no entry.)
///
/// ```
/// use resourcesync_model::{Document, DocumentHead, DocumentKind, Entry};
/// use resourcesync_xml::{WrittenDocument, write_document, written_entries};
///
/// let mut document = Document::new(DocumentHead::of_kind(DocumentKind::ResourceList));
/// document.entries.push(Entry::new("http://example.com/a".parse()?));
/// document.entries.push(Entry::new("http://example.com/b".parse()?));
/// let xml = write_document(Vec::new(), &document)?.output;
///
/// let written = WrittenDocument::new(xml.clone()).expect("written by this crate");
/// assert_eq!(written.len(), 2);
/// assert_eq!(written.entry(1), written_entries(&xml).unwrap()[1]);
/// assert!(WrittenDocument::new(b"<urlset><url></url>\n".to_vec()).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct WrittenDocument {
    bytes: Vec<u8>,
    /// Where each entry ends in `bytes`, the first starting at `first`.
    ends: Vec<usize>,
    first: usize,
}

impl WrittenDocument {
    /// Splits `bytes`, a `<urlset>` document, into its entries; `None` when it is not as
    /// this crate writes it.
    pub fn new(bytes: Vec<u8>) -> Option<WrittenDocument> {
        use memchr::memmem::Finder;
        use std::sync::LazyLock;
        // Called for documents of 50,000 entries: the searcher is made once.
        static URL_END: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"</url>"));
        const START: &[u8] = b"<url>";
        let end_len = URL_END.needle().len();
        let body_end = memchr::memmem::rfind(&bytes, b"</urlset>")?;
        let body = &bytes[..body_end];
        let Some(first) = memchr::memmem::find(body, START) else {
            return Some(WrittenDocument {
                bytes,
                ends: Vec::new(),
                first: body_end,
            });
        };
        let mut ends = Vec::new();
        let mut at = first;
        for found in URL_END.find_iter(&body[first..]) {
            let found = first + found;
            let stop = found + end_len + 1;
            let one_element = body[at..].starts_with(START)
                && body.get(found + end_len) == Some(&b'\n')
                && stop - at > START.len() + end_len;
            if !one_element {
                return None;
            }
            ends.push(stop);
            at = stop;
        }
        (at == body.len()).then_some(WrittenDocument { bytes, ends, first })
    }

    /// Its entries.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it has no entry.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The bytes of entry `i` (from 0), with its line break. Panics past the last.
    pub fn entry(&self, i: usize) -> &[u8] {
        &self.bytes[self.entry_range(i)]
    }

    /// Where entry `i` lies in the document's bytes.
    pub(crate) fn entry_range(&self, i: usize) -> std::ops::Range<usize> {
        let start = i
            .checked_sub(1)
            .map_or(self.first, |before| self.ends[before]);
        start..self.ends[i]
    }

    /// The document's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its entries' bytes, one after another: from the start of the first to the line
    /// break after the last (empty when it has none).
    pub fn entry_bytes(&self) -> &[u8] {
        match self.ends.last() {
            Some(&end) => &self.bytes[self.first..end],
            None => &[],
        }
    }
}

/// An entry element's start and end tags.
pub(super) fn element_tags(element: &str) -> (String, String) {
    (format!("<{element}>"), format!("</{element}>"))
}

/// Checks that `entry` is one entry element of a `root` document as this crate writes it:
/// it starts with the start tag, and the end tag, followed by a line break, is its first
/// and ends it.
pub(crate) fn check_written(root: Root, entry: &[u8]) -> Result<(), WriteError> {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Called once per entry of sets of millions: the searchers are made once.
    static URL_END: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"</url>"));
    static SITEMAP_END: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"</sitemap>"));
    let element = root.entry_element();
    let (start, end): (&[u8], &Finder<'static>) = match root {
        Root::UrlSet => (b"<url>", &URL_END),
        Root::SitemapIndex => (b"<sitemap>", &SITEMAP_END),
    };
    let end_len = end.needle().len();
    let one_element = entry.starts_with(start)
        && entry.ends_with(b">\n")
        && entry.len() > start.len() + end_len
        && end.find(entry) == entry.len().checked_sub(end_len + 1);
    if one_element {
        Ok(())
    } else {
        Err(WriteError::Invalid(format!(
            "not one <{element}> entry as this crate writes it: {:?}",
            String::from_utf8_lossy(&entry[..entry.len().min(64)]),
        )))
    }
}
