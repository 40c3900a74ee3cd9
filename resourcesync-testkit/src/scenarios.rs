//! Scenarios every Destination driver must pass, run by the tests of each driver (the
//! `resourcesync sync` command and the `sync-ureq` example) against a [`Served`] Source:
//! one scenario, written once, whatever the driver.

use std::collections::BTreeMap;
use std::path::Path;

use crate::driver::{Driver, populate, text};
use crate::served::{Fault, Served, collect};

/// A baseline, a dry run that changes nothing, an audit that finds the changes, an
/// incremental run, and an audit in sync.
pub fn baseline_dry_run_incremental_audit(driver: &Driver) {
    {
        let served = Served::start(|s| {
            populate(s, 30);
            s.publish.list_part = 7;
            s.publish.change_part = 2;
        });
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dest");
        let d = d.to_str().unwrap();
        let out = driver.run(&[&served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("baseline: 31 created"),
            "{driver:?}: {}",
            text(&out)
        );
        served.equals(Path::new(d)).unwrap();
        served.change(|s| {
            s.tick(5);
            s.put("r/0.txt", b"zero, again");
            s.put("r/new/deep.txt", b"new");
            s.delete("r/1.txt");
            s.tick(2);
        });
        // A dry run changes nothing on disk, the state included.
        let before = std::fs::read(Path::new(d).join(".resourcesync/state.json")).unwrap();
        let out = driver.run(&["--dry-run", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            served.equals(Path::new(d)).is_err(),
            "{driver:?}: a dry run changed the tree"
        );
        assert_eq!(
            std::fs::read(Path::new(d).join(".resourcesync/state.json")).unwrap(),
            before
        );
        let out = driver.run(&["--audit", &served.base, d]);
        assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
        let out = driver.run(&["--delete", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .starts_with("incremental: 1 created, 1 updated, 1 deleted"),
            "{driver:?}: {}",
            text(&out)
        );
        served.equals(Path::new(d)).unwrap();
        let out = driver.run(&["--audit", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(", in sync"),
            "{driver:?}: {}",
            text(&out)
        );
    }
}

/// A baseline from the Resource Dump, then the changes from the Change Dump.
pub fn dumps_for_the_baseline_and_the_changes(driver: &Driver) {
    let served = Served::start(|s| {
        populate(s, 20);
        s.publish.resource_dump = true;
        s.publish.change_dump = true;
        s.publish.change_part = 3;
    });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    let out = driver.run(&["--dump", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    served.equals(Path::new(d)).unwrap();
    served.change(|s| {
        s.tick(3);
        s.put("r/5.txt", b"five");
        s.delete("r/6.txt");
        s.put("r/x/y.txt", b"deep");
        s.tick(1);
    });
    let out = driver.run(&["--delete", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    served.equals(Path::new(d)).unwrap();
}

/// `--delete --max-deletes 1` with two deletions refuses them and leaves the baseline
/// undone; `--max-deletes 2` goes through.
pub fn a_deletion_limit_stops_the_deletions(driver: &Driver) {
    let sync = |args: &[&str]| driver.run(args);
    let served = Served::start(|s| populate(s, 6));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    assert_eq!(sync(&[&served.base, d]).status.code(), Some(0));
    served.change(|s| {
        s.delete("r/2.txt");
        s.delete("r/3.txt");
        s.tick(1);
    });
    // A baseline again: the state of the last one goes.
    std::fs::remove_file(Path::new(d).join(".resourcesync/state.json")).unwrap();
    let out = sync(&["--delete", "--max-deletes", "1", &served.base, d]);
    // Refused deletions leave the baseline undone: no checkpoint.
    assert!(
        !std::fs::read_to_string(Path::new(d).join(".resourcesync/state.json"))
            .unwrap()
            .contains("datetime")
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2 deletions, more than the 1 allowed"),
        "{}",
        text(&out)
    );
    assert!(Path::new(d).join("r/2.txt").exists());
    let out = sync(&["--delete", "--max-deletes", "2", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(Path::new(d)).unwrap();
}

/// Server errors and cut bodies are retried, a 404, a corrupt body and a redirect off
/// the Source are refused, nothing partial is left, and the next run converges.
pub fn faults_are_retried_or_refused_and_a_later_run_converges(driver: &Driver) {
    let sync = |args: &[&str]| driver.run(args);
    let served = Served::start(|s| populate(s, 12));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    served.faults(|path, attempt| match (path, attempt) {
        ("r/0.txt", 0) => Some(Fault::Status(500)),
        ("r/1.txt", 0) => Some(Fault::Truncate(3)),
        ("r/2.txt", _) => Some(Fault::Status(404)),
        ("r/3.txt", _) => Some(Fault::Corrupt),
        ("r/4.txt", _) => Some(Fault::Redirect("http://localhost.example/4.txt".into())),
        _ => None,
    });
    let out = sync(&[&served.base, d]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("r/2.txt: HTTP status 404"), "{}", text(&out));
    assert!(err.contains("fixity"), "{}", text(&out));
    assert!(err.contains("refused"), "{}", text(&out));
    let dest = Path::new(d);
    assert!(dest.join("r/0.txt").exists() && dest.join("r/1.txt").exists());
    assert!(
        !dest.join("r/3.txt").exists(),
        "a corrupt body is not stored"
    );
    // No temporary file is left behind.
    assert_eq!(
        std::fs::read_dir(dest.join(".resourcesync/tmp"))
            .unwrap()
            .count(),
        0
    );
    served.faults(|_, _| None);
    let out = sync(&[&served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(dest).unwrap();
}

/// A sync killed midway leaves only whole files, and the next run completes.
pub fn an_interrupted_sync_leaves_no_half_written_file_and_resumes(driver: &Driver) {
    {
        let served = Served::start(|s| populate(s, 30));
        // Half the resources are slow: the sync is stopped while it waits for them.
        served.faults(|path, _| {
            let slow = path
                .strip_prefix("r/")
                .and_then(|p| p.strip_suffix(".txt"))
                .and_then(|n| n.parse::<u32>().ok());
            slow.filter(|n| n % 2 == 0).map(|_| Fault::Slow(20_000))
        });
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dest");
        let mut child = driver
            .command()
            .args([&served.base, d.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Until some resources are in place (bounded), then stop it at once.
        for _ in 0..100 {
            if d.join("r/1.txt").exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Every file in the tree is whole: written aside, then renamed.
        let mut held = BTreeMap::new();
        collect(&d, &d, &mut held);
        assert!(
            !held.is_empty(),
            "{driver:?}: nothing was stored before the stop"
        );
        assert!(
            held.len() < 31,
            "{driver:?}: the sync was not stopped midway"
        );
        {
            let source = served.source.lock().unwrap();
            for (path, bytes) in &held {
                assert_eq!(
                    Some(bytes),
                    source.resources.get(path).map(|(b, _)| b),
                    "{driver:?}: {path}"
                );
            }
        }
        // The next run resumes and completes.
        served.faults(|_, _| None);
        let out = driver.run(&[&served.base, d.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        served.equals(&d).unwrap();
    }
}

/// Deletions listed by a Change List: none without `--delete`; with it at most
/// `--max-deletes` a run, only files a sync stored and that still hold its bytes, never a
/// file the user made at a path the Source lists as deleted.
pub fn incremental_deletions_obey_delete_and_spare_what_the_sync_did_not_store(driver: &Driver) {
    let served = Served::start(|s| populate(s, 6));
    let dir = tempfile::tempdir().unwrap();
    let (kept, d) = (dir.path().join("kept"), dir.path().join("dest"));
    for dest in [&kept, &d] {
        let out = driver.run(&[&served.base, dest.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        // The user's own file, and one of the sync's that the user edited.
        std::fs::write(dest.join("r/mine.txt"), b"the user's").unwrap();
        std::fs::write(dest.join("r/3.txt"), b"edited by the user").unwrap();
    }
    served.change(|s| {
        s.tick(2);
        s.put("r/mine.txt", b"briefly the Source's");
        s.delete("r/mine.txt");
        for i in 2..5 {
            s.delete(&format!("r/{i}.txt"));
        }
        s.tick(1);
        s.put("r/later.txt", b"after the deletions");
        s.tick(1);
    });
    // Without --delete: nothing deleted; the deletions are counted, the rest applied.
    let out = driver.run(&[&served.base, kept.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        summary.contains(" 0 deleted,") && summary.contains(" 3 not deleted,"),
        "{summary}"
    );
    for name in ["r/2.txt", "r/3.txt", "r/4.txt", "r/later.txt"] {
        assert!(kept.join(name).is_file(), "{driver:?}: {name}");
    }
    assert_eq!(
        std::fs::read(kept.join("r/mine.txt")).unwrap(),
        b"the user's"
    );

    // --delete --max-deletes 1: one deletion, then the run stops there (exit 1).
    let dest = d.to_str().unwrap();
    let out = driver.run(&["--delete", "--max-deletes", "1", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(" 1 deleted,"),
        "{}",
        text(&out)
    );
    assert!(!d.join("r/2.txt").exists() && d.join("r/4.txt").exists());
    assert!(
        !d.join("r/later.txt").exists(),
        "{driver:?}: applied past the limit"
    );
    // The rest: r/3.txt was edited, a conflict kept as it is; r/4.txt deleted.
    let out = driver.run(&["--delete", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("r/3.txt"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(" 1 conflicts,"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(d.join("r/3.txt")).unwrap(),
        b"edited by the user"
    );
    assert!(!d.join("r/4.txt").exists() && d.join("r/later.txt").is_file());
    assert_eq!(std::fs::read(d.join("r/mine.txt")).unwrap(), b"the user's");
    // The conflict does not come back: the next run has nothing to do.
    let out = driver.run(&["--delete", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
}

/// An update replaces a file only if it still holds what the sync stored: a file the
/// user edited since (of another length, or of the same length) is a conflict kept as it
/// is, as a deletion would keep it, by a baseline asked for too; `--replace-foreign`
/// replaces it on request.
pub fn an_update_never_replaces_a_file_edited_since_the_sync_stored_it(driver: &Driver) {
    let served = Served::start(|s| populate(s, 4));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let dest = d.to_str().unwrap();
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    std::fs::write(d.join("r/1.txt"), b"resource 1, edited by the user").unwrap();
    // The same length as the stored "resource 2": only the bytes tell.
    std::fs::write(d.join("r/2.txt"), b"RESOURCE 2").unwrap();
    served.change(|s| {
        s.tick(1);
        for i in 1..4 {
            s.put(
                &format!("r/{i}.txt"),
                format!("resource {i}, updated").as_bytes(),
            );
        }
        s.tick(1);
    });
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains(" 2 conflicts,"), "{driver:?}: {stdout}");
    assert!(
        stderr.contains("r/1.txt") && stderr.contains("r/2.txt"),
        "{driver:?}: {stderr}"
    );
    assert_eq!(
        std::fs::read(d.join("r/1.txt")).unwrap(),
        b"resource 1, edited by the user"
    );
    assert_eq!(std::fs::read(d.join("r/2.txt")).unwrap(), b"RESOURCE 2");
    assert_eq!(
        std::fs::read(d.join("r/3.txt")).unwrap(),
        b"resource 3, updated"
    );
    // A baseline asked for reads the files: the edits are still conflicts, kept.
    let out = driver.run(&["--baseline", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(" 2 conflicts,"),
        "{driver:?}: {}",
        text(&out)
    );
    assert_eq!(std::fs::read(d.join("r/2.txt")).unwrap(), b"RESOURCE 2");
    // Asked for: replaced.
    let out = driver.run(&["--baseline", "--replace-foreign", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    served.equals(&d).unwrap();
}

/// A baseline into a directory that holds files at listed paths: a file with other
/// bytes is a conflict left as it is, one with the listed bytes is adopted, and
/// `--replace-foreign` replaces them.
pub fn a_file_the_sync_did_not_store_is_a_conflict_unless_it_holds_the_listed_bytes(
    driver: &Driver,
) {
    let served = Served::start(|s| populate(s, 4));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    std::fs::create_dir_all(d.join("r")).unwrap();
    std::fs::write(d.join("r/0.txt"), b"the user's own").unwrap();
    std::fs::write(d.join("r/1.txt"), b"resource 1").unwrap();
    let dest = d.to_str().unwrap();
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        stdout.contains(" 1 conflicts,") && stdout.contains("incomplete"),
        "{stdout}"
    );
    assert!(
        stderr.contains("r/0.txt") && stderr.contains("conflict"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(d.join("r/0.txt")).unwrap(), b"the user's own");
    // Adopted: the sync's now, so an update replaces it. The conflict is met again (the
    // run is not complete while r/0.txt is not the Source's; it said complete).
    served.change(|s| {
        s.tick(1);
        s.put("r/1.txt", b"resource 1, updated");
        s.tick(1);
    });
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(" 1 updated,") && stdout.contains(" 1 conflicts,"),
        "{driver:?}: {stdout}"
    );
    assert_eq!(
        std::fs::read(d.join("r/1.txt")).unwrap(),
        b"resource 1, updated"
    );
    assert_eq!(std::fs::read(d.join("r/0.txt")).unwrap(), b"the user's own");
    // Asked for: replaced; and the runs after it complete.
    let out = driver.run(&["--baseline", "--replace-foreign", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    served.equals(&d).unwrap();
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
}

/// A directory of DIR that is a symbolic link to elsewhere: nothing is written, replaced
/// or deleted through it, even where the files there hold the very bytes the sync
/// stored.
pub fn nothing_is_written_or_deleted_through_a_link_out_of_the_directory(driver: &Driver) {
    let served = Served::start(|s| populate(s, 4));
    let dir = tempfile::tempdir().unwrap();
    let (d, elsewhere) = (dir.path().join("dest"), dir.path().join("elsewhere"));
    let dest = d.to_str().unwrap();
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    // r/ becomes a link to a copy of it elsewhere.
    std::fs::rename(d.join("r"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.join("r")).unwrap();
    let before = |name: &str| std::fs::read(elsewhere.join(name)).unwrap();
    let (zero, two) = (before("0.txt"), before("2.txt"));
    served.change(|s| {
        s.tick(1);
        s.put("r/0.txt", b"zero, updated");
        s.put("r/new.txt", b"new");
        s.delete("r/2.txt");
        s.tick(1);
    });
    let out = driver.run(&["--delete", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    assert_eq!(std::fs::read(elsewhere.join("0.txt")).unwrap(), zero);
    assert_eq!(std::fs::read(elsewhere.join("2.txt")).unwrap(), two);
    assert!(!elsewhere.join("new.txt").exists());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{driver:?}: {}",
        text(&out)
    );
    // A baseline neither.
    let out = driver.run(&["--baseline", "--delete", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    assert_eq!(std::fs::read(elsewhere.join("0.txt")).unwrap(), zero);
    assert!(elsewhere.join("2.txt").exists() && !elsewhere.join("new.txt").exists());
}

/// An audit reads the bytes on disk: a file changed, one removed and one no sync stored
/// are named and DIR is not in sync; a baseline fetches the removed one again and keeps
/// the changed one, a conflict (its bytes are not what the sync stored: a user's edit,
/// or damage, which `--replace-foreign` repairs), and leaves the third, which is not the
/// sync's.
pub fn an_audit_reads_the_files_and_a_baseline_repairs_them(driver: &Driver) {
    let served = Served::start(|s| populate(s, 5));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let dest = d.to_str().unwrap();
    let out = driver.run(&[&served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    // Same length, other bytes: only a digest tells.
    std::fs::write(d.join("r/1.txt"), b"resource X").unwrap();
    std::fs::remove_file(d.join("r/2.txt")).unwrap();
    std::fs::write(d.join("r/extra.txt"), b"the user's").unwrap();
    let out = driver.run(&["--audit", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("not in sync"), "{driver:?}: {}", text(&out));
    assert!(
        stdout.contains("1 changed, 1 missing, 1 extra"),
        "{driver:?}: {}",
        text(&out)
    );
    if driver.name() == "resourcesync sync" {
        for named in [
            // What differs, since issue 29's `Display` for `Standing`.
            "changed (hash): ",
            "r/1.txt",
            "missing: ",
            "r/2.txt",
            "r/extra.txt",
        ] {
            assert!(stderr.contains(named), "{named}: {}", text(&out));
        }
    }
    // The audit changed nothing.
    assert_eq!(std::fs::read(d.join("r/1.txt")).unwrap(), b"resource X");
    let out = driver.run(&["--baseline", &served.base, dest]);
    assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
    assert_eq!(std::fs::read(d.join("r/1.txt")).unwrap(), b"resource X");
    assert_eq!(std::fs::read(d.join("r/2.txt")).unwrap(), b"resource 2");
    let out = driver.run(&["--baseline", "--replace-foreign", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    assert_eq!(std::fs::read(d.join("r/1.txt")).unwrap(), b"resource 1");
    assert_eq!(std::fs::read(d.join("r/extra.txt")).unwrap(), b"the user's");
    std::fs::remove_file(d.join("r/extra.txt")).unwrap();
    let out = driver.run(&["--audit", &served.base, dest]);
    assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
    served.equals(&d).unwrap();
}

/// One `#[test]` per scenario above, each running it with the driver `$driver` makes:
/// `resourcesync_testkit::driver_tests!(Driver::new(..));` in a driver's test file.
#[macro_export]
macro_rules! driver_tests {
    ($driver:expr) => {
        $crate::driver_tests!(@each $driver;
            baseline_dry_run_incremental_audit,
            dumps_for_the_baseline_and_the_changes,
            a_deletion_limit_stops_the_deletions,
            faults_are_retried_or_refused_and_a_later_run_converges,
            an_interrupted_sync_leaves_no_half_written_file_and_resumes,
            incremental_deletions_obey_delete_and_spare_what_the_sync_did_not_store,
            an_update_never_replaces_a_file_edited_since_the_sync_stored_it,
            a_file_the_sync_did_not_store_is_a_conflict_unless_it_holds_the_listed_bytes,
            nothing_is_written_or_deleted_through_a_link_out_of_the_directory,
            an_audit_reads_the_files_and_a_baseline_repairs_them,
        );
    };
    (@each $driver:expr; $($scenario:ident,)*) => {
        $(
            #[test]
            fn $scenario() {
                $crate::scenarios::$scenario(&$driver);
            }
        )*
    };
}
