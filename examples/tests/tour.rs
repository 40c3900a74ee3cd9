//! The README's first command runs the model tour; this keeps it working.

use std::process::Command;

#[test]
fn model_tour_runs_and_finds_what_it_claims() {
    let out = Command::new(env!("CARGO_BIN_EXE_model-tour"))
        .output()
        .expect("run model-tour");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("error [changelist-order, section 12.1] entry 2"));
    assert!(stdout.contains("2013-01-03T19:00+01:00 is 2013-01-03T18:00:00+00:00 in UTC"));
}
