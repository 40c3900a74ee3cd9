//! A simulated Source with a virtual clock: it publishes every document with
//! `resourcesync-xml` and `resourcesync-package` (Resource Lists and their index, Change
//! Lists, their index or archive, Resource Dumps and Change Dumps) and answers a URI as
//! published. The client's tests drive the client against it in process; the command's
//! tests serve it over HTTP ([`crate::served`]).

use std::collections::BTreeMap;
use std::io::Cursor;
use std::time::Duration;

use resourcesync_model::{
    BitstreamPath, Capability, Change, Channel, Document, DocumentHead, Entry, Fixity, Link, Md,
    Relation, Root, Uri, W3cDateTime,
};
use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};

/// Seconds since 2020-01-01T00:00:00Z as a W3C Datetime.
pub fn time(seconds: i64) -> W3cDateTime {
    let base = 1_577_836_800i64;
    let t = std::time::UNIX_EPOCH + Duration::from_secs((base + seconds) as u64);
    W3cDateTime::from(t)
}

/// One change in the Source's history.
#[derive(Clone, Debug)]
pub struct Logged {
    pub at: i64,
    pub path: String,
    pub change: Change,
    /// The content after the change (none for a deletion).
    pub bytes: Option<Vec<u8>>,
}

/// How the Source publishes.
#[derive(Clone, Debug)]
pub struct Publish {
    /// Entries per Resource List; more make a Resource List Index.
    pub list_part: usize,
    /// Changes per Change List; more make several (an index, or an archive).
    pub change_part: usize,
    /// Closed Change Lists go to a Change List Archive instead of an index.
    pub archive: bool,
    /// Offer a Resource Dump (one package).
    pub resource_dump: bool,
    /// Offer a Change Dump (a package per change part) instead of Change Lists.
    pub change_dump: bool,
    /// Changes before this time are no longer offered (a gap for a Destination behind).
    pub forget_before: i64,
    /// Write `datetime` on changes (else only `lastmod`, as Archives Example 2.2).
    pub datetimes: bool,
    /// Advertise a Change Notification channel at `notifications/change` relayed by this
    /// hub (Change Notification 1.0.1, section 5).
    pub hub: Option<Uri>,
}

impl Default for Publish {
    fn default() -> Publish {
        Publish {
            list_part: 1000,
            change_part: 1000,
            archive: false,
            resource_dump: false,
            change_dump: false,
            forget_before: 0,
            datetimes: true,
            hub: None,
        }
    }
}

/// A canned response.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn ok(body: Vec<u8>) -> Response {
        Response {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }
}

/// What a Source does to itself once one of its paths was served: it moves while a
/// Destination reads it.
pub type Move = Box<dyn FnOnce(&mut Source) + Send + Sync>;

/// The simulated Source.
pub struct Source {
    pub base: String,
    pub now: i64,
    pub resources: BTreeMap<String, (Vec<u8>, i64)>,
    pub log: Vec<Logged>,
    pub publish: Publish,
    pub files: BTreeMap<String, Response>,
    /// When the last Resource List was published.
    pub published_at: i64,
    /// Moves waiting for their path to be served ([`Source::serve`]), in order: each runs
    /// once, right after the first response for its path.
    pub moves: Vec<(String, Move)>,
    /// Other bases the Source answers at, as at its own (one server under several names
    /// or ports); its documents name only `base`.
    pub aliases: Vec<String>,
}

impl Default for Source {
    fn default() -> Source {
        Source::new()
    }
}

impl Source {
    pub fn new() -> Source {
        Source {
            base: "http://example.com/".into(),
            now: 0,
            resources: BTreeMap::new(),
            log: Vec::new(),
            publish: Publish::default(),
            files: BTreeMap::new(),
            published_at: 0,
            moves: Vec::new(),
            aliases: Vec::new(),
        }
    }

    pub fn uri(&self, path: &str) -> Uri {
        format!("{}{}", self.base, path).parse().unwrap()
    }

    pub fn tick(&mut self, seconds: i64) {
        self.now += seconds;
    }

    pub fn put(&mut self, path: &str, bytes: &[u8]) {
        let change = if self.resources.contains_key(path) {
            Change::Updated
        } else {
            Change::Created
        };
        self.resources
            .insert(path.into(), (bytes.to_vec(), self.now));
        self.log.push(Logged {
            at: self.now,
            path: path.into(),
            change,
            bytes: Some(bytes.to_vec()),
        });
    }

    pub fn delete(&mut self, path: &str) {
        if self.resources.remove(path).is_some() {
            self.log.push(Logged {
                at: self.now,
                path: path.into(),
                change: Change::Deleted,
                bytes: None,
            });
        }
    }

    fn md_of(bytes: &[u8]) -> Md {
        let mut f = Fixity::new();
        f.update(bytes);
        let d = f.finish();
        Md::new().with_length(d.length).with_hash(d.hashes())
    }

    fn xml(doc: &Document) -> Response {
        let mut out = Vec::new();
        let written = resourcesync_xml::write_document(&mut out, doc).unwrap();
        drop(written);
        Response::ok(out)
    }

    fn head(&self, capability: Capability, root: Root) -> DocumentHead {
        DocumentHead::new(root, capability)
            .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")))
    }

    /// Writes every document (and package) as the Source stands now.
    pub fn publish(&mut self) {
        let p = self.publish.clone();
        let now = time(self.now);
        self.files.clear();
        self.published_at = self.now;
        // Source Description and Capability List.
        let mut sd = Document::new(DocumentHead::new(Root::UrlSet, Capability::Description));
        sd.entries.push(
            Entry::new(self.uri("capabilitylist.xml"))
                .with_md(Md::new().with_capability(Capability::CapabilityList)),
        );
        self.files
            .insert(".well-known/resourcesync".into(), Self::xml(&sd));
        let mut cl = Document::new(
            DocumentHead::new(Root::UrlSet, Capability::CapabilityList).with_link(Link::new(
                Relation::Up,
                self.uri(".well-known/resourcesync"),
            )),
        );
        let cap = |uri: Uri, c: Capability| Entry::new(uri).with_md(Md::new().with_capability(c));
        cl.entries
            .push(cap(self.uri("resourcelist.xml"), Capability::ResourceList));
        if p.resource_dump {
            cl.entries
                .push(cap(self.uri("resourcedump.xml"), Capability::ResourceDump));
        }
        if p.change_dump {
            cl.entries
                .push(cap(self.uri("changedump.xml"), Capability::ChangeDump));
        } else {
            cl.entries
                .push(cap(self.uri("changelist.xml"), Capability::ChangeList));
        }
        if p.archive {
            cl.entries.push(cap(
                self.uri("changelist-archive.xml"),
                Capability::ChangeListArchive,
            ));
        }
        if let Some(hub) = &p.hub {
            cl.entries.push(
                Channel::change_notification(self.uri("notifications/change"), hub.clone())
                    .to_entry(),
            );
        }
        self.files
            .insert("capabilitylist.xml".into(), Self::xml(&cl));

        // Resource List, an index when it has more than one part.
        let entries: Vec<Entry> = self
            .resources
            .iter()
            .map(|(path, (bytes, lastmod))| {
                Entry::new(self.uri(path))
                    .with_lastmod(time(*lastmod))
                    .with_md(Self::md_of(bytes))
            })
            .collect();
        let parts: Vec<&[Entry]> = if entries.is_empty() {
            vec![&[][..]]
        } else {
            entries.chunks(p.list_part.max(1)).collect()
        };
        if parts.len() == 1 {
            let mut doc = Document::new(
                self.head(Capability::ResourceList, Root::UrlSet)
                    .with_at(now),
            );
            doc.entries = parts[0].to_vec();
            self.files
                .insert("resourcelist.xml".into(), Self::xml(&doc));
        } else {
            let mut index = Document::new(
                self.head(Capability::ResourceList, Root::SitemapIndex)
                    .with_at(now),
            );
            for (i, part) in parts.iter().enumerate() {
                let name = format!("resourcelist-{i}.xml");
                let mut doc = Document::new(
                    self.head(Capability::ResourceList, Root::UrlSet)
                        .with_at(now)
                        .with_link(Link::new(Relation::Index, self.uri("resourcelist.xml"))),
                );
                doc.entries = part.to_vec();
                self.files.insert(name.clone(), Self::xml(&doc));
                index
                    .entries
                    .push(Entry::new(self.uri(&name)).with_md(Md::new().with_at(now)));
            }
            self.files
                .insert("resourcelist.xml".into(), Self::xml(&index));
        }

        // Resource Dump: one package.
        if p.resource_dump {
            let head = DocumentHead::new(Root::UrlSet, Capability::ResourceDumpManifest)
                .with_at(now)
                .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")));
            let mut w =
                PackageWriter::new(Cursor::new(Vec::new()), head, PackageOptions::default())
                    .unwrap();
            for (path, (bytes, lastmod)) in &self.resources {
                let b = Bitstream::new(self.uri(path), BitstreamPath::new(format!("/{path}")))
                    .with_lastmod(time(*lastmod));
                w.add(b, &bytes[..]).unwrap();
            }
            let (zip, info) = w.finish().unwrap();
            let zip = zip.into_inner();
            let mut dump = Document::new(
                self.head(Capability::ResourceDump, Root::UrlSet)
                    .with_at(now),
            );
            dump.entries.push(
                Entry::new(self.uri("resourcedump-1.zip")).with_md(
                    Md::new()
                        .with_length(info.digests.length)
                        .with_hash(info.digests.hashes())
                        .with_at(now),
                ),
            );
            self.files
                .insert("resourcedump-1.zip".into(), Response::ok(zip));
            self.files
                .insert("resourcedump.xml".into(), Self::xml(&dump));
        }

        // Changes, in parts; the last part is open.
        let offered: Vec<&Logged> = self
            .log
            .iter()
            .filter(|l| l.at >= p.forget_before)
            .collect();
        let chunks: Vec<&[&Logged]> = if offered.is_empty() {
            vec![&[][..]]
        } else {
            offered.chunks(p.change_part.max(1)).collect()
        };
        let mut from = p.forget_before;
        let mut lists = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let until = if last {
                None
            } else {
                Some(chunks[i + 1][0].at)
            };
            lists.push((format!("changes-{i}"), from, until, chunk.to_vec()));
            if let Some(u) = until {
                from = u;
            }
        }
        let change_entry = |l: &Logged| {
            let mut md = match &l.bytes {
                Some(b) => Self::md_of(b),
                None => Md::new(),
            }
            .with_change(l.change);
            if p.datetimes {
                md = md.with_datetime(time(l.at));
            }
            Entry::new(self.uri(&l.path))
                .with_lastmod(time(l.at))
                .with_md(md)
        };
        if p.change_dump {
            let mut dump = Document::new(
                self.head(Capability::ChangeDump, Root::UrlSet)
                    .with_from(time(p.forget_before)),
            );
            for (name, from, until, chunk) in &lists {
                if chunk.is_empty() {
                    continue;
                }
                let mut head = DocumentHead::new(Root::UrlSet, Capability::ChangeDumpManifest)
                    .with_from(time(*from))
                    .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")));
                if let Some(u) = until {
                    head = head.with_until(time(*u));
                }
                let mut w =
                    PackageWriter::new(Cursor::new(Vec::new()), head, PackageOptions::default())
                        .unwrap();
                for (k, l) in chunk.iter().enumerate() {
                    match &l.bytes {
                        Some(bytes) => {
                            let b = Bitstream::new(
                                self.uri(&l.path),
                                BitstreamPath::new(format!("/{k}/{}", l.path)),
                            )
                            .with_lastmod(time(l.at))
                            .with_change(l.change)
                            .with_datetime(time(l.at));
                            w.add(b, &bytes[..]).unwrap();
                        }
                        None => {
                            w.add_deleted(self.uri(&l.path), Some(time(l.at))).unwrap();
                        }
                    }
                }
                let (zip, info) = w.finish().unwrap();
                let zip_name = format!("{name}.zip");
                self.files
                    .insert(zip_name.clone(), Response::ok(zip.into_inner()));
                let mut md = Md::new()
                    .with_length(info.digests.length)
                    .with_hash(info.digests.hashes())
                    .with_from(time(*from));
                if let Some(u) = until {
                    md = md.with_until(time(*u));
                }
                dump.entries
                    .push(Entry::new(self.uri(&zip_name)).with_md(md));
            }
            self.files.insert("changedump.xml".into(), Self::xml(&dump));
            return;
        }
        let mut docs = Vec::new();
        for (name, from, until, chunk) in &lists {
            let mut head = self
                .head(Capability::ChangeList, Root::UrlSet)
                .with_from(time(*from));
            if let Some(u) = until {
                head = head.with_until(time(*u));
            }
            if p.archive {
                head = head.with_link(Link::new(
                    Relation::Archives,
                    self.uri("changelist-archive.xml"),
                ));
            }
            let mut doc = Document::new(head);
            doc.entries = chunk.iter().map(|l| change_entry(l)).collect();
            docs.push((format!("{name}.xml"), *from, *until, doc));
        }
        if p.archive {
            // The open list is the Change List; closed ones are in the archive.
            let mut archive = Document::new(self.head(Capability::ChangeListArchive, Root::UrlSet));
            let n = docs.len();
            for (i, (name, from, until, doc)) in docs.into_iter().enumerate() {
                if i + 1 == n {
                    self.files.insert("changelist.xml".into(), Self::xml(&doc));
                } else {
                    let mut md = Md::new().with_from(time(from));
                    if let Some(u) = until {
                        md = md.with_until(time(u));
                    }
                    archive
                        .entries
                        .push(Entry::new(self.uri(&name)).with_md(md));
                    self.files.insert(name, Self::xml(&doc));
                }
            }
            self.files
                .insert("changelist-archive.xml".into(), Self::xml(&archive));
        } else if docs.len() == 1 {
            let (_, _, _, doc) = docs.pop().unwrap();
            self.files.insert("changelist.xml".into(), Self::xml(&doc));
        } else {
            let mut index = Document::new(
                self.head(Capability::ChangeList, Root::SitemapIndex)
                    .with_from(time(p.forget_before)),
            );
            for (name, from, until, doc) in docs {
                let mut md = Md::new().with_from(time(from));
                if let Some(u) = until {
                    md = md.with_until(time(u));
                }
                index.entries.push(Entry::new(self.uri(&name)).with_md(md));
                self.files.insert(name, Self::xml(&doc));
            }
            self.files
                .insert("changelist.xml".into(), Self::xml(&index));
        }
    }

    /// Writes the Change Lists (or Change Dump) as the Source stands now and keeps the
    /// Resource List (and Resource Dump) of the last [`publish`](Source::publish): a
    /// Source that writes its Resource List rarely and carries it forward with Change
    /// Lists, as `resourcesync-source`'s `Publisher` does by default.
    pub fn publish_changes(&mut self) {
        let listing =
            |name: &String| name.starts_with("resourcelist") || name.starts_with("resourcedump");
        let kept: Vec<(String, Response)> = self
            .files
            .iter()
            .filter(|(name, _)| listing(name))
            .map(|(name, r)| (name.clone(), r.clone()))
            .collect();
        let published_at = self.published_at;
        self.publish();
        self.published_at = published_at;
        self.files.retain(|name, _| !listing(name));
        self.files.extend(kept);
    }

    /// After serving `path`, once: `change` moves the Source (see [`Source::serve`]).
    pub fn after_serving(
        &mut self,
        path: &str,
        change: impl FnOnce(&mut Source) + Send + Sync + 'static,
    ) {
        self.moves.push((path.to_owned(), Box::new(change)));
    }

    /// The response to a GET of `uri` ([`respond`](Source::respond)), then the moves that
    /// wait for its path: a Source that changes while a Destination reads it.
    pub fn serve(&mut self, uri: &str) -> Response {
        let response = self.respond(uri);
        let path = uri.strip_prefix(&self.base).unwrap_or(uri).to_owned();
        let (due, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.moves)
            .into_iter()
            .partition(|(p, _)| *p == path);
        self.moves = wait;
        for (_, change) in due {
            change(self);
        }
        response
    }

    /// The response to a GET of `uri`, as published (resources as they are now).
    pub fn respond(&self, uri: &str) -> Response {
        let path = std::iter::once(&self.base)
            .chain(&self.aliases)
            .find_map(|base| uri.strip_prefix(base.as_str()));
        let Some(path) = path else {
            return Response {
                status: 404,
                headers: vec![],
                body: vec![],
            };
        };
        if let Some(r) = self.files.get(path) {
            return r.clone();
        }
        match self.resources.get(path) {
            Some((bytes, _)) => Response::ok(bytes.clone()),
            None => Response {
                status: 404,
                headers: vec![],
                body: b"not found".to_vec(),
            },
        }
    }
}
