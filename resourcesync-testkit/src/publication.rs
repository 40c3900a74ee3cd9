//! A publication on disk read back as a Destination reads it: its documents through their
//! indexes and archives, its packages verified, every document checked against the
//! standard's rules; for the tests of `resourcesync build` and of the library it stands on.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use resourcesync_model::{Digests, Document, DocumentKind, Entry, Fixity, Severity};
use resourcesync_package::Package;
use resourcesync_xml::{Limits, Reader, read_document};

/// A publish directory and the base URL it is served at.
#[derive(Debug, Clone)]
pub struct Publication {
    /// The publish directory.
    pub dir: PathBuf,
    /// The URL it is served at, ending with a slash.
    pub base: String,
}

impl Publication {
    /// The publication in `dir`, served at `base`.
    pub fn new(dir: &Path, base: &str) -> Publication {
        Publication {
            dir: dir.to_owned(),
            base: base.to_owned(),
        }
    }

    /// The path under the publish directory of a URI under the base.
    pub fn local<'u>(&self, uri: &'u str) -> &'u str {
        uri.strip_prefix(self.base.as_str())
            .expect("a URI under the base")
    }

    /// A document of the publication, by its path under the publish directory; it may
    /// break no rule (warnings recommend).
    pub fn document(&self, relative: &str) -> Document {
        let bytes = fs::read(self.dir.join(relative)).unwrap();
        let (document, findings) = read_document(&bytes).unwrap();
        assert!(
            findings.iter().all(|f| f.severity() == Severity::Warning),
            "{relative}: {findings:?}"
        );
        document
    }

    /// Every entry of the Resource List, through its index when it has one; each part of
    /// the index's own snapshot time.
    pub fn resource_list(&self) -> Vec<Entry> {
        let top = self.document("resourcesync/resourcelist.xml");
        if top.head.kind() == DocumentKind::ResourceList {
            return top.entries;
        }
        assert_eq!(top.head.kind(), DocumentKind::ResourceListIndex);
        // Each part is the index's own: the same snapshot time, however the publication
        // switches between the reads.
        top.entries
            .iter()
            .flat_map(|part| {
                let part = self.document(self.local(part.loc.as_str()));
                assert_eq!(
                    part.head.md.at, top.head.md.at,
                    "a part of another generation"
                );
                part.entries
            })
            .collect()
    }

    /// Every entry of every Change List, the archived ones first, with the index's (or
    /// archive's) entry for the list.
    pub fn change_lists(&self) -> Vec<(Entry, Vec<Entry>)> {
        let index = self.document("resourcesync/changelist.xml");
        assert_eq!(index.head.kind(), DocumentKind::ChangeListIndex);
        self.archived_lists()
            .iter()
            .chain(&index.entries)
            .map(|e| {
                let list = self.document(self.local(e.loc.as_str()));
                (e.clone(), list.entries)
            })
            .collect()
    }

    /// The Change Lists the Change List Archive lists, oldest first, through its index
    /// when it has one; none without an archive.
    pub fn archived_lists(&self) -> Vec<Entry> {
        let name = "resourcesync/changelist-archive.xml";
        if !self.dir.join(name).exists() {
            return Vec::new();
        }
        let archive = self.document(name);
        match archive.head.kind() {
            DocumentKind::ChangeListArchive => archive.entries,
            DocumentKind::ChangeListArchiveIndex => archive
                .entries
                .iter()
                .flat_map(|part| {
                    let part = self.document(self.local(part.loc.as_str()));
                    assert_eq!(part.head.kind(), DocumentKind::ChangeListArchive);
                    part.entries
                })
                .collect(),
            other => panic!("{name} is a {other:?}"),
        }
    }

    /// The manifest of the package a dump's entry lists, every bitstream verified.
    pub fn package(&self, entry: &Entry) -> Document {
        let path = self.dir.join(self.local(entry.loc.as_str()));
        let mut package = Package::open(path).unwrap();
        package.verify().unwrap();
        package.manifest().clone()
    }

    /// What the publish directory serves at a resource's URI: its bytes.
    pub fn served(&self, entry: &Entry) -> Vec<u8> {
        let path = percent_decode(self.local(entry.loc.as_str()));
        fs::read(self.dir.join(path)).unwrap()
    }

    /// The Source Description and every document and package under `resourcesync/`.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![self.dir.join(".well-known/resourcesync")];
        let mut docs: Vec<PathBuf> = fs::read_dir(self.dir.join("resourcesync"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "xml" || e == "zip"))
            .collect();
        docs.sort();
        files.extend(docs);
        files
    }

    /// Every document and package checked against the standard's rules, as `resourcesync
    /// validate` checks them (the standard's limits as findings): none may break a rule or
    /// be unreadable; the warnings, counted.
    pub fn validate(&self) -> u64 {
        let mut warnings = 0;
        for path in self.files() {
            let findings = if fs::read(&path).unwrap().starts_with(b"PK\x03\x04") {
                let mut package = Package::open(&path).unwrap();
                package.check().unwrap()
            } else {
                let mut reader = Reader::open_with_limits(&path, Limits::unbounded_size())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                reader.kind().unwrap();
                let mut findings = Vec::new();
                loop {
                    let next = reader.next_entry();
                    findings.extend(reader.take_findings());
                    match next {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => panic!("{}: {e}", path.display()),
                    }
                }
                findings
            };
            for f in findings {
                match f.severity() {
                    Severity::Error => panic!("{}: {f:?}", path.display()),
                    Severity::Warning => warnings += 1,
                }
            }
        }
        warnings
    }

    /// Every file of the publication, by path, with its bytes (through the links).
    pub fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut todo = vec![self.dir.clone()];
        while let Some(dir) = todo.pop() {
            for entry in fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let meta = fs::metadata(&path).unwrap();
                if meta.is_dir() {
                    todo.push(path);
                } else if meta.is_file() {
                    let bytes = fs::read(&path).unwrap();
                    files.insert(path.strip_prefix(&self.dir).unwrap().to_owned(), bytes);
                }
            }
        }
        files
    }
}

/// `s` with each `%XX` decoded; UTF-8.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Length, md5 and sha-256 of `bytes`.
pub fn digests(bytes: &[u8]) -> Digests {
    let mut fixity = Fixity::new();
    fixity.update(bytes);
    fixity.finish()
}

/// Writes a collection of `n` files of mixed media types, sizes and names (spaces,
/// non-ASCII), nested three levels deep, under `root`; returns their relative paths.
pub fn generate_collection(root: &Path, n: usize) -> Vec<String> {
    let kinds = ["txt", "html", "json", "png", "pdf", "xml", "csv", "bin"];
    let mut paths = Vec::new();
    for i in 0..n {
        let kind = kinds[i % kinds.len()];
        let path = match i % 5 {
            0 => format!("top-{i}.{kind}"),
            1 => format!("docs/file {i}.{kind}"),
            2 => format!("docs/été/{i}.{kind}"),
            _ => format!("data/{}/{}/r{i}.{kind}", i % 3, i % 7),
        };
        let size = (i * 37) % 3000;
        let bytes: Vec<u8> = (0..size).map(|b| (b * 31 + i) as u8).collect();
        let file = root.join(&path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, bytes).unwrap();
        paths.push(path);
    }
    paths
}
