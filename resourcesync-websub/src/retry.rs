//! How a publisher and a hub retry a request that failed.

use std::time::Duration;

/// Waits between attempts that double from `first` up to `most`, and how long a request
/// may go unanswered before it counts as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retry {
    /// The wait after the first failure; it doubles with each failure after.
    pub first: Duration,
    /// The longest wait.
    pub most: Duration,
    /// How long a request may go unanswered before it counts as failed.
    pub timeout: Duration,
}

impl Retry {
    /// Waits of `first`, doubling up to `most`; `timeout` for an answer.
    pub fn new(first: Duration, most: Duration, timeout: Duration) -> Retry {
        Retry {
            first,
            most,
            timeout,
        }
    }

    /// The wait after `failures` failures in a row (1 for the first).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resourcesync_websub::Retry;
    ///
    /// let retry = Retry::new(Duration::from_secs(1), Duration::from_secs(5), Duration::from_secs(9));
    /// let waits: Vec<u64> = (1..=5).map(|n| retry.wait(n).as_secs()).collect();
    /// assert_eq!(waits, [1, 2, 4, 5, 5]);
    /// ```
    pub fn wait(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        self.first.saturating_mul(1u32 << doublings).min(self.most)
    }
}

impl Default for Retry {
    /// Half a second, doubling to a minute; ten seconds for an answer.
    fn default() -> Retry {
        Retry {
            first: Duration::from_millis(500),
            most: Duration::from_secs(60),
            timeout: Duration::from_secs(10),
        }
    }
}
