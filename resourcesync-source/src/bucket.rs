//! A publication in a bucket's prefix: [`BucketStore`].

use std::collections::BTreeSet;
use std::time::Duration;

use std::io::Read as _;

use futures::{StreamExt as _, TryStreamExt as _};
use resourcesync_objects::object_store::path::Path as Key;
use resourcesync_objects::object_store::{
    self, Attribute, AttributeValue, Attributes, ObjectStore, PutOptions, PutPayload,
};
use resourcesync_objects::{Bucket, Lease, ObjectsError, Runner, random};
use serde::{Deserialize, Serialize};

use crate::engine::{CAPABILITY_LIST, DOCS, SOURCE_DESCRIPTION};
use crate::store::{Store, StoreError, check_beside, check_name};

/// Where the store keeps its own objects, beside the publication's names (the engine's
/// state is `.resourcesync/state.json`, a name of the publication).
const OWN: &str = ".resourcesync/bucket";
/// The lease's name under [`OWN`].
const LOCK: &str = "lock";
/// The journal's name under [`OWN`]: the commit point.
const JOURNAL: &str = "commit.json";
/// The staged runs, under [`OWN`].
const STAGING: &str = "staging";
/// The records beside the publications, under [`OWN`].
const BESIDE: &str = "beside";
/// Copies and deletions under way at once while a commit rolls forward.
const AT_ONCE: usize = 16;

/// What a commit does: written down before any of it is done, so that a killed run's is
/// finished by the next.
#[derive(Debug, Serialize, Deserialize)]
struct Journal {
    /// The run's staging, under [`STAGING`].
    run: String,
    /// The names written, each staged.
    written: Vec<String>,
    /// The names removed.
    removed: Vec<String>,
}

/// The publication being written.
#[derive(Debug)]
struct Pending {
    run: String,
    written: BTreeSet<String>,
    removed: BTreeSet<String>,
}

impl Pending {
    /// What committing it does, to write down first.
    fn journal(self) -> Journal {
        Journal {
            run: self.run,
            written: self.written.into_iter().collect(),
            removed: self.removed.into_iter().collect(),
        }
    }
}

/// A publication in a bucket's prefix, served by any static host or CDN in front of it: a
/// [`Store`] over object storage (feature `object-store`).
///
/// An object store has no rename and no switch of many keys at once, so a publication is
/// committed in three steps:
///
/// 1. **Staged.** Every file of the run (the application's and the documents) is PUT under
///    `.resourcesync/bucket/staging/<run>/<name>`, where nothing links to it.
/// 2. **Committed.** One PUT of the run's journal, `.resourcesync/bucket/commit.json`
///    (what it wrote, what it removed), is the commit point: once it is there the
///    publication is published, whatever happens to this process or the store next.
/// 3. **Rolled forward.** Each staged file is copied (a server-side copy) to its own key,
///    the files no document links to first, then the documents that link to them, then
///    the state, the Capability List and the Source Description last; then what the run
///    removed is deleted, and the journal and the staging go. A publisher that opens the
///    prefix and finds a journal left by a killed run or a store that went away finishes
///    it first; staging no journal names (a run that never committed) is deleted.
///
/// So a publisher that fails or is killed before the journal leaves the last publication
/// as it was, and one killed after it is finished by the next. A reader that reads from the
/// Source Description or the Capability List down finds every document it is pointed to at
/// least as new as the one that pointed to it: the copies follow the links bottom up, and
/// the engine names every part after the run that wrote it and keeps the last run's one
/// run more (as a [`GenerationStore`](crate::GenerationStore) does, for a reader whose
/// requests straddle a switch). A document rewritten in place under its own name (the
/// open Change List, an index) is one PUT: its reader gets the old bytes or the new, never
/// a mix of both.
///
/// **One publisher at a time.** [`BucketStore::open`] takes the prefix's lease,
/// `.resourcesync/bucket/lock` ([`resourcesync_objects::Lease`]: a conditional create,
/// renewed while the store is open, taken over only once it ran out); a second publisher
/// gets [`StoreError::Busy`]. A publisher whose lease was taken over (it stalled past it)
/// writes no more. Where the store has no conditional PUT ([`BucketStore::conditional`]),
/// the lease is read, then written: two publishers opening within one round trip of each
/// other could both hold it.
///
/// Every object carries the content type its name says (`application/xml` for the
/// documents, which also carry `Cache-Control: no-cache`), so that the static host serves
/// it as such.
///
/// The records beside the publications ([`Store::read_beside`]) are objects under
/// `.resourcesync/bucket/beside/`: under the prefix, so served by a host that serves the
/// whole of it, unlike a [`GenerationStore`](crate::GenerationStore)'s. A resource written
/// again is its new bytes once its copy lands, before the lists that describe it (as a
/// directory a web server serves while it changes).
///
/// ```
/// use std::time::SystemTime;
/// use resourcesync_source::{BucketStore, PublishOptions, Publisher, Store};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // `s3://bucket/prefix` with `aws_endpoint` and the rest, or the AWS_* variables; here
/// // object_store's memory store.
/// let store = BucketStore::open(&"memory:///site".parse()?, [], BucketStore::LEASE)?;
/// let base = "https://site.example.org/".parse()?;
/// let mut source = Publisher::new(store, PublishOptions::new(base));
/// source.publish_snapshot([], SystemTime::now())?;
/// assert!(source.store().exists("resourcesync/capabilitylist.xml")?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct BucketStore {
    bucket: Bucket,
    // Declared before the runner: the lease is given back on it when dropped.
    lease: Option<Lease>,
    runner: Runner,
    conditional: bool,
    pending: Option<Pending>,
}

impl BucketStore {
    /// How long the lease lasts unless renewed: a killed publisher keeps others out this
    /// long.
    pub const LEASE: Duration = Duration::from_secs(60);

    /// Bytes [`write_from`](Self::write_from) reads at a time: one PUT up to this, a
    /// multipart upload of parts this long beyond it (S3 takes parts of 5 MiB to 5 GiB,
    /// 10,000 of them: 80 GiB at this size).
    pub const PART: usize = 8 << 20;

    /// The largest file a publication in a bucket holds: a commit copies each staged file
    /// to its key, and S3's CopyObject takes at most 5 GiB (a copy in parts is not in
    /// `object_store`). [`write_from`](Self::write_from) refuses more.
    pub const MAX_OBJECT: u64 = 5 << 30;

    /// Opens the prefix at `url` (`s3://bucket/prefix`, or any URL [`Bucket::open`]
    /// takes, with its `options`), takes its lease for `lease`, and finishes a commit a
    /// killed publisher left.
    pub fn open(
        url: &url::Url,
        options: impl IntoIterator<Item = (String, String)>,
        lease: Duration,
    ) -> Result<BucketStore, StoreError> {
        let bucket = Bucket::open(url, options).map_err(|e| shared(url.as_str(), e))?;
        BucketStore::open_bucket(bucket, lease)
    }

    /// [`open`](Self::open) for a bucket the caller opened.
    pub fn open_bucket(bucket: Bucket, lease: Duration) -> Result<BucketStore, StoreError> {
        let runner = Runner::new("resourcesync-bucket").map_err(|source| StoreError::Object {
            key: bucket.shown.clone(),
            source: Box::new(source),
        })?;
        let mut store = BucketStore {
            bucket,
            lease: None,
            runner,
            conditional: true,
            pending: None,
        };
        let probe = store.own(&format!("probe-{:032x}", random()))?;
        let lock = store.own(LOCK)?;
        let objects = store.bucket.store.clone();
        let shown = store.bucket.shown.clone();
        let (conditional, lease) = store.run(async move {
            let conditional = resourcesync_objects::conditional(&*objects, &probe)
                .await
                .map_err(|e| shared(&shown, e))?;
            let lease = Lease::take(objects, lock, lease, conditional)
                .await
                .map_err(|e| shared(&shown, e))?;
            Ok((conditional, lease))
        })?;
        store.conditional = conditional;
        store.lease = Some(lease);
        store.recover()?;
        Ok(store)
    }

    /// Whether the store honours conditional PUTs, which keep a second publisher out (see
    /// the [`BucketStore`]).
    pub fn conditional(&self) -> bool {
        self.conditional
    }

    /// The bucket and prefix.
    pub fn bucket(&self) -> &Bucket {
        &self.bucket
    }

    /// Finishes the commit a killed publisher (or a failed roll forward) left, and
    /// deletes the staging of runs that never committed.
    fn recover(&mut self) -> Result<(), StoreError> {
        if let Some(bytes) = self.get(self.own(JOURNAL)?)? {
            let journal: Journal =
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Object {
                    key: self
                        .own(JOURNAL)
                        .map_or_else(|_| JOURNAL.into(), |k| k.to_string()),
                    source: format!("not a journal this store wrote: {e}").into(),
                })?;
            self.roll_forward(&journal, true)?;
        }
        let staging = self.own(STAGING)?;
        let objects = self.bucket.store.clone();
        self.run(async move { delete_under(&*objects, &staging).await })
    }

    /// Copies each staged file of `journal` to its own key, bottom up, deletes what it
    /// removed, then the journal (if it is still this one) and the staging. The lease is
    /// checked before each step: a publisher that stalled past it (another took the
    /// prefix over, and finished this journal) goes no further. `recovering`: a journal
    /// found at open, whose staged files may be gone (a lifecycle rule, a hand): what is
    /// left of it is copied, rather than the prefix stopped for good.
    fn roll_forward(&self, journal: &Journal, recovering: bool) -> Result<(), StoreError> {
        self.check_lease()?;
        let watch = self.lease.as_ref().map(Lease::watch);
        let lost = {
            let (shown, key) = (self.bucket.shown.clone(), self.own(LOCK)?.to_string());
            move || StoreError::Busy {
                publish: shown.clone().into(),
                lock: key.clone().into(),
            }
        };
        let check = move || match &watch {
            Some(watch) if watch.lost() => Err(lost()),
            _ => Ok(()),
        };
        let mut ranked: Vec<(u8, Key, Key)> = Vec::with_capacity(journal.written.len());
        for name in &journal.written {
            let staged = self.staged(&journal.run, name)?;
            ranked.push((rank(name), staged, self.key(name)?));
        }
        ranked.sort_by_key(|(rank, ..)| *rank);
        let removed = journal
            .removed
            .iter()
            .map(|name| self.key(name))
            .collect::<Result<Vec<_>, _>>()?;
        let (journal_key, staging) = (self.own(JOURNAL)?, self.staging(&journal.run)?);
        let run = journal.run.clone();
        let objects = self.bucket.store.clone();
        self.run(async move {
            // One rank at a time, its copies at once.
            let mut ranked = ranked.into_iter().peekable();
            while let Some((rank, from, to)) = ranked.next() {
                check()?;
                let mut copies = vec![(from, to)];
                while let Some((_, from, to)) = ranked.next_if(|(r, ..)| *r == rank) {
                    copies.push((from, to));
                }
                at_once(copies, |(from, to)| {
                    let objects = objects.clone();
                    async move {
                        match objects.copy(&from, &to).await {
                            Ok(()) => Ok(()),
                            Err(object_store::Error::NotFound { .. }) if recovering => Ok(()),
                            Err(e) => Err(object_error(&to, e)),
                        }
                    }
                })
                .await?;
            }
            check()?;
            at_once(removed, |key| {
                let objects = objects.clone();
                async move { delete_if_there(&*objects, &key).await }
            })
            .await?;
            check()?;
            // Another's journal, written since (this one was finished by its writer), is
            // not this run's to remove.
            let still_ours = match objects.get(&journal_key).await {
                Ok(found) => found
                    .bytes()
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Journal>(&b).ok())
                    .is_some_and(|j| j.run == run),
                Err(_) => false,
            };
            if still_ours {
                delete_if_there(&*objects, &journal_key).await?;
            }
            delete_under(&*objects, &staging).await
        })
    }

    /// Runs `work` on the store's runtime.
    fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.runner.run(work).unwrap_or_else(|| {
            Err(StoreError::Object {
                key: self.bucket.shown.clone(),
                source: "the store's runtime stopped".into(),
            })
        })
    }

    /// The object at `key`, `None` if there is none.
    fn get(&self, key: Key) -> Result<Option<Vec<u8>>, StoreError> {
        let objects = self.bucket.store.clone();
        self.run(async move {
            let found = match objects.get(&key).await {
                Ok(found) => found,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(object_error(&key, e)),
            };
            let bytes = found.bytes().await.map_err(|e| object_error(&key, e))?;
            Ok(Some(bytes.to_vec()))
        })
    }

    /// Whether the object at `key` is there.
    fn head(&self, key: Key) -> Result<bool, StoreError> {
        let objects = self.bucket.store.clone();
        self.run(async move {
            match objects.head(&key).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                // Not known (after the store's own retries): not taken for absent.
                Err(e) => Err(object_error(&key, e)),
            }
        })
    }

    /// Writes `bytes` at `key`, typed as `name` says.
    fn put(&self, key: Key, name: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.check_lease()?;
        let options = put_options(name);
        let objects = self.bucket.store.clone();
        self.run(async move {
            objects
                .put_opts(&key, PutPayload::from(bytes), options)
                .await
                .map(|_| ())
                .map_err(|e| object_error(&key, e))
        })
    }

    /// Refuses to write once the lease is lost: another publisher may hold it.
    fn check_lease(&self) -> Result<(), StoreError> {
        match &self.lease {
            Some(lease) if !lease.lost() => Ok(()),
            Some(lease) => Err(StoreError::Busy {
                publish: self.bucket.shown.clone().into(),
                lock: lease.key().to_string().into(),
            }),
            None => Err(StoreError::NotBegun),
        }
    }

    /// The key of the publication's `name`.
    fn key(&self, name: &str) -> Result<Key, StoreError> {
        self.bucket
            .key(name)
            .map_err(|e| shared(&self.bucket.shown, e))
    }

    /// The key of the store's own `name`.
    fn own(&self, name: &str) -> Result<Key, StoreError> {
        self.key(&format!("{OWN}/{name}"))
    }

    /// The staging of `run`.
    fn staging(&self, run: &str) -> Result<Key, StoreError> {
        self.own(&format!("{STAGING}/{run}"))
    }

    /// Where `name` of `run` is staged.
    fn staged(&self, run: &str, name: &str) -> Result<Key, StoreError> {
        self.own(&format!("{STAGING}/{run}/{name}"))
    }

    /// Writes `name` from `reader` into the publication being written, as
    /// [`Store::write`] does, without holding it in memory: read [`PART`](Self::PART) bytes at a
    /// time, as one PUT when it fits in one and a multipart upload when it does not (a
    /// resource of any size; each part is sent before the next is read).
    pub fn write_from(
        &mut self,
        name: &str,
        reader: &mut dyn std::io::Read,
    ) -> Result<(), StoreError> {
        self.check_writable(name)?;
        let run = self.pending()?.run.clone();
        let key = self.staged(&run, name)?;
        let read_error = |source: std::io::Error| StoreError::Io {
            path: name.into(),
            source,
        };
        let mut first = Vec::new();
        std::io::Read::take(&mut *reader, BucketStore::PART as u64)
            .read_to_end(&mut first)
            .map_err(read_error)?;
        if first.len() < BucketStore::PART {
            self.put(key, name, first)?;
        } else {
            self.check_lease()?;
            let objects = self.bucket.store.clone();
            let options = put_options(name).attributes.into();
            let upload_key = key.clone();
            let mut upload = self.run(async move {
                objects
                    .put_multipart_opts(&upload_key, options)
                    .await
                    .map_err(|e| object_error(&upload_key, e))
            })?;
            let mut part = first;
            let mut total = 0u64;
            let sent = loop {
                total += part.len() as u64;
                if total > BucketStore::MAX_OBJECT {
                    break Err(StoreError::Object {
                        key: name.to_owned(),
                        source: format!(
                            "more than {} bytes: a commit copies each file to its key, and S3 \
                             copies at most 5 GiB at once",
                            BucketStore::MAX_OBJECT
                        )
                        .into(),
                    });
                }
                let sending = upload.put_part(PutPayload::from(std::mem::take(&mut part)));
                let error_key = key.clone();
                if let Err(e) =
                    self.run(async move { sending.await.map_err(|e| object_error(&error_key, e)) })
                {
                    break Err(e);
                }
                if let Err(e) = std::io::Read::take(&mut *reader, BucketStore::PART as u64)
                    .read_to_end(&mut part)
                    .map_err(read_error)
                {
                    break Err(e);
                }
                if part.is_empty() {
                    break Ok(());
                }
                if let Err(e) = self.check_lease() {
                    break Err(e);
                }
            };
            let error_key = key.clone();
            self.run(async move {
                match sent {
                    Ok(()) => upload
                        .complete()
                        .await
                        .map(drop)
                        .map_err(|e| object_error(&error_key, e)),
                    // Its parts are not left for the bucket to keep (and bill).
                    Err(e) => {
                        let _ = upload.abort().await;
                        Err(e)
                    }
                }
            })?;
        }
        let pending = self.pending()?;
        pending.removed.remove(name);
        pending.written.insert(name.to_owned());
        Ok(())
    }

    /// Writes each of `files` (a name and its bytes) into the publication being written,
    /// as [`Store::write`] does, up to 16 PUTs at once: many small files without a round
    /// trip each in turn.
    pub fn write_all(&mut self, files: Vec<(String, Vec<u8>)>) -> Result<(), StoreError> {
        for (name, _) in &files {
            self.check_writable(name)?;
        }
        self.check_lease()?;
        let run = self.pending()?.run.clone();
        let mut names = Vec::with_capacity(files.len());
        let mut puts = Vec::with_capacity(files.len());
        for (name, bytes) in files {
            puts.push((self.staged(&run, &name)?, put_options(&name), bytes));
            names.push(name);
        }
        let objects = self.bucket.store.clone();
        self.run(async move {
            at_once(puts, |(key, options, bytes)| {
                let objects = objects.clone();
                async move {
                    objects
                        .put_opts(&key, PutPayload::from(bytes), options)
                        .await
                        .map(drop)
                        .map_err(|e| object_error(&key, e))
                }
            })
            .await
        })?;
        let pending = self.pending()?;
        for name in names {
            pending.removed.remove(&name);
            pending.written.insert(name);
        }
        Ok(())
    }

    /// Refuses `name` where the publication cannot have it.
    fn check_writable(&self, name: &str) -> Result<(), StoreError> {
        check_name(name)?;
        if name == OWN || name.starts_with(&format!("{OWN}/")) {
            return Err(StoreError::Name {
                name: name.to_owned(),
                reason: "the bucket store's own",
            });
        }
        Ok(())
    }

    fn pending(&mut self) -> Result<&mut Pending, StoreError> {
        self.pending.as_mut().ok_or(StoreError::NotBegun)
    }
}

impl Store for BucketStore {
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_name(name)?;
        match &self.pending {
            Some(pending) if pending.removed.contains(name) => Ok(None),
            Some(pending) if pending.written.contains(name) => {
                self.get(self.staged(&pending.run, name)?)
            }
            _ => self.get(self.key(name)?),
        }
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        check_name(name)?;
        match &self.pending {
            Some(pending) if pending.removed.contains(name) => Ok(false),
            Some(pending) if pending.written.contains(name) => Ok(true),
            _ => self.head(self.key(name)?),
        }
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.abort();
        self.check_lease()?;
        // A commit whose roll forward failed (a store that went away for a moment) is
        // finished before anything is built on what it left.
        // A journal that may be there is not skipped: what is built next would be built
        // on a commit half done (a HEAD that failed once read as "none" did so).
        if self.head(self.own(JOURNAL)?)? {
            self.recover()?;
        }
        self.pending = Some(Pending {
            run: format!("{:032x}", random()),
            written: BTreeSet::new(),
            removed: BTreeSet::new(),
        });
        Ok(())
    }

    fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), StoreError> {
        self.check_writable(name)?;
        let run = self.pending()?.run.clone();
        self.put(self.staged(&run, name)?, name, pieces.concat())?;
        let pending = self.pending()?;
        pending.removed.remove(name);
        pending.written.insert(name.to_owned());
        Ok(())
    }

    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        self.check_writable(name)?;
        let pending = self.pending()?;
        pending.written.remove(name);
        pending.removed.insert(name.to_owned());
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        let journal = self.pending.take().ok_or(StoreError::NotBegun)?.journal();
        let bytes = serde_json::to_vec(&journal).map_err(|e| StoreError::Object {
            key: JOURNAL.into(),
            source: Box::new(e),
        })?;
        // The commit point.
        self.put(self.own(JOURNAL)?, JOURNAL, bytes)?;
        self.roll_forward(&journal, false)
    }

    fn abort(&mut self) {
        if let Some(pending) = self.pending.take()
            && !pending.written.is_empty()
            && let Ok(staging) = self.staging(&pending.run)
        {
            let objects = self.bucket.store.clone();
            let _ = self.run(async move { delete_under(&*objects, &staging).await });
        }
    }

    fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_beside(name, None)?;
        self.get(self.own(&format!("{BESIDE}/{name}"))?)
    }

    fn write_beside(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        check_beside(name, Some(bytes))?;
        self.put(self.own(&format!("{BESIDE}/{name}"))?, name, bytes.to_vec())
    }
}

impl Drop for BucketStore {
    fn drop(&mut self) {
        self.abort();
        if let Some(lease) = self.lease.take() {
            let _ = self.runner.run(lease.release());
        }
    }
}

/// The order of the copies: the files no document links to, the parts and lists, the
/// documents that link to them, the state, the Capability List, the Source Description.
fn rank(name: &str) -> u8 {
    if name == SOURCE_DESCRIPTION {
        return 5;
    }
    if name == CAPABILITY_LIST {
        return 4;
    }
    if name.starts_with(".resourcesync/") {
        return 3;
    }
    match name.strip_prefix(DOCS).and_then(|n| n.strip_prefix('/')) {
        Some(
            "resourcelist.xml"
            | "changelist.xml"
            | "changelist-archive.xml"
            | "resourcedump.xml"
            | "changedump.xml"
            | "about.html",
        ) => 2,
        Some(_) => 1,
        None => 0,
    }
}

/// A PUT of `name`: typed as its name says; a document revalidated by every cache
/// (`no-cache`: a CDN that kept an old Capability List or index would point its readers at
/// parts removed a run later).
fn put_options(name: &str) -> PutOptions {
    let mut attributes = Attributes::new();
    attributes.insert(
        Attribute::ContentType,
        AttributeValue::from(crate::media_type(name)),
    );
    if rank(name) > 0 {
        attributes.insert(Attribute::CacheControl, AttributeValue::from("no-cache"));
    }
    PutOptions {
        attributes,
        ..Default::default()
    }
}

/// Runs `work` on each of `items`, [`AT_ONCE`] at a time; the first error ends it.
async fn at_once<T, F>(items: Vec<T>, work: impl FnMut(T) -> F) -> Result<(), StoreError>
where
    F: Future<Output = Result<(), StoreError>>,
{
    futures::stream::iter(items)
        .map(work)
        .buffer_unordered(AT_ONCE)
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
}

/// Deletes the object at `key`, if it is there.
async fn delete_if_there(objects: &dyn ObjectStore, key: &Key) -> Result<(), StoreError> {
    match objects.delete(key).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(object_error(key, e)),
    }
}

/// Deletes every object under `prefix`.
async fn delete_under(objects: &dyn ObjectStore, prefix: &Key) -> Result<(), StoreError> {
    let listed = objects
        .list(Some(prefix))
        .map_ok(|meta| meta.location)
        .boxed();
    objects
        .delete_stream(listed)
        .try_for_each(|_| async { Ok(()) })
        .await
        .or_else(|e| match e {
            object_store::Error::NotFound { .. } => Ok(()),
            e => Err(object_error(prefix, e)),
        })
}

fn object_error(key: &Key, source: object_store::Error) -> StoreError {
    StoreError::Object {
        key: key.to_string(),
        source: Box::new(resourcesync_objects::StoreFailure::from(source)),
    }
}

/// The shared crate's error as the store's: a lease held is [`StoreError::Busy`].
fn shared(shown: &str, error: ObjectsError) -> StoreError {
    match error {
        ObjectsError::Busy { key } => StoreError::Busy {
            publish: shown.into(),
            lock: key.into(),
        },
        ObjectsError::Store { key, source } => StoreError::Object {
            key,
            source: Box::new(source),
        },
        other => StoreError::Object {
            key: shown.to_owned(),
            source: Box::new(other),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStore, PublishOptions, Publisher};
    use resourcesync_model::Entry;
    use std::sync::Arc;
    use std::time::SystemTime;

    fn memory() -> (Arc<dyn ObjectStore>, Bucket) {
        let bucket = Bucket::open(&"memory:///site".parse().unwrap(), []).unwrap();
        (bucket.store.clone(), bucket)
    }

    #[test]
    fn a_publication_is_the_same_in_a_bucket_as_in_memory_and_nothing_staged_stays() {
        let (objects, bucket) = memory();
        let store = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        let base = "http://example.org/".parse().unwrap();
        let mut inside = Publisher::new(store, PublishOptions::new(base));
        let base = "http://example.org/".parse().unwrap();
        let mut memory = Publisher::new(MemoryStore::new(), PublishOptions::new(base));
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let entries = |n: u32| {
            (0..n)
                .map(|i| Entry::new(format!("http://example.org/r/{i}").parse().unwrap()))
                .collect::<Vec<_>>()
        };
        for (run, n) in [(0, 3), (1, 5), (2, 2)] {
            let at = now + Duration::from_secs(60 * run);
            inside.publish_snapshot(entries(n), at).unwrap();
            memory.publish_snapshot(entries(n), at).unwrap();
        }
        for name in memory.store().names() {
            assert_eq!(
                inside.store().read(name).unwrap().as_deref(),
                memory.store().get(name),
                "{name}"
            );
        }
        let keys = resourcesync_testkit::objects::keys(&*objects);
        assert!(
            !keys
                .iter()
                .any(|k| k.contains("staging") || k.contains(JOURNAL)),
            "{keys:?}"
        );
        assert_eq!(
            keys.iter()
                .filter(|k| !k.starts_with("site/.resourcesync/bucket/"))
                .count(),
            memory.store().names().count(),
            "{keys:?}"
        );
    }

    #[test]
    fn a_commit_left_half_done_is_finished_by_the_next_begin() {
        let (_, bucket) = memory();
        let mut store = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        store.begin().unwrap();
        store.write("b.txt", &[b"b"]).unwrap();
        // Its journal written, its roll forward failed (the store away for a moment).
        let journal = store.pending.take().unwrap().journal();
        let bytes = serde_json::to_vec(&journal).unwrap();
        store
            .put(store.own(JOURNAL).unwrap(), JOURNAL, bytes)
            .unwrap();
        assert_eq!(store.read("b.txt").unwrap(), None);
        store.begin().unwrap();
        assert_eq!(store.read("b.txt").unwrap().as_deref(), Some(&b"b"[..]));
        assert!(!store.head(store.own(JOURNAL).unwrap()).unwrap());
    }

    /// `inner`, whose HEAD of a key ending in `ending` fails while the flag it gives is
    /// set (a store away for a moment).
    fn head_fails(
        inner: Arc<dyn ObjectStore>,
        ending: &'static str,
    ) -> (Arc<dyn ObjectStore>, Arc<std::sync::atomic::AtomicBool>) {
        let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = failing.clone();
        let store =
            resourcesync_testkit::objects::Hooked::new(inner).failing(move |key, options| {
                options.head
                    && key.as_ref().ends_with(ending)
                    && flag.load(std::sync::atomic::Ordering::SeqCst)
            });
        (Arc::new(store), failing)
    }

    #[test]
    fn a_journal_the_store_cannot_say_is_there_stops_the_next_begin() {
        let (objects, mut bucket) = memory();
        let (store, failing) = head_fails(objects, JOURNAL);
        bucket.store = store;
        let mut publication = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        publication.begin().unwrap();
        publication.write("b.txt", &[b"b"]).unwrap();
        // Its journal written, its roll forward failed.
        let journal = publication.pending.take().unwrap().journal();
        let bytes = serde_json::to_vec(&journal).unwrap();
        let key = publication.own(JOURNAL).unwrap();
        publication.put(key, JOURNAL, bytes).unwrap();
        // The store cannot say whether a journal is there: nothing is begun on top of
        // what may be a commit half done.
        failing.store(true, std::sync::atomic::Ordering::SeqCst);
        let begun = publication.begin();
        assert!(matches!(begun, Err(StoreError::Object { .. })), "{begun:?}");
        assert!(publication.pending.is_none());
        // Back: the commit is finished first.
        failing.store(false, std::sync::atomic::Ordering::SeqCst);
        publication.begin().unwrap();
        let read = publication.read("b.txt").unwrap();
        assert_eq!(read.as_deref(), Some(&b"b"[..]));
    }

    #[test]
    fn a_name_the_store_cannot_say_is_there_is_an_error_not_absent() {
        let (objects, mut bucket) = memory();
        let (store, failing) = head_fails(objects, "c.txt");
        bucket.store = store;
        let mut publication = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        publication.begin().unwrap();
        publication.write("c.txt", &[b"c"]).unwrap();
        publication.commit().unwrap();
        failing.store(true, std::sync::atomic::Ordering::SeqCst);
        // Read as absent, a dump's package would be written over and the topic emptied.
        let exists = publication.exists("c.txt");
        assert!(
            matches!(exists, Err(StoreError::Object { .. })),
            "{exists:?}"
        );
        failing.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(publication.exists("c.txt").unwrap());
        assert!(!publication.exists("d.txt").unwrap());
    }

    #[test]
    fn a_journal_whose_staging_went_missing_is_finished_with_what_is_left() {
        let (objects, bucket) = memory();
        let mut store = BucketStore::open_bucket(bucket.clone(), BucketStore::LEASE).unwrap();
        store.begin().unwrap();
        store.write("a.txt", &[b"a"]).unwrap();
        store.write("b.txt", &[b"b"]).unwrap();
        let journal = store.pending.take().unwrap().journal();
        let bytes = serde_json::to_vec(&journal).unwrap();
        store
            .put(store.own(JOURNAL).unwrap(), JOURNAL, bytes)
            .unwrap();
        // A lifecycle rule (or a hand) took one staged file away.
        let gone = store.staged(&journal.run, "b.txt").unwrap();
        let runner = Runner::new("test").unwrap();
        let taken = objects.clone();
        runner
            .run(async move { taken.delete(&gone).await.unwrap() })
            .unwrap();
        let lock = store.own(LOCK).unwrap();
        store.lease = None;
        drop(store);
        let taken = objects.clone();
        runner
            .run(async move { taken.delete(&lock).await.unwrap() })
            .unwrap();
        let store = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        assert_eq!(store.read("a.txt").unwrap().as_deref(), Some(&b"a"[..]));
        assert_eq!(store.read("b.txt").unwrap(), None);
        assert!(
            !store.head(store.own(JOURNAL).unwrap()).unwrap(),
            "not left to stop the prefix"
        );
    }

    #[test]
    fn documents_are_typed_and_revalidated_resources_typed_by_their_names() {
        let (objects, bucket) = memory();
        let mut store = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        store.begin().unwrap();
        store.write("r/a.xml", &[b"<a/>"]).unwrap();
        store.write("r/b.json", &[b"{}"]).unwrap();
        store.write(CAPABILITY_LIST, &[b"<urlset/>"]).unwrap();
        store.write(SOURCE_DESCRIPTION, &[b"<urlset/>"]).unwrap();
        store.commit().unwrap();
        let runner = Runner::new("test").unwrap();
        let attributes = |name: &str| {
            let objects = objects.clone();
            let key = Key::from(format!("site/{name}"));
            runner
                .run(async move {
                    let options = object_store::GetOptions {
                        head: true,
                        ..Default::default()
                    };
                    let found = objects.get_opts(&key, options).await.unwrap();
                    let get = |a| found.attributes.get(&a).map(|v| v.to_string());
                    (get(Attribute::ContentType), get(Attribute::CacheControl))
                })
                .unwrap()
        };
        let document = (
            Some("application/xml".to_owned()),
            Some("no-cache".to_owned()),
        );
        assert_eq!(attributes(CAPABILITY_LIST), document);
        assert_eq!(attributes(SOURCE_DESCRIPTION), document);
        assert_eq!(attributes("r/a.xml"), (Some("text/xml".to_owned()), None));
        assert_eq!(
            attributes("r/b.json"),
            (Some("application/json".to_owned()), None)
        );
    }

    #[test]
    fn a_second_publisher_is_refused_while_the_first_holds_the_prefix() {
        let (_, bucket) = memory();
        let first = BucketStore::open_bucket(bucket.clone(), BucketStore::LEASE).unwrap();
        let second = BucketStore::open_bucket(bucket.clone(), BucketStore::LEASE);
        assert!(matches!(second, Err(StoreError::Busy { .. })), "{second:?}");
        drop(first);
        BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
    }

    #[test]
    fn a_journal_left_behind_is_finished_and_an_uncommitted_run_leaves_nothing() {
        let (objects, bucket) = memory();
        let mut store = BucketStore::open_bucket(bucket.clone(), BucketStore::LEASE).unwrap();
        store.begin().unwrap();
        store.write("a.txt", &[b"a"]).unwrap();
        store.commit().unwrap();
        // A run that never committed: its staging.
        store.begin().unwrap();
        store.write("c.txt", &[b"c"]).unwrap();
        let _ = store.pending.take();
        // A run that committed and stopped before its copies: its journal and staging.
        store.begin().unwrap();
        store.write("b.txt", &[b"b"]).unwrap();
        store.remove("a.txt").unwrap();
        let journal = store.pending.take().unwrap().journal();
        store
            .put(
                store.own(JOURNAL).unwrap(),
                JOURNAL,
                serde_json::to_vec(&journal).unwrap(),
            )
            .unwrap();
        assert_eq!(store.read("b.txt").unwrap(), None, "not rolled forward yet");
        // As a killed publisher's: its lease ran out (deleted here rather than waited for).
        let lock = store.own(LOCK).unwrap();
        store.lease = None;
        drop(store);
        let runner = Runner::new("test").unwrap();
        let gone = objects.clone();
        runner
            .run(async move { gone.delete(&lock).await.unwrap() })
            .unwrap();
        let store = BucketStore::open_bucket(bucket, BucketStore::LEASE).unwrap();
        assert_eq!(store.read("b.txt").unwrap().as_deref(), Some(&b"b"[..]));
        assert_eq!(store.read("a.txt").unwrap(), None);
        assert!(!store.exists("c.txt").unwrap());
        let mut keys = resourcesync_testkit::objects::keys(&*objects);
        keys.sort();
        assert_eq!(keys, ["site/.resourcesync/bucket/lock", "site/b.txt"]);
    }
}
