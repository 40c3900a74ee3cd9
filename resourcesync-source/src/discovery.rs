//! The Source's side of discovery (section 6.3) beside the well-known Source Description:
//! a page that links to the Capability Lists with `<link rel="resourcesync">` and the
//! `Link` header of a resource (both section 6.3.3), and the `Sitemap` lines of
//! robots.txt that name the Resource Lists (section 6.3.4).
//!
//! Text only, from the documents' URIs: `build` writes the page and a `robots.txt` into
//! the publication, so that any web server (nginx, object storage) serves them;
//! `resourcesync serve` sends them and the header; an application that publishes with the
//! [`Publisher`](crate::Publisher) writes them where its own site has them (a robots.txt
//! it already serves takes the lines).
//!
//! A URI that cannot stand as it is in a header, an HTML attribute and a line of
//! robots.txt ([`usable`]) is left out of all three: only `http` and `https`, with no
//! white space, control character, `<`, `>` or `"` (a `javascript:` URI in a page's link
//! would run in a visitor's browser; a line break in a robots.txt line would make a line
//! of its own).
//!
//! ```
//! use resourcesync_source::discovery;
//!
//! let lists = ["http://example.com/resourcesync/capabilitylist.xml"];
//! assert_eq!(
//!     discovery::link_header(lists).as_deref(),
//!     Some("<http://example.com/resourcesync/capabilitylist.xml>; rel=\"resourcesync\"")
//! );
//! let robots = discovery::robots_txt(["http://example.com/resourcesync/resourcelist.xml"]);
//! assert!(robots.ends_with("Sitemap: http://example.com/resourcesync/resourcelist.xml\n"));
//! let page = discovery::link_page("ResourceSync Source", lists, None);
//! assert!(page.contains(
//!     "<link rel=\"resourcesync\" href=\"http://example.com/resourcesync/capabilitylist.xml\">"
//! ));
//! ```

/// Whether `uri` can stand as it is in a `Link` header, an HTML attribute and a line of
/// robots.txt: an `http` or `https` URI with no white space, control character, `<`, `>`
/// or `"`.
pub fn usable(uri: &str) -> bool {
    let scheme = uri.split_once(':').map_or("", |(scheme, _)| scheme);
    (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
        && !uri.contains(|c: char| c.is_whitespace() || c.is_control() || "<>\"".contains(c))
}

/// The `Link` header value that points a resource at `capability_lists` (section 6.3.3):
/// `<URI>; rel="resourcesync"` for each usable one, separated by `, `; `None` when none
/// is.
pub fn link_header<'a>(capability_lists: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let links: Vec<String> = capability_lists
        .into_iter()
        .filter(|uri| usable(uri))
        .map(|uri| format!("<{uri}>; rel=\"resourcesync\""))
        .collect();
    (!links.is_empty()).then(|| links.join(", "))
}

/// A robots.txt that names `resource_lists` (section 6.3.4): a comment, then a
/// `Sitemap: URI` line for each usable one.
pub fn robots_txt<'a>(resource_lists: impl IntoIterator<Item = &'a str>) -> String {
    let mut text = String::from("# The Resource Lists of this ResourceSync Source.\n");
    for uri in resource_lists.into_iter().filter(|uri| usable(uri)) {
        text.push_str("Sitemap: ");
        text.push_str(uri);
        text.push('\n');
    }
    text
}

/// An HTML page titled `title` that links to `capability_lists` (section 6.3.3): a
/// `<link rel="resourcesync">` in its head and a link in its body for each usable one,
/// and `note` (text, escaped here) as a paragraph.
pub fn link_page<'a>(
    title: &str,
    capability_lists: impl IntoIterator<Item = &'a str>,
    note: Option<&str>,
) -> String {
    let title = escape_html(title);
    let mut head = String::new();
    let mut body = String::new();
    for uri in capability_lists.into_iter().filter(|uri| usable(uri)) {
        let uri = escape_html(uri);
        head.push_str(&format!("<link rel=\"resourcesync\" href=\"{uri}\">\n"));
        body.push_str(&format!(
            "<li><a href=\"{uri}\">Capability List {uri}</a></li>\n"
        ));
    }
    let note = note.map_or_else(String::new, |note| {
        format!("<p>{}</p>\n", escape_html(note))
    });
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n{head}</head>\n<body>\n<h1>{title}</h1>\n{note}\
         <ul>\n{body}</ul>\n</body>\n</html>\n"
    )
}

/// `&`, `<`, `>` and `"` as character references, for text or an attribute's value.
fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            c => escaped.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cannot_stand_as_it_is_is_left_out_of_all_three() {
        let hostile = [
            "javascript:alert(1)",
            "http://example.com/a b",
            "http://example.com/a\r\nSitemap: http://evil.example/",
            "http://example.com/\"><script>",
            "ftp://example.com/cl.xml",
            "",
        ];
        assert_eq!(link_header(hostile), None);
        assert_eq!(
            robots_txt(hostile),
            "# The Resource Lists of this ResourceSync Source.\n"
        );
        let page = link_page("<t>", hostile, Some("a & b"));
        assert!(!page.contains("href"), "{page}");
        assert!(page.contains("<title>&lt;t&gt;</title>") && page.contains("<p>a &amp; b</p>"));
        // Upper-case schemes are schemes (RFC 3986 3.1).
        assert!(usable("HTTPS://example.com/cl.xml"));
    }

    #[test]
    fn every_usable_list_is_named_once_in_order() {
        let lists = ["http://a.example/1.xml", "https://b.example/2.xml?x=1&y=2"];
        assert_eq!(
            link_header(lists).as_deref(),
            Some(
                "<http://a.example/1.xml>; rel=\"resourcesync\", \
                 <https://b.example/2.xml?x=1&y=2>; rel=\"resourcesync\""
            )
        );
        assert_eq!(
            robots_txt(lists),
            "# The Resource Lists of this ResourceSync Source.\n\
             Sitemap: http://a.example/1.xml\nSitemap: https://b.example/2.xml?x=1&y=2\n"
        );
        let page = link_page("Source", lists, None);
        assert!(page.contains("href=\"https://b.example/2.xml?x=1&amp;y=2\""));
        assert_eq!(page.matches("rel=\"resourcesync\"").count(), 2);
    }
}
