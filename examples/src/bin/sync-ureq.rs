//! A blocking driver of the sans-IO client over ureq, one request at a time.
//!
//! ```text
//! sync-ureq [--audit] [--dry-run] [--baseline] [--dump] [--delete] [--max-deletes N]
//!           [--replace-foreign] <SOURCE-URL> <DIR>
//! ```
//!
//! The client asks, ureq fetches (following no redirect: the client checks them), and what
//! the client decides is done on disk by `DirectoryDestination`, as `resourcesync sync`
//! does over reqwest and tokio: the same summary line, the same exit statuses.

use std::process::ExitCode;
use std::time::Instant;

use resourcesync_cli::destination::DirectoryDestination;
use resourcesync_cli::sync::{SyncOptions, Synced};
use resourcesync_client::{Client, Event};

fn main() -> ExitCode {
    let (mut flags, mut operands, mut max_deletes) = (Vec::new(), Vec::new(), Some(u64::MAX));
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--max-deletes" => max_deletes = args.next().and_then(|n| n.parse().ok()),
            "--audit" | "--dry-run" | "--dump" | "--delete" | "--baseline"
            | "--replace-foreign" => flags.push(arg),
            _ => operands.push(arg),
        }
    }
    let (Some(max_deletes), [source, dir]) = (max_deletes, &operands[..]) else {
        let usage = "[--audit] [--dry-run] [--baseline] [--dump] [--delete] [--max-deletes N] \
            [--replace-foreign] <SOURCE-URL> <DIR>";
        eprintln!("usage: sync-ureq {usage}");
        return ExitCode::from(2);
    };
    let flag = |name: &str| flags.iter().any(|f| f == name);
    let run = |source| {
        let mut options = SyncOptions::new(source, dir).with_audit(flag("--audit"));
        options = options
            .with_dry_run(flag("--dry-run"))
            .with_baseline(flag("--baseline"))
            .with_dump(flag("--dump"))
            .with_replace_foreign(flag("--replace-foreign"));
        options.delete = flag("--delete").then_some(max_deletes);
        sync(&options)
    };
    match source.parse().map_err(Into::into).and_then(run) {
        Ok(synced) => {
            println!("{synced}");
            ExitCode::from(synced.exit_status())
        }
        Err(e) => {
            eprintln!("sync-ureq: {e}");
            ExitCode::from(2)
        }
    }
}

fn sync(options: &SyncOptions) -> Result<Synced, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut dest = DirectoryDestination::open(&options.dir)?
        .with_replace_foreign(options.replace_foreign)
        .with_repair(options.repair);
    let (state, mut inventory) = dest.load()?;
    let config = options.config(&dest, &state)?;
    // An audit or a baseline compares the listing with the bytes on disk.
    let verified = dest.verify(&config, &mut inventory)?;
    let mode = config.mode;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .max_redirects_will_error(false)
        .http_status_as_error(false)
        .build()
        .into();
    let mut client = Client::new(config, state, inventory);
    let mut report = 'run: loop {
        // Make the next request and hand its response to the client (a resource's or a
        // package's body to the destination's temporary file as well).
        if let Some(request) = client.poll_request(Instant::now()) {
            let (id, keep) = (request.id, dest.keeps_body(&request));
            match agent.run(request.http) {
                Ok(response) => {
                    let (head, mut body) = response.into_parts();
                    let (status, headers) = (head.status, &head.headers);
                    dest.receive(&mut client, id, keep, status, headers, body.as_reader())?;
                }
                Err(e) => client.handle_failure(id, e.to_string(), Instant::now())?,
            }
        } else if let Some(at) = client.poll_timeout() {
            std::thread::sleep(at.saturating_duration_since(Instant::now()));
            client.handle_timeout(Instant::now());
        }
        // Carry out what the client decided, and confirm it: the destination's work.
        while let Some(event) = client.poll_event() {
            match event {
                Event::Problem(problem) => eprintln!("problem: {problem}"),
                Event::Done(report) => break 'run report,
                event => dest.apply(&mut client, &event)?,
            }
        }
    };
    if !options.audit && !options.dry_run {
        dest.save(&client)?;
    }
    verified.count_extras(&mut report);
    Ok(Synced::new(&mode, report, started.elapsed().as_secs_f64()))
}
