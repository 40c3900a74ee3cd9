//! What a sync does: [`SyncOptions`], the typed options of a run, and the client's
//! [`Config`] they make for a [`DirectoryDestination`].

use std::path::PathBuf;

use resourcesync_client::{Bounds, Config, ConfigError, Mode, Shard, State};
use resourcesync_model::{Uri, Verification, W3cDateTime};

use crate::destination::Destination;
#[cfg(doc)]
use crate::directory::DirectoryDestination;

/// What a sync does: the typed options of a [`Run`](crate::Run) and of the drivers over
/// it, built from a Source and a directory (`SyncOptions::new(source, dir).with_delete(100)`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    pub source: Uri,
    /// The destination directory (made if missing, for a run that stores: its parent
    /// must exist; an audit or a dry run makes nothing there, see
    /// [`DirectoryDestination::open_for`](crate::DirectoryDestination::open_for)).
    pub dir: PathBuf,
    /// Compare the directory with the Source and report; change nothing.
    pub audit: bool,
    /// Decide and report the changes; fetch no resource, change nothing.
    pub dry_run: bool,
    /// A baseline even when the directory has a checkpoint. Set through
    /// [`with_baseline`](Self::with_baseline), which also sets [`repair`](Self::repair):
    /// a baseline asked for repairs DIR.
    pub baseline: bool,
    /// A baseline reads every file the sync stored in DIR: one missing is fetched again,
    /// one changed since is a conflict, left as it is unless
    /// [`replace_foreign`](Self::replace_foreign) (set with [`baseline`](Self::baseline) by
    /// [`with_baseline`](Self::with_baseline)). A baseline not asked for (a first run, one
    /// in place of Change Lists that cannot carry DIR forward) reads none: it fetches the
    /// missing ones, and meets a changed one only when the Source changes it.
    pub repair: bool,
    /// Take a baseline from the Resource Dump when the Source has one.
    pub dump: bool,
    /// Delete what the Source no longer has (`--delete`), at most this many
    /// (`--max-deletes`); `None` deletes nothing.
    pub delete: Option<u64>,
    /// Requests in flight at once (at least one).
    pub concurrency: usize,
    /// Which of each body's listed digests are checked: the strongest listed
    /// (sha-256 over md5; the default) or every one (`--verify all`).
    pub verification: Verification,
    /// Bytes a resource listed without a length may have.
    pub max_unlisted_bytes: u64,
    /// Time one request may take in all.
    pub max_request_time: std::time::Duration,
    /// URL prefixes answered from a directory (a mirror on disk), each with it.
    pub mirrors: Vec<(String, PathBuf)>,
    /// Replace a file at a listed path that no sync stored (by default a conflict,
    /// unless it holds the listed bytes).
    pub replace_foreign: bool,
    /// Other authorities (`host` or `host:port`) the Source's documents and resources may
    /// be fetched from: a Source built for another address than the one it is reached
    /// at, resources on a mirror host ([`Config::with_allowed_authority`]; their files go
    /// under `@host:port/` in the directory).
    pub allowed_authorities: Vec<String>,
    /// Only this shard of the Source's resources (split by a hash of their URIs,
    /// [`Shard`]), with a state of its own in DIR: N runs, one per shard, together do
    /// what one run does ([`DirectoryDestination::open_shard`]).
    pub shard: Option<Shard>,
}

impl SyncOptions {
    /// A sync of `dir` from `source`, with the defaults of `resourcesync sync`: 8
    /// requests in flight, no deletion, no dump, text output.
    pub fn new(source: Uri, dir: impl Into<PathBuf>) -> SyncOptions {
        SyncOptions {
            source,
            dir: dir.into(),
            audit: false,
            dry_run: false,
            baseline: false,
            repair: false,
            dump: false,
            delete: None,
            concurrency: 8,
            verification: Verification::default(),
            max_unlisted_bytes: Bounds::default().max_unlisted_bytes,
            max_request_time: Bounds::default().max_request_time,
            mirrors: Vec::new(),
            replace_foreign: false,
            allowed_authorities: Vec::new(),
            shard: None,
        }
    }

    /// See [`SyncOptions::shard`].
    #[must_use]
    pub fn with_shard(mut self, shard: Option<Shard>) -> SyncOptions {
        self.shard = shard;
        self
    }

    /// See [`SyncOptions::allowed_authorities`]: one more.
    #[must_use]
    pub fn with_allowed_authority(mut self, authority: impl Into<String>) -> SyncOptions {
        self.allowed_authorities.push(authority.into());
        self
    }

    /// See [`SyncOptions::audit`].
    #[must_use]
    pub fn with_audit(mut self, audit: bool) -> SyncOptions {
        self.audit = audit;
        self
    }

    /// See [`SyncOptions::dry_run`].
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> SyncOptions {
        self.dry_run = dry_run;
        self
    }

    /// See [`SyncOptions::baseline`].
    #[must_use]
    pub fn with_baseline(mut self, baseline: bool) -> SyncOptions {
        self.baseline = baseline;
        self.repair = baseline;
        self
    }

    /// See [`SyncOptions::dump`].
    #[must_use]
    pub fn with_dump(mut self, dump: bool) -> SyncOptions {
        self.dump = dump;
        self
    }

    /// Delete what the Source no longer lists, at most `max` resources.
    #[must_use]
    pub fn with_delete(mut self, max: u64) -> SyncOptions {
        self.delete = Some(max);
        self
    }

    /// See [`SyncOptions::max_unlisted_bytes`] and [`SyncOptions::max_request_time`].
    #[must_use]
    pub fn with_limits(
        mut self,
        max_unlisted_bytes: u64,
        max_request_time: std::time::Duration,
    ) -> SyncOptions {
        self.max_unlisted_bytes = max_unlisted_bytes;
        self.max_request_time = max_request_time;
        self
    }

    /// See [`SyncOptions::concurrency`].
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> SyncOptions {
        self.concurrency = concurrency;
        self
    }

    /// See [`SyncOptions::verification`].
    #[must_use]
    pub fn with_verification(mut self, verification: Verification) -> SyncOptions {
        self.verification = verification;
        self
    }

    /// Answers requests for URLs under `prefix` from the directory `dir`.
    #[must_use]
    pub fn with_mirror(
        mut self,
        prefix: impl Into<String>,
        dir: impl Into<PathBuf>,
    ) -> SyncOptions {
        self.mirrors.push((prefix.into(), dir.into()));
        self
    }

    /// See [`SyncOptions::replace_foreign`].
    #[must_use]
    pub fn with_replace_foreign(mut self, replace: bool) -> SyncOptions {
        self.replace_foreign = replace;
        self
    }

    /// The mode these options ask for, given the saved state: an audit, a baseline (asked
    /// for, or the first run into the directory), or an incremental sync.
    pub fn mode(&self, state: &State) -> Mode {
        if self.audit {
            Mode::Audit
        } else if self.baseline || state.sets.is_empty() {
            Mode::Baseline {
                prefer_dump: self.dump,
            }
        } else {
            Mode::Incremental
        }
    }

    /// The client's config for a sync into `dest` from `state`: the mode, this machine's
    /// clock (no checkpoint later than it: [`Config::with_clock`]), a dry run,
    /// deletion, requests in flight, and the destination's own name kept out of every
    /// Source's reach. A driver that resolves names checks their addresses itself (the
    /// policy's special address kinds, as `asynchronous::sync` does).
    pub fn config(&self, dest: &impl Destination, state: &State) -> Result<Config, ConfigError> {
        // The wall clock, read here, where the IO is: no checkpoint is later than it.
        let now = W3cDateTime::from(std::time::SystemTime::now());
        let mut config = Config::new(self.source.clone(), self.mode(state))?
            .with_dry_run(self.dry_run)
            .with_verification(self.verification)
            .with_clock(now);
        config = config.clone().with_paths(dest.paths(&config));
        if let Some(max) = self.delete {
            config = config.with_delete(max);
        }
        if let Some(shard) = self.shard {
            config = config.with_shard(shard);
        }
        config = self.allow_authorities(config)?;
        let mut bounds = config.bounds;
        bounds.max_in_flight = self.concurrency.max(1);
        bounds.max_unlisted_bytes = self.max_unlisted_bytes;
        bounds.max_request_time = self.max_request_time;
        Ok(config.with_bounds(bounds))
    }

    /// Whether a run can start at all, asked before its destination is opened (locked,
    /// its directory made): a start the client refuses (no http or https URI, one with
    /// credentials in it) or an authority it cannot allow is said now, as
    /// [`config`](Self::config) would say it, and nothing is made in DIR.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.allow_authorities(Config::new(self.source.clone(), Mode::Incremental)?)
            .map(drop)
    }

    /// `config` allowing the other authorities asked for.
    fn allow_authorities(&self, mut config: Config) -> Result<Config, ConfigError> {
        for authority in &self.allowed_authorities {
            config = config
                .with_allowed_authority(authority)
                .map_err(|e| ConfigError {
                    start: self.source.to_string(),
                    reason: format!("--allow-authority {authority:?}: {e}"),
                })?;
        }
        Ok(config)
    }
}
