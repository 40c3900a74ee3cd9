//! The Sources file of `resourcesync sync --sources FILE`: many Sources, each with its
//! directory and options, read into the [`Harvest`] the Destination library runs.
//!
//! ```toml
//! # The whole harvest's limits (each optional; these are the defaults).
//! [limits]
//! sources = 16       # Sources synced at once
//! requests = 64      # requests in flight in all
//! per-host = 4       # requests in flight to one scheme, host and port
//! robots = true      # read each host's robots.txt and keep to its Crawl-delay
//!
//! # What every Source takes unless it says otherwise (each optional).
//! [defaults]
//! concurrency = 8
//! interval = "1h"
//!
//! [[source]]
//! url = "https://repository.example/"   # the Source, as `sync SOURCE-URL` takes it
//! dir = "mirror/repository"             # its own directory, relative to this file
//! name = "repository"                   # in reports; the URL by default
//! delete = true
//! ```
//!
//! A Source's options are `sync`'s, by the same names: `delete` (true or false),
//! `max-deletes`, `concurrency`, `verify` (`strongest` or `all`), `dump`,
//! `max-unlisted-bytes` (`"1G"`), `max-request-time` (`"30m"`), `replace-foreign`,
//! `allow-authority` (a list of `host[:port]`), and the harvest's own: `interval` (when it
//! is next due after a complete run) and `max-time` (the longest a run of it may take).
//!
//! A `dir` written `s3://BUCKET/PREFIX` is a bucket's prefix, as `sync`'s DIR may be, with
//! `store-options` (a table of the store's settings: `{ aws_endpoint = "...", ... }`, over
//! the `AWS_*` variables) and `store-lease` (`"60s"` by default), which `[defaults]` may
//! give for every Source.

use std::path::{Path, PathBuf};
use std::time::Duration;

use resourcesync_destination::SyncOptions;
use resourcesync_destination::harvest::{Harvest, HarvestError, Limits, Member};
use resourcesync_model::Verification;
use serde::Deserialize;

/// Why a Sources file cannot be used; each names the file, and where in it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourcesError {
    /// It cannot be read.
    #[error("{path}: cannot be read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It is not TOML of this shape (the message says the line and column).
    #[error("{path}: {source}")]
    Toml {
        /// The file.
        path: PathBuf,
        /// The parser's error, with the place.
        source: Box<toml::de::Error>,
    },
    /// One Source's entry is wrong.
    #[error("{path}: source {number} ({name}): {problem}")]
    Entry {
        /// The file.
        path: PathBuf,
        /// The entry's number, from 1, in the order written.
        number: usize,
        /// Its name or URL, as far as it was read.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// The `[defaults]` or `[limits]` table is wrong.
    #[error("{path}: [{table}]: {problem}")]
    Table {
        /// The file.
        path: PathBuf,
        /// `defaults` or `limits`.
        table: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The Sources cannot be harvested together.
    #[error("{path}: {source}")]
    Harvest {
        /// The file.
        path: PathBuf,
        /// Why.
        source: HarvestError,
    },
}

/// The file's tables, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    limits: Option<toml::Table>,
    #[serde(default)]
    defaults: Option<toml::Table>,
    #[serde(default)]
    source: Vec<toml::Table>,
}

/// `[limits]`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LimitsTable {
    sources: Option<usize>,
    requests: Option<usize>,
    per_host: Option<usize>,
    robots: Option<bool>,
}

/// A Source's options (and `[defaults]`), each optional.
#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct Settings {
    delete: Option<bool>,
    max_deletes: Option<u64>,
    concurrency: Option<usize>,
    verify: Option<String>,
    dump: Option<bool>,
    max_unlisted_bytes: Option<String>,
    max_request_time: Option<String>,
    replace_foreign: Option<bool>,
    allow_authority: Option<Vec<String>>,
    interval: Option<String>,
    max_time: Option<String>,
    store_options: Option<std::collections::BTreeMap<String, String>>,
    store_lease: Option<String>,
}

impl Settings {
    /// These over `base`: each set here wins.
    fn over(self, base: &Settings) -> Settings {
        let b = base.clone();
        Settings {
            delete: self.delete.or(b.delete),
            max_deletes: self.max_deletes.or(b.max_deletes),
            concurrency: self.concurrency.or(b.concurrency),
            verify: self.verify.or(b.verify),
            dump: self.dump.or(b.dump),
            max_unlisted_bytes: self.max_unlisted_bytes.or(b.max_unlisted_bytes),
            max_request_time: self.max_request_time.or(b.max_request_time),
            replace_foreign: self.replace_foreign.or(b.replace_foreign),
            allow_authority: self.allow_authority.or(b.allow_authority),
            interval: self.interval.or(b.interval),
            max_time: self.max_time.or(b.max_time),
            store_options: self.store_options.or(b.store_options),
            store_lease: self.store_lease.or(b.store_lease),
        }
    }
}

/// Reads the Sources file at `path`: each Source's directory relative to the file's.
pub fn read(path: &Path) -> Result<Harvest, SourcesError> {
    use std::io::Read;
    let error = |source| SourcesError::Read {
        path: path.to_path_buf(),
        source,
    };
    // Read up to one byte past the bound: a file of a million Sources is far smaller.
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(error)?
        .take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(error)?;
    if text.len() as u64 > MAX_FILE {
        return Err(error(std::io::Error::other(format!(
            "larger than {} MiB",
            MAX_FILE >> 20
        ))));
    }
    parse(&text, path)
}

/// The largest Sources file read.
const MAX_FILE: u64 = 64 << 20;

/// Reads a Sources file's `text`; `path` names it in errors, and its directory is what
/// relative directories are relative to.
pub fn parse(text: &str, path: &Path) -> Result<Harvest, SourcesError> {
    let file: File = toml::from_str(text).map_err(|e| SourcesError::Toml {
        path: path.to_path_buf(),
        source: Box::new(e),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let table = |table: &'static str, problem: String| SourcesError::Table {
        path: path.to_path_buf(),
        table,
        problem,
    };
    let limits: LimitsTable = match file.limits {
        Some(t) => t
            .try_into()
            .map_err(|e: toml::de::Error| table("limits", e.message().to_owned()))?,
        None => LimitsTable::default(),
    };
    let defaults: Settings = match file.defaults {
        Some(t) => t
            .try_into()
            .map_err(|e: toml::de::Error| table("defaults", e.message().to_owned()))?,
        None => Settings::default(),
    };
    let mut members = Vec::new();
    for (i, mut entry) in file.source.into_iter().enumerate() {
        let mut name = format!("#{}", i + 1);
        let fail = |name: &str, problem: String| SourcesError::Entry {
            path: path.to_path_buf(),
            number: i + 1,
            name: name.to_owned(),
            problem,
        };
        let text_field = |entry: &mut toml::Table, key: &str| -> Result<Option<String>, String> {
            match entry.remove(key) {
                None => Ok(None),
                Some(toml::Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(format!(
                    "`{key}` must be a string, not {}",
                    other.type_str()
                )),
            }
        };
        let url = text_field(&mut entry, "url").map_err(|p| fail(&name, p))?;
        let given_name = text_field(&mut entry, "name").map_err(|p| fail(&name, p))?;
        if let Some(n) = given_name.or(url.clone()) {
            name = n;
        }
        let dir = text_field(&mut entry, "dir").map_err(|p| fail(&name, p))?;
        let url = url.ok_or_else(|| fail(&name, "`url` is missing".into()))?;
        let dir = dir.ok_or_else(|| fail(&name, "`dir` is missing".into()))?;
        let settings: Settings = entry
            .try_into()
            .map_err(|e: toml::de::Error| fail(&name, e.message().to_owned()))?;
        let settings = settings.over(&defaults);
        let source = url
            .parse()
            .map_err(|e| fail(&name, format!("`url` {url:?} is not a URL: {e}")))?;
        // A bucket's prefix is named as `sync`'s DIR names one, not a path under the file's.
        let bucket = dir.starts_with("s3://");
        let place = if bucket {
            PathBuf::from(&dir)
        } else {
            base.join(&dir)
        };
        let bucket = match bucket {
            false => None,
            true => Some(
                dir.parse::<url::Url>()
                    .map_err(|e| fail(&name, format!("`dir` {dir:?} is not a URL: {e}")))?,
            ),
        };
        let member =
            member(name.clone(), source, place, bucket, settings).map_err(|p| fail(&name, p))?;
        members.push(member);
    }
    for (key, value) in [
        ("sources", limits.sources),
        ("requests", limits.requests),
        ("per-host", limits.per_host),
    ] {
        if value.is_some_and(|v| v == 0 || v > Limits::MAX) {
            return Err(table(
                "limits",
                format!("`{key}` must be from 1 to {}", Limits::MAX),
            ));
        }
    }
    let defaults = Limits::default();
    let limits = Limits::new(
        limits.sources.unwrap_or(defaults.sources),
        limits.requests.unwrap_or(defaults.requests),
        limits.per_host.unwrap_or(defaults.per_authority),
    )
    .with_robots(limits.robots.unwrap_or(defaults.robots));
    Harvest::new(members, limits).map_err(|source| SourcesError::Harvest {
        path: path.to_path_buf(),
        source,
    })
}

/// One Source's [`Member`] from its settings, or what is wrong with them.
fn member(
    name: String,
    source: resourcesync_model::Uri,
    dir: PathBuf,
    bucket: Option<url::Url>,
    s: Settings,
) -> Result<Member, String> {
    let defaults = SyncOptions::new(source.clone(), &dir);
    let duration = |key: &str, v: &Option<String>| -> Result<Option<Duration>, String> {
        v.as_deref()
            .map(|t| crate::units::duration(t).map_err(|e| format!("`{key}`: {e}")))
            .transpose()
    };
    let verify = match s.verify.as_deref() {
        None | Some("strongest") => Verification::Strongest,
        Some("all") => Verification::All,
        Some(other) => {
            return Err(format!(
                "`verify` {other:?} is neither `strongest` nor `all`"
            ));
        }
    };
    let max_unlisted = match &s.max_unlisted_bytes {
        Some(t) => crate::units::bytes(t).map_err(|e| format!("`max-unlisted-bytes`: {e}"))?,
        None => defaults.max_unlisted_bytes,
    };
    let max_request_time =
        duration("max-request-time", &s.max_request_time)?.unwrap_or(defaults.max_request_time);
    if s.max_deletes.is_some() && s.delete != Some(true) {
        return Err("`max-deletes` without `delete = true`".into());
    }
    let mut sync = SyncOptions::new(source, dir)
        .with_verification(verify)
        .with_limits(max_unlisted, max_request_time)
        .with_dump(s.dump.unwrap_or(false))
        .with_replace_foreign(s.replace_foreign.unwrap_or(false));
    if let Some(n) = s.concurrency {
        sync = sync.with_concurrency(n);
    }
    if s.delete == Some(true) {
        sync = sync.with_delete(s.max_deletes.unwrap_or(u64::MAX));
    }
    for authority in s.allow_authority.unwrap_or_default() {
        sync = sync.with_allowed_authority(authority);
    }
    let mut member = Member::new(name, sync);
    if let Some(interval) = duration("interval", &s.interval)? {
        member = member.with_interval(interval);
    }
    if let Some(max) = duration("max-time", &s.max_time)? {
        member = member.with_max_time(max);
    }
    let lease = duration("store-lease", &s.store_lease)?;
    match bucket {
        Some(url) => {
            let options = s.store_options.unwrap_or_default().into_iter().collect();
            member = member.with_bucket(url, options, lease.unwrap_or(Duration::from_secs(60)));
        }
        None if s.store_options.is_some() || lease.is_some() => {
            return Err("`store-options` or `store-lease` for a `dir` that is no bucket".into());
        }
        None => {}
    }
    Ok(member)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[limits]
sources = 2
per-host = 3

[defaults]
concurrency = 5
interval = "10m"

[[source]]
url = "http://127.0.0.1:8080/"
dir = "a"

[[source]]
name = "b"
url = "http://127.0.0.1:8081/"
dir = "mirrors/b"
delete = true
max-deletes = 10
concurrency = 2
verify = "all"
max-time = "1h"
"#;

    #[test]
    fn a_file_reads_into_a_harvest() {
        let h = parse(FILE, Path::new("/etc/harvest/sources.toml")).unwrap();
        assert_eq!(h.limits().sources, 2);
        assert_eq!(h.limits().per_authority, 3);
        assert_eq!(h.limits().requests, 64);
        let [a, b] = h.members() else { panic!() };
        assert_eq!(a.name, "http://127.0.0.1:8080/");
        assert_eq!(a.sync.dir, Path::new("/etc/harvest/a"));
        assert_eq!(a.sync.concurrency, 5);
        assert_eq!(a.interval, Duration::from_secs(600));
        assert_eq!(a.sync.delete, None);
        assert_eq!(b.name, "b");
        assert_eq!(b.sync.concurrency, 2);
        assert_eq!(b.sync.delete, Some(10));
        assert_eq!(b.sync.verification, Verification::All);
        assert_eq!(b.max_time, Some(Duration::from_secs(3600)));
    }

    #[test]
    fn mistakes_are_named_with_their_place() {
        let err = |text: &str| parse(text, Path::new("s.toml")).unwrap_err().to_string();
        let e = err("[[source]]\nurl = \"http://a/\"\ndir = \"a\"\ndelet = true\n");
        assert!(
            e.starts_with("s.toml: source 1 (http://a/): unknown field `delet`"),
            "{e}"
        );
        let e = err("[[source]]\nname = \"x\"\ndir = \"a\"\n");
        assert_eq!(e, "s.toml: source 1 (x): `url` is missing");
        let e = err(
            "[[source]]\nurl = \"http://a/\"\ndir = \"a\"\n[[source]]\nurl = \"http://b/\"\ndir = \"a\"\n",
        );
        assert!(e.contains("overlap"), "{e}");
        let e = err("[[source]]\nurl = \"http://a/\"\ndir = \"a\"\ninterval = \"soon\"\n");
        assert!(
            e.starts_with("s.toml: source 1 (http://a/): `interval`: "),
            "{e}"
        );
        let e = err("[limits]\nper-hots = 2\n[[source]]\nurl = \"http://a/\"\ndir = \"a\"\n");
        assert!(
            e.starts_with("s.toml: [limits]: unknown field `per-hots`"),
            "{e}"
        );
        let e = err("[[source]]\nurl = \"http://a/\"\ndir = 3\n");
        assert_eq!(
            e,
            "s.toml: source 1 (http://a/): `dir` must be a string, not integer"
        );
        let e = err(
            "[limits]\nrequests = 9223372036854775807\n[[source]]\nurl = \"http://a/\"\ndir = \"a\"\n",
        );
        assert_eq!(e, "s.toml: [limits]: `requests` must be from 1 to 1000000");
        let e = err("[[source]\n");
        assert!(e.starts_with("s.toml: TOML parse error at line 1"), "{e}");
        let e = err("[[source]]\nurl = \"http://a/\"\ndir = \"a\"\nmax-deletes = 3\n");
        assert!(e.ends_with("`max-deletes` without `delete = true`"), "{e}");
        assert_eq!(err(""), "s.toml: no Sources to harvest");
    }
}
