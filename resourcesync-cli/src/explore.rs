//! `resourcesync explore`: discovery and the documents a Source offers, read by the
//! client in its exploring mode over reqwest and tokio; no resource or package is
//! fetched. The command prints them as a tree (or JSON lines), with the notification
//! channels their Capability Lists advertise.

use std::path::PathBuf;
use std::time::Instant;

use resourcesync_client::{
    Client, Config, ConfigError, DocumentRead, Event, MemoryInventory, Misuse, Mode, Report, State,
};
use resourcesync_destination::asynchronous::{Http, Msg, fetch, wait};
use resourcesync_model::{Channel, Uri};
use tokio::sync::mpsc;

/// Why an exploration could not start or go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExploreError {
    /// The URL cannot start an exploration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client was driven against its rules: a bug of this crate.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

/// What to explore.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ExploreOptions {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    pub url: Uri,
    /// URL prefixes answered from a directory (a mirror on disk), each with it.
    pub mirrors: Vec<(String, PathBuf)>,
}

impl ExploreOptions {
    /// Explores from `url`.
    pub fn new(url: Uri) -> ExploreOptions {
        ExploreOptions {
            url,
            mirrors: Vec::new(),
        }
    }

    /// Answers requests for URLs under `prefix` from the directory `dir`.
    #[must_use]
    pub fn with_mirror(
        mut self,
        prefix: impl Into<String>,
        dir: impl Into<PathBuf>,
    ) -> ExploreOptions {
        self.mirrors.push((prefix.into(), dir.into()));
        self
    }
}

/// What an exploration found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Explored {
    /// Every document read, in the order read.
    pub documents: Vec<DocumentRead>,
    /// Every notification channel advertised, with the Capability List that advertises it.
    pub channels: Vec<(Uri, Channel)>,
    /// The client's report.
    pub report: Report,
}

impl std::fmt::Display for Explored {
    /// `N documents read; ` and the client's report.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} documents read; {}",
            self.documents.len(),
            self.report
        )
    }
}

/// Explores on the current tokio runtime, handing every event of the client to `seen`
/// as it comes (a document read, a problem): what it found, or why it could not start.
pub async fn explore(
    options: &ExploreOptions,
    mut seen: impl FnMut(&Event),
) -> Result<Explored, ExploreError> {
    let config = Config::new(options.url.clone(), Mode::Explore)?;
    let http = Http::new(None, usize::MAX);
    let mut client = Client::new(config, State::new(), MemoryInventory::new());
    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let mut documents: Vec<DocumentRead> = Vec::new();
    let mut channels = Vec::new();
    let report = loop {
        while let Some(request) = client.poll_request(Instant::now()) {
            tokio::spawn(fetch(
                http.clone(),
                request,
                None,
                tx.clone(),
                options.mirrors.clone(),
            ));
        }
        let mut done = None;
        let mut acted = false;
        while let Some(event) = client.poll_event() {
            acted = true;
            seen(&event);
            match event {
                Event::Document(document) => documents.push(document),
                Event::Channel {
                    capability_list,
                    channel,
                } => channels.push((capability_list, channel)),
                Event::Done(report) => done = Some(report),
                _ => {}
            }
        }
        if let Some(report) = done {
            break report;
        }
        if acted {
            continue;
        }
        wait(&mut client, &mut rx).await?;
    };
    Ok(Explored {
        documents,
        channels,
        report,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exploration_prints_its_documents_and_the_client_s_report() {
        let report = Report::default();
        let explored = Explored {
            documents: Vec::new(),
            channels: Vec::new(),
            report: report.clone(),
        };
        assert_eq!(explored.to_string(), format!("0 documents read; {report}"));
    }
}
