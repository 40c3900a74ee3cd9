//! What the hub's and the subscriber's tests share: the topic and hub on 127.0.0.1, a
//! virtual clock, URIs.

use std::time::{Duration, SystemTime};

use resourcesync_model::Uri;

/// The topic a Publisher writes, on a Source at 127.0.0.1:8000.
pub(crate) const TOPIC: &str = "http://127.0.0.1:8000/resourcesync/change-notification.xml";

/// The hub beside that Source.
pub(crate) const HUB: &str = "http://127.0.0.1:8000/hub";

/// `seconds` after an instant of the virtual clock.
pub(crate) fn t(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000 + seconds)
}

/// `s`, parsed.
pub(crate) fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}
