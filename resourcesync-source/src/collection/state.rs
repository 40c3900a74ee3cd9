//! The state a run leaves in its generation for the next: the Change Lists, the open
//! one, and every resource published with what the run knew of it.

use super::*;

/// What a run knows of a file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resource {
    pub(crate) length: u64,
    /// The file's modification time as the run found it (seconds and nanoseconds since
    /// the epoch): with the length, what tells the next run whether to read it again.
    pub(crate) mtime: (i64, u32),
    /// When its content last changed, its `lastmod`: the modification time of the run
    /// that found these bytes first. A file touched since, its bytes the same, keeps it:
    /// `lastmod` is the last modification of the resource (section 7, and the at of
    /// Example 14: no change between lastmod and at), and a new one with no change in the
    /// Change Lists would make a Destination that follows them disagree with the Resource
    /// List for ever.
    pub(crate) lastmod: (i64, u32),
    /// What else of its file tells a change that keeps the size and modification time
    /// (`cp -p`, `rsync -t`, `touch -r`): a mix of its change time and inode number,
    /// which no program sets back (see [`Racy`]); 0 when unknown or not to be trusted,
    /// which has the next run read the file again.
    pub(crate) stamp: u64,
    /// The digests as bytes: read back without parsing hex.
    pub(crate) md5: [u8; 16],
    pub(crate) sha256: [u8; 32],
    /// Its place in the run's [`MediaTypes`].
    pub(crate) media_type: MediaTypeId,
}

/// A media type's place in a run's [`MediaTypes`], from 1; 0 is none.
pub(crate) type MediaTypeId = u16;

/// The media types of a run's resources, each once: a resource names its own by its
/// place here, so that the state keeps a short number per resource rather than a media
/// type to parse again.
#[derive(Debug, Default, Clone)]
pub(crate) struct MediaTypes {
    pub(crate) types: Vec<MediaType>,
    pub(crate) places: std::collections::HashMap<String, MediaTypeId>,
}

impl MediaTypes {
    /// The place of the media type `name`, added if new; 0 for a name that is no media
    /// type (or one too many, which no guess makes).
    pub(crate) fn of(&mut self, name: &str) -> MediaTypeId {
        if let Some(&id) = self.places.get(name) {
            return id;
        }
        let Ok(media_type) = name.parse::<MediaType>() else {
            return 0;
        };
        let Ok(id) = MediaTypeId::try_from(self.types.len() + 1) else {
            return 0;
        };
        self.types.push(media_type);
        self.places.insert(name.to_owned(), id);
        id
    }

    /// The media type at `id`.
    pub(crate) fn get(&self, id: MediaTypeId) -> Option<&MediaType> {
        usize::from(id)
            .checked_sub(1)
            .and_then(|i| self.types.get(i))
    }
}

/// The state's resources as a file: their media types once each, their paths one after
/// another, their digests (md5 and sha-256) one after another, and the rest as numbers,
/// in postcard's encoding of this type. [`resources_file`] writes it and
/// [`LastRun::from_file`] reads it by hand, in one pass each; the tests hold both to what
/// postcard makes of the type.
#[cfg(test)]
#[derive(Serialize, Deserialize)]
pub(crate) struct ResourcesFile<'a> {
    #[serde(borrow)]
    pub(crate) media_types: Vec<&'a str>,
    pub(crate) paths: &'a str,
    #[serde(borrow, with = "serde_bytes")]
    pub(crate) digests: &'a [u8],
    pub(crate) records: Vec<Record>,
    /// Each resource's [`Resource::stamp`], in order, as 8 bytes little-endian.
    #[serde(borrow, with = "serde_bytes")]
    pub(crate) stamps: &'a [u8],
}

/// A resource in [`ResourcesFile`], but for its path and digests.
#[derive(Serialize, Deserialize)]
pub(crate) struct Record {
    /// Its path's length in bytes.
    pub(crate) path: u32,
    pub(crate) length: u64,
    pub(crate) mtime: (i64, u32),
    /// [`Resource::lastmod`] when it is not `mtime` (a file touched, its bytes the same);
    /// one byte for the others.
    pub(crate) lastmod: Option<(i64, u32)>,
    pub(crate) media_type: MediaTypeId,
}

/// Bytes of one resource's digests in [`ResourcesFile::digests`]: md5, then sha-256.
pub(crate) const DIGESTS: usize = 16 + 32;

/// A change a run found: when it happened, the resource's path, and what it is: the
/// resource's index among those published and the change, or `None` for a deletion.
pub(crate) type ChangeAt = (W3cDateTime, String, Option<(usize, Change)>);

/// Reads the state a run left, or refuses to go on without it.
pub(crate) fn read_state(generation: &Path) -> Result<State, BuildError> {
    let unreadable = |path: &Path| {
        let path = path.to_owned();
        move |reason: String| BuildError::State { path, reason }
    };
    let path = generation.join(STATE);
    let bytes =
        crate::directory::read_file(&path, true).map_err(|e| unreadable(&path)(e.to_string()))?;
    let state: State =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(&path)(e.to_string()))?;
    if state.version != STATE_VERSION {
        return Err(unreadable(&path)(format!(
            "format {} is not this version's ({STATE_VERSION}); publish into a new directory",
            state.version
        )));
    }
    Ok(state)
}

/// What the last run published, being read by [`read_resources`] on a thread of its own
/// while the walk runs: its resources first, then its Resource List.
pub(crate) struct Known {
    /// The resources file.
    pub(crate) path: PathBuf,
    /// The resources, sent as soon as they are read.
    pub(crate) resources: std::sync::mpsc::Receiver<Result<Arc<LastRun>, BuildError>>,
    /// Then the Resource List.
    pub(crate) list: std::thread::JoinHandle<LastList>,
}

impl Known {
    /// The resources, once read.
    pub(crate) fn resources(&self) -> Result<Arc<LastRun>, BuildError> {
        self.resources.recv().unwrap_or_else(|_| {
            Err(BuildError::State {
                path: self.path.clone(),
                reason: "the thread reading it panicked".into(),
            })
        })
    }
}

/// The Resource List the last run wrote: its documents (the parts in order, or the one
/// document), and for each of their entries whether it is, as written, the entry of the
/// resource the last run listed at its place (its `<loc>` the base's prefix and that
/// resource's plain path: [`Uris::names`], checked here while the document is fresh in
/// the cache rather than by the Resource List's thread). Empty when a document cannot
/// be read, or is not as this crate writes it.
#[derive(Default)]
pub(crate) struct LastList {
    pub(crate) documents: Vec<Arc<WrittenDocument>>,
    pub(crate) named: Vec<bool>,
}

/// The resources the last run published, in path order, each path once.
#[derive(Debug, Default)]
pub(crate) struct LastRun {
    /// Their paths, one after another.
    pub(crate) paths: String,
    /// Where each path ends in `paths`.
    pub(crate) ends: Vec<usize>,
    pub(crate) resources: Vec<Resource>,
    /// The media types they name; this run's, with any it adds.
    pub(crate) media_types: MediaTypes,
}

impl LastRun {
    pub(crate) fn len(&self) -> usize {
        self.resources.len()
    }

    /// The path of resource `j`.
    pub(crate) fn path(&self, j: usize) -> &str {
        let start = j.checked_sub(1).map_or(0, |i| self.ends[i]);
        &self.paths[start..self.ends[j]]
    }

    /// Reads a [`ResourcesFile`], or says what is wrong with it: postcard's encoding of
    /// one (see [`resources_file`]) read in one pass into the run's own layout, rather
    /// than into a `ResourcesFile` first, whose `Vec<Record>` for 100,000 resources is
    /// 4 MB more to fill and go over again.
    ///
    /// A file of the format before stamps (`stamped` false) ends after the records; each
    /// resource's stamp is then 0.
    pub(crate) fn from_file(bytes: &[u8], stamped: bool) -> Result<LastRun, String> {
        let mut input = Postcard { bytes, at: 0 };
        let mut media_types = MediaTypes::default();
        for i in 0..input.length()? {
            let name = input.str()?;
            if usize::from(media_types.of(name)) != i + 1 {
                return Err(format!("media type {} is {name:?}: none, or twice", i + 1));
            }
        }
        let paths = input.str()?;
        let digests = input.bytes()?;
        let n = input.length()?;
        if n.checked_mul(DIGESTS) != Some(digests.len()) {
            return Err(format!(
                "{} bytes of digests for {n} resources",
                digests.len()
            ));
        }
        // `n` is bounded by the file: its digests are there.
        let mut run = LastRun {
            paths: paths.to_owned(),
            ends: Vec::with_capacity(n),
            resources: Vec::with_capacity(n),
            media_types,
        };
        let mut end = 0usize;
        for digests in digests.chunks_exact(DIGESTS) {
            let record = input.record()?;
            let start = end;
            end += record.path as usize;
            let Some(path) = run.paths.get(start..end) else {
                return Err(format!(
                    "resource {}'s path ends inside a character or past the paths",
                    run.ends.len() + 1
                ));
            };
            if run.ends.last().is_some() && *run.path(run.ends.len() - 1) >= *path {
                return Err("the resources are not in path order, each once".into());
            }
            if usize::from(record.media_type) > run.media_types.types.len() {
                return Err(format!("no media type {}", record.media_type));
            }
            // Times the walk could have taken (it skips a file outside the W3C years):
            // another, made a date, would overflow.
            let time =
                |(secs, nanos): (i64, u32)| W3C_YEARS.contains(&secs) && nanos < 1_000_000_000;
            if !time(record.mtime) || !record.lastmod.is_none_or(time) {
                return Err(format!(
                    "resource {}: a time outside the years 0000 to 9999",
                    run.ends.len() + 1
                ));
            }
            let (md5, sha256) = digests.split_at(16);
            run.ends.push(end);
            run.resources.push(Resource {
                length: record.length,
                mtime: record.mtime,
                lastmod: record.lastmod.unwrap_or(record.mtime),
                stamp: 0,
                md5: md5.try_into().unwrap_or_default(),
                sha256: sha256.try_into().unwrap_or_default(),
                media_type: record.media_type,
            });
        }
        if end != run.paths.len() {
            return Err("paths beyond the last resource".into());
        }
        if stamped {
            let stamps = input.bytes()?;
            if stamps.len() != n * 8 {
                return Err(format!(
                    "{} bytes of stamps for {n} resources",
                    stamps.len()
                ));
            }
            for (resource, stamp) in run.resources.iter_mut().zip(stamps.chunks_exact(8)) {
                resource.stamp = u64::from_le_bytes(stamp.try_into().unwrap_or_default());
            }
        }
        if input.at != bytes.len() {
            return Err("bytes after the last resource".into());
        }
        Ok(run)
    }
}

/// A reader of postcard's encoding, for [`LastRun::from_file`]: LEB128 varints (signed
/// ones zigzagged), a `str` or bytes as their length then them, an option as 0 or 1 then
/// its value. What runs past the end, or does not fit its type, is an error.
struct Postcard<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Postcard<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let byte = *self.bytes.get(self.at).ok_or("the file ends early")?;
        self.at += 1;
        Ok(byte)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err("a number too large for its type".into())
    }

    fn number<T: TryFrom<u64>>(&mut self) -> Result<T, String> {
        T::try_from(self.varint()?).map_err(|_| "a number too large for its type".into())
    }

    fn signed(&mut self) -> Result<i64, String> {
        let value = self.varint()?;
        Ok((value >> 1) as i64 ^ -((value & 1) as i64))
    }

    fn length(&mut self) -> Result<usize, String> {
        self.number()
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let length = self.length()?;
        let bytes = self
            .at
            .checked_add(length)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or("the file ends early")?;
        self.at += length;
        Ok(bytes)
    }

    fn str(&mut self) -> Result<&'a str, String> {
        std::str::from_utf8(self.bytes()?).map_err(|e| e.to_string())
    }

    fn record(&mut self) -> Result<Record, String> {
        Ok(Record {
            path: self.number()?,
            length: self.varint()?,
            mtime: (self.signed()?, self.number()?),
            lastmod: match self.byte()? {
                0 => None,
                1 => Some((self.signed()?, self.number()?)),
                tag => return Err(format!("an option tagged {tag}")),
            },
            media_type: self.number()?,
        })
    }
}

/// Writes the resources a run publishes, and the media types they name, as a
/// [`ResourcesFile`]: postcard's encoding of one, written in one pass from the resources
/// (its fields in order; a `Vec`, a `str` and bytes as their length then their items;
/// unsigned integers as LEB128 varints, signed ones zigzagged first; `None` as 0 and
/// `Some` as 1 then the value), rather than gathered into a `ResourcesFile` first and
/// serialized into a buffer grown by doubling: 11 MB for 100,000 resources, copied four
/// times over. A test holds it to what postcard writes.
pub(super) fn resources_file(
    resources: &[Published<'_>],
    media_types: &MediaTypes,
) -> Result<Vec<u8>, String> {
    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push(value as u8 | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    fn zigzag(value: i64) -> u64 {
        ((value << 1) ^ (value >> 63)) as u64
    }
    let paths: usize = resources.iter().map(|p| p.path.len()).sum();
    // The most a record takes: five varints of up to ten bytes and an option's tag; and
    // its stamp.
    let mut out = Vec::with_capacity(74 + paths + resources.len() * (DIGESTS + 5 * 10 + 1 + 8));
    varint(&mut out, media_types.types.len() as u64);
    for media_type in &media_types.types {
        varint(&mut out, media_type.as_str().len() as u64);
        out.extend_from_slice(media_type.as_str().as_bytes());
    }
    varint(&mut out, paths as u64);
    for published in resources {
        out.extend_from_slice(published.path.as_bytes());
    }
    varint(&mut out, (resources.len() * DIGESTS) as u64);
    for published in resources {
        out.extend_from_slice(&published.resource.md5);
        out.extend_from_slice(&published.resource.sha256);
    }
    varint(&mut out, resources.len() as u64);
    for published in resources {
        let r = published.resource;
        let path = u32::try_from(published.path.len()).map_err(|e| e.to_string())?;
        varint(&mut out, u64::from(path));
        varint(&mut out, r.length);
        varint(&mut out, zigzag(r.mtime.0));
        varint(&mut out, u64::from(r.mtime.1));
        if r.lastmod == r.mtime {
            out.push(0);
        } else {
            out.push(1);
            varint(&mut out, zigzag(r.lastmod.0));
            varint(&mut out, u64::from(r.lastmod.1));
        }
        varint(&mut out, u64::from(r.media_type));
    }
    varint(&mut out, (resources.len() * 8) as u64);
    for published in resources {
        out.extend_from_slice(&published.resource.stamp.to_le_bytes());
    }
    Ok(out)
}

/// Reads the resources generation `number` left in `generation`, then its Resource List,
/// on a thread of its own. `prefix` is what the URI of a plain path starts with, if it
/// holds nothing XML escapes ([`Uris::prefix`]).
pub(crate) fn read_resources(generation: &Path, number: u64, prefix: Option<String>) -> Known {
    // A generation written before stamps has the file of the format before.
    let stamped = generation.join(RESOURCES);
    let unstamped = generation.join(RESOURCES_UNSTAMPED);
    let stamps = stamped.exists() || !unstamped.exists();
    let path = if stamps { stamped } else { unstamped };
    let file = path.clone();
    let docs = generation.join(DOCS);
    let (send, resources) = std::sync::mpsc::channel();
    let list = std::thread::spawn(move || {
        let unreadable = |reason: String| BuildError::State {
            path: path.clone(),
            reason,
        };
        let parts = resource_list_parts(&docs, number);
        // One buffer for the resources file and then the Resource List's first document:
        // fresh memory costs a page fault per 4 KiB written (some 3 us each on this VM),
        // and the file's is free once read.
        let size = |path: &Path| fs::metadata(path).map_or(0, |m| m.len() as usize);
        let mut buffer = Vec::with_capacity(size(&path).max(parts.first().map_or(0, |p| size(p))));
        let run = read_into(&path, &mut buffer)
            .map_err(|e| unreadable(e.to_string()))
            .and_then(|_| LastRun::from_file(&buffer, stamps).map_err(unreadable))
            .map(Arc::new);
        let last = run.as_ref().ok().cloned();
        // The walk may have failed, and the run with it: then nobody is waiting.
        let _ = send.send(run);
        let mut documents = Vec::with_capacity(parts.len());
        let mut named = Vec::new();
        for part in parts {
            buffer.clear();
            let read = read_into(&part, &mut buffer);
            let Some(document) = read.ok().and_then(|_| WrittenDocument::new(buffer)) else {
                return LastList::default();
            };
            buffer = Vec::new();
            // Each entry checked while its document is fresh in the cache.
            if let (Some(last), Some(prefix)) = (&last, &prefix) {
                let first = named.len();
                let count = document.len().min(last.len().saturating_sub(first));
                named.extend((0..count).map(|i| {
                    let path = last.path(first + i);
                    plain(path)
                        && document
                            .entry(i)
                            .strip_prefix(b"<url><loc>")
                            .and_then(|rest| rest.strip_prefix(prefix.as_bytes()))
                            .and_then(|rest| rest.strip_prefix(path.as_bytes()))
                            .is_some_and(|rest| rest.starts_with(b"</loc>"))
                }));
            }
            documents.push(Arc::new(document));
        }
        LastList { documents, named }
    });
    Known {
        path: file,
        resources,
        list,
    }
}

/// Reads the publisher's own file at `path` into `buffer`, as
/// [`read_file`](crate::directory::read_file) does: a link there is not followed, and
/// only a regular file is read, no more than its size.
fn read_into(path: &Path, buffer: &mut Vec<u8>) -> io::Result<usize> {
    crate::directory::read_file_into(path, true, buffer)
}

impl Resource {
    /// The `hash` value: md5 and sha-256.
    pub(crate) fn hashes(&self) -> Hashes {
        Hashes::md5_sha256(self.md5, self.sha256)
    }

    /// When its content last changed, as `lastmod`.
    pub(crate) fn lastmod(&self) -> W3cDateTime {
        W3cDateTime::from(time_of(self.lastmod))
    }
}
