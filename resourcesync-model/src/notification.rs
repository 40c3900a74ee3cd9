//! Notification channels: how a Capability List advertises where its notifications are
//! pushed (Change Notification 1.0.1 and Framework Notification 1.0.1, section 5).

use crate::{Capability, Entry, Link, Md, Relation, Uri};

/// A notification channel as a Capability List advertises it: an entry whose `<loc>` is
/// the WebSub topic URI, with `<rs:md capability="change-notification"/>` (or
/// `framework-notification`) and an `<rs:ln rel="hub">` to the hub that relays it.
///
/// ```
/// use resourcesync_model::{Capability, Channel};
///
/// let channel = Channel::change_notification(
///     "http://example.com/dataset1/change/".parse()?,
///     "http://hub.example.org/websub/".parse()?,
/// );
/// let entry = channel.to_entry();
/// assert_eq!(entry.md.as_ref().and_then(|md| md.capability.clone()), Some(Capability::ChangeNotification));
/// assert_eq!(Channel::of_entry(&entry), Some(channel));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct Channel {
    /// [`Capability::ChangeNotification`] or [`Capability::FrameworkNotification`].
    pub capability: Capability,
    /// The WebSub topic: the entry's `<loc>`.
    pub topic: Uri,
    /// The hub a Destination subscribes at and a Source publishes to.
    pub hub: Uri,
}

impl Channel {
    /// The Change Notification channel with this topic, relayed by this hub.
    pub fn change_notification(topic: Uri, hub: Uri) -> Channel {
        Channel {
            capability: Capability::ChangeNotification,
            topic,
            hub,
        }
    }

    /// The Framework Notification channel with this topic, relayed by this hub.
    pub fn framework_notification(topic: Uri, hub: Uri) -> Channel {
        Channel {
            capability: Capability::FrameworkNotification,
            topic,
            hub,
        }
    }

    /// The channel a Capability List entry advertises, or `None` when the entry is no
    /// notification channel, or one without a `hub` link (which
    /// [`Rule::NotificationChannelHub`](crate::Rule::NotificationChannelHub) reports): a
    /// channel without a hub cannot be subscribed to. The first `hub` link is the hub.
    pub fn of_entry(entry: &Entry) -> Option<Channel> {
        let capability = entry.md.as_ref()?.capability.clone()?;
        if !capability.is_notification() {
            return None;
        }
        let hub = entry.links.iter().find(|l| l.rel == Relation::Hub)?;
        Some(Channel {
            capability,
            topic: entry.loc.clone(),
            hub: hub.href.clone(),
        })
    }

    /// The Capability List entry that advertises this channel.
    pub fn to_entry(&self) -> Entry {
        Entry::new(self.topic.clone())
            .with_md(Md::new().with_capability(self.capability.clone()))
            .with_link(Link::new(Relation::Hub, self.hub.clone()))
    }
}
