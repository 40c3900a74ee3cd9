//! What a user prints of a run prints as a sentence, not as `Debug` (issue 29).

use resourcesync_client::{Difference, Mode, Report, Standing, Warning};
use resourcesync_model::Rule;

#[test]
fn reports_modes_standings_and_warnings_print_as_text() {
    let mut report = Report::default();
    report.created = 3;
    report.complete = true;
    let line = report.to_string();
    assert!(line.starts_with("3 created, 0 updated"), "{line}");
    assert!(line.ends_with("complete"), "{line}");
    report.in_sync = Some(false);
    report.missing = 2;
    assert!(
        report
            .to_string()
            .ends_with("2 missing, 0 extra, not in sync")
    );

    assert_eq!(Mode::Incremental.to_string(), "incremental");
    assert_eq!(
        Mode::Baseline { prefer_dump: false }.to_string(),
        "baseline"
    );
    assert_eq!(Standing::Missing.to_string(), "missing");
    assert_eq!(
        Standing::Changed(Difference::Hash).to_string(),
        "changed (hash)"
    );

    let warning = Warning::new(
        Some("http://example.com/changelist.xml".parse().unwrap()),
        Some(4),
        Some(Rule::ChangeListOrder),
        "out of order",
    );
    let text = warning.to_string();
    assert!(
        text.starts_with("http://example.com/changelist.xml, entry 4: [")
            && text.ends_with("] out of order"),
        "{text}"
    );
}
