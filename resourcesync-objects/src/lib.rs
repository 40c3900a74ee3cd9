//! What both halves of ResourceSync share when they write into object storage, through the
//! [`object_store`] crate (re-exported, so that callers name the same version):
//!
//! - [`Bucket::open`]: a bucket's prefix from a URL (`s3://bucket/prefix`, `memory:///`,
//!   `file:///`, ...) and the store's settings, an `s3://` store also from the `AWS_*`
//!   variables of the environment, as the AWS tools read them;
//! - [`conditional`]: whether the store honours a conditional PUT (S3 does since 2024;
//!   some S3 servers do not), found by creating one object twice;
//! - [`Lease`]: one writer of a prefix at a time. A lease is an object (JSON: its owner and
//!   until when it runs) made with a conditional create, renewed every third of its time
//!   with a conditional update on the version it wrote, and taken over by another writer
//!   only once it ran out (a killed writer's). A writer whose renewals fail for two thirds
//!   of the lease is told ([`Lease::lost`]) and must write no more: another may take the
//!   lease over before it hears. Where the store has no conditional PUT, the lease is a
//!   plain PUT after a read, and so is each renewal (a writer that finds another's lease
//!   there has lost its own, and leaves it): two writers within one round trip can both
//!   hold it, which callers say. Either way the writer reads its lease back [`SETTLE`] after
//!   writing it, and holds it only if it is still its own: a store whose conditional
//!   create is not atomic (s3s-fs checks, then writes) keeps the last of two writers.
//!
//! The destination crate's `ObjectDestination` syncs into a bucket with these, the source
//! crate's `BucketStore` publishes into one.
//!
//! ```
//! use std::time::Duration;
//! use resourcesync_objects::{Bucket, Lease, ObjectsError, conditional};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let bucket = Bucket::open(&"memory:///site".parse()?, [])?;
//! let lock = bucket.key(".resourcesync/lock")?;
//! let conditional = conditional(&*bucket.store, &bucket.key(".resourcesync/probe")?).await?;
//! assert!(conditional, "the memory store honours If-None-Match");
//!
//! let first = Lease::take(bucket.store.clone(), lock.clone(), Duration::from_secs(60), true).await?;
//! let second = Lease::take(bucket.store.clone(), lock.clone(), Duration::from_secs(60), true).await;
//! assert!(matches!(second, Err(ObjectsError::Busy { .. })));
//! assert!(!first.lost());
//! first.release().await;
//! Lease::take(bucket.store.clone(), lock, Duration::from_secs(60), true).await?.release().await;
//! # Ok(())
//! # }
//! ```

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use object_store;
use object_store::path::Path as Key;
use object_store::{ObjectStore, PutMode, PutOptions, PutPayload, UpdateVersion};

/// Why a bucket could not be opened, or its lease taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ObjectsError {
    /// The URL or a setting names no store this program can open.
    #[error("{store}: {reason}")]
    Setting {
        /// The store's URL.
        store: String,
        /// What is wrong.
        reason: String,
    },
    /// Another writer holds the lease, and it has not run out.
    #[error("{key}: another run holds the lease on this prefix")]
    Busy {
        /// The lease's key.
        key: String,
    },
    /// The store refused a request, or could not be reached.
    #[error("{key}: {source}")]
    Store {
        /// The key the request was for.
        key: String,
        /// The store's error.
        source: StoreFailure,
    },
}

impl ObjectsError {
    /// The store's error for a request about `key`.
    pub fn store(key: &Key, source: object_store::Error) -> ObjectsError {
        ObjectsError::Store {
            key: key.to_string(),
            source: StoreFailure(source),
        }
    }
}

/// An object store's error, said on one line a person reads: where an S3 server answered
/// with its XML error document (`<Error><Code>NoSuchBucket</Code><Message>The specified
/// bucket does not exist</Message>...`), its code and message stand in its place, the
/// request's duration is left out, and a long body is cut.
///
/// The store's error itself is [`StoreFailure::error`], whole. It is not this error's
/// [`source`](std::error::Error::source): its text holds the response's body as it came,
/// over several lines, which a printer of an error's causes would say again after this
/// one.
///
/// ```
/// use resourcesync_objects::StoreFailure;
/// use resourcesync_objects::object_store::Error;
///
/// let body = "Server returned non-2xx status code: 404 Not Found: <?xml version=\"1.0\"?>\n\
///     <Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message>\
///     <RequestId>1UmG</RequestId></Error>";
/// let failure = StoreFailure::from(Error::Generic { store: "S3", source: body.into() });
/// assert_eq!(
///     failure.to_string(),
///     "Generic S3 error: Server returned non-2xx status code: 404 Not Found: \
///      NoSuchBucket: The specified bucket does not exist"
/// );
/// ```
#[derive(Debug)]
pub struct StoreFailure(object_store::Error);

impl StoreFailure {
    /// The store's error, as the store's client gave it.
    pub fn error(&self) -> &object_store::Error {
        &self.0
    }

    /// The store's error, taken back.
    pub fn into_error(self) -> object_store::Error {
        self.0
    }
}

impl From<object_store::Error> for StoreFailure {
    fn from(error: object_store::Error) -> Self {
        StoreFailure(error)
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // object_store's text, and each cause it does not say itself: reqwest's "error
        // sending request for url" names why (connection refused, a name not found) only
        // among its causes, which this error does not return.
        let mut text = self.0.to_string();
        let mut cause = std::error::Error::source(&self.0);
        while let Some(error) = cause {
            let message = error.to_string();
            if !text.contains(&message) {
                text = format!("{text}: {message}");
            }
            cause = error.source();
        }
        f.write_str(&said(&text))
    }
}

impl std::error::Error for StoreFailure {}

/// The most characters of a response's body said ([`StoreFailure`]) that is not an S3
/// error document: a server that is not S3's (a proxy's HTML page, say) can answer with
/// a long one.
const SAID: usize = 300;

/// The most characters of a store's error said in all: object_store's words, the key and
/// the URL before the body are kept whole up to this.
const LINE: usize = 1000;

/// `text`, a store's error, on one line: the response's body (from its first markup) as
/// an S3 error document's code and message, or cut to [`SAID`] characters; the request's
/// duration (`in 3.03ms`) left out; at most [`LINE`] characters.
fn said(text: &str) -> String {
    // object_store's own words never hold a `<`: the body starts at the first.
    let (before, body) = text.split_at(text.find('<').unwrap_or(text.len()));
    let element = |name: &str| {
        let open = format!("<{name}>");
        let start = body.find(&open)? + open.len();
        let end = body[start..].find(&format!("</{name}>"))?;
        Some(body[start..start + end].trim())
    };
    let body = match (element("Code"), element("Message")) {
        (Some(code), Some(message)) if !message.is_empty() => format!("{code}: {message}"),
        (Some(code), _) => code.to_owned(),
        _ => cut(one_line(body), SAID),
    };
    let before = one_line(&without_durations(before));
    let before = before.trim_end_matches(':');
    let line = match (before.is_empty(), body.is_empty()) {
        (_, true) => before.to_owned(),
        (true, false) => body,
        (false, false) => format!("{before}: {body}"),
    };
    cut(line, LINE)
}

/// `text`'s words, one space between each.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to `most` characters, `...` after it when cut.
fn cut(mut text: String, most: usize) -> String {
    if let Some((at, _)) = text.char_indices().nth(most) {
        text.truncate(at);
        text.push_str("...");
    }
    text
}

/// `text` without the durations object_store's client says of a request (` in 3.035654ms`,
/// ` in 1.2s`): they differ from one run to the next and tell a person nothing to act on.
fn without_durations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" in ") {
        let after = &rest[at + 4..];
        let number = after
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(after.len());
        let unit = after[number..]
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len() - number);
        let is_duration = number > 0
            && matches!(
                &after[number..number + unit],
                "ns" | "µs" | "us" | "ms" | "s"
            );
        if is_duration {
            out.push_str(&rest[..at]);
            rest = &after[number + unit..];
        } else {
            out.push_str(&rest[..at + 4]);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A prefix of a store: where a destination or a publication lives.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// The store.
    pub store: Arc<dyn ObjectStore>,
    /// The prefix, empty for the whole bucket.
    pub prefix: Key,
    /// The URL as messages show it (`s3://bucket/prefix`).
    pub shown: String,
}

impl Bucket {
    /// Opens the store at `url` with `options` (its configuration keys, such as
    /// `aws_endpoint` or `aws_allow_http`). An `s3://` store also reads the `AWS_*`
    /// variables of the environment (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, ...), as the
    /// AWS tools do; `options` take precedence. A setting the store does not have is an
    /// error: mistyped, it would leave the store's default (AWS itself, say) in place of
    /// what was meant.
    pub fn open(
        url: &url::Url,
        options: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Bucket, ObjectsError> {
        let shown = url.as_str().trim_end_matches('/').to_owned();
        let bad = |reason: String| ObjectsError::Setting {
            store: shown.clone(),
            reason,
        };
        let (store, prefix): (Arc<dyn ObjectStore>, Key) = if url.scheme() == "s3" {
            let builder = s3_builder(url, options).map_err(bad)?;
            let prefix = Key::parse(url.path()).map_err(|e| bad(e.to_string()))?;
            (
                Arc::new(builder.build().map_err(|e| bad(e.to_string()))?),
                prefix,
            )
        } else {
            // The other stores here (memory, file) take no settings; one given would be
            // ignored.
            if let Some((key, _)) = options.into_iter().next() {
                return Err(bad(format!("{key:?}: this store takes no settings")));
            }
            let (store, prefix) = object_store::parse_url(url).map_err(|e| bad(e.to_string()))?;
            (Arc::from(store), prefix)
        };
        Ok(Bucket {
            store,
            prefix,
            shown,
        })
    }

    /// The key of `path` (`/`-separated, each part as [`Key::parse`] takes it) under the
    /// prefix.
    pub fn key(&self, path: &str) -> Result<Key, ObjectsError> {
        let joined = match self.prefix.as_ref().is_empty() {
            true => path.to_owned(),
            false => format!("{}/{path}", self.prefix),
        };
        Key::parse(&joined).map_err(|e| ObjectsError::Setting {
            store: self.shown.clone(),
            reason: format!("{path:?}: not a key: {e}"),
        })
    }
}

/// The S3 store of `url` with `options` over the `AWS_*` variables of the environment,
/// or the name of a setting S3 does not have.
fn s3_builder(
    url: &url::Url,
    options: impl IntoIterator<Item = (String, String)>,
) -> Result<object_store::aws::AmazonS3Builder, String> {
    use object_store::aws::AmazonS3ConfigKey;
    let mut builder = object_store::aws::AmazonS3Builder::from_env().with_url(url.as_str());
    let mut payload_said = std::env::var_os("AWS_UNSIGNED_PAYLOAD").is_some();
    for (key, value) in options {
        let Ok(parsed) = key.parse() else {
            return Err(format!("{key:?} is not a setting of an S3 store"));
        };
        payload_said |= parsed == AmazonS3ConfigKey::UnsignedPayload;
        builder = builder.with_config(parsed, value);
    }
    // A plain-HTTP endpoint is refused by the store's HTTP client at the first request,
    // in words that name no setting ("builder error: URL scheme is not allowed"): said
    // here, with the setting that allows it.
    let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
    if let Some(endpoint) = endpoint.filter(|e| e.to_ascii_lowercase().starts_with("http://")) {
        let allow = AmazonS3ConfigKey::Client(object_store::ClientConfigKey::AllowHttp);
        let allowed = builder.get_config_value(&allow).is_some_and(|value| {
            matches!(
                value.to_ascii_lowercase().as_str(),
                "true" | "1" | "yes" | "on"
            )
        });
        if !allowed {
            return Err(format!(
                "the endpoint {endpoint} is plain HTTP, which the store refuses unless \
                 aws_allow_http is true (AWS_ALLOW_HTTP=true, or the setting \
                 aws_allow_http=true)"
            ));
        }
    }
    // Over HTTPS the payload goes unsigned unless a setting says otherwise, as the
    // AWS SDKs and rclone send it: TLS keeps the bytes whole on the way, and a
    // signed payload costs a SHA-256 of every body on each side. Over plain HTTP
    // the signature is all that does, so it stays (rclone sends it unsigned there
    // too).
    let https = builder
        .get_config_value(&AmazonS3ConfigKey::Endpoint)
        .is_none_or(|endpoint| endpoint.starts_with("https://"));
    if https && !payload_said {
        builder = builder.with_config(AmazonS3ConfigKey::UnsignedPayload, "true");
    }
    Ok(builder)
}

/// Whether `store` refuses a second create of one key: creates the object `probe` twice
/// (with `If-None-Match: *`), then deletes it.
pub async fn conditional(store: &dyn ObjectStore, probe: &Key) -> Result<bool, ObjectsError> {
    let create = || PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    let first = store
        .put_opts(probe, PutPayload::from_static(b""), create())
        .await;
    let outcome = match first {
        Err(object_store::Error::NotImplemented) => Ok(false),
        Err(e) => Err(ObjectsError::store(probe, e)),
        Ok(_) => match store
            .put_opts(probe, PutPayload::from_static(b""), create())
            .await
        {
            Ok(_) => Ok(false),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => Ok(true),
            Err(e) => Err(ObjectsError::store(probe, e)),
        },
    };
    let _ = store.delete(probe).await;
    outcome
}

/// How long a writer waits after writing its lease before reading it back. Two writers
/// both let through by a store whose conditional create is not atomic each passed its
/// check before the other's write landed: the read back finds the last write unless the
/// other's check-to-write took longer than this (a tiny object's write takes
/// milliseconds; a process stalled that long is what is not covered). Every run into a
/// bucket waits this long before its first write (a sync reads the Source meanwhile),
/// so it is no longer than it needs to be: 250 ms cost a sync of one small file into
/// s3s-fs 0.30 s against 0.17 s at 100 ms (rclone, with no lease: 0.07 s).
pub const SETTLE: Duration = Duration::from_millis(100);

/// What a lease object says.
#[derive(serde::Serialize, serde::Deserialize)]
struct LeaseBody {
    /// Who holds it: random, per lease taken.
    owner: String,
    /// Until when, in milliseconds since the Unix epoch (seconds would give a lease up
    /// to a second more than its time).
    #[serde(default)]
    until_ms: Option<u64>,
    /// Until when, in seconds: what the versions before `until_ms` wrote and read, still
    /// written (rounded up) so that such a version running beside this one keeps out.
    #[serde(default)]
    until: Option<u64>,
}

impl LeaseBody {
    /// The lease as `bytes` say, or `None` for what no lease of ours wrote.
    fn read(bytes: &[u8]) -> Option<LeaseBody> {
        serde_json::from_slice(bytes).ok()
    }

    /// Whether it runs at `now` (milliseconds).
    fn runs(&self, now: u64) -> bool {
        let until = self.until_ms.or(self
            .until
            .map(|s| s.saturating_mul(1000).saturating_add(999)));
        until.is_some_and(|until| until >= now)
    }

    fn payload(owner: &str, time: Duration) -> PutPayload {
        let until_ms = now_ms() + (time.as_millis() as u64).max(1000);
        let body = LeaseBody {
            owner: owner.to_owned(),
            until_ms: Some(until_ms),
            until: Some(until_ms.div_ceil(1000)),
        };
        PutPayload::from(serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// A lease held on a prefix (see the [crate] documentation), renewed by a task on
/// the runtime it was taken on until it is released or dropped.
#[derive(Debug)]
pub struct Lease {
    store: Arc<dyn ObjectStore>,
    key: Key,
    owner: String,
    time: Duration,
    /// Set by the renewing task when the lease was taken over (this process stalled
    /// longer than the lease).
    taken_over: Arc<AtomicBool>,
    /// When the lease was last taken or renewed, in milliseconds since the Unix epoch.
    renewed: Arc<AtomicU64>,
    renewing: Option<tokio::task::JoinHandle<()>>,
    /// What the read back found, once it ran.
    settled: tokio::sync::watch::Receiver<Option<Settled>>,
}

/// What a lease's read back found.
#[derive(Debug, Clone)]
enum Settled {
    /// This writer's.
    Ours,
    /// Another's (or gone).
    Another,
    /// The store's error.
    Failed(String),
}

/// Whose the lease at `key` is now: `owner`'s, another's (or gone), or not known.
async fn read_back(store: &dyn ObjectStore, key: &Key, owner: &str) -> Settled {
    let held = match store.get(key).await {
        Ok(found) => found.bytes().await.map_err(|e| e.to_string()),
        Err(object_store::Error::NotFound { .. }) => Ok(Default::default()),
        Err(e) => Err(e.to_string()),
    };
    match held {
        Ok(held) if LeaseBody::read(&held).is_some_and(|held| held.owner == owner) => Settled::Ours,
        Ok(_) => Settled::Another,
        Err(why) => Settled::Failed(why),
    }
}

impl Lease {
    /// Takes the lease at `key` for `time` (at least a second), or
    /// [`ObjectsError::Busy`] while another holds it, and starts renewing it on the
    /// current tokio runtime. `conditional` says whether the store honours conditional
    /// PUTs ([`conditional`]); without them the lease is read, then overwritten. Returns
    /// once the lease was read back as this writer's ([`claim`](Self::claim), then
    /// [`settled`](Self::settled)).
    pub async fn take(
        store: Arc<dyn ObjectStore>,
        key: Key,
        time: Duration,
        conditional: bool,
    ) -> Result<Lease, ObjectsError> {
        let lease = Lease::claim(store, key, time, conditional).await?;
        lease.settled().await?;
        Ok(lease)
    }

    /// [`take`](Self::take) without waiting for the read back: the lease is written (so
    /// that writers that look after this see it) and renewed, and its read back runs
    /// [`SETTLE`] later on the renewing task. Nothing may be written under the lease
    /// before [`settled`](Self::settled) says it is this writer's; what comes before
    /// (reads, work of its own) overlaps the wait.
    pub async fn claim(
        store: Arc<dyn ObjectStore>,
        key: Key,
        time: Duration,
        conditional: bool,
    ) -> Result<Lease, ObjectsError> {
        let time = time.max(Duration::from_secs(1));
        let owner = format!("{:032x}", random());
        let busy = || ObjectsError::Busy {
            key: key.to_string(),
        };
        // Held by another unless it ran out.
        let found = match store.get(&key).await {
            Ok(found) => {
                let version = UpdateVersion {
                    e_tag: found.meta.e_tag.clone(),
                    version: found.meta.version.clone(),
                };
                let bytes = found
                    .bytes()
                    .await
                    .map_err(|e| ObjectsError::store(&key, e))?;
                if LeaseBody::read(&bytes).is_some_and(|held| held.runs(now_ms())) {
                    return Err(busy());
                }
                Some(version)
            }
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => return Err(ObjectsError::store(&key, e)),
        };
        let mode = match (found, conditional) {
            (Some(version), true) => PutMode::Update(version),
            (None, true) => PutMode::Create,
            (_, false) => PutMode::Overwrite,
        };
        let put = PutOptions {
            mode,
            ..Default::default()
        };
        // The lease runs from before its PUT: what `lost` counts from.
        let written = now_ms();
        let version = match store
            .put_opts(&key, LeaseBody::payload(&owner, time), put)
            .await
        {
            Ok(put) => UpdateVersion {
                e_tag: put.e_tag,
                version: put.version,
            },
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => return Err(busy()),
            Err(e) => return Err(ObjectsError::store(&key, e)),
        };
        let mut lease = Lease {
            store,
            key,
            owner,
            time,
            taken_over: Arc::new(AtomicBool::new(false)),
            renewed: Arc::new(AtomicU64::new(written)),
            renewing: None,
            settled: tokio::sync::watch::channel(None).1,
        };
        let (settle, settled) = tokio::sync::watch::channel(None);
        lease.settled = settled;
        lease.renewing = Some(tokio::spawn(lease.renew(version, conditional, settle)));
        Ok(lease)
    }

    /// Whether the read back found the lease another's (the writer never held it), without
    /// waiting: false while it has not run yet, or when it found the lease this writer's
    /// or could not read it.
    pub fn refused(&self) -> bool {
        matches!(*self.settled.borrow(), Some(Settled::Another))
    }

    /// Waits until the lease was read back ([`claim`](Self::claim)): `Ok` if it is this
    /// writer's, [`ObjectsError::Busy`] if another's, or the store's error.
    /// The future holds no borrow of the lease: it may be awaited on another task.
    pub fn settled(&self) -> impl Future<Output = Result<(), ObjectsError>> + Send + 'static {
        let (mut settled, key) = (self.settled.clone(), self.key.to_string());
        async move {
            let found = settled
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|found| found.clone());
            match found {
                Some(Settled::Ours) => Ok(()),
                Some(Settled::Failed(why)) => Err(ObjectsError::Store {
                    key,
                    source: StoreFailure(object_store::Error::Generic {
                        store: "lease",
                        source: why.into(),
                    }),
                }),
                // Another's, or the renewing task is gone (released).
                Some(Settled::Another) | None => Err(ObjectsError::Busy { key }),
            }
        }
    }

    /// The read back, then the renewals, every third of the lease, each bounded by that
    /// third.
    fn renew(
        &self,
        mut version: UpdateVersion,
        conditional: bool,
        settle: tokio::sync::watch::Sender<Option<Settled>>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let (store, key, owner, time) = (
            self.store.clone(),
            self.key.clone(),
            self.owner.clone(),
            self.time,
        );
        let (renewed, taken_over) = (self.renewed.clone(), self.taken_over.clone());
        async move {
            let mut next = tokio::time::Instant::now() + time / 3;
            // Read back once a moment passed: a store whose conditional create is not
            // atomic (s3s-fs 0.14 checks, then writes: two writers at once both succeed,
            // tested) keeps the last writer's, and the other hears it here. Not a proof
            // against such a store, whose race this narrows to writes further apart than
            // SETTLE; atomic on S3 and moto.
            tokio::time::sleep(SETTLE).await;
            // A store out of reach for a moment is asked again (object_store retries
            // within each request too), a few times within the lease's first third.
            let mut found = Settled::Failed(String::new());
            for attempt in 0..3 {
                if attempt > 0 {
                    tokio::time::sleep(SETTLE).await;
                }
                found = read_back(&*store, &key, &owner).await;
                if !matches!(found, Settled::Failed(_)) {
                    break;
                }
            }
            let ours = matches!(found, Settled::Ours);
            if matches!(found, Settled::Another) {
                // Never this writer's: nothing may go on under it, and its release
                // leaves the other's lease alone.
                taken_over.store(true, Ordering::SeqCst);
            }
            // Not known (the store out of reach): not renewed, so lost in two thirds of
            // the lease; released only if found to be this writer's then.
            let _ = settle.send(Some(found));
            if !ours {
                return;
            }
            loop {
                tokio::time::sleep_until(next).await;
                next = tokio::time::Instant::now() + time / 3;
                // Without a conditional update, what is there is read first: a writer
                // that stalled past its lease finds the one who took it over, and stops,
                // rather than overwrite it (a race of one read and one write remains,
                // which such a store cannot close).
                if !conditional {
                    match read_back(&*store, &key, &owner).await {
                        Settled::Ours => {}
                        Settled::Another => {
                            taken_over.store(true, Ordering::SeqCst);
                            return;
                        }
                        // Out of reach: tried again at the next turn.
                        Settled::Failed(_) => continue,
                    }
                }
                let mode = match conditional {
                    true => PutMode::Update(version.clone()),
                    false => PutMode::Overwrite,
                };
                let put = PutOptions {
                    mode,
                    ..Default::default()
                };
                // Bounded: a renewal that hangs past its turn is as good as lost.
                let written = now_ms();
                let renewal = store.put_opts(&key, LeaseBody::payload(&owner, time), put);
                let Ok(renewal) = tokio::time::timeout(time / 3, renewal).await else {
                    continue;
                };
                match renewal {
                    Ok(put) => {
                        renewed.store(written, Ordering::SeqCst);
                        version = UpdateVersion {
                            e_tag: put.e_tag,
                            version: put.version,
                        }
                    }
                    // Taken over: this writer stalled past its lease.
                    Err(object_store::Error::Precondition { .. }) => {
                        taken_over.store(true, Ordering::SeqCst);
                        return;
                    }
                    // The store is out of reach for a moment: tried again at the next
                    // turn, while the lease still runs.
                    Err(_) => {}
                }
            }
        }
    }

    /// The lease's key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// A handle that tells [`lost`](Self::lost) from a task of its own (a roll forward
    /// that checks between its steps).
    pub fn watch(&self) -> LeaseWatch {
        LeaseWatch {
            time: self.time,
            taken_over: self.taken_over.clone(),
            renewed: self.renewed.clone(),
        }
    }

    /// Whether the holder must write no more: the lease was taken over, or it was not
    /// renewed for two thirds of its time (the store out of reach), so that another
    /// writer may take it over before this one hears.
    pub fn lost(&self) -> bool {
        self.watch().lost()
    }

    /// Stops renewing, and deletes the lease if it is still this holder's, so that the
    /// next writer need not wait for it to run out.
    pub async fn release(mut self) {
        if let Some(renewing) = self.renewing.take() {
            renewing.abort();
        }
        if self.taken_over.load(Ordering::SeqCst) {
            return;
        }
        let ours = async {
            let found = self.store.get(&self.key).await.ok()?.bytes().await.ok()?;
            Some(LeaseBody::read(&found)?.owner == self.owner)
        };
        if ours.await == Some(true) {
            let _ = self.store.delete(&self.key).await;
        }
    }

    /// Whether the lease at `key` is held by someone and has not run out: found, and
    /// either its bytes could not be fetched (counted as held: the caller waits rather
    /// than writes beside it) or they say so. Missing, unreachable or not a lease of
    /// ours: not held.
    pub async fn live(store: &dyn ObjectStore, key: &Key) -> bool {
        let Ok(found) = store.get(key).await else {
            return false;
        };
        let Ok(bytes) = found.bytes().await else {
            return true;
        };
        LeaseBody::read(&bytes).is_some_and(|held| held.runs(now_ms()))
    }
}

/// [`Lease::lost`], from elsewhere ([`Lease::watch`]).
#[derive(Debug, Clone)]
pub struct LeaseWatch {
    time: Duration,
    taken_over: Arc<AtomicBool>,
    renewed: Arc<AtomicU64>,
}

impl LeaseWatch {
    /// See [`Lease::lost`].
    pub fn lost(&self) -> bool {
        let stale =
            now_ms() > self.renewed.load(Ordering::SeqCst) + (self.time * 2 / 3).as_millis() as u64;
        stale || self.taken_over.load(Ordering::SeqCst)
    }
}

impl Drop for Lease {
    /// Stops renewing: the lease runs out in its time.
    fn drop(&mut self) {
        if let Some(renewing) = self.renewing.take() {
            renewing.abort();
        }
    }
}

/// A tokio runtime of its own, for a caller that blocks (a [`Store`] of the source crate,
/// a destination the blocking driver calls), usable from a plain thread and from a task
/// of another multi-threaded runtime alike (whose worker is handed over while it waits).
///
/// [`Store`]: https://docs.rs/resourcesync-source/latest/resourcesync_source/trait.Store.html
#[derive(Debug)]
pub struct Runner {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Runner {
    /// A runtime of two worker threads named `name`.
    pub fn new(name: &str) -> std::io::Result<Runner> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(Runner {
            runtime: Some(runtime),
        })
    }

    /// Runs `work` on the runtime and waits for its output; `None` if it panicked.
    pub fn run<T: Send + 'static>(
        &self,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        let runtime = self.runtime.as_ref()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        block(|| rx.recv()).ok()
    }

    /// The runtime's handle, to spawn work that runs while the caller goes on.
    pub fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.runtime.as_ref().map(tokio::runtime::Runtime::handle)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Without waiting: allowed inside another runtime, unlike a plain drop.
            runtime.shutdown_background();
        }
    }
}

/// Runs `f`, which blocks (a wait on a channel, say), handing the worker over first when
/// called from a task of a multi-threaded tokio runtime, whose other tasks go on.
pub fn block<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Milliseconds since the Unix epoch, by the local clock (a lease's expiry is judged by
/// the clock of the writer that reads it: machines whose clocks differ by more than a
/// lease's third can take it over early).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// 128 random bits: a writer's name, a probe's.
pub fn random() -> u128 {
    let mut bytes = [0; 16];
    // Without the system's randomness the time and the process: still apart between
    // two writers at once.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return nanos ^ (u128::from(std::process::id()) << 64);
    }
    u128::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_store_s_error_is_said_on_one_line() {
        use super::said;
        // moto's answer to a PUT into a bucket it does not have, as object_store says it.
        let moto = "Object at location p/x not found: Error performing PUT \
            http://127.0.0.1:5999/nobucket/p/x in 3.035654ms - Server returned non-2xx status \
            code: 404 Not Found: <?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Error><Code>\
            NoSuchBucket</Code><Message>The specified bucket does not exist</Message>\
            <BucketName>nobucket</BucketName><RequestId>1UmG</RequestId></Error>";
        assert_eq!(
            said(moto),
            "Object at location p/x not found: Error performing PUT \
             http://127.0.0.1:5999/nobucket/p/x - Server returned non-2xx status code: 404 Not \
             Found: NoSuchBucket: The specified bucket does not exist"
        );
        // A document without a declaration, and with no message.
        assert_eq!(
            said("refused: <Error><Code>AccessDenied</Code></Error>"),
            "refused: AccessDenied"
        );
        // After retries: the duration goes, the rest stays.
        assert_eq!(
            said("Error performing GET http://h/k in 1.2s, after 3 retries, max_retries: 3"),
            "Error performing GET http://h/k, after 3 retries, max_retries: 3"
        );
        // Words that only look like a duration's start are kept.
        assert_eq!(said("not in 3 places in sync"), "not in 3 places in sync");
        // A body that is not S3's, long and over lines: one line, the body cut.
        let page = format!("status 502: <html>\n{}</html>", "x".repeat(1000));
        let line = said(&page);
        assert!(!line.contains('\n'), "{line}");
        assert_eq!(line.chars().count(), "status 502: ".len() + super::SAID + 3);
        assert!(line.ends_with("..."), "{line}");
        // A long key before an S3 document: the code and message are still said.
        let long = format!(
            "PUT http://h/{}: <Error><Code>SlowDown</Code></Error>",
            "k/".repeat(200)
        );
        assert!(said(&long).ends_with(": SlowDown"), "{}", said(&long));
        // A code but neither a declaration nor an <Error> root: the body is not said twice.
        assert_eq!(
            said("403: <Fault><Code>Denied</Code><Message>no</Message></Fault>"),
            "403: Denied: no"
        );
    }

    #[test]
    fn a_store_s_error_says_the_causes_its_words_leave_out() {
        /// As reqwest's error: its words name the request, its cause why it failed.
        #[derive(Debug)]
        struct Sending(std::io::Error);
        impl std::fmt::Display for Sending {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error sending request for url (http://127.0.0.1:9/b/k)")
            }
        }
        impl std::error::Error for Sending {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let error = object_store::Error::Generic {
            store: "S3",
            source: Box::new(Sending(refused)),
        };
        let said = super::StoreFailure::from(error).to_string();
        assert_eq!(
            said,
            "Generic S3 error: error sending request for url (http://127.0.0.1:9/b/k): \
             Connection refused"
        );
        assert!(
            std::error::Error::source(&super::StoreFailure::from(
                object_store::Error::NotImplemented
            ))
            .is_none()
        );
    }

    use super::*;
    use object_store::memory::InMemory;

    /// A plain-HTTP endpoint without `aws_allow_http` is refused at open, naming the
    /// setting (the store's client refused it at the first request: "builder error: URL
    /// scheme is not allowed").
    #[test]
    fn a_plain_http_endpoint_is_refused_naming_the_setting_that_allows_it() {
        let url = url::Url::parse("s3://bucket/prefix").unwrap();
        let endpoint = ("aws_endpoint".to_owned(), "http://127.0.0.1:9".to_owned());
        let settings = |allow: Option<&str>| {
            let allow = allow.map(|v| ("aws_allow_http".to_owned(), v.to_owned()));
            [Some(endpoint.clone()), allow].into_iter().flatten()
        };
        match Bucket::open(&url, settings(None)) {
            Err(e @ ObjectsError::Setting { .. }) => {
                let said = e.to_string();
                assert!(said.contains("aws_allow_http"), "{said}");
                assert!(
                    said.starts_with("s3://bucket/prefix: the endpoint http://"),
                    "{said}"
                );
            }
            other => panic!("{:?}", other.map(|b| b.shown)),
        }
        assert!(Bucket::open(&url, settings(Some("true"))).is_ok());
    }

    /// A lease's bytes: `owner`'s until `until_ms`.
    fn lease_of(owner: &str, until_ms: u64) -> Vec<u8> {
        let body = LeaseBody {
            owner: owner.into(),
            until_ms: Some(until_ms),
            until: None,
        };
        serde_json::to_vec(&body).unwrap()
    }

    #[tokio::test]
    async fn an_expired_lease_is_taken_over_and_its_holder_hears() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let key = Key::from("p/.resourcesync/lock");
        let first = Lease::take(store.clone(), key.clone(), Duration::from_secs(3), true)
            .await
            .unwrap();
        // Ran out: as a killed writer's would.
        let stale = lease_of(&first.owner, now_ms() - 1);
        store.put(&key, stale.into()).await.unwrap();
        assert!(!Lease::live(&*store, &key).await);
        let second = Lease::take(store.clone(), key.clone(), Duration::from_secs(3), true)
            .await
            .unwrap();
        assert!(Lease::live(&*store, &key).await);
        // The first's renewal (after a second) meets the second's version.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(first.lost(), "a lease taken over is lost");
        assert!(!second.lost());
        // Released by the first: not deleted, since it is the second's now.
        first.release().await;
        assert!(Lease::live(&*store, &key).await);
        second.release().await;
        assert!(!Lease::live(&*store, &key).await);
    }

    #[tokio::test]
    async fn without_conditional_puts_a_renewal_finds_a_takeover_and_leaves_it() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let key = Key::from("p/.resourcesync/lock");
        // Renewed every second, with reads and overwrites only.
        let lease = Lease::take(store.clone(), key.clone(), Duration::from_secs(3), false)
            .await
            .unwrap();
        // Taken over (as after this writer stalled past its lease).
        let other = lease_of("another", now_ms() + 3000);
        store.put(&key, other.clone().into()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(lease.lost(), "a lease taken over is lost");
        // Neither the renewal nor the release overwrote the other's.
        lease.release().await;
        let left = store.get(&key).await.unwrap().bytes().await.unwrap();
        assert_eq!(left.to_vec(), other);
    }

    #[tokio::test]
    async fn a_claimed_lease_is_held_only_once_read_back_as_its_own() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let key = Key::from("p/.resourcesync/lock");
        let time = Duration::from_secs(3);
        // Left alone: its own when read back.
        let alone = Lease::claim(store.clone(), key.clone(), time, true)
            .await
            .unwrap();
        alone.settled().await.unwrap();
        assert!(!alone.lost());
        alone.release().await;
        // Overwritten before the read back, as a store whose conditional create is not
        // atomic lets a second writer do: never this writer's.
        let claimed = Lease::claim(store.clone(), key.clone(), time, true)
            .await
            .unwrap();
        let other = lease_of("another", now_ms() + 3000);
        store.put(&key, other.clone().into()).await.unwrap();
        let settled = claimed.settled().await;
        assert!(
            matches!(settled, Err(ObjectsError::Busy { .. })),
            "{settled:?}"
        );
        assert!(claimed.lost(), "nothing may be written under it");
        // Let go: the other's lease stays.
        claimed.release().await;
        let left = store.get(&key).await.unwrap().bytes().await.unwrap();
        assert_eq!(left.to_vec(), other);
        // `take` is the claim and its read back.
        let taken = Lease::take(store.clone(), key.clone(), time, true).await;
        assert!(matches!(taken, Err(ObjectsError::Busy { .. })), "{taken:?}");
    }

    #[tokio::test]
    async fn a_lease_an_earlier_version_wrote_in_seconds_keeps_this_one_out() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let key = Key::from("p/.resourcesync/lock");
        let old = |until: u64| format!(r#"{{"owner":"old","until":{until}}}"#);
        let now = now_ms() / 1000;
        store.put(&key, old(now + 60).into()).await.unwrap();
        assert!(Lease::live(&*store, &key).await);
        let taken = Lease::take(store.clone(), key.clone(), Duration::from_secs(3), true).await;
        assert!(matches!(taken, Err(ObjectsError::Busy { .. })), "{taken:?}");
        store.put(&key, old(now - 2).into()).await.unwrap();
        assert!(!Lease::live(&*store, &key).await);
        let lease = Lease::take(store.clone(), key.clone(), Duration::from_secs(3), true)
            .await
            .unwrap();
        // And what this one writes, an earlier version reads: `until` in seconds.
        let body: serde_json::Value =
            serde_json::from_slice(&store.get(&key).await.unwrap().bytes().await.unwrap()).unwrap();
        assert!(body["until"].as_u64().unwrap() >= now + 3, "{body}");
        lease.release().await;
    }

    #[test]
    fn the_payload_goes_unsigned_over_https_unless_a_setting_says() {
        use object_store::aws::AmazonS3ConfigKey::{Endpoint, UnsignedPayload};
        let url = "s3://bucket/prefix".parse().unwrap();
        let unsigned = |options: &[(&str, &str)]| {
            let options = options.iter().map(|(k, v)| (k.to_string(), v.to_string()));
            let builder = s3_builder(&url, options).unwrap();
            (
                builder.get_config_value(&UnsignedPayload).unwrap(),
                builder.get_config_value(&Endpoint),
            )
        };
        // The machine's settings come first: this test needs them unset.
        for var in ["AWS_UNSIGNED_PAYLOAD", "AWS_ENDPOINT", "AWS_ENDPOINT_URL"] {
            assert!(
                std::env::var_os(var).is_none(),
                "{var} is set: unset it for this test"
            );
        }
        assert_eq!(unsigned(&[]).0, "true", "AWS itself: HTTPS");
        assert_eq!(
            unsigned(&[("aws_endpoint", "https://s3.example.com")]).0,
            "true"
        );
        let plain = [
            ("aws_endpoint", "http://127.0.0.1:9000"),
            ("aws_allow_http", "true"),
        ];
        assert_eq!(unsigned(&plain).0, "false");
        let said = [
            ("aws_endpoint", "https://s3.example.com"),
            ("aws_unsigned_payload", "false"),
        ];
        assert_eq!(unsigned(&said).0, "false");
        let said = [
            ("aws_endpoint", "http://127.0.0.1:9000"),
            ("aws_allow_http", "true"),
            ("aws_unsigned_payload", "true"),
        ];
        assert_eq!(unsigned(&said).0, "true");
    }

    #[tokio::test]
    async fn a_setting_the_store_does_not_have_is_an_error() {
        let url = "s3://bucket/prefix".parse().unwrap();
        let mistyped = [("aws_endpont".to_owned(), "http://127.0.0.1:9".to_owned())];
        let error = Bucket::open(&url, mistyped.clone()).unwrap_err();
        assert!(error.to_string().contains("aws_endpont"), "{error}");
        let error = Bucket::open(&"memory:///".parse().unwrap(), mistyped).unwrap_err();
        assert!(error.to_string().contains("no settings"), "{error}");
    }
}
