//! What a Destination keeps between runs: plain serde data the caller owns, saves and
//! hands back to the next [`Client`](crate::Client).
//!
//! One [`Checkpoint`] per set of resources (per Capability List, or per document when a
//! sync starts at a list with none): where in the Source's stream of changes everything
//! is applied. A checkpoint moves only past changes the caller confirmed as applied
//! ([`Client::applied`](crate::Client::applied)), so a crash at any point resumes
//! without losing a change. Resuming may apply a change a second time (one applied
//! after the last checkpoint the caller saved); applying a change twice is harmless:
//! a create or update writes the same resource, a delete of what is gone does nothing.
//!
//! Beside the checkpoints, the resources a run could not take ([`Refetch`]): their bodies
//! matched nothing the Source listed for them, or their paths held a file that is not the
//! sync's to replace (a conflict); fetched again by the next run.

use std::collections::BTreeMap;

use resourcesync_model::{Md, Uri, W3cDateTime};
use serde::{Deserialize, Serialize};

/// The state of a Destination: a checkpoint per set of resources it synchronizes.
///
/// A field it does not know is refused, not skipped: a file that holds one is another
/// program's (a publication's state has `sets` too), or a later version's, and read
/// as this state its other fields would be lost when it is saved again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct State {
    /// Checkpoints by the URI of their set's Capability List (or of the document the
    /// sync started at, when it has none).
    pub sets: BTreeMap<String, Checkpoint>,
    /// Resources to fetch again, by the same key as [`sets`](State::sets): a run found
    /// their bodies matching nothing the Source listed for them (they changed after every
    /// list the run read: [`ProblemKind::ChangedSinceListed`](crate::ProblemKind::ChangedSinceListed)),
    /// or the caller declined to store them (a conflict:
    /// [`Client::declined`](crate::Client::declined)).
    /// The checkpoint moved on all the same (the change that made them differ is after
    /// everything listed, so after it too; a conflict is the user's to resolve); the next
    /// run fetches each again, checked against a later change the Change Lists list for
    /// it or, without one, against what was listed here. Empty, it is not written, so a
    /// state without one reads as before.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub refetch: BTreeMap<String, Vec<Refetch>>,
}

/// A resource to fetch again, and what the Source last listed for it: its body must match
/// this (or a later change listed for it) to be stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Refetch {
    /// The resource.
    pub uri: Uri,
    /// What was listed for it (length, hashes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md: Option<Md>,
    /// Its listed `lastmod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<W3cDateTime>,
}

impl Refetch {
    /// `uri`, listed with `md` and `lastmod`.
    pub fn new(uri: Uri, md: Option<Md>, lastmod: Option<W3cDateTime>) -> Refetch {
        Refetch { uri, md, lastmod }
    }
}

impl State {
    /// No baseline yet.
    pub fn new() -> State {
        State::default()
    }

    /// The checkpoint of the set whose Capability List is `set`.
    pub fn checkpoint(&self, set: &str) -> Option<&Checkpoint> {
        self.sets.get(set)
    }
}

/// Where in a set's stream of changes the Destination is: every change before this
/// place is applied.
///
/// Changes are ordered by their datetime (`rs:md datetime`, else `lastmod`), and by
/// position among changes of the same datetime (an entry with neither takes the
/// datetime of the one before it). A change is *before* the checkpoint when its datetime
/// is earlier than [`datetime`](Checkpoint::datetime), or equal to it and it is one of
/// the first [`count`](Checkpoint::count) changes with that datetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Checkpoint {
    /// Changes before this datetime are applied.
    pub datetime: W3cDateTime,
    /// And this many of the changes at exactly this datetime, in stream order.
    pub count: u64,
}

impl Checkpoint {
    /// Everything before `datetime` is applied, nothing at it.
    pub fn at(datetime: W3cDateTime) -> Checkpoint {
        Checkpoint { datetime, count: 0 }
    }

    /// Whether the change at `position` is before this checkpoint (applied).
    pub fn covers(&self, position: StreamPosition) -> bool {
        position.datetime < self.datetime
            || (position.datetime == self.datetime && position.index < self.count)
    }
}

/// The place of one change in a set's stream: its datetime, and how many changes of the
/// same datetime came before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamPosition {
    /// The change's datetime.
    pub datetime: W3cDateTime,
    /// Changes with the same datetime before it.
    pub index: u64,
}

impl StreamPosition {
    /// The checkpoint just before this change: applied up to it, not including it.
    pub fn checkpoint_before(self) -> Checkpoint {
        Checkpoint {
            datetime: self.datetime,
            count: self.index,
        }
    }

    /// The checkpoint just after this change.
    pub fn checkpoint_after(self) -> Checkpoint {
        Checkpoint {
            datetime: self.datetime,
            count: self.index + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn a_checkpoint_covers_what_is_before_it() {
        let cp = Checkpoint {
            datetime: t("2020-01-01T00:00:00Z"),
            count: 2,
        };
        let at = |d: &str, index| StreamPosition {
            datetime: t(d),
            index,
        };
        assert!(cp.covers(at("2019-12-31T23:59:59Z", 7)));
        assert!(cp.covers(at("2020-01-01T00:00:00Z", 1)));
        assert!(!cp.covers(at("2020-01-01T00:00:00Z", 2)));
        assert!(!cp.covers(at("2020-01-01T00:00:01Z", 0)));
        assert_eq!(at("2020-01-01T00:00:00Z", 1).checkpoint_after(), cp);
        assert_eq!(at("2020-01-01T00:00:00Z", 2).checkpoint_before(), cp);
    }

    #[test]
    fn state_is_plain_json() {
        let mut state = State::new();
        state.sets.insert(
            "https://example.com/capabilitylist.xml".into(),
            Checkpoint::at(t("2020-01-01T00:00:00Z")),
        );
        let json = serde_json::to_string(&state).unwrap();
        assert_eq!(
            json,
            r#"{"sets":{"https://example.com/capabilitylist.xml":{"datetime":"2020-01-01T00:00:00Z","count":0}}}"#
        );
        assert_eq!(serde_json::from_str::<State>(&json).unwrap(), state);
    }

    /// A publication's state has `sets` too: read as a Destination's, its other fields
    /// would be dropped at the next save.
    #[test]
    fn a_state_with_a_field_it_does_not_know_is_refused() {
        let theirs = r#"{"version":5,"base_url":"http://example.com/","sets":{}}"#;
        let refused = serde_json::from_str::<State>(theirs).unwrap_err();
        assert!(
            refused.to_string().contains("unknown field `version`"),
            "{refused}"
        );
        assert_eq!(
            serde_json::from_str::<State>(r#"{"sets":{}}"#).unwrap(),
            State::new()
        );
    }
}
