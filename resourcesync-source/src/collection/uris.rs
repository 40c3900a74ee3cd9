//! A resource's URI from its path under the base, made only when needed.

use super::*;

/// The URI of the resource at `path` (relative, `/`-separated): its segments
/// percent-encoded under the base.
pub(super) fn resource_uri(directory: &Directory, path: &str) -> Result<Uri, String> {
    let mut url = url::Url::parse(directory.base().as_str()).map_err(|e| e.to_string())?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err("the base URL has a query or a fragment".into());
    }
    url.path_segments_mut()
        .map_err(|()| "the base URL cannot have a path".to_string())?
        .pop_if_empty();
    // A base at the root keeps its `/` through `pop_if_empty`: one `/` between each.
    let mut text = url.as_str().trim_end_matches('/').to_owned();
    for segment in path.split('/') {
        text.push('/');
        crate::push_segment(&mut text, segment);
    }
    text.parse()
        .map_err(|e: resourcesync_model::UriError| e.to_string())
}

/// The URIs of the collection's files under the base.
pub(super) struct Uris<'a> {
    pub(super) directory: &'a Directory,
    /// What [`resource_uri`] makes of a plain name is this prefix (the base as `url` writes
    /// it, ending in `/`) followed by the name as it stands.
    pub(super) prefix: Option<String>,
    /// Whether the prefix holds no character XML text escapes, found once: [`Uris::names`]
    /// asks for every entry of every run.
    pub(super) prefix_unescaped: bool,
}

impl Uris<'_> {
    pub(super) fn new(directory: &Directory) -> Uris<'_> {
        let prefix = resource_uri(directory, "a")
            .ok()
            .and_then(|uri| uri.as_str().strip_suffix('a').map(str::to_owned))
            .filter(|prefix| prefix.ends_with('/'));
        let prefix_unescaped = prefix.as_deref().is_some_and(unescaped);
        Uris {
            directory,
            prefix,
            prefix_unescaped,
        }
    }

    /// The URI of the file at `path` (`relative` as the walk found it), or why it has none
    /// a web server would serve.
    ///
    /// A plain name is the prefix and the name, with nothing to encode or check: the same
    /// URI [`resource_uri`] makes, which `Directory::path` maps back to the same file. Any
    /// other name goes the long way, through `url` and back.
    pub(super) fn of(&self, path: &str, relative: &Path) -> Result<Uri, &'static str> {
        if self.is_plain(path) {
            return self
                .of_found(None, path)
                .map_err(|_| "a name that makes no URI");
        }
        let uri = resource_uri(self.directory, path)
            .map_err(|_| "a name that makes no URI under the base")?;
        // The URI must name this file again where a web server looks it up.
        if self.directory.path(&uri).ok().as_deref() != Some(&self.directory.root().join(relative))
        {
            return Err("a name a web server would not serve as written");
        }
        Ok(uri)
    }

    /// Whether the file at `path` has a plain name, whose URI is the prefix and the path.
    pub(super) fn is_plain(&self, path: &str) -> bool {
        self.prefix.is_some() && plain(path)
    }

    /// The URI of a resource found: the one the walk or the list made (`uri`), or else
    /// its plain name's, made now.
    pub(super) fn of_found(&self, uri: Option<&Uri>, path: &str) -> Result<Uri, BuildError> {
        if let Some(uri) = uri {
            return Ok(uri.clone());
        }
        let made = match &self.prefix {
            Some(prefix) => Uri::parse(&[prefix, path].concat()).map_err(|e| e.to_string()),
            None => Err("no plain name without a prefix".to_owned()),
        };
        made.map_err(|reason| BuildError::Read {
            path: PathBuf::from(path),
            source: io::Error::new(io::ErrorKind::InvalidData, reason),
        })
    }

    /// Whether an entry written before is that of the resource at `path` (`uri` as in
    /// [`of_found`](Uris::of_found)): its `<loc>` is the URI as written. One with a
    /// character escaped in XML text is made again instead.
    pub(super) fn names(&self, entry: &[u8], uri: Option<&Uri>, path: &str) -> bool {
        let (head, tail) = match (uri, &self.prefix) {
            (Some(uri), _) if unescaped(uri.as_str()) => (uri.as_str(), ""),
            (None, Some(prefix)) if self.prefix_unescaped => (prefix.as_str(), path),
            _ => return false,
        };
        unescaped(tail)
            && entry
                .strip_prefix(b"<url><loc>")
                .and_then(|rest| rest.strip_prefix(head.as_bytes()))
                .and_then(|rest| rest.strip_prefix(tail.as_bytes()))
                .is_some_and(|rest| rest.starts_with(b"</loc>"))
    }
}

/// Whether `text` is written in XML as it is: no `&`, `<` or `>` (the only characters of a
/// URI that XML text escapes). One branch-free pass, which the compiler vectorises.
pub(super) fn unescaped(text: &str) -> bool {
    !text.bytes().fold(false, |markup, b| {
        markup | (b == b'&') | (b == b'<') | (b == b'>')
    })
}

/// Whether every segment of a `/`-separated path is unreserved characters only (RFC 3986:
/// ASCII letters and digits, `-._~`), which no URI encodes, and none is empty, `.`, `..` or
/// longer than a file's name may be.
pub(super) fn plain(path: &str) -> bool {
    // Bytes, not `split('/')`: this runs for every file of every walk.
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    path.as_bytes().split(|&b| b == b'/').all(|segment| {
        !segment.is_empty()
            && segment != b"."
            && segment != b".."
            && segment.len() <= crate::MAX_SEGMENT_LEN
            && segment.iter().all(|&b| unreserved(b))
    })
}

/// The Resource List entry of a resource.
pub(super) fn resource_entry(uri: &Uri, resource: &Resource, media_types: &MediaTypes) -> Entry {
    let mut entry = Entry::new(uri.clone())
        .with_lastmod(resource.lastmod())
        .with_length(resource.length)
        .with_hash(resource.hashes());
    if let Some(media_type) = media_types.get(resource.media_type) {
        entry = entry.with_media_type(media_type.clone());
    }
    entry
}
