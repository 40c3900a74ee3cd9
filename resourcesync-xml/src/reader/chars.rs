//! Characters as XML 1.0 allows them, and untrusted text cut for a message.

/// Whether `local` names an element of the Sitemap protocol that a reader reads.
pub(crate) fn is_sitemap_name(local: &str) -> bool {
    matches!(
        local,
        "urlset" | "sitemapindex" | "url" | "sitemap" | "loc" | "lastmod" | "changefreq"
    )
}

pub(super) fn is_xml_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// The first character XML 1.0 forbids: C0 controls other than tab, line feed and
/// carriage return, and U+FFFE and U+FFFF. (Surrogates cannot be in a `str`.)
pub(crate) fn check_chars(s: &str) -> Result<(), u32> {
    let bytes = s.as_bytes();
    // No byte below 0x20 and no 0xEF lead byte means nothing to look at. Only values
    // with one take the slow path. (`\0` stands for "no other byte".)
    if !needs_attention(bytes, 0) {
        return Ok(());
    }
    for (i, &b) in bytes.iter().enumerate() {
        if b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') {
            return Err(u32::from(b));
        }
        // U+FFFE and U+FFFF are EF BF BE and EF BF BF in UTF-8.
        if b == 0xEF && bytes.get(i + 1) == Some(&0xBF) {
            if let Some(&last @ (0xBE | 0xBF)) = bytes.get(i + 2) {
                return Err(0xFFC0 | u32::from(last & 0x3F));
            }
        }
    }
    Ok(())
}

/// The character a character reference (`#65`, `#x41`, without `&` and `;`) stands for.
/// XML's grammar allows digits only: `u32`'s own parsers also take a sign, and the
/// reference must name a character XML allows (checked by the caller).
pub(crate) fn char_reference(reference: &str) -> Option<char> {
    let (digits, radix) = match reference.strip_prefix("#x") {
        Some(hex) => (hex, 16),
        None => (reference.strip_prefix('#')?, 10),
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix)
        .ok()
        .and_then(char::from_u32)
}

/// Character references in an attribute value that XML's grammar refuses (a sign, no
/// digits), which quick-xml's unescaping accepts: the first, without `&` and `;`.
pub(crate) fn bad_char_reference(value: &str) -> Option<&str> {
    let mut rest = value;
    while let Some(at) = rest.find("&#") {
        let reference = &rest[at + 1..];
        let end = reference.find(';').unwrap_or(reference.len());
        if char_reference(&reference[..end]).is_none() {
            return Some(&reference[..end]);
        }
        rest = &reference[end..];
    }
    None
}

/// Whether `bytes` has a byte below 0x20, the byte 0xEF or `also`: a branch-free pass the
/// compiler vectorises, so that the common value costs one read of its bytes.
pub(super) fn needs_attention(bytes: &[u8], also: u8) -> bool {
    bytes.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == 0xEF) | (b == also)
    })
}

/// Cuts untrusted text for an error message.
/// Characters that cannot be seen (controls, byte order marks, zero-width and
/// bidirectional formatting characters) are shown as `<U+FEFF>`, so that a message names
/// what is there.
pub(super) fn clip(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == 40 {
            out.push('…');
            break;
        }
        if c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
        {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}
