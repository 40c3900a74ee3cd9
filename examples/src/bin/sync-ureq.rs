//! A blocking driver of the sans-IO client over ureq: a whole Destination in one file.
//!
//! ```text
//! sync-ureq [--audit] [--dry-run] [--dump] [--delete] [--max-deletes N] <SOURCE-URL> <DIR>
//! ```
//!
//! One request at a time: the client asks, ureq fetches (redirects are the client's to
//! check, so ureq follows none), each body goes to the client in chunks and, for a
//! resource or a package, to a temporary file first; then the client's decisions are
//! carried out and confirmed. The state and the inventory stay in `DIR/.resourcesync/`,
//! a name no resource can take. It prints the same summary line and exits with the same
//! statuses as `resourcesync sync`, which drives the same client over reqwest and tokio,
//! many requests at a time.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use resourcesync_client::{Client, Config, Event, Held, MemoryInventory, Mode, Purpose, State};
use resourcesync_package::Package;

const KEPT: &str = ".resourcesync";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .map(|i| args.remove(i))
            .is_some()
    };
    let (audit, dry_run) = (flag("--audit"), flag("--dry-run"));
    let (dump, delete) = (flag("--dump"), flag("--delete"));
    let max_deletes = match args.iter().position(|a| a == "--max-deletes") {
        Some(i) if i + 1 < args.len() => args.drain(i..=i + 1).nth(1).and_then(|n| n.parse().ok()),
        _ => Some(u64::MAX),
    };
    let (Some(max_deletes), [source, dir]) = (max_deletes, &args[..]) else {
        eprintln!(
            "usage: sync-ureq [--audit] [--dry-run] [--dump] [--delete] [--max-deletes N] <SOURCE-URL> <DIR>"
        );
        return ExitCode::from(2);
    };
    let delete = delete.then_some(max_deletes);
    let run = Run {
        audit,
        dry_run,
        dump,
        delete,
    };
    match sync(source, Path::new(dir), run) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("sync-ureq: {e}");
            ExitCode::from(2)
        }
    }
}

/// What the command line asked for.
struct Run {
    audit: bool,
    dry_run: bool,
    dump: bool,
    /// Delete, at most this many.
    delete: Option<u64>,
}

fn sync(source: &str, dir: &Path, run: Run) -> Result<bool, Box<dyn std::error::Error>> {
    let Run {
        audit,
        dry_run,
        dump,
        delete,
    } = run;
    let kept = dir.join(KEPT);
    std::fs::create_dir_all(kept.join("tmp"))?;
    let state: State = load(&kept.join("state.json"))?;
    let inventory: MemoryInventory = load(&kept.join("inventory.json"))?;
    let mode = match (audit, state.sets.is_empty()) {
        (true, _) => Mode::Audit,
        (false, true) => Mode::Baseline { prefer_dump: dump },
        (false, false) => Mode::Incremental,
    };
    let mut config = Config::new(source.parse()?, mode)?.with_dry_run(dry_run);
    config = config
        .clone()
        .with_paths(config.paths.clone().with_kept_name(KEPT));
    if let Some(max) = delete {
        config = config.with_delete(max);
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .max_redirects_will_error(false)
        .http_status_as_error(false)
        .build()
        .into();
    let temp = |id: resourcesync_client::RequestId| {
        kept.join("tmp").join(id.to_string().replace(' ', "-"))
    };
    let mut client = Client::new(config, state, inventory);
    let mut packages = std::collections::HashMap::new();
    let report = 'run: loop {
        // Make the next request and stream its response to the client.
        if let Some(request) = client.poll_request(Instant::now()) {
            let keep = matches!(request.purpose, Purpose::Resource { .. } | Purpose::Package);
            match agent.run(request.http) {
                Ok(mut response) => {
                    let status = response.status();
                    client.handle_response(
                        request.id,
                        status,
                        response.headers(),
                        Instant::now(),
                    )?;
                    let mut file = match keep && status.is_success() {
                        true => Some(std::fs::File::create(temp(request.id))?),
                        false => None,
                    };
                    let mut body = response.body_mut().as_reader();
                    let mut buf = vec![0; 64 * 1024];
                    let ended = loop {
                        match body.read(&mut buf) {
                            Ok(0) => break Ok(()),
                            Ok(n) => {
                                if let Some(file) = &mut file {
                                    file.write_all(&buf[..n])?;
                                }
                                client.handle_body(request.id, &buf[..n], Instant::now())?;
                            }
                            Err(e) => break Err(e),
                        }
                    };
                    match ended {
                        Ok(()) => client.handle_end(request.id, Instant::now())?,
                        Err(e) => {
                            client.handle_failure(request.id, e.to_string(), Instant::now())?
                        }
                    }
                }
                Err(e) => client.handle_failure(request.id, e.to_string(), Instant::now())?,
            }
        } else if let Some(at) = client.poll_timeout() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            client.handle_timeout(Instant::now());
        }
        // Carry out what the client decided, and confirm it.
        while let Some(event) = client.poll_event() {
            match event {
                Event::Store(store) => {
                    let target = dir.join(store.change.path.to_path_buf());
                    match place(&temp(store.request), &target) {
                        // The client records the digests it verified in the inventory.
                        Ok(()) => client.applied(store.change.id, None, Instant::now())?,
                        Err(e) => client.failed(store.change.id, e.to_string(), Instant::now())?,
                    }
                }
                Event::Delete(change) => {
                    match std::fs::remove_file(dir.join(change.path.to_path_buf())) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => {
                            client.failed(change.id, e.to_string(), Instant::now())?
                        }
                        _ => client.applied(change.id, None, Instant::now())?,
                    }
                }
                Event::Package { request } => match Package::open(temp(request)) {
                    Ok(package) => {
                        client.handle_package(request, package.manifest(), Instant::now())?;
                        packages.insert(request, package);
                    }
                    Err(e) => client.handle_failure(request, e.to_string(), Instant::now())?,
                },
                Event::Extract(extract) => {
                    let out = kept.join("tmp").join("extract");
                    let copied = match packages.get_mut(&extract.package) {
                        Some(package) => copy(package, extract.bitstream, &out),
                        None => Err(io::Error::other("the package is not open")),
                    };
                    match copied.and_then(|digests| {
                        place(&out, &dir.join(extract.change.path.to_path_buf())).map(|()| digests)
                    }) {
                        Ok(digests) => {
                            let held = Held::of(&digests, extract.change.lastmod);
                            client.applied(extract.change.id, Some(held), Instant::now())?;
                        }
                        Err(e) => {
                            client.failed(extract.change.id, e.to_string(), Instant::now())?
                        }
                    }
                }
                Event::Release { request }
                | Event::Discard { request, .. }
                | Event::Cancel { request } => {
                    packages.remove(&request);
                    let _ = std::fs::remove_file(temp(request));
                }
                Event::Checkpoint => save(&kept, &client)?,
                Event::Problem(problem) => eprintln!("problem: {problem}"),
                Event::Done(report) => break 'run report,
                _ => {}
            }
        }
    };
    if mode != Mode::Audit && !dry_run {
        save(&kept, &client)?;
    }
    let name = match mode {
        Mode::Audit => "audit",
        Mode::Incremental => "incremental",
        _ => "baseline",
    };
    let mut line = format!(
        "{name}: {} created, {} updated, {} deleted, {} unchanged, {} failed, {} refused, {}",
        report.created,
        report.updated,
        report.deleted,
        report.unchanged,
        report.failed,
        report.refused,
        if report.complete {
            "complete"
        } else {
            "incomplete"
        }
    );
    if let Some(in_sync) = report.in_sync {
        line += if in_sync {
            ", in sync"
        } else {
            ", not in sync"
        };
    }
    println!("{line}");
    Ok(report.complete && report.in_sync.unwrap_or(true))
}

fn load<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
) -> Result<T, Box<dyn std::error::Error>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(e.into()),
    }
}

/// Saves the inventory and the state, each atomically (a temporary file, then a rename).
fn save(kept: &Path, client: &Client<MemoryInventory>) -> io::Result<()> {
    for (name, json) in [
        ("inventory.json", serde_json::to_vec(client.inventory())?),
        ("state.json", serde_json::to_vec(client.state())?),
    ] {
        let temp: PathBuf = kept.join(format!("{name}.tmp"));
        std::fs::write(&temp, json)?;
        std::fs::rename(&temp, kept.join(name))?;
    }
    Ok(())
}

/// Moves a finished temporary file into place, making its directories.
fn place(temp: &Path, target: &Path) -> io::Result<()> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(temp, target)
}

/// Copies bitstream `i` of a package to `out`, verified as it is read.
fn copy(
    package: &mut Package<io::BufReader<std::fs::File>>,
    i: usize,
    out: &Path,
) -> io::Result<resourcesync_model::Digests> {
    let mut reader = package.bitstream(i).map_err(io::Error::other)?;
    let mut fixity = resourcesync_model::Fixity::new();
    let mut file = std::fs::File::create(out)?;
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(fixity.finish());
        }
        fixity.update(&buf[..n]);
        file.write_all(&buf[..n])?;
    }
}
