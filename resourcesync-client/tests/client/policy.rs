//! `Policy`: schemes, authorities, special-purpose addresses in every disguise the `url`
//! crate sees through, redirects, and resolved addresses.

use std::net::IpAddr;

use resourcesync_client::policy::{Policy, PolicyError, Refusal, SpecialAddress};
use resourcesync_model::Uri;

fn uri(s: &str) -> Uri {
    Uri::parse(s).unwrap()
}

fn policy(source: &str) -> Policy {
    Policy::new(&uri(source)).unwrap()
}

fn refusal(policy: &Policy, target: &str) -> Option<Refusal> {
    policy.check(&uri(target)).err().map(|e| {
        assert_eq!(e.uri, target);
        e.refusal
    })
}

fn special(host: &str, kind: SpecialAddress) -> Option<Refusal> {
    Some(Refusal::SpecialAddress {
        host: host.into(),
        kind,
    })
}

#[test]
fn only_http_and_https() {
    let p = policy("http://example.com/");
    for target in [
        "ftp://example.com/a",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "gopher://example.com/",
        "urn:isbn:0451450523",
    ] {
        assert_eq!(refusal(&p, target), Some(Refusal::NotHttp), "{target}");
    }
    assert_eq!(refusal(&p, "HTTPS://EXAMPLE.COM/a"), None);
    assert!(Policy::new(&uri("ftp://example.com/")).is_err());
}

#[test]
fn the_source_authority_and_no_other() {
    let p = policy("https://Example.com/.well-known/resourcesync");
    for ok in [
        "https://example.com/a",
        "http://example.com/a",
        "http://example.com:80/a",
        "https://example.com:443/a",
        "http://EXAMPLE.com/a?b#c",
    ] {
        assert_eq!(refusal(&p, ok), None, "{ok}");
    }
    for (target, authority) in [
        ("http://example.org/a", "example.org"),
        ("http://example.com:8080/a", "example.com:8080"),
        ("https://example.com:80/a", "example.com:80"),
        ("http://sub.example.com/a", "sub.example.com"),
        ("http://example.com./a", "example.com."),
        (
            "http://example.com.evil.example/a",
            "example.com.evil.example",
        ),
    ] {
        assert_eq!(
            refusal(&p, target),
            Some(Refusal::OtherAuthority(authority.into())),
            "{target}"
        );
    }
}

#[test]
fn userinfo_is_refused() {
    let p = policy("http://example.com/").allow_any_authority();
    for target in [
        "http://example.com@evil.example/",
        "http://user:pass@example.com/",
        "http://@example.com/",
        "http://a@b@example.com/",
    ] {
        assert_eq!(refusal(&p, target), Some(Refusal::Userinfo), "{target}");
    }
    assert!(Policy::new(&uri("http://u@example.com/")).is_err());
}

#[test]
fn listed_and_any_authorities() {
    let p = policy("http://example.com/")
        .allow_authority("CDN.example.org")
        .unwrap()
        .allow_authority("mirror.example.net:8080")
        .unwrap()
        .allow_authority("bücher.example")
        .unwrap();
    assert_eq!(refusal(&p, "https://cdn.example.org/x"), None);
    assert_eq!(refusal(&p, "http://mirror.example.net:8080/x"), None);
    assert_eq!(refusal(&p, "http://xn--bcher-kva.example/x"), None);
    assert_eq!(
        refusal(&p, "http://mirror.example.net/x"),
        Some(Refusal::OtherAuthority("mirror.example.net".into()))
    );
    for bad in [
        "",
        "a/b",
        "u@host",
        "host:99999",
        "host:port",
        "a b",
        "[::1",
    ] {
        let err = policy("http://example.com/")
            .allow_authority(bad)
            .unwrap_err();
        assert_eq!(err.authority, bad);
    }
    let any = p.allow_any_authority();
    assert_eq!(refusal(&any, "http://anything.example/x"), None);
}

#[test]
fn special_addresses_are_refused_on_any_authority() {
    let p = policy("http://example.com/").allow_any_authority();
    for (target, host, kind) in [
        ("http://127.0.0.1/", "127.0.0.1", SpecialAddress::Loopback),
        (
            "http://127.255.0.1:8080/",
            "127.255.0.1",
            SpecialAddress::Loopback,
        ),
        ("http://[::1]/", "[::1]", SpecialAddress::Loopback),
        ("http://localhost/", "localhost", SpecialAddress::Loopback),
        ("http://LOCALHOST./", "localhost.", SpecialAddress::Loopback),
        (
            "http://api.localhost/",
            "api.localhost",
            SpecialAddress::Loopback,
        ),
        ("http://0.0.0.0/", "0.0.0.0", SpecialAddress::Unspecified),
        ("http://[::]/", "[::]", SpecialAddress::Unspecified),
        ("http://10.1.2.3/", "10.1.2.3", SpecialAddress::Private),
        ("http://172.16.0.1/", "172.16.0.1", SpecialAddress::Private),
        (
            "http://172.31.255.255/",
            "172.31.255.255",
            SpecialAddress::Private,
        ),
        (
            "http://192.168.1.1/",
            "192.168.1.1",
            SpecialAddress::Private,
        ),
        (
            "http://100.64.0.1/",
            "100.64.0.1",
            SpecialAddress::SharedCgnat,
        ),
        (
            "http://100.127.255.255/",
            "100.127.255.255",
            SpecialAddress::SharedCgnat,
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
            SpecialAddress::LinkLocal,
        ),
        ("http://[fe80::1]/", "[fe80::1]", SpecialAddress::LinkLocal),
        (
            "http://[fd00:ec2::254]/",
            "[fd00:ec2::254]",
            SpecialAddress::UniqueLocal,
        ),
        (
            "http://[fec0::1]/",
            "[fec0::1]",
            SpecialAddress::UniqueLocal,
        ),
        ("http://224.0.0.1/", "224.0.0.1", SpecialAddress::Multicast),
        ("http://[ff02::1]/", "[ff02::1]", SpecialAddress::Multicast),
        (
            "http://255.255.255.255/",
            "255.255.255.255",
            SpecialAddress::Reserved,
        ),
        ("http://240.0.0.1/", "240.0.0.1", SpecialAddress::Reserved),
        ("http://192.0.0.8/", "192.0.0.8", SpecialAddress::Reserved),
        (
            "http://192.0.2.1/",
            "192.0.2.1",
            SpecialAddress::Documentation,
        ),
        (
            "http://203.0.113.9/",
            "203.0.113.9",
            SpecialAddress::Documentation,
        ),
        (
            "http://[2001:db8::1]/",
            "[2001:db8::1]",
            SpecialAddress::Documentation,
        ),
        (
            "http://198.18.0.1/",
            "198.18.0.1",
            SpecialAddress::Benchmarking,
        ),
        (
            "http://[::ffff:127.0.0.1]/",
            "[::ffff:7f00:1]",
            SpecialAddress::Ipv4Mapped,
        ),
        (
            "http://[::ffff:8.8.8.8]/",
            "[::ffff:808:808]",
            SpecialAddress::Ipv4Mapped,
        ),
        (
            "http://[::127.0.0.1]/",
            "[::7f00:1]",
            SpecialAddress::Ipv4Mapped,
        ),
        (
            "http://[64:ff9b::a9fe:a9fe]/",
            "[64:ff9b::a9fe:a9fe]",
            SpecialAddress::Translation,
        ),
        (
            "http://[2002:7f00:1::]/",
            "[2002:7f00:1::]",
            SpecialAddress::Translation,
        ),
        (
            "http://[2001::1]/",
            "[2001::1]",
            SpecialAddress::Translation,
        ),
        ("http://[100::1]/", "[100::1]", SpecialAddress::Reserved),
    ] {
        assert_eq!(refusal(&p, target), special(host, kind), "{target}");
    }
}

/// The `url` crate reads hosts as browsers do (WHATWG): every odd spelling of an IPv4
/// address is that address.
#[test]
fn odd_spellings_of_addresses_are_the_addresses() {
    let p = policy("http://example.com/").allow_any_authority();
    for target in [
        "http://2130706433/",
        "http://0x7f000001/",
        "http://0177.0.0.1/",
        "http://0x7f.0.0.1/",
        "http://0x7F.1/",
        "http://127.1/",
        "http://127.0.1/",
        "http://017700000001/",
        "http://127.000.000.001/",
        "http://%31%32%37.0.0.1/",
        "http://127.0.0.1./",
    ] {
        assert_eq!(
            refusal(&p, target),
            special("127.0.0.1", SpecialAddress::Loopback),
            "{target}"
        );
    }
    assert_eq!(
        refusal(&p, "http://0xa9fea9fe/"),
        special("169.254.169.254", SpecialAddress::LinkLocal)
    );
    assert_eq!(
        refusal(&p, "http://0/"),
        special("0.0.0.0", SpecialAddress::Unspecified)
    );
    assert_eq!(
        refusal(&p, "http://[0:0:0:0:0:0:0:1]/"),
        special("[::1]", SpecialAddress::Loopback)
    );
    // Numbers out of range are not hosts at all.
    assert!(matches!(
        refusal(&p, "http://4294967296/"),
        Some(Refusal::Unparsable(_))
    ));
    assert!(matches!(
        refusal(&p, "http://1.2.3.4.5/"),
        Some(Refusal::Unparsable(_))
    ));
    // Names that merely look numeric are names: the driver checks what they resolve to.
    assert_eq!(refusal(&p, "http://127.0.0.1.nip.io/"), None);
    assert_eq!(refusal(&p, "http://8.8.8.8/"), None);
    assert_eq!(refusal(&p, "http://[2606:4700::1111]/"), None);
}

#[test]
fn a_source_on_a_special_address_may_list_its_kind() {
    let p = policy("http://127.0.0.1:8080/").allow_any_authority();
    assert_eq!(refusal(&p, "http://127.0.0.1:8080/res"), None);
    assert_eq!(refusal(&p, "http://[::1]/res"), None);
    assert_eq!(refusal(&p, "http://localhost:9000/res"), None);
    assert_eq!(
        refusal(&p, "http://169.254.169.254/"),
        special("169.254.169.254", SpecialAddress::LinkLocal)
    );
    let p = policy("http://10.0.0.5/").allow_any_authority();
    assert_eq!(refusal(&p, "http://192.168.1.2/"), None);
    assert_eq!(
        refusal(&p, "http://127.0.0.1/"),
        special("127.0.0.1", SpecialAddress::Loopback)
    );
    // The Source's own authority is never refused for its address.
    let p = policy("http://localhost:8000/");
    assert_eq!(refusal(&p, "http://localhost:8000/a"), None);
}

#[test]
fn the_caller_can_allow_special_addresses() {
    let p = policy("http://example.com/")
        .allow_any_authority()
        .allow_address_kind(SpecialAddress::Private)
        .allow_address_kind(SpecialAddress::Private);
    assert_eq!(refusal(&p, "http://10.1.1.1/"), None);
    assert!(refusal(&p, "http://169.254.169.254/").is_some());
    let p = p.allow_any_address();
    assert_eq!(refusal(&p, "http://169.254.169.254/"), None);
    assert_eq!(refusal(&p, "http://[::1]/"), None);
    // Allowing addresses is not allowing authorities.
    let p = policy("http://example.com/").allow_any_address();
    assert!(matches!(
        refusal(&p, "http://127.0.0.1/"),
        Some(Refusal::OtherAuthority(_))
    ));
}

#[test]
fn redirects_are_checked_like_everything_else() {
    let from = uri("https://example.com/dataset/resourcelist.xml");
    let p = Policy::new(&from)
        .unwrap()
        .allow_authority("cdn.example.org")
        .unwrap();
    let ok = |location: &str| {
        p.check_redirect(&from, location)
            .map(|u| u.as_str().to_owned())
    };
    assert_eq!(ok("v2.xml").unwrap(), "https://example.com/dataset/v2.xml");
    assert_eq!(ok("/x?y").unwrap(), "https://example.com/x?y");
    assert_eq!(
        ok("//cdn.example.org/a").unwrap(),
        "https://cdn.example.org/a"
    );
    assert_eq!(
        ok("https://cdn.example.org/a").unwrap(),
        "https://cdn.example.org/a"
    );
    let refused = |location: &str| p.check_redirect(&from, location).unwrap_err();
    assert_eq!(
        refused("http://example.com/a"),
        PolicyError {
            uri: "http://example.com/a".into(),
            refusal: Refusal::Downgrade
        }
    );
    assert_eq!(
        refused("https://evil.example/a").refusal,
        Refusal::OtherAuthority("evil.example".into())
    );
    assert_eq!(refused("file:///etc/passwd").refusal, Refusal::NotHttp);
    assert_eq!(
        refused("https://example.com@evil.example/").refusal,
        Refusal::Userinfo
    );
    assert!(matches!(
        refused("https://[::1").refusal,
        Refusal::Unparsable(_)
    ));
    assert!(matches!(
        refused("https://exa mple.com/").refusal,
        Refusal::Unparsable(_)
    ));
    // From http, a redirect to https is fine; to a special address on an allowed authority
    // is not.
    let from = uri("http://example.com/a");
    let p = Policy::new(&from).unwrap().allow_any_authority();
    assert!(p.check_redirect(&from, "https://example.com/a").is_ok());
    assert_eq!(
        p.check_redirect(&from, "http://0x7f.1/")
            .unwrap_err()
            .refusal,
        Refusal::SpecialAddress {
            host: "127.0.0.1".into(),
            kind: SpecialAddress::Loopback
        }
    );
}

#[test]
fn resolved_addresses_are_the_drivers_to_check() {
    let u = uri("http://internal.example/res");
    let p = policy("http://internal.example/");
    let addr = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(p.check_address(&u, addr("93.184.215.14")), Ok(()));
    assert_eq!(p.check_address(&u, addr("2606:4700::1111")), Ok(()));
    let err = p.check_address(&u, addr("169.254.169.254")).unwrap_err();
    assert_eq!(err.uri, "http://internal.example/res");
    assert_eq!(
        err.to_string(),
        "refused \"http://internal.example/res\": 169.254.169.254 is a link-local address"
    );
    assert!(p.check_address(&u, addr("::ffff:10.0.0.1")).is_err());
    let p = p.allow_address_kind(SpecialAddress::Private);
    assert_eq!(p.check_address(&u, addr("10.0.0.1")), Ok(()));
}

#[test]
fn the_registries_boundaries() {
    let kind = |s: &str| SpecialAddress::of(s.parse().unwrap());
    for public in [
        "1.1.1.1",
        "9.255.255.255",
        "11.0.0.0",
        "100.63.255.255",
        "100.128.0.0",
        "126.255.255.255",
        "128.0.0.0",
        "169.253.255.255",
        "169.255.0.0",
        "172.15.255.255",
        "172.32.0.0",
        "192.0.1.0",
        "192.0.3.0",
        "192.167.255.255",
        "192.169.0.0",
        "198.17.255.255",
        "198.20.0.0",
        "223.255.255.255",
        "2001:200::1",
        "2001:db7::1",
        "2003::1",
        "3fff:1000::1",
        "fbff::1",
        "fe00::1",
        "::2:0:0:1",
    ] {
        assert_eq!(kind(public), None, "{public}");
    }
    assert_eq!(kind("2001:2::1"), Some(SpecialAddress::Benchmarking));
    assert_eq!(kind("2001:1ff::1"), Some(SpecialAddress::Reserved));
    assert_eq!(kind("3fff:fff::1"), Some(SpecialAddress::Documentation));
    assert_eq!(kind("64:ff9b:1::1"), Some(SpecialAddress::Translation));
    assert_eq!(kind("5f00::1"), Some(SpecialAddress::Reserved));
    assert_eq!(
        SpecialAddress::SharedCgnat.to_string(),
        "shared (carrier-grade NAT)"
    );
}

#[test]
fn a_source_built_for_another_name_is_refused_with_the_way_out_and_allowed_when_asked() {
    use crate::sim::{Destination, Drive, Source, sync};
    use resourcesync_client::Mode;
    // Built for 127.0.0.1:8080, reached as localhost:8080 (one server, two names).
    let mut s = Source::new();
    s.base = "http://127.0.0.1:8080/".into();
    s.aliases.push("http://localhost:8080/".into());
    s.put("r/0.txt", b"zero");
    s.tick(10);
    s.publish();
    let start = |c: resourcesync_client::Config| {
        let mut c = c;
        c.start = "http://localhost:8080/".parse().unwrap();
        c.policy = Policy::new(&c.start).unwrap();
        c.paths = resourcesync_client::local_path::PathMapper::new(&c.start).unwrap();
        c
    };
    let baseline = Mode::Baseline { prefer_dump: false };
    let mut d = Destination::default();
    let run = sync(&s, &mut d, baseline, "", start, Drive::default());
    assert!(!run.report().complete);
    let problems = run.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.ends_with("authority \"127.0.0.1:8080\" is not the Source's")),
        "{problems:?}"
    );
    let allowed = |c| start(c).with_allowed_authority("127.0.0.1:8080").unwrap();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, baseline, "", allowed, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(d.files["@127.0.0.1%3A8080/r/0.txt"], b"zero");
}

/// A URI written with the Source's scheme and authority is judged without parsing it
/// again: as the same URI is under a policy whose Source writes the authority otherwise
/// (which parses it), special addresses included.
#[test]
fn the_source_s_authority_as_written_is_judged_as_when_parsed() {
    for (written, other) in [
        ("http://Example.COM:80/", "http://example.com/"),
        ("https://example.com:443/", "https://example.com/"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:08080/"),
        ("http://[::1]:8080/", "http://[0:0::1]:8080/"),
        ("http://10.0.0.5/", "http://10.0.0.5:80/"),
        ("http://localhost:8080/", "http://LocalHost:8080/"),
    ] {
        let fast = Policy::new(&written.parse().unwrap()).unwrap();
        let slow = Policy::new(&other.parse().unwrap()).unwrap();
        let authority = written.trim_end_matches('/');
        for target in [
            format!("{authority}/a.txt"),
            format!("{authority}/d/../e?q=1"),
            "http://cdn.example.org/x".to_owned(),
            format!("{authority}/x").replacen("http", "https", 1),
        ] {
            let target = target.parse().unwrap();
            assert_eq!(
                fast.check(&target).map_err(|e| e.refusal),
                slow.check(&target).map_err(|e| e.refusal),
                "{target} under {written} and {other}"
            );
        }
    }
}
