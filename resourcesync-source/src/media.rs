//! The media type of a publication's file: what `build` lists, a bucket's object is
//! typed with, and `serve` answers with, decided once.

use std::path::Path;

use crate::engine::{DOCS, SOURCE_DESCRIPTION};

/// The media type of the file at `name` in a publication (its path under the publish
/// directory, `/`-separated): the standard's documents, the Source Description and the
/// `.xml` files under `resourcesync/`, are `application/xml` (section 7); any other file
/// is typed as its name's extension says (a resource named
/// `data.xml` is `text/xml`, as its entry in the Resource List says).
///
/// ```
/// use resourcesync_source::media_type;
/// assert_eq!(media_type(".well-known/resourcesync"), "application/xml");
/// assert_eq!(media_type("resourcesync/resourcelist.xml"), "application/xml");
/// assert_eq!(media_type("data/records.xml"), "text/xml");
/// assert_eq!(media_type("notes"), "application/octet-stream");
/// ```
pub fn media_type(name: &str) -> &'static str {
    let document = name == SOURCE_DESCRIPTION
        || name
            .strip_prefix(DOCS)
            .is_some_and(|rest| rest.starts_with('/') && rest.ends_with(".xml"));
    if document {
        return "application/xml";
    }
    guessed(Path::new(name))
}

/// The media type a file's name says (its extension's, as mime_guess knows it), or
/// `application/octet-stream`, what web servers serve a name they do not know as.
pub(crate) fn guessed(path: &Path) -> &'static str {
    mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream")
}
