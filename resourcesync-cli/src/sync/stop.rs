//! When a run stops to save: every few seconds while it goes ([`Saved`]), and at a
//! signal ([`Interrupt`]).

use std::time::Instant;

use resourcesync_client::Client;

/// When the run saves its state and inventory before its end: at most every
/// [`Saved::EVERY`], and only when changes were settled since.
pub(super) struct Saved {
    at: Instant,
    settled: u64,
}

impl Saved {
    /// Time between two saves: a save writes the whole inventory (about a second for a
    /// million resources), so more often would cost the run more than it protects.
    const EVERY: std::time::Duration = std::time::Duration::from_secs(5);

    pub(super) fn new<I: resourcesync_client::Inventory>(client: &Client<I>) -> Saved {
        Saved {
            at: Instant::now(),
            settled: client.progress().settled,
        }
    }

    /// A save failed: tried again after [`Saved::EVERY`], not at once (a full disk
    /// stays full).
    pub(super) fn retry_later(&mut self) {
        self.at = Instant::now();
    }

    pub(super) fn due<I: resourcesync_client::Inventory>(&self, client: &Client<I>) -> bool {
        self.at.elapsed() >= Saved::EVERY && client.progress().settled != self.settled
    }

    /// When the run must wake to save though nothing else happens (every request in
    /// flight waiting on a slow Source): `None` while nothing was settled since the last
    /// save.
    pub(super) fn wake_at<I: resourcesync_client::Inventory>(
        &self,
        client: &Client<I>,
    ) -> Option<Instant> {
        (client.progress().settled != self.settled).then(|| self.at + Saved::EVERY)
    }
}

/// SIGINT (Ctrl-C) and SIGTERM: the first asks the run to stop and save, a second ends
/// the process at once (exit 130).
pub(super) struct Interrupt {
    set: std::sync::Arc<std::sync::atomic::AtomicBool>,
    notify: std::sync::Arc<tokio::sync::Notify>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Interrupt {
    /// The run is over: the signals are no longer its to handle.
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Interrupt {
    /// Listens for the signals from now on, on the current runtime.
    pub(super) fn listen() -> Interrupt {
        let set = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let notify = std::sync::Arc::new(tokio::sync::Notify::new());
        let (flag, wake) = (set.clone(), notify.clone());
        let listener = tokio::spawn(async move {
            let Ok(mut term) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            else {
                return;
            };
            let Ok(mut int) =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            else {
                return;
            };
            for _ in 0..2 {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    std::process::exit(130);
                }
                wake.notify_one();
            }
        });
        Interrupt {
            set,
            notify,
            listener,
        }
    }

    pub(super) fn is_set(&self) -> bool {
        self.set.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Until the first signal.
    pub(super) async fn wait(&self) {
        if !self.is_set() {
            self.notify.notified().await;
        }
    }
}
