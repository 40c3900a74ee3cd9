//! Text from outside (a Source's words, a file's name, a line of a list) as a message
//! prints it: what a terminal obeys (escape sequences, a newline that forges a line, a
//! bidirectional override) escaped, the rest as it is.

/// Text from outside (a URI as given, a line of a list, a server's reason) as a message
/// prints it: each character that does not print as itself escaped as Rust writes it
/// (`\u{1b}`), the rest as it is, quotes and apostrophes included, without quotes around
/// it (the message around it says where it is).
///
/// ```
/// use resourcesync_model::text::escaped;
///
/// assert_eq!(escaped("the hub's operator allows"), "the hub's operator allows");
/// assert_eq!(escaped("two\nlines \u{1b}[2J"), r"two\nlines \u{1b}[2J");
/// ```
pub fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if text
        .chars()
        .all(|c| printable(c) || matches!(c, '"' | '\\'))
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if printable(c) || matches!(c, '"' | '\\') {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether `c` prints as itself, the same in every place: not a control character
/// (C0, DEL, C1), not a line or paragraph separator, not a format character that
/// changes how the text around it is shown (bidirectional marks, embeddings, overrides
/// and isolates; zero-width characters), and not a quote or backslash, which the quoted
/// form escapes and would otherwise be read as its start or escapes.
pub fn printable(c: char) -> bool {
    !(c.is_control()
        || matches!(
            c,
            '"' | '\\'
                | '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{feff}'
        ))
}
