//! One object's placement and deletion, decided by what the sync stored there (the mark
//! in its metadata, [`HELD_KEY`]), and the digests of an object's bytes.

use super::*;

/// The metadata key (`x-amz-meta-resourcesync-held` on S3) of what a sync stored in an
/// object: the resource's URI and its [`Held`], as JSON (`{"uri":...,"held":{...}}`,
/// every character past ASCII escaped, as a header allows no other).
pub const HELD_KEY: &str = "resourcesync-held";

/// The longest mark written with its URI (S3 keeps 2 KB of metadata an object, key and
/// value).
const MARK_MAX: usize = 1900;

/// What an object's metadata says a sync stored in it.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Mark {
    /// `None` when the URI would make the mark longer than S3 keeps (2 KB of metadata).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) uri: Option<resourcesync_model::Uri>,
    pub(super) held: Held,
}

/// A whole body, verified: its temporary file (`F`: its name under the bodies'
/// directory before its upload, [`Waiting`]'s path as the upload reads it), or its bytes
/// in memory.
pub(super) enum Body<F = String> {
    File(F),
    Memory(InMemory),
}

impl Body {
    /// Its temporary file removed (or its memory given back): it will not be uploaded.
    pub(super) fn remove(self, bodies: &Bodies) {
        if let Body::File(temp) = self {
            let _ = bodies.dir().remove_file(temp);
        }
    }

    /// As an upload reads it, its file under the run's work directory `work`.
    pub(super) fn waiting(self, work: &Path) -> Waiting {
        match self {
            Body::File(temp) => Waiting::File(work.join("tmp").join(temp)),
            Body::Memory(body) => Waiting::Memory(body),
        }
    }
}

/// A body as its upload reads it: its temporary file's path (removed once the upload
/// ended), or its chunks as they arrived.
pub(super) type Waiting = Body<PathBuf>;

/// One object's placement: what the sync stored there decides whether it may be
/// replaced.
pub(super) struct Placing {
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) key: Key,
    pub(super) uri: resourcesync_model::Uri,
    /// The body.
    pub(super) body: Waiting,
    pub(super) digests: Measured,
    /// What the object will carry.
    pub(super) stored: Held,
    /// What the inventory says the sync stored there.
    pub(super) held: Option<Held>,
    pub(super) replace_foreign: bool,
    pub(super) conditional: bool,
}

impl Placing {
    pub(super) async fn place(&self) -> Result<Option<Held>, Outcome> {
        // A body in memory is at most a whole PUT (`Bodies::reserve`); one in its file
        // past that goes up in parts.
        let large = matches!(self.body, Waiting::File(_))
            && self.digests.length > ObjectDestination::WHOLE_PUT;
        // Nothing there, as on a first sync: one request, a create that fails if
        // something is.
        if self.held.is_none() && !self.replace_foreign && !large && self.conditional {
            match self.put(PutMode::Create).await {
                Ok(()) => return Ok(None),
                Err(object_store::Error::AlreadyExists { .. })
                | Err(object_store::Error::Precondition { .. }) => {}
                Err(e) => return Err(failed(e)),
            }
        }
        let found = match head(&*self.store, &self.key).await {
            Ok(found) => found,
            Err(object_store::Error::NotFound { .. }) => {
                let mode = match self.conditional {
                    true => PutMode::Create,
                    false => PutMode::Overwrite,
                };
                return self.put_or_conflict(mode, large).await;
            }
            Err(e) => return Err(failed(e)),
        };
        // A mark is this resource's only if it names its URI: an object copied with its
        // metadata from another key, or another sync's of a prefix around this one, is
        // not (a mark too long to carry its URI names none, and is taken by its bytes).
        let marker = mark(&found.attributes)
            .filter(|m| m.uri.as_ref().is_none_or(|uri| *uri == self.uri))
            .map(|m| m.held);
        let version = UpdateVersion {
            e_tag: found.meta.e_tag.clone(),
            version: found.meta.version.clone(),
        };
        let replace = match self.conditional {
            true => PutMode::Update(version),
            false => PutMode::Overwrite,
        };
        let size = found.meta.size;
        if self.replace_foreign {
            return self.put_or_conflict(replace, large).await;
        }
        // A baseline's `verify` read the object and found it changed since the sync
        // stored it: its mark (metadata a writer may have kept while changing the bytes)
        // says nothing more; only its bytes may show it holds the listed ones already.
        let changed = self.held.as_ref().is_some_and(Held::is_changed);
        // Already the listed bytes (stored by a run stopped before it saved, or copied in
        // by someone): taken as they are.
        if !changed
            && marker
                .as_ref()
                .is_some_and(|m| same(&self.stored, m) && size == self.digests.length)
        {
            return Ok(None);
        }
        let ours = match (&self.held, &marker) {
            _ if changed => false,
            // Written by a sync, and whole (a PUT replaces the metadata with the bytes):
            // what the inventory holds, or what a run stopped before it saved stored
            // there, as a directory's journal would say.
            (_, Some(m)) => m.length.is_none_or(|l| l == size),
            // Recorded without a mark: read to be sure it still holds what the record
            // says (an object a baseline's `verify` found changed is recorded as holding
            // what none holds: kept).
            (Some(held), None) => {
                held.length.is_none_or(|l| l == size)
                    && digest_object(&*self.store, &self.key, held.algorithms())
                        .await
                        .is_ok_and(|found| holds(held, &found))
            }
            (None, None) => false,
        };
        if ours {
            return self.put_or_conflict(replace, large).await;
        }
        // Not the sync's: read to see whether it holds the listed bytes already.
        if size == self.digests.length
            && self.digest().await.is_ok_and(|found| found == self.digests)
        {
            return Ok(None);
        }
        Err(Outcome::Conflict(match self.held {
            Some(_) => "changed since the sync stored it: kept, not replaced".into(),
            None => "an object no sync stored, with other bytes: left as it is".into(),
        }))
    }

    /// The object's bytes hashed for the listed digests.
    async fn digest(&self) -> object_store::Result<Measured> {
        digest_object(&*self.store, &self.key, self.digests.algorithms()).await
    }

    async fn put_or_conflict(&self, mode: PutMode, large: bool) -> Result<Option<Held>, Outcome> {
        let result = match (&self.body, large) {
            (Waiting::File(file), true) => self.put_multipart(file).await,
            _ => self.put(mode).await,
        };
        match result {
            Ok(()) => Ok(None),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Err(Outcome::Conflict(
                "written by someone else while the sync stored it: left as it is".into(),
            )),
            Err(e) => Err(failed(e)),
        }
    }

    fn attributes(&self) -> Attributes {
        let mut attributes = Attributes::new();
        let mut mark = Mark {
            uri: Some(self.uri.clone()),
            held: self.stored,
        };
        // S3 keeps 2 KB of metadata an object: past that, the mark without its URI.
        let json = mark_json(&mark)
            .filter(|json| json.len() <= MARK_MAX)
            .or_else(|| {
                mark.uri = None;
                mark_json(&mark)
            });
        if let Some(json) = json {
            attributes.insert(
                Attribute::Metadata(HELD_KEY.into()),
                AttributeValue::from(json),
            );
        }
        attributes
    }

    async fn put(&self, mode: PutMode) -> object_store::Result<()> {
        let payload = match &self.body {
            // The chunks as they arrived: no copy.
            Waiting::Memory(body) => body.chunks().iter().cloned().collect(),
            Waiting::File(file) => PutPayload::from(tokio::fs::read(file).await.map_err(|e| {
                object_store::Error::Generic {
                    store: "local",
                    source: Box::new(e),
                }
            })?),
        };
        let options = PutOptions {
            mode,
            attributes: self.attributes(),
            ..Default::default()
        };
        self.store
            .put_opts(&self.key, payload, options)
            .await
            .map(drop)
    }

    /// A body over [`ObjectDestination::WHOLE_PUT`], in parts read from its `file` one
    /// at a time (a body in memory is never that large: [`Bodies::reserve`]);
    /// unconditional (the path was checked just before).
    async fn put_multipart(&self, file: &Path) -> object_store::Result<()> {
        use tokio::io::AsyncReadExt as _;
        let local = |e: io::Error| object_store::Error::Generic {
            store: "local",
            source: Box::new(e),
        };
        let options = object_store::PutMultipartOptions {
            attributes: self.attributes(),
            ..Default::default()
        };
        let upload = self.store.put_multipart_opts(&self.key, options).await?;
        let mut write = object_store::WriteMultipart::new_with_chunk_size(upload, 8 << 20);
        let mut file = tokio::fs::File::open(file).await.map_err(local)?;
        let mut buf = vec![0; 1 << 20];
        loop {
            let n = file.read(&mut buf).await.map_err(local)?;
            if n == 0 {
                break;
            }
            write.wait_for_capacity(2).await?;
            write.write(&buf[..n]);
        }
        write.finish().await.map(drop)
    }
}

/// The bytes of the object at `key` hashed for `algorithms`.
pub(super) async fn digest_object(
    store: &dyn ObjectStore,
    key: &Key,
    algorithms: resourcesync_model::Algorithms,
) -> object_store::Result<Measured> {
    let mut stream = store.get(key).await?.into_stream();
    let mut measure = Measure::new(algorithms);
    while let Some(chunk) = stream.next().await {
        measure.update(&chunk?);
    }
    Ok(measure.finish())
}

pub(super) fn mark(attributes: &Attributes) -> Option<Mark> {
    let value = attributes.get(&Attribute::Metadata(HELD_KEY.into()))?;
    serde_json::from_str(value.as_ref()).ok()
}

/// `mark` as JSON in ASCII: each character past it as `\uXXXX` (two for one outside
/// the Basic Multilingual Plane), which JSON reads back as the character.
pub(super) fn mark_json(mark: &Mark) -> Option<String> {
    let json = serde_json::to_string(mark).ok()?;
    let mut ascii = String::with_capacity(json.len());
    for c in json.chars() {
        if c.is_ascii() {
            ascii.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                ascii.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    Some(ascii)
}

/// Whether `a` and `b` record the same bytes: each field `a` has, `b` has alike, and `a`
/// has one at least.
pub(super) fn same(a: &Held, b: &Held) -> bool {
    (a.length.is_some() || a.md5.is_some() || a.sha256.is_some())
        && a.length.is_none_or(|l| b.length == Some(l))
        && a.md5.is_none_or(|d| b.md5 == Some(d))
        && a.sha256.is_none_or(|d| b.sha256 == Some(d))
}

/// Deletes the object at `key` if it holds what the sync stored there for `uri`
/// (`held`): by its mark, or, without one (an object adopted as it was, a baseline's
/// record), by its bytes.
pub(super) async fn delete(
    store: &dyn ObjectStore,
    key: &Key,
    uri: &resourcesync_model::Uri,
    held: Option<Held>,
) -> Result<(), Outcome> {
    let found = match head(store, key).await {
        Ok(found) => found,
        Err(object_store::Error::NotFound { .. }) => return Ok(()),
        Err(e) => return Err(failed(e)),
    };
    let Some(held) = held else {
        return Err(Outcome::Conflict(
            "no record of what the sync stored there: kept".into(),
        ));
    };
    let size = found.meta.size;
    let ours = match mark(&found.attributes) {
        Some(m) => {
            m.uri.as_ref().is_none_or(|u| u == uri)
                && same(&held, &m.held)
                && held.length.is_none_or(|l| l == size)
        }
        None => {
            held.length.is_none_or(|l| l == size)
                && digest_object(store, key, held.algorithms())
                    .await
                    .is_ok_and(|found| holds(&held, &found))
        }
    };
    if !ours {
        return Err(Outcome::Conflict(
            "changed since the sync stored it: kept, no longer the sync's".into(),
        ));
    }
    match store.delete(key).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// The object at `key`'s metadata and attributes (a HEAD: `ObjectStore::head` gives no
/// attributes, where the mark is).
pub(super) async fn head(
    store: &dyn ObjectStore,
    key: &Key,
) -> object_store::Result<object_store::GetResult> {
    let options = GetOptions {
        head: true,
        ..Default::default()
    };
    store.get_opts(key, options).await
}

/// The run's changes carried out on the store: each one's work (an upload, a deletion)
/// started on the runtime, its end received, and what became of it told to the client.
impl ObjectDestination {
    /// Starts the upload of the whole body `body` to the change's key (see
    /// [`Placing::place`]); confirmed from [`settle`](Destination::settle), with
    /// `confirmed` once placed.
    pub(super) fn start_place<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        body: Body,
        change: &Decision,
        digests: Measured,
        held: Option<Held>,
        confirmed: Option<Held>,
    ) -> Result<(), DestinationError> {
        let key = match self.key_of(change.path.as_str()) {
            Ok(key) => key,
            Err(e) => {
                body.remove(&self.bodies);
                return self.confirm(client, change, Err(Outcome::Failed(io::Error::other(e))));
            }
        };
        if let Err(refused) = self.refused() {
            body.remove(&self.bodies);
            return Err(refused);
        }
        if let Some(lost) = self.lost() {
            body.remove(&self.bodies);
            return self.confirm(client, change, Err(Outcome::Failed(io::Error::other(lost))));
        }
        let task = Placing {
            store: self.store.clone(),
            key,
            uri: change.uri.clone(),
            body: body.waiting(self.work.path()),
            stored: Held::of(&digests, change.lastmod),
            digests,
            held,
            replace_foreign: self.replace_foreign,
            conditional: self.conditional,
        };
        self.start(client, change.clone(), async move {
            let outcome = task.place().await;
            if let Waiting::File(file) = &task.body {
                let _ = tokio::fs::remove_file(file).await;
            }
            outcome.map(|_| confirmed)
        })
    }

    /// Runs `work` for `change` on the runtime, waiting first for a place among
    /// [`MAX_UPLOADS`].
    pub(super) fn start<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        change: Decision,
        work: impl std::future::Future<Output = Result<Option<Held>, Outcome>> + Send + 'static,
    ) -> Result<(), DestinationError> {
        self.refused()?;
        if let Some(lost) = self.lost() {
            return self.confirm(
                client,
                &change,
                Err(Outcome::Failed(io::Error::other(lost))),
            );
        }
        if self.first_write.is_none() {
            // Before the first write: a run killed from here on is found by the next. It
            // waits for the lease's read back, and the uploads wait for it, not the driver,
            // which goes on receiving meanwhile.
            use futures::FutureExt as _;
            let settled = self.settled();
            let (store, key) = (self.store.clone(), child(&self.kept, UNFINISHED));
            let write = async move {
                settled.await.map_err(|e| e.to_string())?;
                store
                    .put(&key, PutPayload::default())
                    .await
                    .map(drop)
                    .map_err(|e| store_error(&key, e).to_string())
            };
            self.first_write = Some(write.boxed().shared());
        }
        self.clean = false;
        while self.pending >= MAX_STARTED {
            let ended = block(|| self.ended.recv());
            self.ended_one(client, ended)?;
        }
        let tx = self.ended_tx.clone();
        let wake = self.wake.clone();
        let Some(runtime) = self.runner.handle() else {
            // Failed, not returned: a change the client is never told of holds its run.
            let stopped = io::Error::other("the destination's runtime stopped");
            return self.confirm(client, &change, Err(Outcome::Failed(stopped)));
        };
        let (turns, watch) = (self.turns.clone(), self.lease.as_ref().map(Lease::watch));
        let lost = self.lost_message();
        let first_write = self.first_write.clone();
        self.pending += 1;
        runtime.spawn(async move {
            use futures::FutureExt as _;
            // The run's first write made (the lease is this run's), then its turn, the
            // lease still held when it comes (it may have waited).
            let first = match first_write {
                Some(first) => first.await,
                None => Ok(()),
            };
            let turn = turns.acquire_owned().await;
            let outcome = if let Err(why) = first {
                Err(Outcome::Failed(io::Error::other(why)))
            } else if turn.is_err() || watch.is_some_and(|w| w.lost()) {
                Err(Outcome::Failed(io::Error::other(lost)))
            } else {
                // A task that panics still ends: its change failed, and nothing waits for
                // a confirmation that never comes.
                std::panic::AssertUnwindSafe(work)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        Err(Outcome::Failed(io::Error::other(
                            "the upload's task panicked",
                        )))
                    })
            };
            drop(turn);
            let _ = tx.send(Ended { change, outcome });
            if let Some(wake) = wake {
                wake();
            }
        });
        Ok(())
    }

    /// Confirms the change whose work `ended` (as received from its task), which no
    /// longer counts among those started.
    pub(super) fn ended_one<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        ended: Result<Ended, mpsc::RecvError>,
    ) -> Result<(), DestinationError> {
        // The sender is the destination's own: it never hangs up first.
        let Ok(Ended { change, outcome }) = ended else {
            return Ok(());
        };
        self.pending -= 1;
        self.confirm(client, &change, outcome)
    }

    /// Tells the client what became of `change`.
    pub(super) fn confirm<I: KeptInventory>(
        &self,
        client: &mut Client<I>,
        change: &Decision,
        outcome: Result<Option<Held>, Outcome>,
    ) -> Result<(), DestinationError> {
        crate::directory::confirm(client, change, outcome, || {
            format!("{}/{}", self.shown.display(), change.path.as_str())
        })?;
        Ok(())
    }
}

/// A store's failure as a change's: said on one line ([`StoreFailure`]).
///
/// [`StoreFailure`]: resourcesync_objects::StoreFailure
fn failed(e: object_store::Error) -> Outcome {
    Outcome::Failed(io::Error::other(resourcesync_objects::StoreFailure::from(
        e,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn same_needs_a_field_and_every_field_alike() {
        let a = Held::new().with_length(3);
        assert!(same(&a, &Held::new().with_length(3)));
        assert!(!same(&a, &Held::new().with_length(4)));
        assert!(!same(&Held::new(), &Held::new()));
        assert!(!same(&a, &Held::new()));
    }
}
