//! A hub that is not ours: flask-websub's (tests/flask_hub/hub.py, pinned by `.ci/run` in
//! the project's Python environment, its Celery tasks run eagerly). Our Publisher pings it
//! (the WebSub publish ping: it fetches the topic, which `serve --hub-url` serves with the
//! Link header it checks), and our follower, subscribed through it, takes what it signs
//! (sha512) and syncs. Ignored, saying so, without such a Python (required on CI).

use resourcesync_source::notify::HubProtocol;
use resourcesync_testkit::{needs, python};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/follower.rs"]
mod follower;
#[path = "common/server.rs"]
mod server;

use follower::{Follower, first_publication, publish_and_follow};

const HUB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flask_hub/hub.py");

fn main() -> std::process::ExitCode {
    needs::main(vec![needs::trial(
        "a_publisher_and_a_follower_meet_through_flask_websub",
        &python::find("flask_websub.hub, celery", &[]),
        a_publisher_and_a_follower_meet_through_flask_websub,
    )])
}

/// flask-websub's hub on 127.0.0.1; returns it (killed when dropped) and its URL.
fn flask_hub(python: &Path, storage: &Path) -> (server::Server, String) {
    let mut command = Command::new(python);
    command.arg(HUB).arg(storage);
    let (hub, first) = server::start(command);
    let port = first
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the hub said {first:?}"))
        .trim()
        .to_owned();
    (hub, format!("http://127.0.0.1:{port}/hub"))
}

fn a_publisher_and_a_follower_meet_through_flask_websub(python: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (_hub, hub_url) = flask_hub(&python, &dir.path().join("hub.sqlite"));
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    serve
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--json",
            "--hub-url",
            &hub_url,
        ])
        .arg(&publish);
    let (_server, first) = server::start(serve);
    let line: serde_json::Value = serde_json::from_str(&first).unwrap();
    let base = line["url"].as_str().unwrap().to_owned();

    let mut publisher = first_publication(&publish, &base, &hub_url);
    let dest = dir.path().join("dest");
    let follower = Follower::start(&base, &dest);
    assert_eq!(follower.until("channel")["hub"], hub_url.as_str());
    follower.until("subscribed");
    for n in 1..=3 {
        // flask-websub fetched the topic and posted it, signed, to the follower.
        let notified = publish_and_follow(
            &mut publisher,
            &follower,
            &base,
            n,
            HubProtocol::Publish,
            &dest,
        );
        assert_eq!(notified["entries"], 1, "{notified}");
    }
}
