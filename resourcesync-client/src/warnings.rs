//! [`WarningSummary`]: the [`Warning`] events of a run, aggregated for a person to read.

use std::collections::HashMap;
use std::fmt;

use resourcesync_model::{Rule, Uri};

use crate::event::Warning;

/// Entries named per group; the rest are counted.
const NAMED: usize = 3;

/// The warnings of a run, one group per document and rule, for a person to read.
///
/// The client emits one [`Event::Warning`](crate::Event::Warning) per entry, which a
/// program reading a driver's output keeps whole (a `--json` consumer); a list of 112
/// entries that each break one rule would print 112 lines. A printer adds each warning
/// here ([`add`](WarningSummary::add)) and prints the summary: one line per document and
/// rule, with the first message, the count and the first entries:
///
/// `<document>: <rule>: <message> (N entries: 3, 7, 12, ...)`
///
/// Warnings without a rule (the client's own) are grouped by document and message. Groups
/// keep the order in which they first appeared.
///
/// ```
/// use resourcesync_client::{Warning, WarningSummary};
///
/// let mut summary = WarningSummary::new();
/// for entry in [3, 7, 12, 20] {
///     summary.add(&Warning::new(
///         Some("https://example.com/resourcelist.xml".parse()?),
///         Some(entry),
///         Some(resourcesync_model::Rule::UriSyntax),
///         format!("invalid URI in entry {entry}"),
///     ));
/// }
/// assert_eq!(summary.len(), 1);
/// assert_eq!(
///     summary.to_string(),
///     "https://example.com/resourcelist.xml: uri-syntax: invalid URI in entry 3 \
///      (4 entries: 3, 7, 12, ...)\n"
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct WarningSummary {
    groups: Vec<WarningGroup>,
    index: HashMap<GroupKey, usize>,
}

/// What makes warnings alike: their document, their rule, and without a rule their
/// message.
type GroupKey = (Option<Uri>, Option<Rule>, Option<String>);

/// One line of a [`WarningSummary`]: the warnings of one document about one rule.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WarningGroup {
    /// The document, if the warnings are about one.
    pub document: Option<Uri>,
    /// The rule, if a rule.
    pub rule: Option<Rule>,
    /// The first warning's message.
    pub message: String,
    /// How many warnings.
    pub count: u64,
    /// The first entries they are about, in the order added.
    pub entries: Vec<u64>,
}

impl WarningSummary {
    /// An empty summary.
    pub fn new() -> WarningSummary {
        WarningSummary::default()
    }

    /// Adds a warning to its group.
    pub fn add(&mut self, warning: &Warning) {
        // Without a rule, the message is all that says which warnings are alike.
        let message = warning.rule.is_none().then(|| warning.message.clone());
        let key = (warning.document.clone(), warning.rule, message);
        let at = *self.index.entry(key).or_insert_with(|| {
            self.groups.push(WarningGroup {
                document: warning.document.clone(),
                rule: warning.rule,
                message: warning.message.clone(),
                count: 0,
                entries: Vec::new(),
            });
            self.groups.len() - 1
        });
        let group = &mut self.groups[at];
        group.count += 1;
        if let (Some(entry), true) = (warning.entry, group.entries.len() < NAMED) {
            group.entries.push(entry);
        }
    }

    /// The groups, in the order they first appeared.
    pub fn groups(&self) -> &[WarningGroup] {
        &self.groups
    }

    /// How many groups (lines).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Whether no warning was added.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

impl fmt::Display for WarningGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(document) = &self.document {
            write!(f, "{document}: ")?;
        }
        if let Some(rule) = self.rule {
            write!(f, "{rule}: ")?;
        }
        f.write_str(&self.message)?;
        let named: Vec<String> = self.entries.iter().map(u64::to_string).collect();
        match (self.count, named.is_empty()) {
            (1, true) => Ok(()),
            (1, false) => write!(f, " (entry {})", named.join(", ")),
            (n, true) => write!(f, " ({n} times)"),
            (n, false) => {
                let more = if (named.len() as u64) < n {
                    ", ..."
                } else {
                    ""
                };
                write!(f, " ({n} entries: {}{more})", named.join(", "))
            }
        }
    }
}

impl fmt::Display for WarningSummary {
    /// One line per group, each ended by a newline.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for group in &self.groups {
            writeln!(f, "{group}")?;
        }
        Ok(())
    }
}
