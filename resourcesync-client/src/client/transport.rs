//! Transport: requests made and answered, redirects, retries and timeouts, and what a
//! request that fails for good leaves behind.

use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use resourcesync_model::{
    Algorithms, Capability, FixityMismatch, Md, Measure, Measured, W3cDateTime,
};
use resourcesync_xml::{Limits, PushReader};

use super::{
    Body, Client, DocFlight, Flight, Job, Phase, Role, What, document_mut, http_uri, later, problem,
};
use crate::event::{Event, ProblemKind};
use crate::inventory::Inventory;
use crate::misuse::Misuse;
use crate::request::{Purpose, Request, RequestId};

/// Pieces of a parked listing's body shorter than this are held together (a driver may
/// hand a body over a few bytes at a time).
const HELD_PIECE: usize = 16 << 10;

/// Resources in a row whose every request an authority left unanswered (each after
/// [`Bounds::attempts`](crate::Bounds::attempts)) before the rest of its resources are
/// failed without a request, for this run: the Source is down, or unreachable, and the
/// next run fetches what this one could not.
pub(super) const SILENT_LIMIT: u32 = 8;

/// Request timeouts ([`Bounds::request_timeout`](crate::Bounds::request_timeout), or
/// [`Bounds::max_request_time`](crate::Bounds::max_request_time) if shorter) an
/// authority may go without answering anything, counted from the first request it left
/// unanswered, before the next it leaves unanswered takes it as gone for this run: a
/// Source that keeps its connections but stopped answering (a stopped process, a full
/// queue) cost each resource its attempts' timeouts, and the [`SILENT_LIMIT`] resources
/// that took it as gone were twelve silent minutes at a concurrency of 2. Two: nothing
/// answered in three timeouts' time.
pub(super) const SILENT_TIMEOUTS: u32 = 2;

/// An authority's silence since it last answered a request.
#[derive(Debug)]
pub(super) struct Silence {
    /// When its first request since went unanswered (or, after a spell with no request
    /// out to it, the first after that).
    since: Instant,
    /// When its last request went unanswered.
    last: Instant,
    /// Its resources whose every request went unanswered since.
    resources: u32,
}

impl<I: Inventory> Client<I> {
    /// The next request to make, if one is due and fewer than the bound are in flight.
    #[must_use]
    pub fn poll_request(&mut self, now: Instant) -> Option<Request> {
        // Listings that waited for the fetches they decided read on as these drain:
        // here, where the fetches are taken.
        if !self.done && !self.parked.is_empty() {
            self.resume_parked(now);
        }
        if self.done || self.flights.len() >= self.config.bounds.max_in_flight {
            return None;
        }
        // Documents first, unless enough fetches wait: documents find the work, and
        // fetches drain what they found. A listing parked is enough: it waits for them,
        // and another document would wait behind it, its body held.
        let (job, target) = loop {
            let job = if self.fetches.len() >= self.config.bounds.max_queued
                || self.docs.is_empty()
                || !self.parked.is_empty()
            {
                self.fetches.pop_front().or_else(|| self.docs.pop_front())
            } else {
                self.docs.pop_front()
            }?;
            let gone = match (&job.what, job.uri.authority()) {
                (What::Resource { .. }, Some(authority)) if !self.gone.is_empty() => self
                    .gone
                    .get(authority)
                    .map(|reason| (authority.to_owned(), reason.clone())),
                _ => None,
            };
            if let Some((authority, why)) = gone {
                let reason = format!("not requested: {authority} {why}");
                self.fail_job(job, ProblemKind::Failed(reason), None, now);
                self.advance(Some(now));
                continue;
            }
            match http_uri(&job.uri) {
                Some(target) => {
                    if !job.uri.is_ascii() {
                        let message = format!(
                            "{}: not ASCII; requested as {target}, percent-encoded as the URL \
                             standard does",
                            job.uri
                        );
                        self.warn(None, None, None, message);
                    }
                    break (job, target);
                }
                None => {
                    let uri = job.uri.to_string();
                    let refusal =
                        crate::policy::Refusal::Unparsable("not an HTTP request target".into());
                    let kind = ProblemKind::Refused(crate::policy::PolicyError { uri, refusal });
                    self.fail_job(job, kind, None, now);
                    self.advance(Some(now));
                }
            }
        };
        self.next_id += 1;
        let id = RequestId(self.next_id);
        let purpose = match &job.what {
            What::Discover(_) => Purpose::Discovery,
            What::Document(_) => Purpose::Document,
            What::Resource { change, .. } => match self.changes.get(change) {
                Some(p) => Purpose::Resource {
                    change: *change,
                    path: p.change.path.clone(),
                },
                None => Purpose::Document,
            },
            What::Package { .. } => Purpose::Package,
        };
        let mut http = http::Request::new(());
        *http.uri_mut() = target;
        let body = match &job.what {
            What::Discover(_) => Body::Discovery(Vec::new(), Vec::new()),
            What::Document(_) => Body::Document(Box::new(DocFlight {
                feed: PushReader::with_limits(Limits::default()),
                held: std::collections::VecDeque::new(),
                ended_held: false,
                held_bytes: 0,
                head: None,
                entries: 0,
                skipped: 0,
                loc_findings: Vec::new(),
                warnings: 0,
            })),
            What::Resource { .. } | What::Package { .. } => Body::Fixity(Measure::new(
                Algorithms::to_check(self.listed_md(&job), self.config.verification),
            )),
        };
        let uri = job.uri.clone();
        // Held back by a driver that says when it goes: no timer until then.
        let (limit, quiet) = match self.config.started_by_driver {
            true => (later(now, Duration::MAX), Duration::MAX),
            false => (
                later(now, self.config.bounds.max_request_time),
                self.config.bounds.request_timeout,
            ),
        };
        self.flights.insert(
            id,
            Flight {
                job,
                deadline: limit.min(later(now, quiet)),
                limit,
                status: None,
                body,
            },
        );
        self.report.requests += 1;
        Some(Request {
            id,
            http,
            uri,
            purpose,
        })
    }

    /// The driver starts sending `id` now, after holding it back (a connection limit
    /// shared with other clients, a host's Crawl-delay): the time it may stay quiet and
    /// the time it may take in all count from here, not from
    /// [`poll_request`](Client::poll_request), so that a request queued behind others
    /// is not cancelled for their slowness or its turn. With
    /// [`Config::started_by_driver`](crate::Config::started_by_driver) a request has no timer at all until then, however
    /// long it is held. Ignored once the response head arrived; a driver that never
    /// holds a request back need not call it.
    pub fn handle_started(&mut self, id: RequestId, now: Instant) -> Result<(), Misuse> {
        let Some(flight) = self.flights.get_mut(&id) else {
            return self.not_in_flight(id);
        };
        if flight.status.is_none() {
            flight.limit = later(now, self.config.bounds.max_request_time);
            flight.deadline = flight
                .limit
                .min(later(now, self.config.bounds.request_timeout));
        }
        Ok(())
    }

    /// Time has passed: retries come due, quiet requests are cancelled.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<RequestId> = self
            .flights
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(flight) = self.flights.remove(&id) {
                self.cancel(id);
                self.discard(id, &flight.job);
                let reason = match flight.limit <= now {
                    true => format!(
                        "took longer than the {} s a request may take",
                        self.config.bounds.max_request_time.as_secs_f64()
                    ),
                    false => format!(
                        "timed out: nothing received for {} s",
                        self.config.bounds.request_timeout.as_secs_f64()
                    ),
                };
                self.retry(flight.job, id, ProblemKind::Failed(reason), now);
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.waiting = later;
        for (_, job) in due {
            self.queue(job, true);
        }
        if self.follow_at.is_some_and(|at| at <= now) {
            self.follow_at = None;
            self.visited.clear();
            self.documents = 0;
            for i in 0..self.sets.len() {
                let uri = self.sets[i].start.clone();
                self.sets[i].stream = None;
                if self.sets[i].listed_by_capabilities {
                    self.sets[i].phase = Phase::Capabilities;
                    self.push_doc(
                        i,
                        uri,
                        Role::Capabilities,
                        1,
                        Some(Capability::CapabilityList),
                        None,
                        None,
                    );
                } else if self.start_stream(i) {
                    self.sets[i].phase = Phase::Reading;
                    self.push_doc(i, uri, Role::Changes, 0, None, None, None);
                }
            }
        }
        self.advance(Some(now));
    }

    /// The response head of `id` arrived: its status and headers. With an error status
    /// (or a redirect) the request is over for the client: its body and end are still
    /// accepted, and ignored.
    ///
    /// A second head is a [`Misuse`].
    pub fn handle_response(
        &mut self,
        id: RequestId,
        status: StatusCode,
        headers: &HeaderMap,
        now: Instant,
    ) -> Result<(), Misuse> {
        let Some(flight) = self.flights.get_mut(&id) else {
            return self.not_in_flight(id);
        };
        if flight.status.is_some() {
            return Err(Misuse::ResponseTwice(id));
        }
        if !self.silent.is_empty()
            && let Some(authority) = flight.job.uri.authority()
        {
            self.silent.remove(authority);
        }
        flight.deadline = flight
            .limit
            .min(later(now, self.config.bounds.request_timeout));
        flight.status = Some(status);
        // The Source's own clock, as its server states it: no checkpoint is later.
        if let Some(date) = headers
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
        {
            let date = W3cDateTime::from(date);
            if self.source_date.is_none_or(|d| d < date) {
                self.source_date = Some(date);
            }
        }
        // A resource's body is stored as it comes, and its digests are the listed ones
        // of the representation: one in a content coding nobody asked for (the driver
        // asks for identity) would be stored encoded. Refused, naming the coding.
        let coding = headers
            .get(http::header::CONTENT_ENCODING)
            .map(|v| {
                String::from_utf8_lossy(v.as_bytes())
                    .trim()
                    .to_ascii_lowercase()
            })
            .filter(|c| !c.is_empty() && c != "identity");
        if let (Some(coding), true, Body::Fixity(_)) = (coding, status.is_success(), &flight.body) {
            if let Some(flight) = self.flights.remove(&id) {
                // Its body is still coming: the driver stops reading it.
                self.cancel(id);
                self.discard(id, &flight.job);
                let reason = format!(
                    "the response is in Content-Encoding {coding:?}, which was not asked for: \
                     not stored"
                );
                self.fail_job(flight.job, ProblemKind::Failed(reason), Some(id), now);
                self.advance(Some(now));
            }
            return Ok(());
        }
        if status.is_success() {
            if let Body::Discovery(_, links) = &mut flight.body {
                links.extend(
                    headers
                        .get_all(http::header::LINK)
                        .iter()
                        .filter_map(|v| v.to_str().ok().map(str::to_owned)),
                );
            }
            return Ok(());
        }
        let Some(flight) = self.flights.remove(&id) else {
            return Ok(());
        };
        // The driver still delivers the body of the error page, and its end.
        self.closed.insert(id);
        self.discard(id, &flight.job);
        let job = flight.job;
        if status.is_redirection() {
            let location = headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match location {
                Some(location) => self.redirect(id, job, &location, now),
                None => self.fail_job(job, ProblemKind::Status(status.as_u16()), Some(id), now),
            }
        } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            self.retry(job, id, ProblemKind::Status(status.as_u16()), now);
        } else {
            self.fail_job(job, ProblemKind::Status(status.as_u16()), Some(id), now);
        }
        self.advance(Some(now));
        Ok(())
    }

    /// The caller's HTTP stack followed a redirect of `id` to `location`: the client
    /// checks it against its policy, and fails the request if it is refused (the caller
    /// should then abort it: an [`Event::Cancel`] says so).
    pub fn handle_redirect(
        &mut self,
        id: RequestId,
        location: &str,
        now: Instant,
    ) -> Result<(), Misuse> {
        let Some(flight) = self.flights.get_mut(&id) else {
            return self.not_in_flight(id);
        };
        flight.job.redirects += 1;
        let checked = self.config.policy.check_redirect(&flight.job.uri, location);
        let too_many = flight.job.redirects > self.config.bounds.max_redirects;
        match checked {
            Ok(target) if !too_many => flight.job.uri = target,
            other => {
                let Some(flight) = self.flights.remove(&id) else {
                    return Ok(());
                };
                self.cancel(id);
                self.discard(id, &flight.job);
                let kind = match other {
                    Err(e) => ProblemKind::Refused(e),
                    Ok(_) => ProblemKind::Failed("too many redirects".into()),
                };
                self.fail_job(flight.job, kind, Some(id), now);
            }
        }
        self.advance(Some(now));
        Ok(())
    }

    /// The caller's resolver gave `address` for the host of `id`, before connecting: the
    /// client checks it against its policy (a public name that resolves to a loopback,
    /// link-local or private address is refused unless the Source is on one too). When
    /// refused the request fails, and an [`Event::Cancel`] says not to connect.
    pub fn handle_address(
        &mut self,
        id: RequestId,
        address: std::net::IpAddr,
        now: Instant,
    ) -> Result<(), Misuse> {
        let Some(flight) = self.flights.get(&id) else {
            return self.not_in_flight(id);
        };
        if let Err(e) = self.config.policy.check_address(&flight.job.uri, address) {
            if let Some(flight) = self.flights.remove(&id) {
                self.cancel(id);
                self.discard(id, &flight.job);
                self.fail_job(flight.job, ProblemKind::Refused(e), Some(id), now);
            }
            self.advance(Some(now));
        }
        Ok(())
    }

    /// A chunk of the body of `id`, after its response head.
    ///
    /// A chunk before the head is a [`Misuse`]: without the status the client cannot
    /// tell the body from an error page.
    pub fn handle_body(&mut self, id: RequestId, bytes: &[u8], now: Instant) -> Result<(), Misuse> {
        let listed = self
            .flights
            .get(&id)
            .and_then(|f| self.listed_length(&f.job));
        let cap = self.config.bounds.max_unlisted_bytes;
        // A listing waiting for its fetches to drain ([`Client::parked`]).
        let parked = self.parked.iter().any(|p| p.id == id);
        let Some(flight) = self.flights.get_mut(&id) else {
            return self.not_in_flight(id);
        };
        if flight.status.is_none() {
            return Err(Misuse::BodyBeforeResponse(id));
        }
        flight.deadline = flight
            .limit
            .min(later(now, self.config.bounds.request_timeout));
        // Bytes coming are an answer too: a Source busy sending one large body while its
        // other requests wait in its queue is not silent.
        if !self.silent.is_empty()
            && let Some(authority) = flight.job.uri.authority()
        {
            self.silent.remove(authority);
        }
        self.report.bytes += bytes.len() as u64;
        self.progress.bytes += bytes.len() as u64;
        let limit = self.config.bounds.max_discovery_bytes;
        let outcome = match &mut flight.body {
            Body::Discovery(kept, _) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
                Ok(())
            }
            Body::Fixity(fixity) => {
                fixity.update(bytes);
                match past_limit(listed, cap, fixity.length()) {
                    Some(kind) => Err(kind),
                    None => Ok(()),
                }
            }
            // A body the caller said it hashes itself cannot be handed over too.
            Body::Digested(_) => return Err(Misuse::NotDigestible(id)),
            // Behind pieces held (a listing parked): held as well, in order.
            Body::Document(doc) if parked || !doc.held.is_empty() => {
                doc.held_bytes += bytes.len() as u64;
                if doc.held_bytes > doc.feed.limits().max_bytes {
                    // Fails now, as the reader would once it read them.
                    Err(ProblemKind::Document(doc.feed.too_large().into()))
                } else {
                    // Small pieces go together: a piece is a vector and its place.
                    match doc.held.back_mut() {
                        Some(last) if last.len() < HELD_PIECE => last.extend_from_slice(bytes),
                        _ => doc.held.push_back(bytes.to_vec()),
                    }
                    Ok(())
                }
            }
            Body::Document(doc) => match doc.feed.feed(bytes) {
                Ok(()) => Ok(()),
                Err(e) => Err(ProblemKind::Document(e.into())),
            },
        };
        match outcome {
            Ok(()) => {
                if matches!(flight.body, Body::Document(_)) {
                    self.read_document(id, false, now);
                }
            }
            Err(kind) => {
                if let Some(flight) = self.flights.remove(&id) {
                    self.cancel(id);
                    self.discard(id, &flight.job);
                    self.fail_job(flight.job, kind, Some(id), now);
                }
            }
        }
        self.advance(Some(now));
        Ok(())
    }

    /// The `<rs:md>` listed for the body of a resource or a package.
    fn listed_md<'a>(&'a self, job: &'a Job) -> Option<&'a Md> {
        match &job.what {
            What::Resource { change, .. } => {
                self.changes.get(change).and_then(|p| p.change.md.as_ref())
            }
            What::Package { md, .. } => md.as_deref(),
            _ => None,
        }
    }

    /// The length listed for the body of a resource or a package.
    fn listed_length(&self, job: &Job) -> Option<u64> {
        self.listed_md(job).and_then(|md| md.length)
    }

    /// The digests that check the body of `id`, a resource's or a package's, as the
    /// configuration's [`Config::verification`](crate::Config::verification) asks, for a
    /// caller that hashes it itself ([`handle_digests`](Client::handle_digests)): a
    /// [`Measure`] of them is what it hands over. `None` for a request not in flight or
    /// of another kind.
    pub fn algorithms(&self, id: RequestId) -> Option<Algorithms> {
        let flight = self.flights.get(&id)?;
        match flight.body {
            Body::Fixity(_) | Body::Digested(_) => Some(Algorithms::to_check(
                self.listed_md(&flight.job),
                self.config.verification,
            )),
            _ => None,
        }
    }

    /// Whether request `id` is still in flight: false once its end or failure was
    /// handed over, or once the client ended it (cancelled, an error status, a body past
    /// its bound). A blocking driver reading a body stops reading when it is not.
    pub fn in_flight(&self, id: RequestId) -> bool {
        self.flights.contains_key(&id)
    }

    /// The most bytes the body of `id` may have, for a caller that hashes a resource's
    /// or a package's body itself ([`handle_digests`](Client::handle_digests)) and so
    /// should stop reading past it: its listed length, or
    /// [`Bounds::max_unlisted_bytes`](crate::Bounds::max_unlisted_bytes). `None` for a
    /// request not in flight or of another kind (its body goes to the client, which
    /// bounds it).
    pub fn body_limit(&self, id: RequestId) -> Option<u64> {
        let flight = self.flights.get(&id)?;
        match flight.body {
            Body::Fixity(_) | Body::Digested(_) => Some(
                self.listed_length(&flight.job)
                    .unwrap_or(self.config.bounds.max_unlisted_bytes),
            ),
            _ => None,
        }
    }

    /// `bytes` more of the body of `id` arrived, which the caller hashes itself (see
    /// [`handle_digests`](Client::handle_digests), which must end it): the request is
    /// alive (its timeout starts again) and the progress counts them. Like the digests,
    /// a [`Misuse`] for a request of another purpose or one whose body was handed over
    /// in part.
    pub fn handle_progress(
        &mut self,
        id: RequestId,
        bytes: u64,
        now: Instant,
    ) -> Result<(), Misuse> {
        let Some(flight) = self.flights.get(&id) else {
            return self.not_in_flight(id);
        };
        if flight.status.is_none() {
            return Err(Misuse::BodyBeforeResponse(id));
        }
        let said = self.digested(id)?;
        let Some(flight) = self.flights.get_mut(&id) else {
            return Ok(());
        };
        flight.body = Body::Digested(said + bytes);
        flight.deadline = flight
            .limit
            .min(later(now, self.config.bounds.request_timeout));
        self.progress.bytes += bytes;
        Ok(())
    }

    /// The body of `id`, a resource's or a package's ([`Purpose::Resource`],
    /// [`Purpose::Package`]), ended, and the caller computed its length and digests
    /// itself with the model's `Fixity`: the last input for the
    /// request, in place of [`handle_body`](Client::handle_body) and
    /// [`handle_end`](Client::handle_end). The client checks them against what was
    /// listed as it checks the bytes it hashes, and the run goes on alike.
    ///
    /// Why: hashing is most of the work of receiving a large body (md5 alone runs at
    /// about the speed of a fast disk), and the client, a state machine on one thread,
    /// cannot spread it; a caller receiving several bodies at once can hash each on the
    /// thread that receives it. A caller that does so reads no more than
    /// [`body_limit`](Client::body_limit) and one byte.
    ///
    /// Digests for a request of another purpose, or after a part of its body was
    /// handed over, are a [`Misuse`].
    ///
    /// [`Purpose::Resource`]: crate::Purpose::Resource
    /// [`Purpose::Package`]: crate::Purpose::Package
    pub fn handle_digests(
        &mut self,
        id: RequestId,
        digests: Measured,
        now: Instant,
    ) -> Result<(), Misuse> {
        if !self.last_input(id)? {
            return Ok(());
        }
        let said = self.digested(id)?;
        let Some(flight) = self.flights.remove(&id) else {
            return Ok(());
        };
        self.report.bytes += digests.length;
        self.progress.bytes += digests.length.saturating_sub(said);
        let listed = self.listed_length(&flight.job);
        match past_limit(
            listed,
            self.config.bounds.max_unlisted_bytes,
            digests.length,
        ) {
            Some(kind) => {
                self.discard(id, &flight.job);
                self.fail_job(flight.job, kind, Some(id), now);
            }
            None => self.fetched(id, flight.job, digests, now),
        }
        self.advance(Some(now));
        Ok(())
    }

    /// Whether the last input for `id` (its end, its digests) finds it in flight with
    /// its head received. `false` for a request the client ended itself (the input is
    /// forgotten, and so is the request); a misuse for one that is over, or whose head
    /// never came.
    fn last_input(&mut self, id: RequestId) -> Result<bool, Misuse> {
        match self.flights.get(&id) {
            Some(flight) if flight.status.is_none() => Err(Misuse::BodyBeforeResponse(id)),
            Some(_) => Ok(true),
            None if self.closed.remove(&id) => Ok(false),
            None => Err(self.over(id)),
        }
    }

    /// The bytes of `id`'s body the caller said it hashes itself so far: its body must be
    /// a resource's or a package's, none of it handed over as bytes.
    fn digested(&self, id: RequestId) -> Result<u64, Misuse> {
        match self.flights.get(&id).map(|f| &f.body) {
            Some(Body::Fixity(fixity)) if fixity.length() == 0 => Ok(0),
            Some(Body::Digested(said)) => Ok(*said),
            _ => Err(Misuse::NotDigestible(id)),
        }
    }

    /// The body of `id` ended: the last input for the request (after it, any input for
    /// `id` is a [`Misuse`]). Before the response head it is a misuse too.
    pub fn handle_end(&mut self, id: RequestId, now: Instant) -> Result<(), Misuse> {
        if !self.last_input(id)? {
            return Ok(());
        }
        self.end(id, now);
        // A document found broken at its end was cancelled: no input follows the end.
        self.closed.remove(&id);
        Ok(())
    }

    fn end(&mut self, id: RequestId, now: Instant) {
        let Some(flight) = self.flights.get(&id) else {
            return;
        };
        if matches!(flight.body, Body::Document(_)) {
            if let Some((doc, _)) = document_mut(&mut self.flights, id) {
                // With pieces held, finished once they are fed (`read_document`).
                if !doc.held.is_empty() {
                    doc.ended_held = true;
                } else if let Err(e) = doc.feed.finish() {
                    self.document_failed(id, ProblemKind::Document(e.into()), now);
                    self.advance(Some(now));
                    return;
                }
            }
            self.read_document(id, true, now);
            self.advance(Some(now));
            return;
        }
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        match flight.body {
            Body::Discovery(kept, links) => self.discovered(flight.job, &kept, &links),
            Body::Fixity(fixity) => self.fetched(id, flight.job, fixity.finish(), now),
            // Ended without its digests: the caller hashed nothing it could hand over.
            Body::Digested(_) => self.fail_job(
                flight.job,
                ProblemKind::Failed("the body ended without its digests".into()),
                Some(id),
                now,
            ),
            Body::Document(_) => {}
        }
        self.advance(Some(now));
    }

    /// The exchange of `id` failed (connection, DNS, a body cut short), or the caller
    /// could not open the package [`Event::Package`] announced: the client tries again,
    /// or elsewhere, as its bounds allow. The last input for the request, like
    /// [`handle_end`](Client::handle_end).
    pub fn handle_failure(
        &mut self,
        id: RequestId,
        reason: impl Into<String>,
        now: Instant,
    ) -> Result<(), Misuse> {
        let reason = reason.into();
        if let Some(package) = self.packages.get(&id) {
            // A package whose manifest was read is opened: what fails now is an
            // extraction, which `failed` reports.
            if package.manifest_read {
                return Err(Misuse::RequestOver(id));
            }
            // A package the caller could not open or read: its bitstreams are not taken.
            let set = package.set;
            self.packages.remove(&id);
            self.sets[set].failed = true;
            self.events
                .push_back(problem(None, Some(id), ProblemKind::Failed(reason)));
            self.report.problems += 1;
            self.events.push_back(Event::Release { request: id });
            self.package_gone(set);
            self.advance(Some(now));
            return Ok(());
        }
        let Some(flight) = self.flights.remove(&id) else {
            return match self.closed.remove(&id) {
                true => Ok(()),
                false => Err(self.over(id)),
            };
        };
        self.discard(id, &flight.job);
        self.retry(flight.job, id, ProblemKind::Failed(reason), now);
        self.advance(Some(now));
        Ok(())
    }

    pub(super) fn queue(&mut self, job: Job, front: bool) {
        let queue = match job.what {
            What::Resource { .. } => &mut self.fetches,
            _ => &mut self.docs,
        };
        if front {
            queue.push_front(job)
        } else {
            queue.push_back(job)
        }
    }

    /// Tells the caller to drop what it kept of a request's body, if it kept any.
    pub(super) fn discard(&mut self, id: RequestId, job: &Job) {
        if let What::Resource { change, .. } = &job.what {
            self.events.push_back(Event::Discard {
                request: id,
                change: *change,
            });
        }
    }

    pub(super) fn redirect(&mut self, id: RequestId, mut job: Job, location: &str, now: Instant) {
        match self.config.policy.check_redirect(&job.uri, location) {
            Ok(_) if job.redirects >= self.config.bounds.max_redirects => self.fail_job(
                job,
                ProblemKind::Failed("too many redirects".into()),
                Some(id),
                now,
            ),
            Ok(target) => {
                job.uri = target;
                job.redirects += 1;
                self.queue(job, true);
            }
            Err(e) => self.fail_job(job, ProblemKind::Refused(e), Some(id), now),
        }
    }

    pub(super) fn retry(&mut self, mut job: Job, id: RequestId, kind: ProblemKind, now: Instant) {
        job.attempt += 1;
        let last = job.attempt >= self.config.bounds.attempts;
        // Unanswered (retry's kinds are answers' failures: no connection, no response in
        // time, a body cut short): the authority's silence, which an answer ends, and
        // whether it is long enough to take the authority as gone for this run.
        let gone = match (&job.what, &kind, job.uri.authority()) {
            (What::Resource { .. }, ProblemKind::Failed(reason), Some(authority))
                if !self.gone.contains_key(authority) =>
            {
                let silence = self.silent.entry(authority.to_owned()).or_insert(Silence {
                    since: now,
                    last: now,
                    resources: 0,
                });
                // A request's own limit: quiet for the request timeout, or longer in all
                // than the time a request may take, whichever is shorter.
                let bounds = &self.config.bounds;
                let limit = (bounds.request_timeout.min(bounds.max_request_time))
                    .saturating_mul(SILENT_TIMEOUTS);
                // A request out is answered or fails within a request timeout: a longer
                // spell without a failure had none out (the run was reading another
                // Source's lists, say), and is no silence of this authority's.
                if now.saturating_duration_since(silence.last) > limit {
                    silence.since = now;
                }
                silence.last = now;
                silence.resources += u32::from(last);
                let quiet = now.saturating_duration_since(silence.since);
                let why = if last && silence.resources >= SILENT_LIMIT {
                    Some(format!(
                        "answered none of the requests for the last {SILENT_LIMIT} resources \
                         asked of it ({reason})"
                    ))
                } else if quiet >= limit {
                    Some(format!(
                        "answered no request in {} s ({reason})",
                        quiet.as_secs()
                    ))
                } else {
                    None
                };
                why.map(|why| (authority.to_owned(), reason, why))
            }
            _ => None,
        };
        if let Some((authority, reason, why)) = gone {
            // Said once, beside the summary: each resource left says it too.
            let message = format!(
                "{authority} stopped answering ({reason}): the rest of its resources are not \
                 requested in this run; a later run fetches them"
            );
            self.gone.insert(authority, why);
            self.warn(None, None, None, message);
        } else if !last {
            let delay = self
                .config
                .bounds
                .retry_delay
                .saturating_mul(1 << (job.attempt - 1).min(16));
            self.waiting.push((later(now, delay), job));
            return;
        }
        self.fail_job(job, kind, Some(id), now);
    }

    /// A job failed for good (or was refused): what follows depends on what it was for.
    pub(super) fn fail_job(
        &mut self,
        job: Job,
        kind: ProblemKind,
        id: Option<RequestId>,
        _now: Instant,
    ) {
        // A request that failed (no connection, no answer), not a status: the other
        // steps of discovery ask the same host, so discovery ends with this reason.
        let unreachable = matches!(kind, ProblemKind::Failed(_));
        match job.what {
            What::Discover(step) => {
                self.root_pending = self.root_pending.saturating_sub(1);
                self.attempted(&job.uri, kind.to_string());
                if unreachable {
                    self.unreachable.get_or_insert((job.uri, kind));
                    return self.discover(None);
                }
                self.discover(step.next());
            }
            What::Document(doc) => {
                if let Some(step) = doc.then {
                    // No Source Description at the well-known URI: discovery goes on.
                    // A refusal is said all the same.
                    self.root_pending = self.root_pending.saturating_sub(1);
                    self.attempted(&job.uri, kind.to_string());
                    self.visited.remove(job.uri.as_str());
                    if matches!(kind, ProblemKind::Refused(_)) {
                        self.push_problem(Some(&job.uri), id, kind);
                    } else if unreachable {
                        self.unreachable.get_or_insert((job.uri, kind));
                        return self.discover(None);
                    }
                    self.discover(Some(step));
                    return;
                }
                self.push_problem(Some(&job.uri), id, kind);
                match doc.set {
                    Some(set) => {
                        self.sets[set].failed = true;
                        self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
                    }
                    None => {
                        self.root_pending = self.root_pending.saturating_sub(1);
                        // A root document with no set, failed (part-way, maybe): the
                        // start, or one discovery found, such as a Source Description,
                        // whose sets named past the failure are not read.
                        self.root_unread = true;
                    }
                }
            }
            What::Resource { change, mut others } => {
                if !others.is_empty() && !matches!(kind, ProblemKind::Refused(_)) {
                    let next = others.remove(0);
                    self.queue(
                        Job {
                            uri: next,
                            what: What::Resource { change, others },
                            attempt: 0,
                            redirects: 0,
                        },
                        true,
                    );
                    return;
                }
                // A body that is not what was listed may be the Source's motion, not a
                // fault: a baseline defers it until the Change Lists are read.
                if self.moved(change, id, &kind) {
                    return;
                }
                self.push_problem(Some(&job.uri), id, kind);
                self.settle_failed(change);
            }
            What::Package { set, .. } => {
                self.push_problem(Some(&job.uri), id, kind);
                self.sets[set].failed = true;
                self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
            }
        }
    }
}

/// Whether a resource's or a package's body of `length` bytes is past what it may be:
/// longer than `listed`, or (listed without a length) than the `cap`.
fn past_limit(listed: Option<u64>, cap: u64, length: u64) -> Option<ProblemKind> {
    match listed {
        Some(expected) if length > expected => {
            Some(ProblemKind::Fixity(FixityMismatch::Longer { expected }))
        }
        None if length > cap => Some(ProblemKind::TooLarge { limit: cap }),
        _ => None,
    }
}
