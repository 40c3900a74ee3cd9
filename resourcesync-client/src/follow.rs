//! Following a Source, sans IO: when a Destination that follows runs its syncs, from the
//! notifications it takes (Change Notification 1.0.1), the time, and how each run ended.
//!
//! A notification is never trusted for the Source's state: it only says that the Source
//! changed, and [`Follower`] answers it with a run (an incremental sync reads the Change
//! Lists and applies them with every rule). So what matters of a notification is that
//! one came: notifications that arrive while a run is due or under way make one more run,
//! not one each (a duplicate costs nothing); a lost one is made up by the next or by the
//! interval. What a notification's `from`/`until` say of the channel is reported
//! ([`FollowerEvent`]): a gap (notifications missed, or a Source that published without
//! notifying), an overlap, or one older than what came before (reordered or replayed), so
//! that an operator sees a hub losing them; the run is the same in every case.
//!
//! A run that did not complete is tried again after a wait that doubles (1 s, 2 s, ... up
//! to the interval), without waiting for the next notification.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use resourcesync_client::follow::{Cause, Follower};
//!
//! let start = Instant::now();
//! let mut follower = Follower::new(Duration::from_secs(300), start);
//! assert_eq!(follower.poll_run(start), Some(Cause::Start));
//! follower.finished(true, start);
//! // Three notifications while nothing runs: one run.
//! for _ in 0..3 {
//!     follower.notified(None, start);
//! }
//! assert_eq!(follower.poll_run(start), Some(Cause::Notification));
//! assert_eq!(follower.poll_run(start), None, "one at a time");
//! follower.finished(true, start);
//! assert_eq!(follower.poll_timeout(), Some(start + Duration::from_secs(300)));
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use resourcesync_model::W3cDateTime;

/// What made a run due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cause {
    /// The first run, catching up.
    Start,
    /// One or more notifications.
    Notification,
    /// The interval.
    Interval,
    /// The last run did not complete.
    Retry,
}

/// What the notifications' intervals say of the channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FollowerEvent {
    /// This notification starts after the last one ended: what came between was not
    /// notified here (lost, or published without a hub).
    Gap {
        /// The last notification's `until`.
        after: W3cDateTime,
        /// This one's `from`.
        from: W3cDateTime,
    },
    /// This notification starts before the last one ended.
    Overlap {
        /// The last notification's `until`.
        after: W3cDateTime,
        /// This one's `from`.
        from: W3cDateTime,
    },
    /// This notification ends no later than one that came before: reordered, or replayed.
    Stale {
        /// Its `until`.
        until: W3cDateTime,
        /// The latest `until` seen.
        latest: W3cDateTime,
    },
}

/// The longest interval taken.
const MAX_INTERVAL: Duration = Duration::from_secs(315_360_000);

/// The first wait before a run that did not complete is tried again.
const FIRST_RETRY: Duration = Duration::from_secs(1);

/// When a following Destination runs its syncs: see the [module](self).
#[derive(Debug)]
pub struct Follower {
    interval: Duration,
    /// The run due, if one is, why, and since when.
    due: Option<Cause>,
    due_at: Instant,
    running: bool,
    /// When the interval's run is due.
    next_interval: Instant,
    /// When a run that did not complete is tried again, and how many did not in a row.
    retry: Option<Instant>,
    failures: u32,
    /// The last notification's `until`, and the latest seen.
    last: Option<W3cDateTime>,
    latest: Option<W3cDateTime>,
    events: VecDeque<FollowerEvent>,
}

impl Follower {
    /// A follower whose first run ([`Cause::Start`]) is due at once, then one at least
    /// every `interval` (10 ms to 10 years).
    pub fn new(interval: Duration, now: Instant) -> Follower {
        // At most 10 years: added to the caller's clock, which has an end.
        let interval = interval.clamp(Duration::from_millis(10), MAX_INTERVAL);
        Follower {
            interval,
            due: Some(Cause::Start),
            due_at: now,
            running: false,
            next_interval: now + interval,
            retry: None,
            failures: 0,
            last: None,
            latest: None,
            events: VecDeque::new(),
        }
    }

    /// A verified notification came, with its `from` and `until` when it has them: a run
    /// is due (one, however many come before it starts).
    pub fn notified(&mut self, interval: Option<(W3cDateTime, W3cDateTime)>, now: Instant) {
        if let Some((from, until)) = interval {
            match self.latest {
                Some(latest) if !latest.precedes(&until) => {
                    self.events
                        .push_back(FollowerEvent::Stale { until, latest });
                }
                _ => {
                    if let Some(after) = self.last {
                        if after.precedes(&from) {
                            self.events.push_back(FollowerEvent::Gap { after, from });
                        } else if from.precedes(&after) {
                            self.events
                                .push_back(FollowerEvent::Overlap { after, from });
                        }
                    }
                    self.last = Some(until);
                    self.latest = Some(until);
                }
            }
        }
        // A notification outranks the interval's or a retry's cause; the first run's
        // stays what it is.
        if self.due != Some(Cause::Start) {
            if self.due.is_none() {
                self.due_at = now;
            }
            self.due = Some(Cause::Notification);
        }
    }

    /// The run to start now, if one is due and none is under way; the caller runs it and
    /// then calls [`finished`](Follower::finished).
    pub fn poll_run(&mut self, now: Instant) -> Option<Cause> {
        if self.running {
            return None;
        }
        let cause = match self.due.take() {
            Some(cause) => cause,
            None if self.retry.is_some_and(|at| at <= now) => Cause::Retry,
            None if self.next_interval <= now => Cause::Interval,
            None => return None,
        };
        self.running = true;
        self.retry = None;
        Some(cause)
    }

    /// The run under way ended at `now`, complete or not.
    pub fn finished(&mut self, complete: bool, now: Instant) {
        self.running = false;
        self.next_interval = now + self.interval;
        if complete {
            self.failures = 0;
            self.retry = None;
        } else {
            self.failures = self.failures.saturating_add(1);
            let wait = FIRST_RETRY
                .saturating_mul(1 << self.failures.saturating_sub(1).min(20))
                .min(self.interval);
            self.retry = Some(now + wait);
        }
    }

    /// When to call [`poll_run`](Follower::poll_run) next, if nothing comes before; `None`
    /// while a run is under way.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.running {
            return None;
        }
        if self.due.is_some() {
            return Some(self.due_at);
        }
        Some(match self.retry {
            Some(at) => at.min(self.next_interval),
            None => self.next_interval,
        })
    }

    /// What the notifications' intervals said, if anything.
    pub fn poll_event(&mut self) -> Option<FollowerEvent> {
        self.events.pop_front()
    }

    /// Whether a run is under way.
    pub fn is_running(&self) -> bool {
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn notifications_during_a_run_make_one_more_and_intervals_are_told() {
        let t = Instant::now();
        let mut f = Follower::new(Duration::from_secs(60), t);
        assert_eq!(f.poll_run(t), Some(Cause::Start));
        f.notified(
            Some((at("2020-01-01T00:00:00Z"), at("2020-01-01T00:01:00Z"))),
            t,
        );
        f.notified(
            Some((at("2020-01-01T00:01:00Z"), at("2020-01-01T00:02:00Z"))),
            t,
        );
        assert_eq!(f.poll_run(t), None, "a run is under way");
        assert_eq!(f.poll_timeout(), None);
        f.finished(true, t);
        assert_eq!(
            f.poll_run(t),
            Some(Cause::Notification),
            "one more, for both"
        );
        f.finished(true, t);
        assert_eq!(f.poll_event(), None, "consecutive intervals");
        // A gap, an overlap, a stale one: each told, each a run.
        f.notified(
            Some((at("2020-01-01T00:05:00Z"), at("2020-01-01T00:06:00Z"))),
            t,
        );
        assert!(matches!(f.poll_event(), Some(FollowerEvent::Gap { .. })));
        f.notified(
            Some((at("2020-01-01T00:05:30Z"), at("2020-01-01T00:07:00Z"))),
            t,
        );
        assert!(matches!(
            f.poll_event(),
            Some(FollowerEvent::Overlap { .. })
        ));
        f.notified(
            Some((at("2020-01-01T00:03:00Z"), at("2020-01-01T00:04:00Z"))),
            t,
        );
        assert!(matches!(f.poll_event(), Some(FollowerEvent::Stale { .. })));
        assert_eq!(f.poll_run(t), Some(Cause::Notification));
        f.finished(true, t);
        assert_eq!(f.poll_run(t), None);
        assert_eq!(
            f.poll_run(t + Duration::from_secs(60)),
            Some(Cause::Interval)
        );
    }

    #[test]
    fn a_run_that_did_not_complete_is_tried_again_after_a_doubling_wait() {
        let t = Instant::now();
        let mut f = Follower::new(Duration::from_secs(10), t);
        assert_eq!(f.poll_run(t), Some(Cause::Start));
        f.finished(false, t);
        assert_eq!(f.poll_timeout(), Some(t + Duration::from_secs(1)));
        assert_eq!(f.poll_run(t + Duration::from_secs(1)), Some(Cause::Retry));
        f.finished(false, t + Duration::from_secs(1));
        assert_eq!(f.poll_timeout(), Some(t + Duration::from_secs(3)));
        for _ in 0..10 {
            f.poll_run(t + Duration::from_secs(3600));
            f.finished(false, t);
        }
        // Never longer than the interval.
        assert_eq!(f.poll_timeout(), Some(t + Duration::from_secs(10)));
        assert_eq!(f.poll_run(t + Duration::from_secs(10)), Some(Cause::Retry));
        f.finished(true, t + Duration::from_secs(10));
        assert_eq!(f.poll_timeout(), Some(t + Duration::from_secs(20)));
    }
}
