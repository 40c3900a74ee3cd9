//! `resourcesync demo`: the whole family at work on this machine, with nothing to set up.
//!
//! It generates a collection in a temporary directory, publishes it (`build`), serves it
//! on 127.0.0.1 (`serve`), synchronizes a destination from it by its Resource Dump
//! (`sync --dump`), changes the collection (creates, updates, deletes) and publishes the
//! changes, synchronizes incrementally through the Change List, audits the destination,
//! checks it byte by byte against the collection, and removes everything it made.
//! `--source <URL>` runs the Destination half against any Source instead.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use clap::Args;
use indicatif::ProgressBar;
use resourcesync_model::Uri;
use serde_json::json;

use crate::build::Bar;
use crate::error::Error;
use crate::live;
use crate::sync::{block_on, synchronize};
use resourcesync_cli::serve::{ServeLimits, serve, serve_with_hub};
use resourcesync_destination::{SyncOptions, Synced};
use resourcesync_source::collection::{Options, build};

/// What `demo` does, for its long help.
pub(crate) const DEMO_ABOUT: &str = "\
Shows the whole family at work on this machine, with no network and nothing to set up.

It generates a collection of resources of mixed media types and sizes in a temporary
directory, publishes it as a ResourceSync Source (build), serves it on 127.0.0.1
(serve), synchronizes a destination from its Resource Dump (sync --dump), changes the
collection (creates, updates and deletes resources) and publishes the changes,
synchronizes incrementally through the Change List, audits the destination (sync
--audit), compares it byte by byte with the collection, and prints what each step did
and a summary. It removes everything it made, unless --keep names a directory.

With --live [N] the Source also has a Change Notification channel, through a WebSub hub
beside it (serve --hub), and after the incremental sync the destination follows it (sync
--follow): N resources (10 by default) are then created one at a time, each published by
build and its notification handed to the hub, and the time from its publication to its
file on the destination's disk is printed, then their median and the slowest.

With --source URL it runs the Destination half against any Source: a baseline (from the
Resource Dump when there is one), an incremental sync and an audit.";

/// What `demo` prints, for its long help.
pub(crate) const DEMO_OUTPUT: &str = "\
Output:
  A line per step as it ends: its name, what it did, its time; progress bars on standard
  error while it runs (a terminal only); then a summary line: resources synchronized,
  bytes and requests over all syncs, the time, and whether the destination is in sync.

JSON (--json):
  {\"step\", \"seconds\", \"detail\"} per step (detail: build's or sync's report; for each
  live change {\"path\", \"latency_ms\"}, null when it did not come within 10 s, and at the
  end {\"changes\", \"arrived\", \"median_ms\", \"slowest_ms\"}), then
  {\"summary\": {\"in_sync\", \"resources\", \"bytes\", \"requests\", \"seconds\",
  \"exit_status\"}}";

/// The exit statuses of `demo`.
pub(crate) const DEMO_EXIT: &str = "\
Exit status:
  0  every step completed and the destination is in sync
  1  a sync did not complete, a live change did not come, or the destination is not in
     sync
  2  a step could not run: a bad option, no temporary directory or port, a build or the
     server failed, a sync could not start";

/// The arguments of `resourcesync demo`.
#[derive(Args, Debug, Clone)]
pub(crate) struct DemoArgs {
    /// Run only the Destination half, against this Source (its base URL or a document).
    #[arg(long, value_name = "URL")]
    pub source: Option<String>,
    /// Resources in the generated collection.
    #[arg(long, default_value_t = 2_000, value_name = "N")]
    pub resources: usize,
    /// Keep the collection, publication and destination in DIR (new or empty) instead of
    /// a temporary directory that is removed at the end.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// After the incremental sync, follow the Source live: a hub beside it (`serve
    /// --hub`), a Destination that follows it (`sync --follow`), and N changes (10 when N is
    /// left out) each published by `build`, with the time from its publication to its file
    /// on the Destination's disk.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "10", conflicts_with = "source")]
    pub live: Option<usize>,
    /// One JSON object per step and a summary object, instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `resourcesync demo`.
pub(crate) fn run(args: &DemoArgs) -> ExitCode {
    block_on("demo", demo(args))
}

/// One step's line: what it did and how long it took; and the totals of the syncs.
struct Steps {
    json: bool,
    started: Instant,
    /// Resources the Source has, as the last sync saw them.
    resources: u64,
    bytes: u64,
    requests: u64,
}

impl Steps {
    fn say(&self, step: &str, text: String, seconds: f64, detail: serde_json::Value) {
        if self.json {
            println!(
                "{}",
                json!({"step": step, "seconds": seconds, "detail": detail})
            );
        } else {
            println!("{step:>12}  {text} ({seconds:.2} s)");
        }
    }

    fn synced(&mut self, step: &str, synced: &Synced) {
        let r = &synced.report;
        self.bytes += r.bytes;
        self.requests += r.requests;
        self.resources = match synced.mode {
            // What the Source lists.
            "audit" => r.unchanged + r.changed + r.missing,
            "incremental" => (self.resources + r.created).saturating_sub(r.deleted),
            _ => r.created + r.updated + r.unchanged,
        };
        if self.json {
            let detail = serde_json::to_value(r).unwrap_or_default();
            self.say(step, String::new(), synced.seconds, detail);
        } else {
            // The line `resourcesync sync` prints, its time included.
            println!("{step:>12}  {synced}");
        }
    }
}

/// Bytes in the unit that reads best.
fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / f64::from(1 << 10)),
        n => format!("{n} bytes"),
    }
}

/// Where the demo works: a temporary directory, or the one `--keep` names.
enum Work {
    Temporary(tempfile::TempDir),
    Kept(PathBuf),
}

impl Work {
    fn path(&self) -> &Path {
        match self {
            Work::Temporary(dir) => dir.path(),
            Work::Kept(dir) => dir,
        }
    }
}

async fn demo(args: &DemoArgs) -> Result<u8, Error> {
    let work = match &args.keep {
        Some(dir) => {
            fs::create_dir_all(dir).map_err(Error::io(dir))?;
            // A demo of its own: another's collection, publication for another port and
            // destination would not show what the demo shows.
            let empty = fs::read_dir(dir).map(|mut d| d.next().is_none());
            if !empty.map_err(Error::io(dir))? {
                return Err(Error::NotEmpty(dir.clone()));
            }
            Work::Kept(dir.clone())
        }
        None => Work::Temporary(
            tempfile::Builder::new()
                .prefix("resourcesync-demo-")
                .tempdir()
                .map_err(Error::TempDir)?,
        ),
    };
    let mut steps = Steps {
        json: args.json,
        started: Instant::now(),
        resources: 0,
        bytes: 0,
        requests: 0,
    };
    let status = match &args.source {
        Some(source) => destination(source, &work.path().join("destination"), &mut steps).await,
        None => whole(args, work.path(), &mut steps).await,
    };
    let total = steps.started.elapsed().as_secs_f64();
    let status = status?;
    let kept = match &work {
        Work::Kept(dir) => format!("; everything is kept in {}", dir.display()),
        Work::Temporary(_) => "; the temporary directory is removed".to_string(),
    };
    if args.json {
        println!(
            "{}",
            json!({"summary": {
                "in_sync": status == 0,
                "resources": steps.resources,
                "bytes": steps.bytes,
                "requests": steps.requests,
                "seconds": total,
                "exit_status": status,
            }})
        );
    } else {
        println!(
            "{:>12}  {} resources, {} in {} requests over all syncs, {total:.2} s: {}{kept}",
            "summary",
            steps.resources,
            bytes(steps.bytes),
            steps.requests,
            if status == 0 {
                "the destination is in sync with the Source"
            } else {
                "the destination is NOT in sync with the Source"
            }
        );
    }
    drop(work);
    Ok(status)
}

/// The Destination half: baseline (by dump when offered), incremental, audit.
async fn destination(source: &str, dir: &Path, steps: &mut Steps) -> Result<u8, Error> {
    let source: Uri = source.parse().map_err(|e| Error::url(source, e))?;
    let options = SyncOptions::new(source, dir);
    let mut worst = 0;
    for (step, options) in [
        ("baseline", options.clone().with_dump(true)),
        ("incremental", options.clone().with_delete(u64::MAX)),
        ("audit", options.with_audit(true)),
    ] {
        let synced = synchronize(&options, false).await?;
        steps.synced(step, &synced);
        worst = worst.max(synced.exit_status());
    }
    Ok(worst)
}

/// The whole family: generate, build, serve, sync by dump, change, build, sync, audit.
async fn whole(args: &DemoArgs, root: &Path, steps: &mut Steps) -> Result<u8, Error> {
    let collection = root.join("collection");
    let publish = root.join("publication");
    let dest = root.join("destination");

    let t = Instant::now();
    let mut generator = Generator::new(0x5eed);
    let (count, size) = generator
        .collection(&collection, args.resources)
        .map_err(Error::io(&collection))?;
    steps.say(
        "generate",
        format!(
            "{count} resources of mixed media types and sizes, {}, in {}",
            bytes(size),
            collection.display()
        ),
        t.elapsed().as_secs_f64(),
        json!({"resources": count, "bytes": size, "directory": collection}),
    );

    // The port first: the base URL is in every document.
    let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = tokio::net::TcpListener::bind(any)
        .await
        .map_err(|source| Error::Bind { addr: any, source })?;
    let base = format!(
        "http://{}/",
        listener.local_addr().map_err(Error::LocalAddr)?
    );
    let base_uri: Uri = base.parse().map_err(|e| Error::url(&base, e))?;
    let mut options = Options::new(base_uri.clone())
        .with_resource_dump(true)
        .with_change_dump(true);
    // Live, the Source has a Change Notification channel through a hub beside it.
    let hub_url = format!("{base}hub");
    if args.live.is_some() {
        options = options.with_hub(hub_url.parse().map_err(|e| Error::url(&hub_url, e))?);
    }

    publish_step(steps, "build", &collection, &publish, &options).await?;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stopped = async {
        let _ = stopped.await;
    };
    let server = if args.live.is_some() {
        let hub = hub_server(&hub_url, &base)?;
        let report: resourcesync_cli::serve::Reporter = std::sync::Arc::new(|_| {});
        tokio::spawn(serve_with_hub(
            listener,
            publish.clone(),
            ServeLimits::default(),
            report,
            hub,
            "/hub",
            stopped,
        ))
    } else {
        tokio::spawn(serve(listener, publish.clone(), stopped))
    };
    steps.say(
        "serve",
        match args.live {
            Some(_) => format!(
                "{} serves {base}, with a hub at {hub_url}",
                publish.display()
            ),
            None => format!("{} serves {base}", publish.display()),
        },
        0.0,
        json!({"url": base}),
    );

    let sync = SyncOptions::new(base_uri, &dest);
    let mut worst = 0;
    let synced = synchronize(&sync.clone().with_dump(true), false).await?;
    steps.synced("sync (dump)", &synced);
    worst = worst.max(synced.exit_status());

    let t = Instant::now();
    let (created, updated, deleted) = generator
        .change(&collection)
        .map_err(Error::io(&collection))?;
    steps.say(
        "change",
        format!("{created} resources created, {updated} updated, {deleted} deleted"),
        t.elapsed().as_secs_f64(),
        json!({"created": created, "updated": updated, "deleted": deleted}),
    );
    publish_step(steps, "build", &collection, &publish, &options).await?;

    let synced = synchronize(&sync.clone().with_delete(u64::MAX), false).await?;
    steps.synced("sync", &synced);
    worst = worst.max(synced.exit_status());

    if let Some(changes) = args.live {
        let t = Instant::now();
        // It waits for the subscription: on a blocking thread, not the runtime's.
        let (source, into) = (sync.source.clone(), dest.clone());
        let follower = tokio::task::spawn_blocking(move || live::Follower::start(&source, &into))
            .await
            .map_err(|e| Error::Task("the follower", e))??;
        steps.say(
            "follow",
            format!(
                "{} follows the Source, subscribed at its hub",
                dest.display()
            ),
            t.elapsed().as_secs_f64(),
            json!({"hub": hub_url}),
        );
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Live(e.to_string()))?;
        let mut arrivals = Vec::new();
        for n in 1..=changes {
            let t = Instant::now();
            let arrival = live::change(n, &collection, &publish, &dest, &options, &http).await?;
            let text = match arrival.latency {
                Some(latency) => format!(
                    "{} on the Destination's disk {:.1} ms after its publication",
                    arrival.path.display(),
                    latency.as_secs_f64() * 1e3
                ),
                None => format!("{} did not come within 10 s", arrival.path.display()),
            };
            let detail = json!({"path": arrival.path, "latency_ms": arrival.latency.map(|l| l.as_secs_f64() * 1e3)});
            steps.say("live", text, t.elapsed().as_secs_f64(), detail);
            if arrival.latency.is_none() {
                worst = 1;
            }
            arrivals.push(arrival);
        }
        let (text, detail) = live::summary(&arrivals);
        steps.say("live", text, t.elapsed().as_secs_f64(), detail);
        // It unsubscribes and its thread ends: waited for off the runtime's threads.
        tokio::task::spawn_blocking(move || follower.stop())
            .await
            .map_err(|e| Error::Task("the follower", e))?;
    }
    let synced = synchronize(&sync.with_audit(true), false).await?;
    steps.synced("audit", &synced);
    worst = worst.max(synced.exit_status());

    let t = Instant::now();
    let differences = compare(&collection, &dest).map_err(Error::io(&dest))?;
    let text = match differences.first() {
        None => format!(
            "{} and {} hold the same bytes",
            dest.display(),
            collection.display()
        ),
        Some(first) => format!("{} differences, the first: {first}", differences.len()),
    };
    steps.say(
        "compare",
        text,
        t.elapsed().as_secs_f64(),
        json!({"differences": differences}),
    );
    if !differences.is_empty() {
        worst = 1;
    }

    let _ = stop.send(());
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(Error::Server(e)),
        Err(e) => return Err(Error::Task("the server", e)),
    }
    Ok(worst)
}

/// The demo's hub: relaying the Source at `base`, sending to callbacks on 127.0.0.1 only.
fn hub_server(
    hub_url: &str,
    base: &str,
) -> Result<std::sync::Arc<resourcesync_cli::hub::HubServer>, Error> {
    use resourcesync_websub::{CallbackPolicy, HubOptions};
    let url = hub_url.parse().map_err(|e| Error::url(hub_url, e))?;
    let options = HubOptions::new(url, vec![base.to_owned()])
        .with_callbacks(CallbackPolicy::Hosts(vec!["127.0.0.1".into()]));
    Ok(resourcesync_cli::hub::HubServer::open(
        options,
        Vec::new(),
        None,
        std::sync::Arc::new(|_| {}),
    )?)
}

/// Publishes on a blocking thread, with a progress bar, and says what it did.
async fn publish_step(
    steps: &mut Steps,
    step: &str,
    collection: &Path,
    publish: &Path,
    options: &Options,
) -> Result<(), Error> {
    let t = Instant::now();
    let (collection, publish, options) =
        (collection.to_owned(), publish.to_owned(), options.clone());
    let progress = if steps.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::no_length()
    };
    let bar = Bar(progress.clone());
    let now = SystemTime::now();
    let report = tokio::task::spawn_blocking(move || {
        // Boxed: the error is large to move back from the blocking thread.
        build(&collection, &publish, &options, now, &bar).map_err(Box::new)
    })
    .await
    .map_err(|e| Error::Task("build", e))?
    .map_err(Error::Build)?;
    progress.finish_and_clear();
    steps.say(
        step,
        format!(
            "generation {}: {} resources ({}), {} created, {} updated, {} deleted, {} files hashed, {} documents",
            report.generation,
            report.resources,
            bytes(report.bytes),
            report.created,
            report.updated,
            report.deleted,
            report.hashed_files,
            report.documents
        ),
        t.elapsed().as_secs_f64(),
        serde_json::to_value(&report).unwrap_or_default(),
    );
    Ok(())
}

/// What differs between the collection and the destination (its own `.resourcesync`
/// aside), one line each.
fn compare(collection: &Path, dest: &Path) -> io::Result<Vec<String>> {
    let files = |root: &Path| -> io::Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for entry in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
            let entry = entry?;
            let relative = entry.path().strip_prefix(root).unwrap_or(entry.path());
            if entry.file_type().is_file() && !relative.starts_with(".resourcesync") {
                files.push(relative.to_owned());
            }
        }
        Ok(files)
    };
    let (ours, theirs) = (files(collection)?, files(dest)?);
    let mut differences = Vec::new();
    for path in &ours {
        if !theirs.contains(path) {
            differences.push(format!("{} is missing", path.display()));
        } else if fs::read(collection.join(path))? != fs::read(dest.join(path))? {
            differences.push(format!("{} has other bytes", path.display()));
        }
    }
    for path in theirs.iter().filter(|p| !ours.contains(p)) {
        differences.push(format!("{} is extra", path.display()));
    }
    Ok(differences)
}

/// Deterministic content for the collection (xorshift64*: test data, not secrets).
struct Generator {
    state: u64,
    files: Vec<PathBuf>,
    serial: usize,
}

/// Words for the text resources.
const WORDS: &[&str] = &[
    "resource",
    "source",
    "destination",
    "change",
    "list",
    "dump",
    "capability",
    "sitemap",
    "archive",
    "synchronize",
    "baseline",
    "incremental",
    "audit",
    "fixity",
    "collection",
];

impl Generator {
    fn new(seed: u64) -> Generator {
        Generator {
            state: seed | 1,
            files: Vec::new(),
            serial: 0,
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// A size: most resources small, some medium, a few large (up to 1 MiB).
    fn size(&mut self) -> usize {
        (match self.below(100) {
            0..=69 => 200 + self.below(8 << 10),
            70..=94 => (8 << 10) + self.below(56 << 10),
            _ => (64 << 10) + self.below(960 << 10),
        }) as usize
    }

    /// One resource: a path and its bytes.
    fn resource(&mut self) -> (PathBuf, Vec<u8>) {
        self.serial += 1;
        let n = self.serial;
        let size = self.size();
        let text = |g: &mut Generator, size: usize| {
            let mut s = String::with_capacity(size + 16);
            while s.len() < size {
                s.push_str(WORDS[g.below(WORDS.len() as u64) as usize]);
                s.push(if g.below(12) == 0 { '\n' } else { ' ' });
            }
            s
        };
        let random = |g: &mut Generator, magic: &[u8], size: usize| {
            let mut b = magic.to_vec();
            while b.len() < size {
                b.extend_from_slice(&g.next().to_le_bytes());
            }
            b
        };
        let section = ["articles", "data", "images", "reports"][n % 4];
        let shelf = format!("{section}/{:02}", self.below(12));
        match self.below(7) {
            0 => (
                format!("{shelf}/note-{n}.txt").into(),
                text(self, size).into_bytes(),
            ),
            1 => (
                format!("{shelf}/page-{n}.html").into(),
                format!(
                    "<!DOCTYPE html>\n<html><head><title>Page {n}</title></head><body><p>{}</p></body></html>\n",
                    text(self, size)
                )
                .into_bytes(),
            ),
            2 => (
                format!("{shelf}/record-{n}.json").into(),
                format!("{{\"id\": {n}, \"text\": \"{}\"}}\n", text(self, size).replace('\n', " "))
                    .into_bytes(),
            ),
            3 => {
                let mut csv = String::from("id,value,label\n");
                while csv.len() < size {
                    let _ = writeln!(csv, "{},{},{}", self.below(1_000_000), self.below(1000), WORDS[self.below(WORDS.len() as u64) as usize]);
                }
                (format!("{shelf}/table-{n}.csv").into(), csv.into_bytes())
            }
            4 => (
                format!("{shelf}/figure-{n}.png").into(),
                random(self, b"\x89PNG\r\n\x1a\n", size),
            ),
            5 => (
                format!("{shelf}/paper-{n}.pdf").into(),
                random(self, b"%PDF-1.7\n", size),
            ),
            _ => (
                format!("{shelf}/metadata-{n}.xml").into(),
                format!(
                    "<?xml version=\"1.0\"?>\n<record id=\"{n}\"><title>{}</title></record>\n",
                    text(self, size.min(4096)).replace(['\n', '<', '&'], " ")
                )
                .into_bytes(),
            ),
        }
    }

    /// Writes `count` resources under `root`: how many and their bytes.
    fn collection(&mut self, root: &Path, count: usize) -> io::Result<(usize, u64)> {
        let mut size = 0;
        for _ in 0..count {
            let (path, content) = self.resource();
            let file = root.join(&path);
            fs::create_dir_all(file.parent().unwrap_or(root))?;
            fs::write(&file, &content)?;
            size += content.len() as u64;
            self.files.push(path);
        }
        Ok((count, size))
    }

    /// Creates, updates and deletes about 2 % of the resources each: how many of each.
    fn change(&mut self, root: &Path) -> io::Result<(usize, usize, usize)> {
        let share = (self.files.len() / 50).max(1);
        let mut deleted = 0;
        for _ in 0..share.min(self.files.len()) {
            let i = self.below(self.files.len() as u64) as usize;
            let path = self.files.swap_remove(i);
            fs::remove_file(root.join(&path))?;
            deleted += 1;
        }
        let mut chosen = std::collections::BTreeSet::new();
        while chosen.len() < share.min(self.files.len()) {
            chosen.insert(self.below(self.files.len() as u64) as usize);
        }
        for &i in &chosen {
            let (_, content) = self.resource();
            fs::write(root.join(&self.files[i]), content)?;
        }
        let updated = chosen.len();
        let (created, _) = self.collection(root, share)?;
        Ok((created, updated, deleted))
    }
}
