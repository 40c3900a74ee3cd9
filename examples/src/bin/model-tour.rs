//! A tour of the ResourceSync data model: builds documents of several kinds in code, checks
//! them against the standard's rules and prints every finding with its rule id, severity,
//! section and entry.
//!
//! Run it with `cargo run -p resourcesync-examples --bin model-tour`.

use std::process::ExitCode;

use resourcesync_model::{
    Capability, Change, Document, DocumentHead, DocumentKind, Entry, Finding, Link, Md, Relation,
    Rule, Severity, W3cDateTime, check,
};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn entry(loc: &str, md: Md) -> Result<Entry> {
    let mut e = Entry::new(loc.parse()?);
    e.md = Some(md);
    Ok(e)
}

fn change(kind: Change, datetime: &str) -> Result<Md> {
    Ok(Md::new().with_change(kind).with_datetime(datetime.parse()?))
}

/// Example 19 of the standard, with its four changes.
fn changelist(shuffled: bool) -> Result<Document> {
    let mut head = DocumentHead::of_kind(DocumentKind::ChangeList);
    head.md.from = Some("2013-01-03T00:00:00Z".parse()?);
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/dataset1/capabilitylist.xml".parse()?,
    ));
    let mut doc = Document::new(head);
    doc.entries = vec![
        entry(
            "http://example.com/res1.html",
            change(Change::Created, "2013-01-03T11:00:00Z")?,
        )?,
        entry(
            "http://example.com/res2.pdf",
            change(Change::Updated, "2013-01-03T13:00:00Z")?,
        )?,
        // 18:00 in UTC is 19:00 one hour east of it: local time minus offset.
        entry(
            "http://example.com/res3.tiff",
            change(Change::Deleted, "2013-01-03T19:00+01:00")?,
        )?,
    ];
    if shuffled {
        doc.entries.swap(0, 2);
    }
    Ok(doc)
}

/// A Capability List that lists the Resource List twice and forgets its `up` link.
fn capabilitylist() -> Result<Document> {
    let head = DocumentHead::of_kind(DocumentKind::CapabilityList);
    let mut doc = Document::new(head);
    for (loc, capability) in [
        (
            "http://example.com/dataset1/resourcelist.xml",
            Capability::ResourceList,
        ),
        (
            "http://example.com/dataset1/resourcelist2.xml",
            Capability::ResourceList,
        ),
        (
            "http://example.com/dataset1/changelist-archive.xml",
            Capability::ChangeListArchive,
        ),
    ] {
        let md = Md::new().with_capability(capability);
        doc.entries.push(entry(loc, md)?);
    }
    Ok(doc)
}

fn report(name: &str, doc: &Document) -> Vec<Finding> {
    let findings = check(doc);
    println!(
        "{name}: a {} with {} entries",
        doc.head.kind(),
        doc.entries.len()
    );
    if findings.is_empty() {
        println!("  breaks no rule");
    }
    for f in &findings {
        println!("  {f}");
    }
    findings
}

fn main() -> Result<ExitCode> {
    let local: W3cDateTime = "2013-01-03T19:00+01:00".parse()?;
    println!("{local} is {} in UTC\n", local.to_utc().to_rfc3339());

    let in_order = report("Example 19 (abridged)", &changelist(false)?);
    let shuffled = report("Example 19, shuffled", &changelist(true)?);
    let caps = report("A faulty Capability List", &capabilitylist()?);

    // The tour checks what it claims, so that running it is itself a test.
    let rules = |f: &[Finding]| f.iter().map(|f| f.rule).collect::<Vec<_>>();
    let ok = in_order.is_empty()
        && rules(&shuffled) == [Rule::ChangeListOrder; 2]
        && rules(&caps)
            == [
                Rule::UpLinkMandatory,
                Rule::DescribedbyLinkRecommended,
                Rule::CapabilityListDuplicate,
            ]
        && caps
            .iter()
            .filter(|f| f.severity() == Severity::Error)
            .count()
            == 2;
    println!("\n{} rules in the catalogue", Rule::ALL.len());
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("unexpected findings");
        ExitCode::FAILURE
    })
}
