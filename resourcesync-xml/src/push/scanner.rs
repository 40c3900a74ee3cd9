//! Where the parser's steps end in the text fed so far: quick-xml's tokens followed across
//! chunks.

use super::*;

/// Follows the text as quick-xml tokenizes it, across chunks, to know where the parser's
/// steps end: it records the offsets (in the text, BOM included) at which each event or
/// child element of the root ends, and the root's start tag.
#[derive(Default)]
pub(super) struct Scanner {
    /// The next offset to scan.
    pub(super) at: u64,
    /// The length of the BOM taken off the text, once the first bytes are in.
    pub(super) bom: Option<u64>,
    pub(super) lex: Lex,
    /// Open elements.
    pub(super) depth: u64,
    /// The root's start tag has been read.
    pub(super) rooted: bool,
    /// The root has ended.
    pub(super) closed: bool,
    /// Ends of the root's events and child elements not yet read, in order.
    pub(super) boundaries: VecDeque<u64>,
    /// The event or child of the root being scanned, and where it started.
    pub(super) open: Open,
    pub(super) open_at: u64,
    /// The end of the start tag of the child element being scanned.
    pub(super) open_tag_end: u64,
    /// The scanner no longer follows the text (a DOCTYPE, markup quick-xml refuses): it
    /// records nothing more, and the parser waits for the end of input or a limit.
    pub(super) halted: bool,
    /// Where the parser is: scanning stops at the first boundary after it.
    pub(super) stop: u64,
}

/// Where the scanner is in quick-xml's grammar.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Lex {
    #[default]
    Text,
    /// After `<`.
    Lt,
    /// After `<!`.
    Bang,
    /// In a start or end tag: quick-xml's `ElementParser` (quotes hide `>`), and the
    /// byte before, which makes a start tag empty when it is `/`.
    Tag { end: bool, quote: u8, prev: u8 },
    /// In a comment, `<!-` so far: its length and last two bytes (quick-xml ends it at
    /// the first `>` after `--`, six bytes in or more).
    Comment { len: u64, last: [u8; 2] },
    /// In a CDATA section, after `<![`: the last two bytes (it ends at `]]>`).
    CData { last: [u8; 2] },
    /// In a processing instruction: whether the last byte was `?` (the first is).
    Pi { question: bool },
}

/// What the root's child being scanned is.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub(super) enum Open {
    /// Nothing: the last one ended.
    #[default]
    None,
    /// Text; with a reference (`&`), which quick-xml reads as more than one event.
    Text { amp: bool },
    /// One piece of markup: a tag, comment, CDATA section, processing instruction.
    Markup,
    /// A child element whose start tag has been read.
    Element,
}

impl Scanner {
    /// Whether the end of an event or child of the root lies after `position` (where the
    /// parser is): then the parser's next step ends there or before.
    pub(super) fn boundary_after(&mut self, position: u64) -> bool {
        while self.boundaries.front().is_some_and(|&b| b <= position) {
            self.boundaries.pop_front();
        }
        !self.boundaries.is_empty()
    }

    /// Whether the event of the root being scanned starts at or after `position` and is
    /// longer than the event limit within the text held, so that the parser fails on it.
    pub(super) fn event_overflows(&self, position: u64, end: u64, max_event: u64) -> bool {
        matches!(self.open, Open::Markup | Open::Text { amp: false })
            && self.open_at >= position
            && end > self.open_at.saturating_add(max_event).saturating_add(1)
    }

    /// Whether the scanner is between the root's children (or before or after the root).
    pub(super) fn at_top(&self) -> bool {
        self.depth <= 1
    }

    /// Takes up at `at`, if it has not scanned so far: the children of the root before it
    /// were read in place, and it is the place after one, between two (see
    /// `PushReader::in_place`).
    pub(super) fn catch_up(&mut self, at: u64) {
        if self.at < at {
            self.at = at;
            self.lex = Lex::Text;
            self.depth = 1;
            self.open = Open::None;
            self.boundaries.clear();
        }
    }

    /// An event or child of the root ends at `at`.
    pub(super) fn boundary(&mut self, at: u64) {
        if self.rooted && self.boundaries.back() != Some(&at) {
            self.boundaries.push_back(at);
        }
    }

    pub(super) fn scan(&mut self, source: &Source) {
        if self.bom.is_none() {
            let first = source.data.get(..BOM.len().min(source.data.len()));
            match first {
                Some(first) if first.len() == BOM.len() || source.complete => {
                    let bom = if first == BOM { BOM.len() as u64 } else { 0 };
                    self.bom = Some(bom);
                    self.at = bom;
                }
                _ => return,
            }
        }
        if self.halted || self.at < source.base {
            return;
        }
        let from = (self.at - source.base) as usize;
        let Some(data) = source.data.get(from..) else {
            return;
        };
        let mut i = 0;
        while i < data.len() && !self.halted {
            // Far enough: the parser's next step ends before here. (The rest may be read
            // in place, unscanned.)
            if self.boundaries.back().is_some_and(|&b| b > self.stop) {
                break;
            }
            let at = self.at + i as u64;
            match self.lex {
                Lex::Text => {
                    let rest = &data[i..];
                    let found = if self.at_top() {
                        memchr::memchr2(b'<', b'&', rest)
                    } else {
                        memchr::memchr(b'<', rest)
                    };
                    let text_end = found.unwrap_or(rest.len());
                    if text_end > 0 && self.at_top() && self.open == Open::None {
                        self.open = Open::Text { amp: false };
                        self.open_at = at;
                    }
                    let Some(j) = found else {
                        i = data.len();
                        continue;
                    };
                    let at = at + j as u64;
                    i += j + 1;
                    if data[i - 1] == b'&' {
                        if self.open == Open::None {
                            self.open_at = at;
                        }
                        self.open = Open::Text { amp: true };
                        continue;
                    }
                    // `<`: the text before it ends here.
                    if self.at_top() {
                        if self.depth == 1 && !self.closed {
                            self.boundary(at);
                        }
                        self.open = Open::Markup;
                        self.open_at = at;
                    }
                    self.lex = Lex::Lt;
                }
                Lex::Lt => {
                    let b = data[i];
                    match b {
                        b'!' => {
                            self.lex = Lex::Bang;
                            i += 1;
                        }
                        b'?' => {
                            self.lex = Lex::Pi { question: true };
                            i += 1;
                        }
                        b'/' => {
                            self.lex = Lex::Tag {
                                end: true,
                                quote: 0,
                                prev: b'/',
                            };
                            i += 1;
                        }
                        // The byte is the tag's first: the tag's parser reads it.
                        _ => {
                            self.lex = Lex::Tag {
                                end: false,
                                quote: 0,
                                prev: 0,
                            }
                        }
                    }
                }
                Lex::Bang => {
                    match data[i] {
                        b'-' => {
                            self.lex = Lex::Comment {
                                len: 3,
                                last: [b'!', b'-'],
                            }
                        }
                        b'[' => self.lex = Lex::CData { last: [0, 0] },
                        // A DOCTYPE (refused, once read) or markup quick-xml refuses.
                        _ => self.halted = true,
                    }
                    i += 1;
                }
                Lex::Tag { end, quote, prev } => {
                    let rest = &data[i..];
                    let mut quote = quote;
                    let mut prev = prev;
                    let mut closed = None;
                    for j in memchr::memchr3_iter(b'>', b'\'', b'"', rest) {
                        let b = rest[j];
                        let before = if j > 0 { rest[j - 1] } else { prev };
                        match (quote, b) {
                            (0, b'>') => {
                                closed = Some((j, before));
                                break;
                            }
                            (0, q) => quote = q,
                            (q, c) if q == c => quote = 0,
                            _ => {}
                        }
                    }
                    match closed {
                        Some((j, before)) => {
                            i += j + 1;
                            self.lex = Lex::Text;
                            let tag_end = self.at + i as u64;
                            if end {
                                self.end_tag(tag_end);
                            } else {
                                self.start_tag(tag_end, before == b'/');
                            }
                        }
                        None => {
                            if let Some(&last) = rest.last() {
                                prev = last;
                            }
                            self.lex = Lex::Tag { end, quote, prev };
                            i = data.len();
                        }
                    }
                }
                Lex::Comment { len, last } => {
                    let b = data[i];
                    i += 1;
                    if b == b'>' && len > 5 && last == [b'-', b'-'] {
                        self.markup_end(self.at + i as u64);
                    } else {
                        self.lex = Lex::Comment {
                            len: len + 1,
                            last: [last[1], b],
                        };
                    }
                }
                Lex::CData { last } => {
                    let b = data[i];
                    i += 1;
                    if b == b'>' && last == [b']', b']'] {
                        self.markup_end(self.at + i as u64);
                    } else {
                        self.lex = Lex::CData { last: [last[1], b] };
                    }
                }
                Lex::Pi { question } => {
                    let b = data[i];
                    i += 1;
                    if b == b'>' && question {
                        self.markup_end(self.at + i as u64);
                    } else {
                        self.lex = Lex::Pi {
                            question: b == b'?',
                        };
                    }
                }
            }
        }
        if !self.halted {
            self.at += i.min(data.len()) as u64;
        }
    }

    /// A comment, CDATA section or processing instruction ends at `at`.
    pub(super) fn markup_end(&mut self, at: u64) {
        self.lex = Lex::Text;
        if self.at_top() {
            if self.depth == 1 && !self.closed {
                self.boundary(at);
            }
            self.open = Open::None;
        }
    }

    pub(super) fn start_tag(&mut self, at: u64, empty: bool) {
        if self.closed {
            // A second root: the parser refuses it.
            self.halted = true;
            return;
        }
        if !self.rooted {
            self.rooted = true;
            self.open = Open::None;
            if empty {
                self.closed = true;
            } else {
                self.depth = 1;
            }
            self.boundary(at);
            return;
        }
        if self.depth == 1 {
            if empty {
                self.boundary(at);
                self.open = Open::None;
            } else {
                self.open = Open::Element;
                self.open_tag_end = at;
            }
        }
        if !empty {
            self.depth += 1;
        }
    }

    pub(super) fn end_tag(&mut self, at: u64) {
        if self.depth == 0 {
            // An end tag outside the root: the parser refuses it.
            self.halted = true;
            return;
        }
        self.depth -= 1;
        match self.depth {
            0 => {
                self.boundary(at);
                self.closed = true;
                self.open = Open::None;
            }
            1 => {
                self.boundary(at);
                self.open = Open::None;
            }
            _ => {}
        }
    }
}
