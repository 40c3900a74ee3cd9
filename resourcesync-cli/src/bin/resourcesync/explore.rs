//! `resourcesync explore`: the command line over [`resourcesync_cli::explore`], and the
//! tree (or JSON lines) it prints.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::process::ExitCode;

use crate::error::Error;
use crate::sync::{block_on, mirrors};
use clap::Args;
use resourcesync_cli::explore::{ExploreOptions, explore};
use resourcesync_client::{DocumentRead, Event};
use resourcesync_model::{Channel, Uri};

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

impl ExploreArgs {
    /// The options these arguments ask for, or why they cannot be.
    fn options(&self) -> Result<ExploreOptions, Error> {
        let url = self.url.parse().map_err(|e| Error::url(&self.url, e))?;
        let mut options = ExploreOptions::new(url);
        for (prefix, dir) in mirrors(&self.mirror)? {
            options = options.with_mirror(prefix, dir);
        }
        Ok(options)
    }
}

/// Runs `explore` and returns its exit status.
pub(crate) fn run(args: &ExploreArgs) -> ExitCode {
    block_on("explore", async {
        let options = args.options()?;
        let stdout = io::stdout();
        let explored = explore(&options, |event| match event {
            Event::Document(document) if args.json => {
                let line = serde_json::json!({
                    "url": document.uri,
                    "parent": document.parent,
                    "kind": document.kind.name(),
                    "entries": document.entries,
                    "at": document.at,
                });
                let _ = writeln!(stdout.lock(), "{line}");
            }
            Event::Channel {
                capability_list,
                channel,
            } if args.json => {
                let line = serde_json::json!({
                    "channel": channel.topic,
                    "parent": capability_list,
                    "capability": channel.capability,
                    "hub": channel.hub,
                });
                let _ = writeln!(stdout.lock(), "{line}");
            }
            Event::Problem(problem) => {
                eprintln!("problem: {}", resourcesync_cli::problem_line(problem))
            }
            _ => {}
        })
        .await?;
        if args.json {
            let summary = serde_json::json!({
                "summary": {
                    "documents": explored.documents.len(),
                    "problems": explored.report.problems,
                }
            });
            let _ = writeln!(stdout.lock(), "{summary}");
        } else {
            print_tree(&explored.documents, &explored.channels, &mut stdout.lock());
        }
        // 0 when every document was read (EXPLORE_ABOUT's exit status).
        Ok(u8::from(!explored.report.complete))
    })
}

/// The documents as a tree, each under the one that listed it, children by URL; a
/// notification channel under its Capability List, after the documents it lists.
fn print_tree(documents: &[DocumentRead], channels: &[(Uri, Channel)], out: &mut impl Write) {
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
        channels: &[(Uri, Channel)],
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
                walk(Some(d.uri.to_string()), depth + 1, children, channels, out);
            }
        }
        let Some(parent) = parent else { return };
        for (_, channel) in channels.iter().filter(|(list, _)| list.as_str() == parent) {
            let _ = writeln!(
                out,
                "{:indent$}{} channel {} (hub {})",
                "",
                channel.capability,
                channel.topic,
                channel.hub,
                indent = depth * 2
            );
        }
    }
    walk(None, 0, &children, channels, out);
}
