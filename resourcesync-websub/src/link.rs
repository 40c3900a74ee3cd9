//! The `Link` header of WebSub's requests: the topic (`rel="self"`) and the hub.

use resourcesync_model::Uri;

/// The `Link` header value naming `topic` as `self` and `hub` as `hub`, as a Source's
/// `POST` to its hub and a hub's content distribution carry it (Change Notification 1.0.1,
/// sections 4.1 and 4.3; WebSub 5.3).
///
/// ```
/// let topic = "http://example.com/topic".parse()?;
/// let hub = "http://hub.example.org/".parse()?;
/// let header = resourcesync_websub::links(&topic, &hub);
/// assert_eq!(header, r#"<http://example.com/topic>; rel="self", <http://hub.example.org/>; rel="hub""#);
/// assert_eq!(resourcesync_websub::Links::parse(&header).topic(), Some(topic));
/// # Ok::<(), resourcesync_model::UriError>(())
/// ```
pub fn links(topic: &Uri, hub: &Uri) -> String {
    format!("<{topic}>; rel=\"self\", <{hub}>; rel=\"hub\"")
}

/// The links of one or more `Link` header values (RFC 8288): each target with its
/// relations. What cannot be read is skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    links: Vec<(String, Vec<String>)>,
}

impl Links {
    /// Reads a `Link` header value; call [`add`](Links::add) for each further one.
    pub fn parse(value: &str) -> Links {
        let mut links = Links::default();
        links.add(value);
        links
    }

    /// Adds the links of another `Link` header value.
    pub fn add(&mut self, value: &str) {
        let mut rest = value;
        // At most this many links are kept from hostile input.
        while self.links.len() < 64 {
            let Some(open) = rest.find('<') else { return };
            let Some(close) = rest[open..].find('>').map(|i| open + i) else {
                return;
            };
            let target = rest[open + 1..close].trim().to_owned();
            let after = &rest[close + 1..];
            // The parameters run to the next link: a comma outside quotes.
            let mut end = after.len();
            let mut quoted = false;
            for (i, c) in after.char_indices() {
                match c {
                    '"' => quoted = !quoted,
                    ',' if !quoted => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let mut rels = Vec::new();
            for param in after[..end].split(';') {
                let Some((name, value)) = param.split_once('=') else {
                    continue;
                };
                if name.trim().eq_ignore_ascii_case("rel") {
                    let value = value.trim().trim_matches('"');
                    rels.extend(value.split_ascii_whitespace().map(str::to_ascii_lowercase));
                }
            }
            self.links.push((target, rels));
            rest = &after[end..];
        }
    }

    /// The first target of relation `rel` that is an absolute URI.
    pub fn get(&self, rel: &str) -> Option<Uri> {
        self.links
            .iter()
            .filter(|(_, rels)| rels.iter().any(|r| r == rel))
            .find_map(|(target, _)| target.parse().ok())
    }

    /// The topic: the `self` link.
    pub fn topic(&self) -> Option<Uri> {
        self.get("self")
    }

    /// The hub: the first `hub` link.
    pub fn hub(&self) -> Option<Uri> {
        self.get("hub")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specification_s_examples_and_their_variants_read() {
        // Change Notification 1.0.1, Example 2, its three links over two lines.
        let links = Links::parse(
            "<http://example.com/dataset1/change/> ; rel=\"self\",\n\
             <http://hub.example.org/websub/> ; rel=\"hub\",\n\
             <http://www.example.com/dataset1/capabilitylist.xml> ; rel=\"resourcesync\"",
        );
        assert_eq!(
            links.topic().map(|u| u.to_string()),
            Some("http://example.com/dataset1/change/".into())
        );
        assert_eq!(
            links.hub().map(|u| u.to_string()),
            Some("http://hub.example.org/websub/".into())
        );
        assert!(links.get("resourcesync").is_some());
        // Unquoted, upper case, several relations, a comma inside a quoted parameter.
        let links = Links::parse(
            "<http://a.example/x>; title=\"a, b\"; rel=SELF, <http://h.example/>; rel=\"alternate hub\"",
        );
        assert_eq!(
            links.topic().map(|u| u.to_string()),
            Some("http://a.example/x".into())
        );
        assert_eq!(
            links.hub().map(|u| u.to_string()),
            Some("http://h.example/".into())
        );
        // Nothing readable.
        assert_eq!(Links::parse("garbage").topic(), None);
        assert_eq!(Links::parse("<relative>; rel=self").topic(), None);
    }
}
