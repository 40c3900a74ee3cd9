//! What the operator sets ([`HubOptions`]): the hub's URL and topics, the callbacks
//! allowed, the leases' bounds, the retries, the queues' and the subscriptions' bounds,
//! the signature.

use super::*;

/// The longest `hub.secret` (WebSub 5.1: "less than 200 bytes").
pub const MAX_SECRET: usize = 199;

/// How long subscriptions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leases {
    /// When the subscriber asks for none.
    pub default: Duration,
    /// The shortest granted.
    pub min: Duration,
    /// The longest granted: no lease is perpetual.
    pub max: Duration,
}

impl Default for Leases {
    /// Ten days by default (WebSub 6), from 5 minutes to a month (Change Notification
    /// 1.0.1, 4.2).
    fn default() -> Leases {
        Leases {
            default: Duration::from_secs(10 * 24 * 3600),
            min: Duration::from_secs(300),
            max: Duration::from_secs(2_678_400),
        }
    }
}

impl Leases {
    /// A default lease and its bounds (`min` at least 1 second, `max` at least `min`).
    pub fn new(default: Duration, min: Duration, max: Duration) -> Leases {
        let min = min.max(Duration::from_secs(1));
        let max = max.max(min);
        Leases {
            default: default.clamp(min, max),
            min,
            max,
        }
    }

    /// The lease granted for a request of `asked` seconds (or none).
    pub fn grant(&self, asked: Option<u64>) -> Duration {
        asked
            .map_or(self.default, Duration::from_secs)
            .clamp(self.min, self.max)
    }
}

/// Which callbacks the hub sends requests to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallbackPolicy {
    /// Any http or https callback but one whose host is `localhost` or a loopback,
    /// private, link-local or unspecified address: the hub is not a way into the
    /// operator's own network.
    Public,
    /// Only callbacks on these hosts (compared as written, case-insensitively; any port).
    /// `localhost` names the loopback addresses too (`127.0.0.1`, `::1`): a follower on
    /// the same machine is told its callback by address.
    Hosts(Vec<String>),
}

/// The host of a callback, as the per-host limit counts it: lower case, `""` for none.
pub(super) fn callback_host(callback: &Uri) -> String {
    callback
        .to_url()
        .ok()
        .and_then(|url| {
            url.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        })
        .unwrap_or_default()
}

impl CallbackPolicy {
    /// Whether a request may go to `uri`.
    pub fn allows(&self, uri: &Uri) -> bool {
        let Ok(url) = uri.to_url() else {
            return false;
        };
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        match self {
            CallbackPolicy::Hosts(hosts) => {
                let loopback = match url.host() {
                    Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
                    Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
                    _ => false,
                };
                url.host_str().is_some_and(|h| {
                    hosts.iter().any(|a| {
                        a.eq_ignore_ascii_case(h)
                            || (loopback
                                && a.trim_end_matches('.').eq_ignore_ascii_case("localhost"))
                    })
                })
            }
            CallbackPolicy::Public => match url.host() {
                Some(url::Host::Domain(d)) => {
                    let d = d.trim_end_matches('.').to_ascii_lowercase();
                    d != "localhost" && !d.ends_with(".localhost")
                }
                Some(url::Host::Ipv4(ip)) => self.allows_address(ip.into()),
                Some(url::Host::Ipv6(ip)) => self.allows_address(ip.into()),
                None => false,
            },
        }
    }

    /// Whether a request may go to `ip`, an address a callback's name resolved to: the
    /// caller's resolver asks, so that a name the policy allowed cannot lead into the
    /// operator's own network (a name that resolves to 127.0.0.1, or is rebound to it).
    /// [`Hosts`](CallbackPolicy::Hosts) allows the addresses of the hosts it names.
    pub fn allows_address(&self, ip: std::net::IpAddr) -> bool {
        match (self, ip) {
            (CallbackPolicy::Hosts(_), _) => true,
            (CallbackPolicy::Public, std::net::IpAddr::V4(ip)) => {
                !(ip.is_loopback()
                    || ip.is_private()
                    || ip.is_link_local()
                    || ip.is_unspecified()
                    || ip.is_broadcast())
            }
            (CallbackPolicy::Public, std::net::IpAddr::V6(ip)) => {
                let unique_local = (ip.segments()[0] & 0xfe00) == 0xfc00;
                let link_local = (ip.segments()[0] & 0xffc0) == 0xfe80;
                !(ip.is_loopback() || ip.is_unspecified() || unique_local || link_local)
                    && ip.to_ipv4_mapped().is_none()
            }
        }
    }
}

/// What a [`Hub`] does, and within which bounds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HubOptions {
    /// The hub's own URL: the `hub` link of what it distributes.
    pub url: Uri,
    /// The topics it relays: URL prefixes (a Source's base URL). A subscription to, or a
    /// publication of, any other topic is refused, and no other topic is fetched.
    pub topics: Vec<String>,
    /// Which callbacks it sends requests to.
    pub callbacks: CallbackPolicy,
    /// How long subscriptions last.
    pub leases: Leases,
    /// How distributions and fetches are retried.
    pub retry: Retry,
    /// Failures in a row after which a distribution is given up (its body dropped; the
    /// next one is tried).
    pub attempts: u32,
    /// Bodies waiting per subscriber (besides the one under way); past it, the oldest
    /// waiting is dropped.
    pub queue: usize,
    /// Subscriptions held at most (active and waiting for verification).
    pub max_subscriptions: usize,
    /// Subscriptions held at most for callbacks on one host (active and waiting for
    /// verification): one party cannot take the whole hub.
    pub max_per_host: usize,
    /// Requests (subscriptions and unsubscriptions) waiting for their verification at
    /// most: past it, a request is refused with 503 until some are done.
    pub max_pending: usize,
    /// How bodies are signed for a subscriber that gave a secret.
    pub signature: SignatureMethod,
}

impl HubOptions {
    /// A hub at `url` relaying the topics under `topics`, to public callbacks, with the
    /// default leases and retries, 8 attempts, 1,000 bodies per subscriber, 100,000
    /// subscriptions, sha256 signatures.
    pub fn new(url: Uri, topics: Vec<String>) -> HubOptions {
        HubOptions {
            url,
            topics,
            callbacks: CallbackPolicy::Public,
            leases: Leases::default(),
            retry: Retry::default(),
            attempts: 8,
            queue: 1000,
            max_subscriptions: 100_000,
            max_per_host: 1_000,
            max_pending: 1_000,
            signature: SignatureMethod::Sha256,
        }
    }

    /// At most `subscriptions` subscriptions, `per_host` of them for callbacks on one host,
    /// and `pending` requests waiting for verification (each at least 1).
    pub fn with_limits(
        mut self,
        subscriptions: usize,
        per_host: usize,
        pending: usize,
    ) -> HubOptions {
        self.max_subscriptions = subscriptions.max(1);
        self.max_per_host = per_host.max(1);
        self.max_pending = pending.max(1);
        self
    }

    /// Sends requests only to callbacks `policy` allows.
    pub fn with_callbacks(mut self, policy: CallbackPolicy) -> HubOptions {
        self.callbacks = policy;
        self
    }

    /// Leases as `leases` say.
    pub fn with_leases(mut self, leases: Leases) -> HubOptions {
        self.leases = leases;
        self
    }

    /// Retries as `retry` says, giving up after `attempts` failures in a row.
    pub fn with_retry(mut self, retry: Retry, attempts: u32) -> HubOptions {
        self.retry = retry;
        self.attempts = attempts.max(1);
        self
    }

    /// At most `bodies` waiting per subscriber (at least 1).
    pub fn with_queue(mut self, bodies: usize) -> HubOptions {
        self.queue = bodies.max(1);
        self
    }

    /// Whether `topic` is under one of the topics' prefixes, compared as URLs: the same
    /// scheme, host and port, and a path under the prefix's at a segment's boundary. A
    /// topic with a userinfo is never relayed (`http://a.example:1@b.example/` is a
    /// request to b.example, and text that starts like a prefix is not under it).
    pub(super) fn serves(&self, topic: &Uri) -> bool {
        let Ok(topic) = topic.to_url() else {
            return false;
        };
        if !topic.username().is_empty() || topic.password().is_some() {
            return false;
        }
        self.topics.iter().any(|prefix| {
            let Ok(prefix) = url::Url::parse(prefix) else {
                return false;
            };
            let path = prefix.path();
            let under = topic.path() == path
                || topic.path().starts_with(path)
                    && (path.ends_with('/') || topic.path()[path.len()..].starts_with('/'));
            prefix.scheme() == topic.scheme()
                && prefix.host() == topic.host()
                && prefix.port_or_known_default() == topic.port_or_known_default()
                && under
        })
    }
}
