//! Requests shared out among runs (feature `reqwest`): one [`Gate`] held by every run of
//! a harvest bounds the requests in flight across all of them, the requests in flight to
//! any one authority, and paces each authority as its robots.txt asks (`Crawl-delay`).
//!
//! An authority is a scheme, a host and a port (`http://127.0.0.1:8080`): what a
//! robots.txt governs (RFC 9309, section 2.3), and what a server's capacity usually
//! follows. Two Sources on one host at two ports are two authorities.
//!
//! A run waits at the gate after its client issued a request and before it is sent; it
//! then tells its client the request started ([`Client::handle_started`]), so that a
//! request queued behind others is not taken for a quiet one.
//!
//! [`Client::handle_started`]: resourcesync_client::Client::handle_started

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The limits shared by the runs that hold clones of it. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Places for requests in flight across every run; `None`: no limit.
    all: Option<Arc<Semaphore>>,
    /// Requests in flight to one authority at most; `None`: no limit.
    per_authority: Option<usize>,
    authorities: Mutex<HashMap<String, Authority>>,
}

#[derive(Debug)]
struct Authority {
    slots: Option<Arc<Semaphore>>,
    /// The least time between the starts of two requests to it.
    delay: Duration,
    /// When the next request to it may start.
    next: Instant,
}

/// A place at the [`Gate`], held while the request is in flight (dropping it frees it).
#[derive(Debug)]
pub struct Pass {
    _all: Option<OwnedSemaphorePermit>,
    _authority: Option<OwnedSemaphorePermit>,
}

impl Gate {
    /// A gate that holds nothing back: a run alone, as `asynchronous::sync` makes it.
    pub fn unlimited() -> Gate {
        Gate::default()
    }

    /// At most `max_requests` in flight across the runs, and `per_authority` to any one
    /// authority (each at least one).
    pub fn new(max_requests: usize, per_authority: usize) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                // Within what a semaphore holds (and far beyond any use).
                all: Some(Arc::new(Semaphore::new(max_requests.clamp(1, 1 << 30)))),
                per_authority: Some(per_authority.clamp(1, 1 << 30)),
                authorities: Mutex::default(),
            }),
        }
    }

    /// Whether the gate holds anything back (a run skips it when not).
    pub fn is_unlimited(&self) -> bool {
        self.inner.all.is_none() && self.inner.per_authority.is_none() && {
            let map = self.authorities();
            map.values().all(|a| a.delay.is_zero())
        }
    }

    /// The requests to `authority` start at least `delay` apart from now on (its
    /// robots.txt's Crawl-delay). Each request is paced, however many runs send them.
    pub fn set_delay(&self, authority: &str, delay: Duration) {
        let mut map = self.authorities();
        let entry = self.entry(&mut map, authority);
        entry.delay = delay;
    }

    /// The pace set for `authority`, if any.
    pub fn delay(&self, authority: &str) -> Option<Duration> {
        self.authorities()
            .get(authority)
            .map(|a| a.delay)
            .filter(|d| !d.is_zero())
    }

    /// The requests in flight to one authority at most, if limited.
    pub fn per_authority(&self) -> Option<usize> {
        self.inner.per_authority
    }

    /// Waits for a place for a request to `authority`: one of the authority's, then its
    /// turn by the authority's pace, then one among all. In that order, so that what
    /// waits for its authority (a Source asking more of it than its limit, a slow or
    /// paced one) holds none of the places every authority shares.
    pub async fn pass(&self, authority: &str) -> Pass {
        let slots = {
            let mut map = self.authorities();
            self.entry(&mut map, authority).slots.clone()
        };
        let own = match slots {
            Some(slots) => slots.acquire_owned().await.ok(),
            None => None,
        };
        // The turn is taken once a place is held, so turns go in the order places did.
        let at = {
            let mut map = self.authorities();
            let entry = self.entry(&mut map, authority);
            let at = entry.next.max(Instant::now());
            entry.next = at + entry.delay;
            at
        };
        tokio::time::sleep_until(at).await;
        let all = match &self.inner.all {
            // Never closed: an error cannot happen; a request goes without a place
            // rather than never.
            Some(all) => all.clone().acquire_owned().await.ok(),
            None => None,
        };
        Pass {
            _all: all,
            _authority: own,
        }
    }

    fn authorities(&self) -> std::sync::MutexGuard<'_, HashMap<String, Authority>> {
        // The map holds no invariant a panic could break halfway.
        self.inner
            .authorities
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn entry<'m>(
        &self,
        map: &'m mut HashMap<String, Authority>,
        authority: &str,
    ) -> &'m mut Authority {
        map.entry(authority.to_owned())
            .or_insert_with(|| Authority {
                slots: self
                    .inner
                    .per_authority
                    .map(|n| Arc::new(Semaphore::new(n))),
                delay: Duration::ZERO,
                next: Instant::now(),
            })
    }
}

/// The authority of `uri` as the gate names it: `scheme://host:port`, the host in lower
/// case and the port written even when it is the scheme's default; `None` for a URI
/// without a host.
pub fn authority_of(uri: &http::Uri) -> Option<String> {
    let scheme = uri.scheme_str().unwrap_or("http").to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(match scheme.as_str() {
        "https" => 443,
        _ => 80,
    });
    Some(format!("{scheme}://{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_are_scheme_host_and_port() {
        let of = |s: &str| authority_of(&s.parse().unwrap());
        assert_eq!(
            of("http://Example.org/a").as_deref(),
            Some("http://example.org:80")
        );
        assert_eq!(
            of("https://example.org/").as_deref(),
            Some("https://example.org:443")
        );
        assert_eq!(
            of("http://127.0.0.1:8080/x?y").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(of("/relative"), None);
    }

    #[tokio::test]
    async fn places_are_limited_and_turns_paced() {
        let gate = Gate::new(3, 2);
        let a = gate.pass("http://a:80").await;
        let _b = gate.pass("http://a:80").await;
        // The authority's two places are taken: a third waits until one is freed.
        let third =
            tokio::time::timeout(Duration::from_millis(100), gate.pass("http://a:80")).await;
        assert!(third.is_err());
        let _c = gate.pass("http://b:80").await;
        // Three in all: b's second waits too.
        let fourth =
            tokio::time::timeout(Duration::from_millis(100), gate.pass("http://b:80")).await;
        assert!(fourth.is_err());
        drop(a);
        let _d = gate.pass("http://a:80").await;
        // What waits for its authority holds no place among all: with a:80's one place
        // taken and two more waiting for it, b:80 still gets the other place.
        let shared = Gate::new(2, 1);
        let _a = shared.pass("http://a:80").await;
        let waiting: Vec<_> = (0..2)
            .map(|_| {
                let shared = shared.clone();
                tokio::spawn(async move { shared.pass("http://a:80").await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let b = tokio::time::timeout(Duration::from_millis(100), shared.pass("http://b:80")).await;
        assert!(
            b.is_ok(),
            "a place among all was held by a request waiting for its authority"
        );
        for w in waiting {
            w.abort();
        }
        // Paced: turns at least the delay apart.
        let paced = Gate::new(10, 10);
        paced.set_delay("http://c:80", Duration::from_millis(100));
        let start = Instant::now();
        for _ in 0..4 {
            drop(paced.pass("http://c:80").await);
        }
        assert!(start.elapsed() >= Duration::from_millis(300));
        assert_eq!(paced.delay("http://c:80"), Some(Duration::from_millis(100)));
        assert!(Gate::unlimited().is_unlimited() && !paced.is_unlimited());
    }
}
