//! What a sync does: its [`Mode`], where it starts, and the bounds it keeps.

use std::time::Duration;

use resourcesync_model::{Uri, Verification, W3cDateTime};
use xxhash_rust::xxh3::xxh3_64;

use crate::local_path::PathMapper;
use crate::policy::{AuthorityError, Policy};

/// What a run of the client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Bring the Destination in step from the Source's current state: a Resource List
    /// (or Index) compared with the inventory, or a Resource Dump; then the checkpoint
    /// is the listing's `at`. When a resource's body is not what the listing says (the
    /// Source moved since), the run reads the Change Lists since that `at` too, takes
    /// what they say, and the checkpoint is where they end.
    Baseline {
        /// Take the resources from the Resource Dump when the Source offers one.
        prefer_dump: bool,
    },
    /// Apply the changes since the checkpoint: Change Lists, their Indexes and Archive,
    /// Change Dumps. Needs a checkpoint from a baseline.
    Incremental,
    /// Compare the inventory with the Source's Resource List (and the Change Lists since
    /// its `at`, when the Source offers them) and report; nothing is fetched but
    /// documents.
    Audit,
    /// Read every document the Source offers (the Source Description, its Capability
    /// Lists, every capability document with its index parts and archives) and report
    /// each with the document that listed it ([`Event::Document`](crate::Event::Document));
    /// fetch no resource or package, change nothing.
    Explore,
}

impl std::fmt::Display for Mode {
    /// `baseline` (`baseline from the dump` when it prefers one), `incremental`, `audit`
    /// or `explore`: as the command names them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Baseline { prefer_dump: true } => "baseline from the dump",
            Mode::Baseline { .. } => "baseline",
            Mode::Incremental => "incremental",
            Mode::Audit => "audit",
            Mode::Explore => "explore",
        })
    }
}

/// One of `n` shards: a run then covers only the resources whose key hashes to `k`
/// (xxh3, stable across versions and machines), so that `n` workers, each with its own
/// state, sync one Source together. The key of a resource is its local path as the
/// config maps it, folded as the most folding file system compares names
/// ([`Config::shard_key`]): URIs that would share a file (`http:` and `https:`, a
/// fragment, case or Unicode normalization apart) are in one shard, where the check for
/// such collisions sees them both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    k: u64,
    n: u64,
}

impl Shard {
    /// Shard `k` of `n`; `None` unless `k < n`.
    pub fn new(k: u64, n: u64) -> Option<Shard> {
        (k < n).then_some(Shard { k, n })
    }

    /// Which shard this is, from 0.
    pub fn index(&self) -> u64 {
        self.k
    }

    /// How many shards there are.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Whether the resource whose key ([`Config::shard_key`]) is `key` is in this shard.
    pub fn owns(&self, key: &str) -> bool {
        xxh3_64(key.as_bytes()) % self.n == self.k
    }
}

/// Numbers that bound a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bounds {
    /// Requests in flight at once; 8 by default.
    pub max_in_flight: usize,
    /// Resource fetches waiting their turn before the client stops asking for more
    /// documents (it reads on when they drain); 10,000 by default. This bounds the
    /// client's memory when most of a large listing differs. Within a Resource List the
    /// client goes further: its entries are decided at most 1,024 ahead of the requests
    /// made for them, the rest of the list waiting, its bytes held as they came, until
    /// half of those are requested.
    pub max_queued: usize,
    /// Attempts at one request (a failure, a timeout, a 5xx or 429 is tried again); 3 by
    /// default.
    pub attempts: u32,
    /// The wait before the first retry, doubled for each next; 1 s by default.
    pub retry_delay: Duration,
    /// A request with no response head or body for this long is cancelled
    /// ([`Event::Cancel`](crate::Event::Cancel)) and retried; 60 s by default.
    pub request_timeout: Duration,
    /// A request that takes longer than this in all, however steadily its bytes come, is
    /// cancelled and retried (a Source that sends a byte now and then would otherwise
    /// hold it for ever); 30 minutes by default.
    pub max_request_time: Duration,
    /// Bytes of a resource (or a package) listed without a length: past them the fetch
    /// fails ([`ProblemKind::TooLarge`](crate::ProblemKind::TooLarge)); 1 GiB by default.
    /// A listed length bounds the body itself (a longer body fails its fixity).
    pub max_unlisted_bytes: u64,
    /// Redirects followed for one request; 10 by default.
    pub max_redirects: u32,
    /// How deep documents may nest below the first (Source Description > Capability List
    /// > index > list is 3); 4 by default.
    pub max_depth: u32,
    /// Documents one run reads (lists, indexes, the Change Lists an index names): depth
    /// alone does not bound what an index of indexes names (its breadth multiplies at
    /// each level), nor the memory of what is queued; 100,000 by default, a Resource
    /// List Index of as many lists of 50,000 resources each (5 billion).
    pub max_documents: u64,
    /// Warnings reported per document; more are counted, not reported. 100 by default.
    pub max_warnings: usize,
    /// Bytes of a discovery response read (robots.txt, an HTML page); 1 MiB by default.
    pub max_discovery_bytes: usize,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            max_in_flight: 8,
            max_queued: 10_000,
            attempts: 3,
            retry_delay: Duration::from_secs(1),
            request_timeout: Duration::from_secs(60),
            max_request_time: Duration::from_secs(30 * 60),
            max_unlisted_bytes: 1 << 30,
            max_redirects: 10,
            max_depth: 4,
            max_documents: 100_000,
            max_warnings: 100,
            max_discovery_bytes: 1 << 20,
        }
    }
}

/// How a [`Client`](crate::Client) runs: what it does, from where, within which bounds.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Config {
    /// Where the sync starts: a Source's base URI (ending in `/`: discovery, section 8),
    /// or any of its documents (Source Description, Capability List, a list or an
    /// index), recognized by what it turns out to be.
    pub start: Uri,
    /// What the run does.
    pub mode: Mode,
    /// Announce the changes, fetch and change nothing, and leave the state as it was.
    pub dry_run: bool,
    /// Delete what the Destination holds (the inventory) and the Source no longer has:
    /// in a baseline, what the listing no longer lists (only after the whole listing
    /// was read); in an incremental run, what a Change List or Change Dump lists as
    /// deleted. Without it nothing is ever deleted (an incremental run counts the
    /// deletions it did not make, [`Report::kept`](crate::Report::kept)). What the
    /// inventory does not hold is never deleted, whatever a Source lists.
    pub delete: bool,
    /// Deletions one run may make. Over it, a baseline deletes nothing and says so
    /// ([`ProblemKind::DeleteLimit`](crate::ProblemKind::DeleteLimit)); an incremental
    /// run makes that many and stops before the next, its checkpoint there
    /// ([`ProblemKind::DeleteLimitReached`](crate::ProblemKind::DeleteLimitReached)).
    pub max_deletes: u64,
    /// Only this shard's resources.
    pub shard: Option<Shard>,
    /// Keep an incremental run going: read the Change Lists again this long after
    /// catching up, instead of finishing.
    pub follow: Option<Duration>,
    /// What may be fetched.
    pub policy: Policy,
    /// Where resources go, relative to the destination.
    pub paths: PathMapper,
    /// Bounds of the run.
    pub bounds: Bounds,
    /// Which of a body's listed digests are checked: the strongest (the default) or
    /// all. What a check computes is [`Client::algorithms`](crate::Client::algorithms).
    pub verification: Verification,
    /// The caller's wall clock when the run started ([`with_clock`](Config::with_clock)):
    /// no checkpoint is later than it, nor later than the `Date` of the Source's
    /// responses. The client reads no clock: without it only the Source's `Date` bounds
    /// the checkpoint.
    pub clock: Option<W3cDateTime>,
    /// The driver tells when each request is sent ([`Client::handle_started`]): its
    /// timers start then, not when it was polled. For a driver that holds requests back
    /// (a limit shared with other runs, a host's Crawl-delay), however long.
    ///
    /// [`Client::handle_started`]: crate::Client::handle_started
    pub started_by_driver: bool,
}

/// A [`Config`] that cannot be: its start is no URI the client could fetch or map.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot start at {start:?}: {reason}")]
pub struct ConfigError {
    /// The start URI.
    pub start: String,
    /// Why.
    pub reason: String,
}

impl Config {
    /// A run in `mode` starting at `start`, with the policy and paths of the Source at
    /// `start` (its authority only; paths relative to its root), no deletions, no shard.
    pub fn new(start: Uri, mode: Mode) -> Result<Config, ConfigError> {
        let error = |reason: String| ConfigError {
            start: start.to_string(),
            reason,
        };
        let policy = Policy::new(&start).map_err(|e| error(e.to_string()))?;
        let mut root = start.to_url().map_err(|e| error(e.to_string()))?;
        root.set_path("/");
        root.set_query(None);
        root.set_fragment(None);
        let paths = PathMapper::new(&Uri::from(root)).map_err(|e| error(e.to_string()))?;
        Ok(Config {
            start,
            mode,
            dry_run: false,
            delete: false,
            max_deletes: u64::MAX,
            shard: None,
            follow: None,
            policy,
            paths,
            bounds: Bounds::default(),
            verification: Verification::default(),
            clock: None,
            started_by_driver: false,
        })
    }

    /// This configuration for a driver that tells when each request is sent
    /// ([`Config::started_by_driver`]).
    pub fn with_started_by_driver(mut self, started: bool) -> Config {
        self.started_by_driver = started;
        self
    }

    /// This configuration with the caller's wall clock at the start of the run
    /// (`W3cDateTime::from(SystemTime::now())`): a time the Source states later than it
    /// (a publisher's clock slip that stamps a list, a dump or one change years ahead)
    /// never becomes the checkpoint, which would skip every change stamped before it.
    pub fn with_clock(mut self, now: W3cDateTime) -> Config {
        self.clock = Some(now);
        self
    }

    /// This configuration as a dry run.
    pub fn with_dry_run(mut self, dry_run: bool) -> Config {
        self.dry_run = dry_run;
        self
    }

    /// This configuration deleting what the Source no longer lists, at most `max`.
    pub fn with_delete(mut self, max: u64) -> Config {
        self.delete = true;
        self.max_deletes = max;
        self
    }

    /// This configuration for one shard.
    pub fn with_shard(mut self, shard: Shard) -> Config {
        self.shard = Some(shard);
        self
    }

    /// This configuration following the Change Lists, reading them again `every` after
    /// catching up.
    pub fn with_follow(mut self, every: Duration) -> Config {
        self.follow = Some(every);
        self
    }

    /// This configuration with another policy.
    pub fn with_policy(mut self, policy: Policy) -> Config {
        self.policy = policy;
        self
    }

    /// This configuration fetching from one more authority, `host` or `host:port` (a
    /// mirror host, or the Source's own under another name or port:
    /// [`Policy::allow_authority`]), whose resources map under `@` and the authority
    /// ([`PathMapper::with_other_authorities`]). What a `--allow-authority HOST[:PORT]`
    /// option gives.
    ///
    /// ```
    /// use resourcesync_client::{Config, Mode};
    ///
    /// let config = Config::new("http://localhost:8080/".parse()?, Mode::Audit)?
    ///     .with_allowed_authority("127.0.0.1:8080")?;
    /// let built_for = "http://127.0.0.1:8080/capabilitylist.xml".parse()?;
    /// assert!(config.policy.check(&built_for).is_ok());
    /// assert_eq!(config.paths.local_path(&built_for)?.as_str(), "@127.0.0.1%3A8080/capabilitylist.xml");
    /// assert!(config.policy.check(&"http://127.0.0.1:9090/".parse()?).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_allowed_authority(mut self, authority: &str) -> Result<Config, AuthorityError> {
        self.policy = self.policy.allow_authority(authority)?;
        self.paths = self.paths.with_other_authorities(true);
        Ok(self)
    }

    /// This configuration with another path mapper.
    pub fn with_paths(mut self, paths: PathMapper) -> Config {
        self.paths = paths;
        self
    }

    /// This configuration checking `verification` of each body's listed digests.
    pub fn with_verification(mut self, verification: Verification) -> Config {
        self.verification = verification;
        self
    }

    /// This configuration with other bounds.
    pub fn with_bounds(mut self, bounds: Bounds) -> Config {
        self.bounds = bounds;
        self
    }

    /// The key [`Shard`]s split resources by: `uri`'s local path ([`Config::paths`]),
    /// case-folded and in Unicode's composed form on every file system alike (so that
    /// shards on machines with different file systems agree); the URI as written when it
    /// maps to no path (it is refused, by the one shard that owns it).
    pub fn shard_key(&self, uri: &Uri) -> String {
        match self.paths.local_path(uri) {
            Ok(path) => resourcesync_model::names::fold(path.as_str()).into_owned(),
            Err(_) => uri.as_str().to_owned(),
        }
    }

    /// Whether `uri` is this run's: every resource without a shard, else its shard's.
    pub fn in_shard(&self, uri: &Uri) -> bool {
        self.shard
            .is_none_or(|shard| shard.owns(&self.shard_key(uri)))
    }

    /// Whether the start is a base to discover from (its path ends with `/`) rather
    /// than a document.
    pub(crate) fn discovers(&self) -> bool {
        match self.start.to_url() {
            Ok(url) => url.path().ends_with('/') && url.query().is_none(),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xxh3-64 of `https://example.com/a`, pinned: shards must not move between versions.
    const XXH3_EXAMPLE: u64 = 1_412_038_690_480_783_815;

    #[test]
    fn shards_partition() {
        let config = |k| {
            Config::new("https://example.com/".parse().unwrap(), Mode::Audit)
                .unwrap()
                .with_shard(Shard::new(k, 4).unwrap())
        };
        let shards: Vec<Config> = (0..4).map(config).collect();
        let mut counts = [0; 4];
        for i in 0..1000 {
            let uri: Uri = format!("https://example.com/r/{i}").parse().unwrap();
            let owners: Vec<usize> = (0..4).filter(|&k| shards[k].in_shard(&uri)).collect();
            assert_eq!(owners.len(), 1);
            counts[owners[0]] += 1;
        }
        assert!(counts.iter().all(|&c| c > 150), "{counts:?}");
        assert_eq!(Shard::new(4, 4), None);
        // Stable: the same URI is in the same shard on every machine and version (xxh3 is
        // a specified algorithm; this value is its known digest).
        assert_eq!(
            xxh3_64(b""),
            0x2D06_8005_38D3_94C2,
            "XXH3's published test vector"
        );
        assert_eq!(xxh3_64(b"https://example.com/a"), XXH3_EXAMPLE);
        assert!(
            Shard::new(XXH3_EXAMPLE % 7, 7)
                .unwrap()
                .owns("https://example.com/a")
        );
        // The key is the folded local path: URIs that would share a file share a shard.
        let one = &shards[0];
        let key = |u: &str| one.shard_key(&u.parse().unwrap());
        assert_eq!(key("https://example.com/r/A.txt"), "r/a.txt");
        for same in [
            "http://example.com/r/a.txt",
            "https://example.com/r/a.txt#part",
            "https://EXAMPLE.com/r/A.TXT",
        ] {
            assert_eq!(key(same), "r/a.txt", "{same}");
        }
        // Composed and decomposed forms of one name.
        assert_eq!(
            key("https://example.com/caf%C3%A9"),
            key("https://example.com/cafe%CC%81")
        );
    }

    #[test]
    fn bases_discover_documents_do_not() {
        let base = Config::new("https://example.com/".parse().unwrap(), Mode::Audit).unwrap();
        assert!(base.discovers());
        let doc = Config::new(
            "https://example.com/capabilitylist.xml".parse().unwrap(),
            Mode::Audit,
        )
        .unwrap();
        assert!(!doc.discovers());
        assert!(Config::new("ftp://example.com/".parse().unwrap(), Mode::Audit).is_err());
    }
}
