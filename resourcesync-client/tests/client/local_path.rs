//! `PathMapper` and `PathSet`: what maps where, what is refused, and that the mapping is
//! injective and always relative.

use std::collections::HashMap;
use std::path::{Component, Path};

use proptest::prelude::*;
use resourcesync_client::local_path::{
    Collision, INDEX_NAME, LocalPath, LocalPathError, PathMapper, PathSet,
};
use resourcesync_model::Uri;

fn uri(s: &str) -> Uri {
    Uri::parse(s).unwrap()
}

fn mapper(base: &str) -> PathMapper {
    PathMapper::new(&uri(base)).unwrap()
}

fn map(base: &str, target: &str) -> Result<String, LocalPathError> {
    mapper(base)
        .local_path(&uri(target))
        .map(|p| p.as_str().to_owned())
}

#[test]
fn ordinary_uris_map_under_the_base() {
    for (base, target, path) in [
        (
            "http://example.com/",
            "http://example.com/a/b.txt",
            "a/b.txt",
        ),
        ("http://example.com", "http://example.com/res1", "res1"),
        ("http://example.com/", "https://example.com/res1", "res1"),
        ("http://example.com/", "http://EXAMPLE.COM:80/res1", "res1"),
        (
            "https://example.com/",
            "https://example.com:443/res1",
            "res1",
        ),
        (
            "http://example.com/dataset1/capabilitylist.xml",
            "http://example.com/dataset1/res/1.html",
            "res/1.html",
        ),
        (
            "http://example.com/dataset1/",
            "http://example.com/dataset%31/res",
            "res",
        ),
        ("http://example.com/", "http://example.com/a%20b", "a b"),
        (
            "http://example.com/",
            "http://example.com/caf%C3%A9",
            "café",
        ),
        ("http://example.com/", "http://example.com/café", "café"),
        ("http://example.com/", "http://example.com/%41", "A"),
        ("http://example.com/", "http://example.com/ab:c", "ab%3Ac"),
        ("http://example.com/", "http://example.com/ab%3ac", "ab%3Ac"),
        ("http://example.com/", "http://example.com/100%25", "100%25"),
        ("http://example.com/", "http://example.com/@user", "%40user"),
        ("http://example.com/", "http://example.com/a*b", "a%2Ab"),
        ("http://example.com/", "http://example.com/a%3Fb", "a%3Fb"),
        (
            "http://example.com/",
            "http://example.com/a%22%3C%3E%7C",
            "a%22%3C%3E%7C",
        ),
        ("http://example.com/", "http://example.com/%FF%FE", "%FF%FE"),
        (
            "http://example.com/",
            "http://example.com/a%E2%80%AEb",
            "a%E2%80%AEb",
        ),
        (
            "http://example.com/",
            "http://example.com/.hidden",
            ".hidden",
        ),
        ("http://example.com/", "http://example.com/...x", "...x"),
        ("http://example.com/", "http://example.com/res#frag", "res"),
        (
            "http://example.com/",
            "http://example.com/File:Example.jpg",
            "File%3AExample.jpg",
        ),
        (
            "http://example.com/",
            "http://example.com/CONSOLE",
            "CONSOLE",
        ),
        ("http://example.com/", "http://example.com/COM10", "COM10"),
    ] {
        assert_eq!(map(base, target).as_deref(), Ok(path), "{target}");
    }
}

#[test]
fn directories_map_to_the_index_name() {
    let base = "http://example.com/";
    assert_eq!(map(base, "http://example.com/").unwrap(), INDEX_NAME);
    assert_eq!(map(base, "http://example.com").unwrap(), INDEX_NAME);
    assert_eq!(map(base, "http://example.com/a/").unwrap(), "a/%index");
    assert_eq!(map(base, "http://example.com/?q").unwrap(), "%index@q");
    // A resource called like the index name is escaped, so it never meets it.
    assert_eq!(
        map(base, "http://example.com/a/%25index").unwrap(),
        "a/%25index"
    );
    assert_eq!(
        map("http://example.com/data/", "http://example.com/data/").unwrap(),
        INDEX_NAME
    );
}

#[test]
fn queries_are_kept_and_distinct() {
    let base = "http://example.com/";
    for (target, path) in [
        ("http://example.com/s?q=1", "s@q=1"),
        ("http://example.com/s?", "s@"),
        ("http://example.com/s?a=1&b=2", "s@a=1&b=2"),
        ("http://example.com/s?a=1%26b=2", "s@a=1%2526b=2"),
        ("http://example.com/s?q=a%20b", "s@q=a%2520b"),
        ("http://example.com/s?q=%41%7e", "s@q=A~"),
        ("http://example.com/s?q=%2f", "s@q=%252F"),
        ("http://example.com/s?path=/a/../b", "s@path=%2Fa%2F..%2Fb"),
        ("http://example.com/s?x=a:b@c?d", "s@x=a%3Ab%40c%3Fd"),
        ("http://example.com/s?q=é", "s@q=é"),
        ("http://example.com/s?q#frag", "s@q"),
    ] {
        assert_eq!(map(base, target).as_deref(), Ok(path), "{target}");
    }
    // Not the same files as paths that look alike.
    assert_eq!(map(base, "http://example.com/s%40q=1").unwrap(), "s%40q=1");
    assert_eq!(map(base, "http://example.com/s%3Fq=1").unwrap(), "s%3Fq=1");
}

#[test]
fn other_authorities_map_under_their_own_directory_when_allowed() {
    let strict = mapper("http://example.com/");
    let err = strict
        .local_path(&uri("http://cdn.example.org/x"))
        .unwrap_err();
    assert_eq!(
        err,
        LocalPathError::OtherAuthority {
            uri: "http://cdn.example.org/x".into(),
            authority: "cdn.example.org".into()
        }
    );
    // The real host is after the userinfo.
    assert!(matches!(
        strict.local_path(&uri("http://example.com@evil.example/x")),
        Err(LocalPathError::OtherAuthority { authority, .. }) if authority == "evil.example"
    ));
    // Another port is another authority.
    assert!(matches!(
        strict.local_path(&uri("http://example.com:8080/x")),
        Err(LocalPathError::OtherAuthority { .. })
    ));

    let open = strict.with_other_authorities(true);
    for (target, path) in [
        ("http://cdn.example.org/x", "@cdn.example.org/x"),
        ("https://CDN.example.org/a/", "@cdn.example.org/a/%index"),
        ("http://example.com:8080/x", "@example.com%3A8080/x"),
        ("http://[::1]:8080/x", "@[%3A%3A1]%3A8080/x"),
        ("http://bücher.example/x", "@xn--bcher-kva.example/x"),
        ("http://2130706433/x", "@127.0.0.1/x"),
    ] {
        assert_eq!(
            open.local_path(&uri(target)).unwrap().as_str(),
            path,
            "{target}"
        );
    }
    // The base's own URIs cannot reach an authority's directory.
    assert_eq!(
        open.local_path(&uri("http://example.com/@cdn.example.org/x"))
            .unwrap()
            .as_str(),
        "%40cdn.example.org/x"
    );
}

#[test]
fn outside_the_base_prefix_is_refused() {
    let base = "http://example.com/dataset1/capabilitylist.xml";
    for target in [
        "http://example.com/",
        "http://example.com/dataset1",
        "http://example.com/dataset2/x",
        "http://example.com/Dataset1/x",
        "http://example.com/dataset1x/y",
    ] {
        assert_eq!(
            map(base, target),
            Err(LocalPathError::OutsideBase {
                uri: target.into(),
                base: base.into()
            }),
            "{target}"
        );
    }
}

/// One hostile URI and the error variant's name it must give.
macro_rules! refused {
    ($($name:ident: $uri:expr => $variant:ident;)*) => {
        $(
            #[test]
            fn $name() {
                let result = mapper("http://example.com/").with_other_authorities(true).local_path(&uri($uri));
                assert!(
                    matches!(result, Err(LocalPathError::$variant { .. })),
                    "{}: {result:?}", $uri
                );
            }
        )*
    };
}

refused! {
    dot_segment: "http://example.com/a/./b" => DotSegment;
    dot_dot_segment: "http://example.com/a/../../etc/passwd" => DotSegment;
    last_dot_dot: "http://example.com/a/.." => DotSegment;
    encoded_dot_dot: "http://example.com/%2e%2E/etc/passwd" => EncodedDotSegment;
    half_encoded_dot_dot: "http://example.com/a/.%2e/x" => EncodedDotSegment;
    encoded_dot: "http://example.com/a/%2E/x" => EncodedDotSegment;
    encoded_backslash: "http://example.com/a%5c..%5c..%5cx" => Backslash;
    encoded_backslash_upper: "http://example.com/%5C" => Backslash;
    encoded_nul: "http://example.com/a%00b" => ControlCharacter;
    encoded_newline: "http://example.com/a%0Ab" => ControlCharacter;
    encoded_delete: "http://example.com/a%7F" => ControlCharacter;
    encoded_c1: "http://example.com/a%C2%85" => ControlCharacter;
    raw_c1: "http://example.com/a\u{85}" => ControlCharacter;
    encoded_nul_in_query: "http://example.com/a?b=%00" => ControlCharacter;
    encoded_slash: "http://example.com/a%2fb" => EncodedSlash;
    encoded_slash_dot_dot: "http://example.com/..%2F..%2Fx" => EncodedSlash;
    drive_letter: "http://example.com/C:/Windows" => DriveLetter;
    drive_letter_encoded: "http://example.com/c%3A/x" => DriveLetter;
    drive_letter_relative: "http://example.com/a/C:x" => DriveLetter;
    device_name: "http://example.com/CON" => ReservedName;
    device_name_lower_with_extension: "http://example.com/a/nul.txt" => ReservedName;
    device_name_two_extensions: "http://example.com/com1.tar.gz" => ReservedName;
    device_name_directory: "http://example.com/aux/x" => ReservedName;
    device_name_superscript: "http://example.com/LPT%C2%B9" => ReservedName;
    device_name_console: "http://example.com/conin$" => ReservedName;
    device_name_trailing_space: "http://example.com/con%20.txt" => ReservedName;
    trailing_dot: "http://example.com/a." => TrailingDotOrSpace;
    trailing_dot_directory: "http://example.com/a./b" => TrailingDotOrSpace;
    trailing_space: "http://example.com/a%20" => TrailingDotOrSpace;
    trailing_dot_in_query: "http://example.com/a?v=1." => TrailingDotOrSpace;
    empty_segment: "http://example.com/a//b" => EmptySegment;
    leading_empty_segment: "http://example.com//a" => EmptySegment;
    not_http: "ftp://example.com/a" => NotHttp;
    file_scheme: "file:///etc/passwd" => NotHttp;
    bad_port: "http://example.com:99999/a" => Unparsable;
}

#[test]
fn raw_backslashes_and_nul_never_become_uris() {
    for s in ["http://example.com/a\\..\\x", "http://example.com/a\0b"] {
        assert!(Uri::parse(s).is_err(), "{s:?}");
    }
}

#[test]
fn long_names_and_paths_are_refused() {
    let m = mapper("http://example.com/");
    let long = "x".repeat(256);
    assert_eq!(
        m.local_path(&uri(&format!("http://example.com/{long}"))),
        Err(LocalPathError::ComponentTooLong {
            uri: format!("http://example.com/{long}"),
            length: 256
        })
    );
    // Counted after escaping: 100 colons are 300 bytes.
    let colons = ":".repeat(100);
    assert!(matches!(
        m.local_path(&uri(&format!("http://example.com/ab{colons}"))),
        Err(LocalPathError::ComponentTooLong { length: 302, .. })
    ));
    assert!(
        m.local_path(&uri(&format!("http://example.com/{}", "x".repeat(255))))
            .is_ok()
    );
    let deep = format!("http://example.com/{}", vec!["d".repeat(200); 6].join("/"));
    assert!(matches!(
        m.local_path(&uri(&deep)),
        Err(LocalPathError::PathTooLong {
            length: 1205,
            max: 1024,
            ..
        })
    ));
    assert!(
        m.clone()
            .with_max_path_bytes(2000)
            .local_path(&uri(&deep))
            .is_ok()
    );
    assert!(matches!(
        m.with_max_path_bytes(5)
            .local_path(&uri("http://example.com/abc/def")),
        Err(LocalPathError::PathTooLong {
            length: 7,
            max: 5,
            ..
        })
    ));
}

#[test]
fn a_bad_base_is_refused() {
    for (base, check) in [
        ("ftp://example.com/", "NotHttp"),
        ("http://example.com/../x/", "DotSegment"),
        ("http://example.com/a%2fb/", "EncodedSlash"),
    ] {
        let err = PathMapper::new(&uri(base)).unwrap_err();
        assert!(format!("{err:?}").starts_with(check), "{base}: {err:?}");
    }
}

#[test]
fn errors_name_the_uri() {
    let err = map("http://example.com/", "http://example.com/%2e%2e/x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"http://example.com/%2e%2e/x\" has the percent-encoded dot segment \"%2e%2e\""
    );
}

#[test]
fn local_paths_convert_to_platform_paths() {
    let path = mapper("http://example.com/")
        .local_path(&uri("http://example.com/a/b/c.txt"))
        .unwrap();
    assert_eq!(path.names().collect::<Vec<_>>(), ["a", "b", "c.txt"]);
    assert_eq!(path.to_path_buf(), Path::new("a").join("b").join("c.txt"));
    assert_eq!(Path::new("/dest").join(&path), Path::new("/dest/a/b/c.txt"));
    assert_eq!(path.to_string(), "a/b/c.txt");
}

fn set_insert(set: &mut PathSet, m: &PathMapper, s: &str) -> Result<bool, Collision> {
    let u = uri(s);
    let path = m.local_path(&u).unwrap();
    set.insert(&u, &path).map_err(|e| {
        assert_eq!(e.second, u);
        assert_eq!(e.second_path, path);
        e.kind
    })
}

#[test]
fn path_set_finds_every_kind_of_collision() {
    let m = mapper("http://example.com/").with_other_authorities(true);
    let mut set = PathSet::new();
    let mut add = |s: &str| set_insert(&mut set, &m, s);
    assert_eq!(add("http://example.com/a/b.txt"), Ok(true));
    assert_eq!(add("http://example.com/a/b.txt"), Ok(false));
    assert_eq!(add("http://example.com/A/B.TXT"), Err(Collision::Case));
    assert_eq!(add("https://example.com/a/b.txt"), Err(Collision::SameName));
    assert_eq!(
        add("http://example.com/a/b.txt#x"),
        Err(Collision::SameName)
    );
    assert_eq!(
        add("http://example.com/a/b%2Etxt"),
        Err(Collision::SameName)
    );
    assert_eq!(add("http://example.com/a"), Err(Collision::FileAsDirectory));
    assert_eq!(add("http://example.com/A"), Err(Collision::FileAsDirectory));
    assert_eq!(
        add("http://example.com/a/b.txt/c"),
        Err(Collision::FileAsDirectory)
    );
    assert_eq!(add("http://example.com/a/c.txt"), Ok(true));
    // Composed and decomposed é; ß and SS; the Kelvin sign and K.
    assert_eq!(add("http://example.com/caf%C3%A9"), Ok(true));
    assert_eq!(
        add("http://example.com/cafe%CC%81"),
        Err(Collision::Normalization)
    );
    assert_eq!(
        add("http://example.com/CAFE%CC%81"),
        Err(Collision::Normalization)
    );
    assert_eq!(add("http://example.com/stra%C3%9Fe"), Ok(true));
    assert_eq!(add("http://example.com/STRASSE"), Err(Collision::Case));
    assert_eq!(add("http://example.com/k"), Ok(true));
    assert_eq!(
        add("http://example.com/%E2%84%AA"),
        Err(Collision::Normalization)
    );
    assert_eq!(add("http://cdn.example.org/x"), Ok(true));
    assert_eq!(add("http://CDN.example.org/X"), Err(Collision::Case));
    assert_eq!(set.len(), 6);
    assert!(!set.is_empty());
}

#[test]
fn a_refused_insert_leaves_the_set_as_it_was() {
    let m = mapper("http://example.com/");
    let mut set = PathSet::new();
    assert_eq!(set_insert(&mut set, &m, "http://example.com/a"), Ok(true));
    assert_eq!(
        set_insert(&mut set, &m, "http://example.com/a/b/c"),
        Err(Collision::FileAsDirectory)
    );
    // `a/b` was never added as a directory.
    assert_eq!(set_insert(&mut set, &m, "http://example.com/x/b"), Ok(true));
    assert_eq!(set.len(), 2);
}

#[test]
fn collision_errors_say_what_collided() {
    let m = mapper("http://example.com/");
    let mut set = PathSet::new();
    let (a, b) = (uri("http://example.com/x"), uri("http://example.com/X"));
    set.insert(&a, &m.local_path(&a).unwrap()).unwrap();
    let err = set.insert(&b, &m.local_path(&b).unwrap()).unwrap_err();
    assert_eq!((&err.first, err.first_path.as_str()), (&a, "x"));
    assert_eq!(
        err.to_string(),
        "http://example.com/X (as X) collides with http://example.com/x (as x): Case"
    );
}

/// Characters a path segment may hold raw, that no escape in the generator stands for.
const RAW: &str = "abcAB01-._~!$&'()*+,;=:@é中";
/// Escapes of characters that cannot stand raw in a URI path.
const ESCAPES: [&str; 6] = ["%20", "%25", "%3F", "%23", "%22", "%E2%80%AE"];

fn segment() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => proptest::sample::select(RAW.chars().collect::<Vec<_>>()).prop_map(String::from),
        1 => proptest::sample::select(ESCAPES.to_vec()).prop_map(String::from),
    ];
    proptest::collection::vec(piece, 1..6).prop_map(|v| v.concat())
}

fn target() -> impl Strategy<Value = String> {
    let host = proptest::sample::select(vec!["example.com", "example.org", "example.com:8080"]);
    let query = proptest::option::of(
        proptest::collection::vec(
            prop_oneof![
                proptest::sample::select(RAW.chars().collect::<Vec<_>>()).prop_map(String::from),
                proptest::sample::select(vec!["%20", "%26", "%3D", "%2F", "/", "?", "%25"])
                    .prop_map(String::from),
            ],
            0..5,
        )
        .prop_map(|v| v.concat()),
    );
    (
        host,
        proptest::collection::vec(segment(), 0..4),
        any::<bool>(),
        query,
    )
        .prop_map(|(host, segments, slash, query)| {
            let mut s = format!("http://{host}/{}", segments.join("/"));
            if slash && !segments.is_empty() {
                s.push('/');
            }
            if let Some(q) = query {
                s.push('?');
                s.push_str(&q);
            }
            s
        })
}

/// Any text after the authority, hostile bytes included, as a URI if it is one.
fn any_uri() -> impl Strategy<Value = Uri> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "/", ".", "..", "%2e", "%2E", "%2f", "%5c", "%00", "%0a", "C:", "c%3a", "CON", "nul",
            ".txt", "?", "#", "%", "%25", "@", ":", " ", "%20", "a", "B", "é", "\u{85}", "%C2%85",
            "%FF", "//", "com1",
        ])
        .prop_map(String::from),
        "[a-z0-9]{1,3}",
    ];
    proptest::collection::vec(piece, 0..12).prop_filter_map("not a URI", |v| {
        Uri::parse(&format!("http://example.com/{}", v.concat())).ok()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_mapped_path_is_relative_and_plain(u in any_uri()) {
        let m = mapper("http://example.com/").with_other_authorities(true);
        if let Ok(path) = m.local_path(&u) {
            let p = path.as_path();
            prop_assert!(p.is_relative());
            prop_assert!(p.components().all(|c| matches!(c, Component::Normal(_))), "{path}");
            for name in path.names() {
                prop_assert!(!name.is_empty() && name != "." && name != "..");
                prop_assert!(!name.contains(['/', '\\', ':', '\0']));
                prop_assert!(name.len() <= 255);
            }
            prop_assert_eq!(p.components().count(), path.names().count());
        }
    }

    #[test]
    fn distinct_uris_map_to_distinct_paths(targets in proptest::collection::hash_set(target(), 1..40)) {
        let m = mapper("http://example.com/").with_other_authorities(true);
        let mut seen: HashMap<LocalPath, String> = HashMap::new();
        for t in targets {
            let Ok(path) = m.local_path(&uri(&t)) else { continue };
            if let Some(other) = seen.insert(path.clone(), t.clone()) {
                prop_assert!(false, "{} and {} both map to {}", other, t, path);
            }
        }
    }
}

/// The equivalence the mapping documents, written independently: authority as the `url`
/// crate normalizes it, path segments percent-decoded, the query with hex digits in upper
/// case and escapes of unreserved characters decoded, no fragment.
fn documented_key(s: &str) -> (String, Vec<Vec<u8>>, Option<String>) {
    let url = url::Url::parse(s).unwrap();
    let authority = format!("{}{:?}", url.host_str().unwrap(), url.port());
    let rest = &s[s.find("//").unwrap() + 2..];
    let rest = &rest[rest.find(['/', '?', '#']).unwrap_or(rest.len())..];
    let rest = rest.split('#').next().unwrap();
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let decode = |seg: &str| -> Vec<u8> {
        let b = seg.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                out.push(u8::from_str_radix(&seg[i + 1..i + 3], 16).unwrap());
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        out
    };
    let segments = path
        .trim_start_matches('/')
        .split('/')
        .map(decode)
        .collect();
    let query = query.map(|q| {
        let mut out = String::new();
        let mut i = 0;
        while i < q.len() {
            if q.as_bytes()[i] == b'%' {
                let byte = u8::from_str_radix(&q[i + 1..i + 3], 16).unwrap();
                if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                    out.push(char::from(byte));
                } else {
                    out.push_str(&format!("%{byte:02X}"));
                }
                i += 3;
            } else {
                let c = q[i..].chars().next().unwrap();
                out.push(c);
                i += c.len_utf8();
            }
        }
        out
    });
    (authority, segments, query)
}

fn escaped_target() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "a", "A", "é", ":", "@", "!", "=", "&", "~", ".", "-", "%41", "%61", "%3A", "%3a",
            "%40", "%26", "%3D", "%25", "%20", "%C3%A9", "%c3%a9", "%FF", "%7E", "%2E", "%3F",
        ])
        .prop_map(String::from),
    ];
    let segment = proptest::collection::vec(piece.clone(), 1..4).prop_map(|v| v.concat());
    let query = proptest::option::of(
        proptest::collection::vec(
            prop_oneof![piece, Just("/".to_owned()), Just("?".to_owned())],
            0..4,
        )
        .prop_map(|v| v.concat()),
    );
    (
        proptest::sample::select(vec![
            "http://example.com",
            "https://EXAMPLE.com:443",
            "http://example.org",
        ]),
        proptest::collection::vec(segment, 0..3),
        any::<bool>(),
        query,
        proptest::option::of(Just("#f")),
    )
        .prop_map(|(origin, segments, slash, query, fragment)| {
            let mut s = format!("{origin}/{}", segments.join("/"));
            if slash && !segments.is_empty() {
                s.push('/');
            }
            if let Some(q) = query {
                s.push('?');
                s.push_str(&q);
            }
            s.push_str(fragment.unwrap_or(""));
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Two URIs share a path only when the documented equivalence makes them one.
    #[test]
    fn only_documented_equivalents_share_a_path(targets in proptest::collection::vec(escaped_target(), 1..30)) {
        let m = mapper("http://example.com/").with_other_authorities(true);
        let mut seen: HashMap<LocalPath, String> = HashMap::new();
        for t in targets {
            let Ok(path) = m.local_path(&uri(&t)) else { continue };
            if let Some(other) = seen.insert(path.clone(), t.clone()) {
                prop_assert_eq!(documented_key(&other), documented_key(&t), "{} and {} share {}", other, t, path);
            }
        }
    }
}

#[test]
fn kept_names_are_never_mapped_to() {
    let mapper = PathMapper::new(&"http://example.com/".parse().unwrap())
        .unwrap()
        .with_kept_name(".resourcesync");
    for uri in [
        "http://example.com/.resourcesync/state.json",
        "http://example.com/.ResourceSync/state.json",
        "http://example.com/%2Eresourcesync/x",
        "http://example.com/.resourcesync",
    ] {
        let e = mapper.local_path(&uri.parse().unwrap()).unwrap_err();
        assert!(matches!(e, LocalPathError::KeptName { .. }), "{uri}: {e}");
    }
    assert!(
        mapper
            .local_path(&"http://example.com/a/.resourcesync".parse().unwrap())
            .is_ok()
    );
    assert!(
        mapper
            .local_path(&"http://example.com/.resourcesync2".parse().unwrap())
            .is_ok()
    );
}

/// A POSIX file system holds what Windows and macOS would not: the mapper neither refuses
/// nor escapes those names, and the set keeps names that differ in case or normalization
/// apart; the portable rules (the default) still refuse and fold them.
#[test]
fn a_posix_file_system_holds_every_name_the_portable_rules_refuse() {
    use resourcesync_client::local_path::{Collision, FileSystem, PathMapper, PathSet};
    let base: resourcesync_model::Uri = "http://example.com/".parse().unwrap();
    let portable = PathMapper::new(&base).unwrap();
    let posix = PathMapper::new(&base)
        .unwrap()
        .with_file_system(FileSystem::POSIX);
    let uri = |path: &str| -> resourcesync_model::Uri {
        format!("http://example.com/{path}").parse().unwrap()
    };
    for (path, name) in [
        ("CON", "CON"),
        ("aux.txt", "aux.txt"),
        ("trailing.", "trailing."),
        ("a:b", "a:b"),
        ("c:drive", "c:drive"),
        ("what%3F", "what?"),
        ("%3Cpipe%7Cstar*%3E", "<pipe|star*>"),
        // A backslash is a character of a name on a POSIX file system (issue 28: `build`
        // publishes such names); written `%5C` in the name, as every separator-like
        // character is, so that no tool reading the name takes it for one.
        ("a%5Cb", "a%5Cb"),
    ] {
        assert_eq!(
            posix.local_path(&uri(path)).unwrap().as_str(),
            name,
            "{path}"
        );
        let portably = portable.local_path(&uri(path));
        assert!(portably.map_or(true, |p| p.as_str() != name), "{path}");
    }
    // What no file system holds stays refused either way.
    for path in ["a/%2e%2e/b", "a%2Fb", "%00"] {
        assert!(posix.local_path(&uri(path)).is_err(), "{path}");
    }
    for (a, b, kind) in [
        ("Readme.txt", "README.TXT", Collision::Case),
        ("caf%C3%A9", "cafe%CC%81", Collision::Normalization),
    ] {
        let mut native = PathSet::for_file_system(FileSystem::POSIX);
        let mut everywhere = PathSet::new();
        for set in [&mut native, &mut everywhere] {
            let path = posix.local_path(&uri(a)).unwrap();
            assert_eq!(set.insert(&uri(a), &path), Ok(true));
        }
        let path = posix.local_path(&uri(b)).unwrap();
        assert_eq!(native.insert(&uri(b), &path), Ok(true), "{a} {b}");
        assert_eq!(everywhere.insert(&uri(b), &path).unwrap_err().kind, kind);
    }
}

/// A URI written with the base's scheme and authority maps without parsing its authority
/// again: the same as the same URI under a base that writes the authority otherwise
/// (which parses it), for every way of writing one that normalizes.
#[test]
fn the_base_s_authority_as_written_maps_as_it_does_when_parsed() {
    for (written, other) in [
        ("http://Example.COM:80/", "http://example.com/"),
        ("http://example.com/", "http://EXAMPLE.com:80/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:08080/"),
        ("http://[::1]:8080/", "http://[0:0::1]:8080/"),
        ("http://xn--caf-dma.example/", "http://café.example/"),
    ] {
        let fast = mapper(written).with_other_authorities(true);
        let slow = mapper(other).with_other_authorities(true);
        let authority = written.trim_end_matches('/');
        for path in ["/a.txt", "/d/e%20f.txt", "/", "/x?q=1"] {
            let target = uri(&format!("{authority}{path}"));
            let (fast, slow) = (fast.local_path(&target), slow.local_path(&target));
            assert_eq!(
                fast.as_ref()
                    .map(|p| p.as_str().to_owned())
                    .map_err(|e| e.to_string()),
                slow.as_ref()
                    .map(|p| p.as_str().to_owned())
                    .map_err(|e| e.to_string()),
                "{target} under {written} and {other}"
            );
        }
        // Another authority still maps under `@`, parsed.
        let cdn = uri("http://CDN.example.org:80/x");
        assert_eq!(
            fast.local_path(&cdn).unwrap().as_str(),
            "@cdn.example.org/x"
        );
    }
}
