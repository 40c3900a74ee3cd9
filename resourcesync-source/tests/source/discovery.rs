//! The Source's side of discovery in what `build` writes: served by any web server, the
//! publication points at its documents from robots.txt and from the about page.

use std::time::{Duration, SystemTime};

use resourcesync_source::collection::{Options, build};

fn t(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
}

#[test]
fn build_writes_robots_txt_and_the_link_page_unless_the_collection_has_its_own() {
    let root = tempfile::tempdir().unwrap();
    let collection = root.path().join("collection");
    std::fs::create_dir(&collection).unwrap();
    std::fs::write(collection.join("a.txt"), "a").unwrap();
    let publish = root.path().join("publish");
    let options = Options::new("http://example.com/".parse().unwrap());
    build(&collection, &publish, &options, t(0), &()).unwrap();
    let robots = std::fs::read_to_string(publish.join("robots.txt")).unwrap();
    assert!(
        robots
            .lines()
            .any(|l| l == "Sitemap: http://example.com/resourcesync/resourcelist.xml"),
        "{robots}"
    );
    let about = std::fs::read_to_string(publish.join("resourcesync/about.html")).unwrap();
    assert!(about.contains(
        "<link rel=\"resourcesync\" href=\"http://example.com/resourcesync/capabilitylist.xml\">"
    ));
    // Not a resource: the Resource List lists the collection's files only.
    let list = std::fs::read_to_string(publish.join("resourcesync/resourcelist.xml")).unwrap();
    assert!(!list.contains("robots.txt"));

    // The collection's own robots.txt is a resource, and the one served.
    std::fs::write(collection.join("robots.txt"), "User-agent: *\n").unwrap();
    build(&collection, &publish, &options, t(60), &()).unwrap();
    assert_eq!(
        std::fs::read_to_string(publish.join("robots.txt")).unwrap(),
        "User-agent: *\n"
    );
    let list = std::fs::read_to_string(publish.join("resourcesync/resourcelist.xml")).unwrap();
    assert!(list.contains("http://example.com/robots.txt"));

    // Gone from the collection: the publication's own again.
    std::fs::remove_file(collection.join("robots.txt")).unwrap();
    build(&collection, &publish, &options, t(120), &()).unwrap();
    let robots = std::fs::read_to_string(publish.join("robots.txt")).unwrap();
    assert!(robots.contains("Sitemap: "), "{robots}");
}
