//! `resourcesync explore`: discovery and the tree of documents a Source offers, read by
//! the client in its exploring mode over reqwest and tokio.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use resourcesync_client::{Client, Config, DocumentRead, Event, MemoryInventory, Mode, State};
use tokio::sync::mpsc;

use resourcesync_cli::sync::{Msg, Unusable, block_on, fetch, mirrors, wait};

/// What `explore` does, for its long help.
pub(crate) const EXPLORE_ABOUT: &str = "\
Shows what a ResourceSync Source offers: the documents reachable from URL (a Source's base
ending in /, found by discovery, or any of its documents), as a tree by the document that
lists each: Source Description, Capability Lists, Resource Lists, Dumps, Change Lists,
their indexes and archives. No resource or package is fetched.

Output:
  One line per document, indented under the document that lists it:
    <kind> <url> (<n> entries[, at <datetime>])
  then problems on standard error.
JSON (--json): one object per document and line,
  {\"url\", \"parent\", \"kind\", \"entries\", \"at\"}, then {\"summary\": {\"documents\", \"problems\"}}.

Exit status:
  0  every document was read
  1  some document could not be read or was refused
  2  the command could not run: a bad URL or option";

/// The arguments of `explore`.
#[derive(Args)]
pub(crate) struct ExploreArgs {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    url: String,
    /// One JSON object per document and line, then a summary object.
    #[arg(long)]
    json: bool,
    /// Answer requests for URLs under PREFIX from the directory DIR (a mirror on disk).
    #[arg(long, value_name = "PREFIX=DIR")]
    mirror: Vec<String>,
}

/// Runs `explore` and returns its exit status.
pub(crate) fn run(args: &ExploreArgs) -> ExitCode {
    block_on("explore", explore(args))
}

async fn explore(args: &ExploreArgs) -> Result<u8, Unusable> {
    let start = args
        .url
        .parse()
        .map_err(|e| Unusable(format!("{:?} is not a URL: {e}", args.url)))?;
    let config = Config::new(start, Mode::Explore)?;
    let mirrors = mirrors(&args.mirror)?;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut client = Client::new(config, State::new(), MemoryInventory::new());
    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let mut documents: Vec<DocumentRead> = Vec::new();
    let stdout = io::stdout();
    let report = loop {
        while let Some(request) = client.poll_request(Instant::now()) {
            tokio::spawn(fetch(
                http.clone(),
                request,
                None,
                tx.clone(),
                mirrors.clone(),
            ));
        }
        let mut done = None;
        let mut acted = false;
        while let Some(event) = client.poll_event() {
            acted = true;
            match event {
                Event::Document(document) => {
                    if args.json {
                        let line = serde_json::json!({
                            "url": document.uri,
                            "parent": document.parent,
                            "kind": document.kind.name(),
                            "entries": document.entries,
                            "at": document.at,
                        });
                        let _ = writeln!(stdout.lock(), "{line}");
                    }
                    documents.push(document);
                }
                Event::Problem(problem) => eprintln!("problem: {problem}"),
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
    if args.json {
        let summary = serde_json::json!({
            "summary": { "documents": documents.len(), "problems": report.problems }
        });
        let _ = writeln!(stdout.lock(), "{summary}");
    } else {
        print_tree(&documents, &mut stdout.lock());
    }
    Ok(if report.complete { 0 } else { 1 })
}

/// The documents as a tree, each under the one that listed it, children by URL.
fn print_tree(documents: &[DocumentRead], out: &mut impl Write) {
    let mut children: BTreeMap<Option<String>, Vec<&DocumentRead>> = BTreeMap::new();
    let read: std::collections::HashSet<&str> = documents.iter().map(|d| d.uri.as_str()).collect();
    for d in documents {
        // A document whose parent was not read hangs at the top.
        let parent = d
            .parent
            .as_ref()
            .map(|p| p.to_string())
            .filter(|p| read.contains(p.as_str()));
        children.entry(parent).or_default().push(d);
    }
    for list in children.values_mut() {
        list.sort_by(|a, b| a.uri.as_str().cmp(b.uri.as_str()));
    }
    fn walk(
        parent: Option<String>,
        depth: usize,
        children: &BTreeMap<Option<String>, Vec<&DocumentRead>>,
        out: &mut impl Write,
    ) {
        for d in children.get(&parent).into_iter().flatten() {
            let at = d.at.map(|at| format!(", at {at}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "{:indent$}{} {} ({} entries{at})",
                "",
                d.kind.name(),
                d.uri,
                d.entries,
                indent = depth * 2
            );
            if depth < 16 {
                walk(Some(d.uri.to_string()), depth + 1, children, out);
            }
        }
    }
    walk(None, 0, &children, out);
}
