//! Names as printed: a file's name is the collection owner's text, and may hold what a
//! terminal obeys.

use std::fmt;
use std::path::Path;

/// A path as a message prints it: as it is when every character of it is printable, else
/// quoted, its other characters escaped as Rust writes them (`"a\nb"`, `"\u{1b}[2J"`,
/// `"\u{202e}"`, a byte that is not UTF-8 as `\xff`). A name holding an escape sequence
/// then cannot move a terminal's cursor or recolour what follows, a newline cannot forge
/// a line of output, and a bidirectional override cannot show a name backwards.
///
/// ```
/// use std::path::Path;
/// use resourcesync_source::Shown;
///
/// assert_eq!(Shown(Path::new("docs/a b.txt")).to_string(), "docs/a b.txt");
/// assert_eq!(Shown(Path::new("a\nskipped b")).to_string(), r#""a\nskipped b""#);
/// assert_eq!(Shown(Path::new("\u{1b}[2J")).to_string(), r#""\u{1b}[2J""#);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(pub &'a Path);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.to_str() {
            Some(text) if text.chars().all(printable) => f.write_str(text),
            // The quotes say where an escaped name starts and ends.
            _ => write!(f, "{:?}", self.0),
        }
    }
}

/// Text from outside as a message prints it ([`resourcesync_model::text::escaped`]).
pub(crate) use resourcesync_model::text::escaped;
use resourcesync_model::text::printable;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_printable_names_are_shown_as_they_are() {
        for (name, shown) in [
            ("plain/é ü.txt", "plain/é ü.txt"),
            ("tab\there", r#""tab\there""#),
            ("cr\rline", r#""cr\rline""#),
            ("bell\u{7}", r#""bell\u{7}""#),
            ("c1\u{9b}31m", r#""c1\u{9b}31m""#),
            ("gnp.\u{202e}txt", r#""gnp.\u{202e}txt""#),
            ("line\u{2028}sep", r#""line\u{2028}sep""#),
            ("quote\"", r#""quote\"""#),
            ("back\\slash", r#""back\\slash""#),
        ] {
            assert_eq!(Shown(Path::new(name)).to_string(), shown, "{name:?}");
        }
    }

    #[test]
    fn text_is_escaped_character_by_character() {
        assert_eq!(escaped("http://a/\"b\""), "http://a/\"b\"");
        assert_eq!(escaped("x\u{1b}[31m\u{202e}y"), "x\\u{1b}[31m\\u{202e}y");
    }

    #[cfg(unix)]
    #[test]
    fn a_name_that_is_not_utf8_is_shown_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let name = std::ffi::OsStr::from_bytes(b"not\xffutf8");
        assert_eq!(Shown(Path::new(name)).to_string(), r#""not\xFFutf8""#);
    }
}
