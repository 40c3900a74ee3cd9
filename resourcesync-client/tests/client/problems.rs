//! Problems keep the structure of what went wrong: the reader's error, the kinds.

use std::time::Instant;

use resourcesync_client::{Config, Event, MemoryInventory, Mode, ProblemKind, State};
use resourcesync_model::{Capability, DocumentKind};
use resourcesync_xml::ErrorKind;

use crate::apply::{answer, client};

/// Answers every request from `documents` until the client waits; the events.
fn run(
    client: &mut resourcesync_client::Client<MemoryInventory>,
    documents: &[(&str, &str)],
) -> Vec<Event> {
    let now = Instant::now();
    let mut events = Vec::new();
    while let Some(request) = client.poll_request(now) {
        let body = documents
            .iter()
            .find(|(uri, _)| *uri == request.uri.as_str())
            .map_or("", |(_, body)| body);
        answer(client, &request, body.as_bytes(), now);
        events.extend(std::iter::from_fn(|| client.poll_event()));
    }
    events
}

fn problems(events: &[Event]) -> Vec<ProblemKind> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Problem(p) => Some(p.kind.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_broken_document_keeps_the_readers_error_and_its_place() {
    let mut client = client(MemoryInventory::new(), false);
    let broken = "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
                  xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\
                  <rs:md capability=\"resourcelist\"/>\n\
                  <url><loc>&bogus;</loc></url></urlset>";
    let events = run(
        &mut client,
        &[("https://example.com/resourcelist.xml", broken)],
    );
    let problems = problems(&events);
    let [ProblemKind::Document(error)] = problems.as_slice() else {
        panic!("one document problem: {problems:?}");
    };
    assert!(matches!(error.kind(), ErrorKind::UnknownEntity(name) if name == "bogus"));
    assert_eq!(
        (error.position().line, error.position().entry),
        (2, Some(1))
    );
    assert!(
        ProblemKind::Document(error.clone())
            .to_string()
            .starts_with("document: line 2")
    );
}

#[test]
fn a_document_of_another_kind_keeps_both_kinds() {
    let config = Config::new(
        "https://example.com/capabilitylist.xml".parse().unwrap(),
        Mode::Baseline { prefer_dump: false },
    )
    .unwrap();
    let mut client = resourcesync_client::Client::new(config, State::new(), MemoryInventory::new());
    let capabilities = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
      <rs:md capability="capabilitylist"/>
      <url><loc>https://example.com/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
    </urlset>"#;
    let changes = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
      <rs:md capability="changelist" from="2025-01-01T00:00:00Z"/>
    </urlset>"#;
    let events = run(
        &mut client,
        &[
            ("https://example.com/capabilitylist.xml", capabilities),
            ("https://example.com/resourcelist.xml", changes),
        ],
    );
    let problems = problems(&events);
    assert!(
        problems.contains(&ProblemKind::Unexpected {
            expected: Capability::ResourceList,
            found: DocumentKind::ChangeList,
        }),
        "{problems:?}"
    );
}
