//! Finding the Source Description when the run starts at a Source's address (section
//! 8): the well-known URI, robots.txt, the home page. (Named apart from
//! [`crate::discovery`], the pure functions this uses.)

use resourcesync_model::Uri;

use super::{Client, DocJob, Job, Role, Step, What};
use crate::discovery;
use crate::event::ProblemKind;
use crate::inventory::Inventory;

impl<I: Inventory> Client<I> {
    pub(super) fn push_root_doc(
        &mut self,
        uri: Uri,
        role: Role,
        then: Option<Step>,
        discovered: bool,
        via: Option<resourcesync_model::Relation>,
    ) {
        if self.visited.contains_key(uri.as_str()) {
            return;
        }
        self.visited.insert(uri.as_str().to_owned(), None);
        self.serials += 1;
        self.root_pending += 1;
        self.docs.push_back(Job {
            uri,
            what: What::Document(DocJob {
                set: None,
                depth: 0,
                expect: None,
                role,
                then,
                discovered,
                parent: None,
                via,
                serial: self.serials,
            }),
            attempt: 0,
            redirects: 0,
        });
    }

    /// Takes discovery's `step`, or says it found nothing.
    pub(super) fn discover(&mut self, step: Option<Step>) {
        let base = self.config.start.clone();
        let uri = match step {
            None => {
                match self.unreachable.take() {
                    Some((uri, why)) => self.push_problem(Some(&uri), None, why),
                    None => {
                        let tried = std::mem::take(&mut self.attempts);
                        self.push_problem(Some(&base), None, ProblemKind::NotDiscovered { tried })
                    }
                }
                return;
            }
            Some(Step::PathWellKnown) => {
                if let Some(uri) = discovery::path_well_known_uri(&base) {
                    self.push_root_doc(uri, Role::Any, Some(Step::Robots), true, None);
                    return;
                }
                return self.discover(Some(Step::Robots));
            }
            Some(Step::Robots) => base.join("/robots.txt"),
            Some(Step::Home) => Ok(base.clone()),
        };
        match (uri, step) {
            (Ok(uri), Some(step)) => {
                self.root_pending += 1;
                self.docs.push_back(Job {
                    uri,
                    what: What::Discover(step),
                    attempt: 0,
                    redirects: 0,
                });
            }
            (Err(e), _) => self.push_problem(Some(&base), None, ProblemKind::Uri(e)),
            (Ok(_), None) => {}
        }
    }

    pub(super) fn discovered(&mut self, job: Job, body: &[u8], links: &[String]) {
        self.root_pending = self.root_pending.saturating_sub(1);
        let What::Discover(step) = job.what else {
            return;
        };
        let limits = discovery::DiscoveryLimits::default();
        let found = match step {
            Step::Robots => discovery::robots_txt(&job.uri, body, &limits),
            // A well-known URI is a document, never a discovery job.
            Step::Home | Step::PathWellKnown => {
                let mut found =
                    discovery::link_headers(&job.uri, links.iter().map(String::as_str), &limits);
                found
                    .uris
                    .extend(discovery::html_links(&job.uri, body, &limits).uris);
                found
            }
        };
        let mut any = false;
        for uri in found.uris {
            if let Some(uri) = self.checked(&uri) {
                any = true;
                self.push_root_doc(uri, Role::Any, None, true, None);
            }
        }
        if !any {
            let outcome = match step {
                Step::Robots => "no Sitemap: line",
                _ => "no Link header or <link> with rel=\"resourcesync\"",
            };
            self.attempted(&job.uri, outcome.into());
            self.discover(step.next());
        }
    }

    /// Discovery looked at `uri` and found `outcome` there.
    pub(super) fn attempted(&mut self, uri: &Uri, outcome: String) {
        self.attempts.push(crate::event::Attempt {
            uri: uri.clone(),
            outcome,
        });
    }
}
