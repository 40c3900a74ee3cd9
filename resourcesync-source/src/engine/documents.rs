//! The small documents every run writes whole: the Capability List, the Source
//! Description, and the page both are `describedby` when the caller names none.

use resourcesync_model::{
    Capability, Channel, Document, DocumentHead, DocumentKind, Entry, Link, Relation, Uri,
};
use resourcesync_xml::{WriteOptions, write_document_with};

use super::sink::Sink;
use super::{CAPABILITY_LIST, DOCS, PublishError, SOURCE_DESCRIPTION};

/// Writes a small document whole, refusing what breaks a rule, atomically.
pub(crate) fn write_small(
    sink: &dyn Sink,
    name: &str,
    document: &Document,
) -> Result<(), PublishError> {
    let options = WriteOptions::default().with_refuse_errors(true);
    let written = write_document_with(Vec::new(), document, options).map_err(|source| {
        PublishError::Document {
            document: name.to_owned(),
            source,
        }
    })?;
    sink.write(name, &[&written.output])
}

/// Writes the Capability List with `capabilities` and the notification `channel`, the
/// Source Description that points at it, and the page both are `describedby` unless the
/// caller names one (`describedby`); returns how many documents that took.
pub(crate) fn capability_list(
    sink: &dyn Sink,
    capabilities: Vec<(Uri, Capability)>,
    channel: Option<&Channel>,
    describedby: Option<&Uri>,
    resources: usize,
) -> Result<u64, PublishError> {
    let sd_uri = sink.uri(SOURCE_DESCRIPTION)?;
    let cl_uri = sink.uri(CAPABILITY_LIST)?;
    let mut documents = 0;
    // What the Source Description and Capability List are `describedby`: the page the
    // caller names, or one written here.
    let about = match describedby {
        Some(about) => about.clone(),
        None => {
            let name = format!("{DOCS}/about.html");
            let page = about_page(sink.base(), &cl_uri, resources);
            sink.write(&name, &[page.as_bytes()])?;
            let uri = sink.uri(&name)?;
            documents += 1;
            uri
        }
    };
    let described = Link::new(Relation::DescribedBy, about);

    // The Capability List, and the Source Description that points at it.
    let mut cl = Document::new(
        DocumentHead::of_kind(DocumentKind::CapabilityList)
            .with_link(described.clone())
            .with_link(Link::new(Relation::Up, sd_uri.clone())),
    );
    for (uri, capability) in capabilities {
        cl.entries.push(Entry::new(uri).with_capability(capability));
    }
    cl.entries.extend(channel.map(Channel::to_entry));
    write_small(sink, CAPABILITY_LIST, &cl)?;
    let mut sd = Document::new(
        DocumentHead::of_kind(DocumentKind::SourceDescription).with_link(described.clone()),
    );
    sd.entries.push(
        Entry::new(cl_uri.clone())
            .with_capability(Capability::CapabilityList)
            .with_link(described),
    );
    write_small(sink, SOURCE_DESCRIPTION, &sd)?;
    documents += 2;
    Ok(documents)
}

/// The page the Source's documents are `describedby` when the caller names none: what the
/// Source is, and a `resourcesync` link to its Capability List (section 6.3.3).
pub(crate) fn about_page(base: &Uri, capability_list: &Uri, resources: usize) -> String {
    let note = format!(
        "{resources} resources, published with resourcesync-rs (ANSI/NISO Z39.99-2017). \
         Start at the Capability List."
    );
    crate::discovery::link_page(
        &format!("ResourceSync Source at {base}"),
        [capability_list.as_str()],
        Some(&note),
    )
}
