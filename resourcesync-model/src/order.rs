//! Forward chronological order, as writers of Change Lists, Change Dumps and their
//! manifests must keep it (sections 12.1, 13.1, 13.2).

use crate::W3cDateTime;

/// The order of the changes a writer has accepted so far: each time must be the same as or
/// later than the latest one before it.
///
/// Writers hold one and ask it before taking an entry, so that they refuse what
/// [`check`](crate::check) would then report as out of order
/// ([`Rule::ChangeListOrder`](crate::Rule::ChangeListOrder),
/// [`Rule::ChangeDumpManifestOrder`](crate::Rule::ChangeDumpManifestOrder) and the others).
/// It compares as the checker does: on the instant ([`W3cDateTime`]'s `Ord`), and an entry
/// without a time is neither refused nor remembered, so the next one is compared with the
/// last that had one.
///
/// ```
/// use resourcesync_model::{ChangeOrder, W3cDateTime};
///
/// let t = |s: &str| s.parse::<W3cDateTime>().unwrap();
/// let mut order = ChangeOrder::new();
/// order.push(Some(&t("2013-01-03T18:00:00Z")))?;
/// order.push(None)?; // no time: nothing to compare
/// // 19:00+01:00 is 18:00 UTC: the same instant is not out of order.
/// order.push(Some(&t("2013-01-03T19:00:00+01:00")))?;
///
/// let error = order.check(Some(&t("2013-01-03T17:59:59Z"))).unwrap_err();
/// assert_eq!(error.time, t("2013-01-03T17:59:59Z"));
/// assert_eq!(error.previous, t("2013-01-03T18:00:00Z"));
/// assert_eq!(
///     error.to_string(),
///     "a change at 2013-01-03T17:59:59Z comes after one at 2013-01-03T19:00:00+01:00: \
///      changes come in forward chronological order"
/// );
/// // A refused time is not remembered.
/// assert!(order.push(Some(&t("2013-01-03T17:59:59Z"))).is_err());
/// assert_eq!(order.last(), Some(&t("2013-01-03T19:00:00+01:00")));
/// # Ok::<(), resourcesync_model::OrderError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeOrder {
    last: Option<W3cDateTime>,
}

/// A change whose time comes before the time of a change accepted earlier.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "a change at {time} comes after one at {previous}: changes come in forward chronological order"
)]
#[non_exhaustive]
pub struct OrderError {
    /// The time refused.
    pub time: W3cDateTime,
    /// The latest time accepted before it, as written.
    pub previous: W3cDateTime,
}

impl ChangeOrder {
    /// No change seen yet.
    pub fn new() -> ChangeOrder {
        ChangeOrder::default()
    }

    /// Whether a change at `time` may come next, without remembering it.
    pub fn check(&self, time: Option<&W3cDateTime>) -> Result<(), OrderError> {
        match (time, &self.last) {
            (Some(time), Some(last)) if time < last => Err(OrderError {
                time: *time,
                previous: *last,
            }),
            _ => Ok(()),
        }
    }

    /// Remembers a change at `time` as the latest, once [`check`](Self::check) allowed it
    /// and the caller has taken the change. `None` changes nothing.
    pub fn record(&mut self, time: Option<&W3cDateTime>) {
        if let Some(time) = time {
            self.last = Some(*time);
        }
    }

    /// [`check`](Self::check), then [`record`](Self::record) if it allowed the time.
    pub fn push(&mut self, time: Option<&W3cDateTime>) -> Result<(), OrderError> {
        self.check(time)?;
        self.record(time);
        Ok(())
    }

    /// The latest time accepted, as written.
    pub fn last(&self) -> Option<&W3cDateTime> {
        self.last.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn equal_and_later_times_pass_earlier_fail() {
        let mut order = ChangeOrder::new();
        assert_eq!(order.last(), None);
        order.push(Some(&t("2013-01-03"))).unwrap();
        // Reduced precision stands for the start of its period: the same instant.
        order.push(Some(&t("2013-01-03T00:00:00Z"))).unwrap();
        order.push(Some(&t("2013-01-03T00:00:01Z"))).unwrap();
        let error = order.push(Some(&t("2013-01-03"))).unwrap_err();
        assert_eq!(error.previous.to_string(), "2013-01-03T00:00:01Z");
        assert_eq!(error.time.to_string(), "2013-01-03");
        // check alone never remembers.
        order.check(Some(&t("2014-01-01T00:00:00Z"))).unwrap();
        assert_eq!(order.last(), Some(&t("2013-01-03T00:00:01Z")));
        order.record(None);
        assert_eq!(order.last(), Some(&t("2013-01-03T00:00:01Z")));
    }
}
