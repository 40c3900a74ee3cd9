//! `resourcesync build`: the command line over [`resourcesync_source::collection`], which
//! publishes a directory as a ResourceSync Source (its docs say how) and returns a
//! report; here are its arguments, help, progress bar, printing and exit status.

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use resourcesync_cli::notify::{Delivered, deliver};
use resourcesync_model::{MAX_BYTES, MAX_ENTRIES, Uri};
use resourcesync_source::BucketStore;
use resourcesync_source::collection::{
    BuildProgress, BuildReport, DirectoryOutbox, Options, build, upload,
};
use resourcesync_source::notify::HubProtocol;
use serde_json::json;

/// What `build` does, for its long help.
pub(crate) const BUILD_ABOUT: &str = "\
Publishes the files of COLLECTION-DIR as a ResourceSync Source at BASE-URL.

A file at docs/a.txt is the resource <BASE-URL>docs/a.txt, and PUBLISH-DIR is what a web
server serves at BASE-URL (`resourcesync serve PUBLISH-DIR` does). It holds the Source
Description at .well-known/resourcesync, and under resourcesync/ the Capability List, the
Resource List (an index over parts when the limits require), the Change List Index with
its Change Lists, and on request a Resource Dump and a Change Dump with their packages
(each once it has a package to point at: a dump with none is left out, and not listed).
Every resource is listed with lastmod, length, md5, sha-256 and a media type; lastmod is
the file's modification time when its bytes last changed (a file touched, its bytes the
same, keeps its lastmod, and is no change).

Run it again after the collection changed: it lists the files created, updated and
deleted since the last run in the open Change List, rewrites the Resource List, and opens
a new Change
List when the entry or byte limits or --changelist-period say so. When the Change List
Index is full (--max-entries), its oldest lists move to a Change List Archive, still
published. A Resource Dump is kept (the Change Lists cover from its time) unless
--new-resource-dump asks for a new one. A file is read again unless its size,
modification time, change time and inode are those of the last run: a rewrite that keeps
the size and modification time (cp -p, rsync -t, touch -r) changes the change time, and is
read and listed as updated. A file changed within 20 ms before a run (the file system
clock's granularity) is read again by the next run too.

Each run writes a new generation beside PUBLISH-DIR (in .<name>.resourcesync/) and
switches to it by renaming one symbolic link, PUBLISH-DIR: a failed or interrupted run
leaves the previous publication as it was. PUBLISH-DIR must not exist, be an empty
directory, or be the link an earlier run made. The resources are served from the
collection through links, not copied. Each generation the build makes is marked beside it
(<number>.made); its cleanup removes only marked generations, and a directory of the user's
under a generation's name is left (in the way of the next generation, the run fails and
names it); so is a generation the user added files to after it was published (through
PUBLISH-DIR): what the build did not write is not removed.

Hidden files, symbolic links inside the collection (a link is never followed, at any
level, nor a directory that became one since the walk saw it), names that are not UTF-8
and the top-level names .well-known and resourcesync are not published, and are reported;
a name with a backslash is published (%5C in its URI: a character of the name on Unix).
Names are printed escaped (quoted, as \"a\\nb\") when they hold control or formatting
characters. A file
or directory that cannot be read (its permissions, an I/O error) is reported with the
error and left out, the rest published (exit status 1); one the last run published is
listed as deleted.

PUBLISH-DIR may be a bucket's prefix, s3://BUCKET/PREFIX (its settings with
--store-option, or the AWS_* variables), with --work DIR: the build publishes into DIR as
above, then uploads the generation it made into the prefix, in one commit that any static
host or CDN in front of the bucket serves: every file staged under
PREFIX/.resourcesync/bucket/staging/, then a journal written (the commit point), then the
files copied to their keys, the documents that link to others after them, the Capability
List and Source Description last; a run killed after the journal is finished by the next,
one killed before it leaves the bucket as it was. Only what changed is sent (a resource
whose md5 the bucket's publication lists, a document the last upload sent alike, are
not). One build holds the prefix at a time (a lease, PREFIX/.resourcesync/bucket/lock,
given back at the end, or run out --store-lease after a killed run); another is refused
(exit status 2), as is a bucket holding a publication another work directory made.

With --list FILE it publishes the URI and file pairs FILE lists instead (URIs anywhere,
files relative to COLLECTION-DIR, reached through no symbolic link, as the walk reaches
them); a wrong line is an error naming it.

With --hub URL the publication has a Change Notification channel (ResourceSync Change
Notification 1.0.1): the Capability List advertises its topic
(resourcesync/change-notification.xml, the latest notification) and the hub. Each run that
finds changes writes them as notifications into an outbox in the generation it publishes,
then, once it is published, hands every notification waiting there to the hub
(--hub-protocol), for at most --notify-within; what the hub did not take waits in the
publication for the next run.";

/// What `build` prints, for its long help.
pub(crate) const BUILD_OUTPUT: &str = "\
Output:
  Each file not published, and why (with the system's error for one that cannot be read),
  on standard error; a warning for each published under a name some file systems cannot
  hold (Windows's device names, a trailing dot or space, :*?\"<>|, names of a directory
  that differ only in case or Unicode normalization): a sync into such a file system
  refuses it, a sync on Linux stores it; a progress bar while files are hashed (a terminal only); then one
  line: the generation, its time, resources and bytes, created, updated and deleted since
  the last run, files hashed, files skipped (and of them unreadable), documents written,
  the time taken and the Source Description's URI. With --hub, one more line:
  notifications written, the last the hub took, and how many wait.

JSON (--json):
  One object: {\"generation\", \"at\", \"resources\", \"bytes\", \"created\", \"updated\",
  \"deleted\", \"hashed_files\", \"hashed_bytes\", \"skipped\": [{\"path\", \"reason\",
  \"error\"}], \"unreadable\", \"not_portable\": [{\"path\", \"reason\"}],
  \"source_description\", \"capability_list\", \"documents\",
  \"directory\", \"notifications\": [sequence numbers written], \"seconds\"}; \"error\" is
  null but for a file or directory that cannot be read, which \"unreadable\" counts. With
  --hub, \"notified\": {\"sequence\" (the last the hub took), \"retried\", \"waiting\"} or
  {\"error\"}. On failure {\"error\"}.";

/// The exit statuses of `build`.
pub(crate) const BUILD_EXIT: &str = "\
Exit status:
  0  published (files left out on purpose are reported, and are no failure)
  1  published, without the files or directories that could not be read (each reported
     with its error), or with notifications the hub did not take (they wait for the
     next run): the rest is out, and a script learns that something is missing
  2  nothing published: a wrong command line, an unreadable collection, a PUBLISH-DIR that
     is not ours, a write that failed; the previous publication is unchanged
A run stopped by a signal (Ctrl-C: 130 in a shell) ends at once and says nothing: the
previous publication is unchanged, and the next run starts over.";

/// The arguments of `resourcesync build`.
#[derive(Args, Debug, Clone)]
pub(crate) struct BuildArgs {
    /// The URL the publish directory is served at; ends with a slash.
    #[arg(long, value_name = "URL")]
    pub base_url: Uri,
    /// The directory whose files are published.
    #[arg(value_name = "COLLECTION-DIR")]
    pub collection: PathBuf,
    /// The directory a web server serves at the base URL (a symbolic link this command
    /// manages).
    #[arg(value_name = "PUBLISH-DIR")]
    pub publish: PathBuf,
    /// Also write a Resource Dump: ZIP packages of every resource.
    #[arg(long)]
    pub resource_dump: bool,
    /// With --resource-dump: package the whole collection again, instead of keeping the
    /// Resource Dump published before (which the Change Lists cover from).
    #[arg(long)]
    pub new_resource_dump: bool,
    /// Also write a Change Dump: each run's changes as ZIP packages.
    #[arg(long)]
    pub change_dump: bool,
    /// Entries per document (Resource List part, Change List, Change List Index, archive
    /// part, package), 1 to 50000.
    #[arg(
        long,
        default_value_t = MAX_ENTRIES as usize,
        value_name = "N",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_ENTRIES),
    )]
    pub max_entries: usize,
    /// Bytes per document, 4096 to 52428800 (50 MiB).
    #[arg(
        long,
        default_value_t = MAX_BYTES,
        value_name = "BYTES",
        value_parser = clap::value_parser!(u64).range(4096..=MAX_BYTES),
    )]
    pub max_bytes: u64,
    /// Bytes of content per dump package.
    #[arg(long, default_value_t = 1 << 30, value_name = "BYTES")]
    pub max_package_bytes: u64,
    /// Close the open Change List once it is older than this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub changelist_period: Option<u64>,
    /// Publish the resources FILE lists instead of every file of COLLECTION-DIR: a line
    /// per resource, its URI (http or https, anywhere) and its file (relative to
    /// COLLECTION-DIR) separated by white space; empty lines and lines starting with #
    /// are left out. Such resources are served by whoever serves their URIs: nothing of
    /// them is linked into PUBLISH-DIR.
    #[arg(long, value_name = "FILE")]
    pub list: Option<PathBuf>,
    /// The WebSub hub of a Change Notification channel: the Capability List advertises
    /// it, and the changes of each run go to it as notifications.
    #[arg(long, value_name = "URL")]
    pub hub: Option<Uri>,
    /// How the hub is told: `resourcesync` POSTs each notification to it (Change
    /// Notification 1.0.1; `serve --hub` takes it), `publish` sends a WebSub publish ping
    /// and the hub fetches the topic (most WebSub hubs).
    #[arg(long, value_enum, default_value_t = Protocol::Resourcesync, requires = "hub")]
    pub hub_protocol: Protocol,
    /// How long to keep trying to hand the notifications to the hub before giving up for
    /// this run (they wait in the publication for the next), e.g. 30s or 2m.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = resourcesync_cli::units::duration, requires = "hub")]
    pub notify_within: Duration,
    /// A `describedby` link of the Source Description: a page about the Source.
    #[arg(long, value_name = "URL")]
    pub describedby: Option<Uri>,
    /// Publish COLLECTION-DIR even when it holds nothing and the publication lists
    /// resources (each is then listed as deleted); without it such a run is refused, as a
    /// wrong directory or a disk not mounted would look.
    #[arg(long)]
    pub allow_empty: bool,
    /// One JSON object with what was published, instead of the text summary.
    #[arg(long)]
    pub json: bool,
    /// With PUBLISH-DIR written s3://BUCKET/PREFIX: the local directory the build
    /// publishes into first (its generations, state and lock, as for a web server's
    /// directory), whose new generation is then uploaded into the bucket in one commit.
    #[arg(long, value_name = "DIR")]
    pub work: Option<PathBuf>,
    #[command(flatten)]
    pub store: crate::sync::StoreArgs,
}

impl BuildArgs {
    /// The options these arguments ask for.
    pub(crate) fn options(&self) -> Options {
        let mut options = Options::new(self.base_url.clone());
        options.resource_dump = self.resource_dump || self.new_resource_dump;
        options.new_resource_dump = self.new_resource_dump;
        options.change_dump = self.change_dump;
        options.max_entries = self.max_entries.clamp(1, MAX_ENTRIES as usize);
        options.max_bytes = self.max_bytes.clamp(4096, MAX_BYTES);
        options.max_package_bytes = self.max_package_bytes.max(1);
        options.changelist_period = self.changelist_period.map(Duration::from_secs);
        options.list = self.list.clone();
        options.describedby = self.describedby.clone();
        options.allow_empty = self.allow_empty;
        options.hub = self.hub.clone();
        options
    }
}

/// How `build --hub` tells the hub of a notification.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// The notification POSTed to the hub (Change Notification 1.0.1, section 4.1).
    Resourcesync,
    /// A WebSub publish ping; the hub fetches the topic.
    Publish,
}

impl From<Protocol> for HubProtocol {
    fn from(protocol: Protocol) -> HubProtocol {
        match protocol {
            Protocol::Resourcesync => HubProtocol::ResourceSync,
            Protocol::Publish => HubProtocol::Publish,
        }
    }
}

/// The bucket a PUBLISH-DIR written `s3://...` names, its lease taken, and the work
/// directory the build publishes into first; `None` for a directory.
fn bucket(args: &BuildArgs) -> Result<Option<(BucketStore, PathBuf)>, String> {
    let Some(url) = crate::sync::store_url(&args.publish) else {
        if args
            .publish
            .to_str()
            .is_some_and(|p| p.starts_with("s3://"))
        {
            return Err(format!("{}: not a URL", args.publish.display()));
        }
        if args.work.is_some() {
            return Err("--work is for a PUBLISH-DIR written s3://BUCKET/PREFIX".into());
        }
        return Ok(None);
    };
    let Some(work) = args.work.clone() else {
        return Err(format!(
            "{url}: a build into a bucket needs --work DIR, the local directory it builds in"
        ));
    };
    if args.hub.is_some() {
        return Err(format!(
            "{url}: --hub with a bucket is not supported yet (the notifications are \
             delivered from a directory's outbox)"
        ));
    }
    let options = args.store.options().map_err(|e| e.to_string())?;
    let store = BucketStore::open(&url, options, args.store.store_lease)
        .map_err(|e| resourcesync_cli::Chain(&e).to_string())?;
    Ok(Some((store, work)))
}

/// Runs `resourcesync build` and prints what it published.
pub(crate) fn run(args: &BuildArgs) -> ExitCode {
    let progress = Bar(if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::no_length()
    });
    let started = Instant::now();
    let now = SystemTime::now();
    let (mut bucket, publish) = match bucket(args) {
        Ok(Some((store, work))) => (Some(store), work),
        Ok(None) => (None, args.publish.clone()),
        Err(error) => {
            if args.json {
                println!("{}", json!({"error": error}));
            }
            eprintln!("resourcesync build: {error}; nothing published");
            return ExitCode::from(2);
        }
    };
    match build(&args.collection, &publish, &args.options(), now, &progress) {
        Ok(report) => {
            progress.0.finish_and_clear();
            let uploaded = match &mut bucket {
                None => None,
                Some(store) => match upload(&args.collection, &publish, &args.options(), store) {
                    Ok(uploaded) => Some(uploaded),
                    Err(error) => {
                        let error = format!(
                            "built generation {} in {}, not published into {}: {}",
                            report.generation,
                            publish.display(),
                            args.publish.display(),
                            resourcesync_cli::Chain(&error)
                        );
                        if args.json {
                            println!("{}", json!({"error": error}));
                        }
                        eprintln!(
                            "resourcesync build: {error}; the bucket's publication is \
                                 unchanged, and the next run uploads what it builds"
                        );
                        return ExitCode::from(2);
                    }
                },
            };
            // The notifications once the publication that carries their changes is
            // published: those of this run and any an earlier run left waiting.
            let notified = args.hub.as_ref().map(|_| notify(args));
            if args.json {
                // Paths are serialized as text whatever their bytes, so this cannot fail;
                // were it to, the run still published, and says so.
                let mut value = serde_json::to_value(&report).unwrap_or_else(
                    |e| json!({"generation": report.generation, "error": e.to_string()}),
                );
                value["seconds"] = json!(started.elapsed().as_secs_f64());
                if let Some(uploaded) = &uploaded {
                    value["uploaded"] = json!(uploaded);
                }
                match &notified {
                    Some(Ok(delivered)) => {
                        value["notified"] = json!({
                            "sequence": delivered.sequence,
                            "retried": delivered.retried,
                            "waiting": delivered.waiting,
                        });
                    }
                    Some(Err(error)) => value["notified"] = json!({"error": error}),
                    None => {}
                }
                println!("{value}");
            } else {
                // Each name escaped where it could move the terminal or forge a line
                // (the `Display` of `Skipped` and `NotPortable`).
                for skipped in &report.skipped {
                    eprintln!("resourcesync build: skipped {skipped}");
                }
                for name in &report.not_portable {
                    eprintln!(
                        "resourcesync build: warning: {name}; a sync into such a file system refuses it"
                    );
                }
                if let Some(old) = &report.replaced_base_url {
                    // The old URL was read from the publication's state: escaped.
                    eprintln!(
                        "resourcesync build: warning: the base URL was {}: another base URL \
                         names other resources, so this is a new Source (every resource \
                         created, its Change Lists begun again); Destinations of the old URL \
                         start over with a baseline",
                        resourcesync_model::text::escaped(old)
                    );
                }
                println!("{}", Summary(&report, started.elapsed()));
                if let Some(uploaded) = &uploaded {
                    println!(
                        "uploaded into {}: {} files written ({} bytes), {} kept, {} removed",
                        args.publish.display(),
                        uploaded.written,
                        uploaded.written_bytes,
                        uploaded.kept,
                        uploaded.removed
                    );
                }
                if let Some(Ok(delivered)) = &notified {
                    println!(
                        "notifications: {} written, the hub took up to #{}, {} waiting",
                        report.notifications.len(),
                        delivered.sequence,
                        delivered.waiting
                    );
                }
            }
            let waiting = match &notified {
                Some(Err(error)) => {
                    eprintln!("resourcesync build: the notifications were not sent: {error}");
                    true
                }
                Some(Ok(Delivered { waiting, .. })) if *waiting > 0 => {
                    eprintln!(
                        "resourcesync build: the hub did not take {waiting} notification(s) \
                         within {}; they wait in the publication for the next run",
                        written_duration(args.notify_within)
                    );
                    true
                }
                _ => false,
            };
            if report.unreadable > 0 {
                eprintln!(
                    "resourcesync build: published without {} that could not be read",
                    match report.unreadable {
                        1 => "1 file or directory".to_owned(),
                        n => format!("{n} files or directories"),
                    }
                );
                ExitCode::from(1)
            } else if waiting {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            progress.0.finish_and_clear();
            let error = resourcesync_cli::Chain(&error);
            if args.json {
                println!("{}", json!({"error": error.to_string()}));
            }
            eprintln!("resourcesync build: {error}; nothing published");
            ExitCode::from(2)
        }
    }
}

/// Hands the notifications waiting in the publication to the hub, for at most
/// `--notify-within`.
fn notify(args: &BuildArgs) -> Result<Delivered, String> {
    let shown = |e: &(dyn std::error::Error + 'static)| resourcesync_cli::Chain(e).to_string();
    let mut outbox =
        DirectoryOutbox::open(&args.publish, &args.options()).map_err(|e| shown(&e))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| shown(&e))?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| shown(&e))?;
    runtime
        .block_on(deliver(
            &mut outbox,
            args.hub_protocol.into(),
            &http,
            args.notify_within,
        ))
        .map_err(|e| shown(&e))
}

/// `duration` as a person writes it: `30s`, `2m`.
fn written_duration(duration: Duration) -> String {
    match duration.as_secs() {
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s if duration.subsec_millis() == 0 => format!("{s}s"),
        _ => format!("{:.1}s", duration.as_secs_f64()),
    }
}

/// A run's summary line: the report's, and the time taken.
struct Summary<'a>(&'a BuildReport, Duration);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; in {:.2} s", self.0, self.1.as_secs_f64())
    }
}

/// The progress bar `build` shows on a terminal while it hashes files.
#[derive(Debug)]
pub(crate) struct Bar(pub ProgressBar);

impl BuildProgress for Bar {
    fn hashing(&self, files: u64) {
        self.0.set_length(files);
        self.0.set_style(
            ProgressStyle::with_template("hashing {bar:30} {pos}/{len} files {per_sec} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
    }

    fn hashed(&self) {
        self.0.inc(1);
    }
}
