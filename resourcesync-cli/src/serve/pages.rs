//! What `serve` derives from the Source Description for discovery: the home page, the
//! Sitemap lines of robots.txt, the `Link` header, and the reading of the documents.

use super::*;
use resourcesync_source::discovery;

/// Reads a document of at most [`MAX_DOCUMENT`] bytes with resourcesync-xml.
pub(super) fn read_bounded(file: &std::fs::File) -> Result<Document, String> {
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_DOCUMENT {
        return Err(format!("longer than {MAX_DOCUMENT} bytes"));
    }
    // Findings (rules broken) do not stop discovery: a Destination would follow the
    // links all the same.
    resourcesync_xml::read_document(&bytes)
        .map(|(document, _findings)| document)
        .map_err(|e| e.to_string())
}

/// The `<loc>` of every entry of `document` whose capability is `capability`, if it can
/// stand in a `Link` header, an HTML attribute and a robots.txt line as it is
/// ([`discovery::usable`]).
///
/// The reader reports other schemes (`javascript:` among them) as findings but still
/// returns them; put in the home page's links they would run in a visitor's browser.
pub(super) fn locs_of(document: &Document, capability: &Capability) -> Vec<String> {
    document
        .entries
        .iter()
        .filter(|e| e.md.as_ref().and_then(|md| md.capability.as_ref()) == Some(capability))
        .map(|e| e.loc.as_str())
        .filter(|loc| discovery::usable(loc))
        .map(str::to_owned)
        .collect()
}

/// `/`: a page with a `<link rel="resourcesync">` per Capability List (section 6.3.3).
pub(super) async fn home_page(shared: &Arc<Shared>) -> Response {
    let lists = match shared.capability_lists().await {
        None => return plain(StatusCode::NOT_FOUND, "no Source Description yet\n"),
        Some(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
        Some(Ok(lists)) => lists,
    };
    let page = discovery::link_page(
        "ResourceSync Source",
        lists.lists.iter().map(String::as_str),
        Some("The Source Description (/.well-known/resourcesync) lists these Capability Lists."),
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// `/robots.txt`: a `Sitemap` line per Resource List of each Capability List (section
/// 6.3.4). The Capability Lists are read at each request, as robots.txt is seldom asked
/// for; one that cannot be read is named in a comment.
pub(super) async fn robots_txt(shared: &Arc<Shared>) -> Response {
    let shared = Arc::clone(shared);
    // Opening and reading the documents blocks; the publication is opened once, so that
    // every document read is of one generation.
    tokio::task::spawn_blocking(move || {
        let root = match publication::open_publication(&shared.dir) {
            Ok(root) => root,
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => {
                return plain(StatusCode::NOT_FOUND, "no Source Description yet\n");
            }
            Err(e) => {
                let e = format!("cannot read the Source Description: {e}");
                return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response();
            }
        };
        let lists = match shared.capability_lists_in(&root) {
            None => return plain(StatusCode::NOT_FOUND, "no Source Description yet\n"),
            Some(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
            Some(Ok(lists)) => lists,
        };
        let mut resource_lists = Vec::new();
        let mut unread = String::new();
        for uri in &lists.lists {
            let read = || {
                let relative = relative_path_of_uri(uri).ok_or("not a path of this server")?;
                match publication::open_in(&root, &shared.dir, &relative, false) {
                    Ok(Found::File(file, _) | Found::Index(file, _)) => read_bounded(&file),
                    Ok(Found::Directory) => Err("not found".to_owned()),
                    Err(e) if status_of(&e) == StatusCode::NOT_FOUND => Err("not found".to_owned()),
                    Err(e) => Err(format!("cannot open: {e}")),
                }
            };
            match read() {
                Ok(document) => {
                    resource_lists.extend(locs_of(&document, &Capability::ResourceList));
                }
                Err(e) => {
                    // A line break would make a line of its own.
                    let e = e.replace(['\r', '\n'], " ");
                    let uri = uri.replace(['\r', '\n'], " ");
                    unread.push_str(&format!("# {uri}: {e}\n"));
                }
            }
        }
        let text = discovery::robots_txt(resource_lists.iter().map(String::as_str)) + &unread;
        ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
    })
    .await
    .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

/// A generated page (the home page, robots.txt) under the conditionals, which only a
/// 200 is subject to (RFC 9110 13.2.1). It has no validator: a list of tags in
/// If-Match matches nothing (412), If-None-Match `*` matches the page there is (304,
/// with the 200's `Vary`), and the dates and If-Range have nothing to compare with.
pub(super) fn generated_page(headers: &HeaderMap, page: Response) -> Response {
    if page.status() != StatusCode::OK {
        return page;
    }
    if !conditional::if_match_holds(headers, None) {
        return StatusCode::PRECONDITION_FAILED.into_response();
    }
    if headers.contains_key(header::IF_NONE_MATCH) && conditional::none_match(headers, None) {
        let len = hyper::body::Body::size_hint(page.body()).lower();
        let compressed = page
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|media_type| compressed_type(media_type, len));
        return not_modified(compressed, None);
    }
    page
}

/// The `Link` header of a resource (section 6.3.3): one `rel="resourcesync"` link per
/// Capability List. `None` for the ResourceSync documents themselves: the well-known
/// URI, and whatever sits in a Capability List's directory (unless that is the root),
/// which is where a publication keeps its documents and packages.
///
/// Every Capability List is named, as the server does not know which set a resource
/// belongs to; a publication with one set (the usual case) gets the exact link.
pub(super) fn link_header(discovered: &Discovered, relative: &Path) -> Option<HeaderValue> {
    if within(relative, Path::new(".well-known")) {
        return None;
    }
    let discovery = discovered.as_ref().ok()?;
    let document = discovery.documents.iter().any(|(list, directory)| {
        relative == list || directory.as_ref().is_some_and(|d| within(relative, d))
    });
    if document {
        return None;
    }
    discovery.link.clone()
}

/// Whether `path` is `dir` or lies beneath it, as [`Path::starts_with`] says, for the
/// relative paths `serve` makes ([`relative_path`](super::relative_path): no `.` or empty
/// segment). On Unix, where such a path's components are its bytes between slashes, a
/// path whose bytes do not begin with `dir`'s is not asked of `starts_with` (which parses
/// both into components; a request asks this of every document's directory). Elsewhere a
/// segment may read as a drive prefix, compared without case: `starts_with` alone.
pub(super) fn within(path: &Path, dir: &Path) -> bool {
    #[cfg(unix)]
    if !path
        .as_os_str()
        .as_encoded_bytes()
        .starts_with(dir.as_os_str().as_encoded_bytes())
    {
        return false;
    }
    path.starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_answers_as_starts_with_for_the_paths_serve_makes() {
        let paths = [
            "",
            "resourcesync",
            "resourcesync/capabilitylist.xml",
            "resourcesync2/a.txt",
            "resourcesyncx",
            ".well-known",
            ".well-known/resourcesync",
            ".well-knownx/resourcesync",
            "a/.well-known",
            "a/b/c.txt",
            "a/bc/d",
            "caf\u{e9}/r\u{e9}sum\u{e9}.txt",
        ];
        for path in paths {
            // The paths as `relative_path` makes them, from a request's path.
            let Some(path) = relative_path(&format!("/{path}")) else {
                continue;
            };
            for dir in [".well-known", "resourcesync", "a/b", "a", "caf\u{e9}"] {
                let dir = Path::new(dir);
                assert_eq!(
                    within(&path, dir),
                    path.starts_with(dir),
                    "{path:?} in {dir:?}"
                );
            }
        }
        assert!(within(
            Path::new("resourcesync/capabilitylist.xml"),
            Path::new("resourcesync")
        ));
        assert!(!within(
            Path::new("resourcesync2/a.txt"),
            Path::new("resourcesync")
        ));
    }
}
