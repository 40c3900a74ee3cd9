//! The requests a served Source answers, recorded by the tests of `resourcesync sync`.

use resourcesync_testkit::served::Served;

/// Paths of the resources (under `r/`) the Source was asked for, from now on.
pub(crate) fn record_requests(served: &Served) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = log.clone();
    served.faults(move |path, _| {
        if path.starts_with("r/") {
            seen.lock().unwrap().push(path.to_owned());
        }
        None
    });
    log
}
