//! `resourcesync demo --live`: the demo's Source with a Change Notification channel
//! through the hub `serve --hub` runs beside it, and a Destination that follows it
//! (`sync --follow`); each live change is built, handed to the hub, and timed until its
//! file is on disk at the Destination.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use resourcesync_cli::notify::deliver;
use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::AsyncStop;
use resourcesync_destination::follow::{FollowNotice, FollowObserver, FollowOptions, follow};
use resourcesync_model::Uri;
use resourcesync_source::collection::{DirectoryOutbox, Options, build};
use resourcesync_source::notify::HubProtocol;
use serde_json::json;

use crate::error::Error;

/// How long a live change may take to reach the Destination before the demo says it did
/// not.
const WAIT: Duration = Duration::from_secs(10);

/// What the follower's thread tells the demo.
enum Heard {
    Subscribed,
    /// It ended, with this error if it failed.
    Ended(Option<String>),
}

/// The follower's observer: it passes on what the demo waits for.
struct Relay(mpsc::Sender<Heard>);

impl resourcesync_destination::Observer for Relay {}

impl FollowObserver for Relay {
    fn follow(&mut self, notice: &FollowNotice) {
        if let FollowNotice::Subscribed(_) = notice {
            let _ = self.0.send(Heard::Subscribed);
        }
    }
}

/// A follower of the demo's Source on a thread of its own, until [`Follower::stop`].
pub(crate) struct Follower {
    stop: AsyncStop,
    heard: mpsc::Receiver<Heard>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Follower {
    /// Follows `base` into `dest`, deletions included, and waits until it is subscribed.
    pub(crate) fn start(base: &Uri, dest: &Path) -> Result<Follower, Error> {
        let options =
            FollowOptions::new(SyncOptions::new(base.clone(), dest).with_delete(u64::MAX))
                .with_interval(Duration::from_secs(3600));
        let stop = AsyncStop::new();
        let (tell, heard) = mpsc::channel();
        let thread_stop = stop.clone();
        let thread = std::thread::spawn(move || {
            let ended = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
                .and_then(|runtime| {
                    let mut relay = Relay(tell.clone());
                    runtime
                        .block_on(follow(&options, &thread_stop, &mut relay))
                        .map_err(|e| resourcesync_cli::Chain(&e).to_string())
                });
            let _ = tell.send(Heard::Ended(ended.err()));
        });
        let follower = Follower {
            stop,
            heard,
            thread: Some(thread),
        };
        match follower.heard.recv_timeout(WAIT) {
            Ok(Heard::Subscribed) => Ok(follower),
            Ok(Heard::Ended(error)) => Err(Error::Live(format!(
                "the follower ended: {}",
                error.unwrap_or_else(|| "before it subscribed".into())
            ))),
            Err(_) => Err(Error::Live(
                "the follower did not subscribe within 10 s".into(),
            )),
        }
    }

    /// Stops following: the follower unsubscribes and its thread ends.
    pub(crate) fn stop(mut self) {
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

/// One live change: its file and how long it took from publication to the Destination's
/// disk (`None`: it did not come within [`WAIT`]).
pub(crate) struct Arrival {
    pub(crate) path: PathBuf,
    pub(crate) latency: Option<Duration>,
}

/// Writes live change `n` into `collection`, publishes it with `build` (the channel's
/// notification among what it writes), hands the notifications to the hub, and waits until
/// the file is in `dest` with the bytes written.
pub(crate) async fn change(
    n: usize,
    collection: &Path,
    publish: &Path,
    dest: &Path,
    options: &Options,
    http: &reqwest::Client,
) -> Result<Arrival, Error> {
    let path = PathBuf::from(format!("live/change-{n}.txt"));
    let bytes = format!("live change {n}, written at {:?}\n", SystemTime::now());
    let file = collection.join(&path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).map_err(Error::io(parent))?;
    }
    std::fs::write(&file, &bytes).map_err(Error::io(&file))?;
    let (from, to, with) = (collection.to_owned(), publish.to_owned(), options.clone());
    tokio::task::spawn_blocking(move || {
        build(&from, &to, &with, SystemTime::now(), &()).map_err(Box::new)
    })
    .await
    .map_err(|e| Error::Task("build", e))?
    .map_err(Error::Build)?;
    // Published: the clock starts.
    let published = Instant::now();
    let mut outbox =
        DirectoryOutbox::open(publish, options).map_err(|e| Error::Build(Box::new(e)))?;
    let delivered = deliver(&mut outbox, HubProtocol::ResourceSync, http, WAIT)
        .await
        .map_err(|e| Error::Live(resourcesync_cli::Chain(&e).to_string()))?;
    drop(outbox);
    if delivered.waiting > 0 {
        return Err(Error::Live(format!(
            "the hub did not take {} notification(s)",
            delivered.waiting
        )));
    }
    let target = dest.join(&path);
    while published.elapsed() < WAIT {
        if std::fs::read(&target).is_ok_and(|on_disk| on_disk == bytes.as_bytes()) {
            return Ok(Arrival {
                path,
                latency: Some(published.elapsed()),
            });
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(Arrival {
        path,
        latency: None,
    })
}

/// The live step's summary: the changes, how many came, their median and slowest.
pub(crate) fn summary(arrivals: &[Arrival]) -> (String, serde_json::Value) {
    let mut times: Vec<Duration> = arrivals.iter().filter_map(|a| a.latency).collect();
    times.sort_unstable();
    let ms = |d: &Duration| d.as_secs_f64() * 1e3;
    let median = times.get(times.len().saturating_sub(1) / 2).map(ms);
    let slowest = times.last().map(ms);
    let text = format!(
        "{} of {} live changes on the Destination's disk: median {:.1} ms, slowest {:.1} ms \
         after their publication",
        times.len(),
        arrivals.len(),
        median.unwrap_or(f64::NAN),
        slowest.unwrap_or(f64::NAN)
    );
    let value = json!({
        "changes": arrivals.len(),
        "arrived": times.len(),
        "median_ms": median,
        "slowest_ms": slowest,
    });
    (text, value)
}
