//! `resourcesync serve`: the command line over [`resourcesync_cli::serve`] (which serves
//! a publication until told to stop): its arguments, help, signals, start line and exit
//! status.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::error::Error;
use crate::sync::block_on;
use resourcesync_cli::hub::{HubNotice, HubReporter, HubServer};
use resourcesync_cli::serve::{
    DEFAULT_MAX_CONNECTIONS, DEFAULT_SHUTDOWN_TIMEOUT, Reporter, ServeLimits, built_for_elsewhere,
    serve_reporting, serve_with_hub, serve_with_topic_hub,
};
use resourcesync_websub::{CallbackPolicy, HubEvent, HubOptions, Leases};

/// What `serve` does, for its long help.
pub(crate) const SERVE_ABOUT: &str = "\
Publishes PUBLISH-DIR over HTTP as a ResourceSync Source (section 6.3 discovery included).

Every file under PUBLISH-DIR is served as it is, with its media type, Content-Length,
Last-Modified and an ETag; conditional requests (If-Match, If-Unmodified-Since,
If-None-Match, If-Modified-Since, If-Range), HEAD and single byte ranges are answered (a
Range header of several ranges, or one that is not a byte range, gets the whole file),
and text, XML and JSON are gzipped for clients that accept it (never a range, nor a
binary file). Names starting with a dot are not served, except .well-known/. The Source
Description at .well-known/resourcesync and every *.xml are application/xml.

Conditional requests are compared with the representation the request gets: the
gzipped one has an ETag of its own (ending in -gzip\"), and a range is of the file as it
is. If-None-Match compares weakly, If-Match and If-Range strongly; a field sent on
several lines is one list. Dates may be in any of HTTP's three forms, of any year (a day
name that does not fit the date is not held against it); a date later than the
server's clock, a field of two dates, or one that is not a date is ignored. A file
modified in the future or before 1970 has no Last-Modified, and the date conditionals
are ignored for it (its ETag still validates it). If-Range holds for the file's ETag
only: a date there is never taken (a Last-Modified may be weak, and a resumed download
would join two versions), so the whole file is sent. A request with two Host lines or an
invalid one (a port that is not digits, a comma, userinfo), and an HTTP/1.1 request
without Host, are 400. A file asked for with a trailing slash (/a.txt/) is 404, and a
request target that is not a path (a.txt, host:80) is 400.

Discovery is derived from the Source Description at each request: /robots.txt (unless
PUBLISH-DIR has one) has a Sitemap line per Resource List of its Capability Lists, / (unless
PUBLISH-DIR has index.html) is a page linking each Capability List with
<link rel=\"resourcesync\">, and every resource outside the ResourceSync documents carries
a Link header with rel=\"resourcesync\" to its Capability List(s). Without a Source
Description, / and /robots.txt are 404 and no Link header is sent.

Nothing outside the publication is served, however links change. PUBLISH-DIR may be a
symbolic link swapped to switch to a new generation: it is resolved anew by every
request. A symbolic link in the generation itself is the publisher's and is followed
(build links the collection's files and directories so); beneath it no link is followed
(build never publishes one: a link there was made since), nor a name the build linked
swapped for a link: those are 404, as are FIFOs, sockets, devices and names the file
system refuses (too long, through a file). 503 means the server is out of descriptors
or memory for a while; any other failure of the file system (a read error, a stale
network file handle, a timeout) is 500, logged on standard error, never 404. A file
that shrinks (or fails to read) while it is sent is sent as far as it goes, then the
connection is closed, its body shorter than its Content-Length; one that grows is sent
to its Content-Length.

Connections: at most --max-connections are served at once; at the limit, a new
connection is accepted and the connection idle longest with no response in flight (one
that sent nothing, a keep-alive connection, a client trickling its request) is closed
to make room for it, so that silent clients cannot hold every slot; when every one has
a response in flight, new connections wait in the system's queue. A request's head must
arrive within --header-timeout; a connection on which nothing moves for --idle-timeout
while no request is being answered (a keep-alive connection, a client that stopped
reading) is closed. Durations are written 500ms, 30s, 2m, 1h, 1d, or a number of seconds.

With --hub, a WebSub hub (W3C WebSub; ResourceSync Change Notification 1.0.1) answers at
/hub beside the publication: subscriptions and unsubscriptions take effect once the
callback echoes a random challenge (at most 1,000 requests wait for theirs: past it, 503;
at most 1,000 subscriptions for callbacks on one host: past it, 429; 100,000 in all);
leases are granted from 5 minutes to a month (--hub-lease-min, --hub-lease-max; 10 days
by default) and end; a subscriber's hub.secret signs what it is sent (X-Hub-Signature,
sha256); a Source's notification POSTed with its topic in a Link rel=\"self\" header,
or a publish ping (hub.mode=publish, hub.topic or hub.url: the topic is fetched), from a
--hub-publisher address (loopback by default: anyone else gets 403), goes to
every subscriber of the topic, each through a queue of its own (1,000 bodies; a slow or
dead subscriber delays no other), retried after a doubling wait and given up after 8
failures in a row; 410 Gone ends a subscription. Only topics under --hub-topic (this
server's URL by default) are relayed or fetched, and requests go only to callbacks on
--hub-allow hosts (by default any host but localhost and loopback, private and
link-local addresses; --hub-allow localhost allows the loopback addresses too). The subscriptions are saved in --hub-state (beside PUBLISH-DIR by
default: .<name>.hub.json, readable by its owner alone) after each change, and kept across
a restart.

The server listens on --addr (loopback unless told otherwise) and stops on Ctrl-C or
SIGTERM, letting the requests in flight finish for up to 30 s (then their connections
are closed).";

/// The output of `serve`, for its long help.
pub(crate) const SERVE_OUTPUT: &str = "\
Output:
  One line once the address is bound (with the port chosen, for --addr HOST:0):
    serving <PUBLISH-DIR> at http://<addr>/[ with a hub at http://<addr>/hub]
  and a warning on standard error when the publication was built for another address
  (its Source Description names another host or port): a Destination starting here would
  be refused its documents' URIs.

  With --hub, a line on standard error for each subscription made, renewed, ended or
  refused, each body dropped and each topic that could not be fetched.

JSON (--json):
  {\"addr\": \"<ip>:<port>\", \"dir\": \"<PUBLISH-DIR>\", \"url\": \"http://<addr>/\"[, \"hub\": \"http://<addr>/hub\"]}";

/// Exit statuses of `serve`.
pub(crate) const SERVE_EXIT: &str = "\
Exit status:
  0  the server stopped on Ctrl-C or SIGTERM
  1  the server failed after it had started (its listening socket became unusable)
  2  it could not start: PUBLISH-DIR is not a directory, the address cannot be bound";

/// `--addr`: an IP address and port, a host name and port (the first address the system's
/// resolver gives for it: `localhost:8080`), or a port alone (on 127.0.0.1, as the default).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    match std::net::ToSocketAddrs::to_socket_addrs(text) {
        Ok(mut found) => found
            .next()
            .ok_or_else(|| format!("{text} names no address")),
        Err(e) => Err(format!("not IP:PORT, HOST:PORT or PORT ({e})")),
    }
}

/// The arguments of `resourcesync serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The directory to publish (may be a symbolic link, swapped while serving).
    #[arg(value_name = "PUBLISH-DIR")]
    pub dir: PathBuf,
    /// The address to listen on: IP:PORT, HOST:PORT (`localhost:8080`, the first address
    /// the name has) or a PORT alone (on 127.0.0.1); port 0 picks a free port.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8080", value_parser = listen_address)]
    pub addr: SocketAddr,
    /// Print the start line as a JSON object.
    #[arg(long)]
    pub json: bool,
    /// The most connections served at once [default: 512, or half of `ulimit -n` if less]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// How long a request's head (request line and headers) may take to arrive.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = resourcesync_cli::units::duration)]
    pub header_timeout: Duration,
    /// How long a connection may sit with nothing moving while no request is answered.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = resourcesync_cli::units::duration)]
    pub idle_timeout: Duration,
    /// Run a WebSub hub at /hub beside the publication.
    #[arg(long)]
    pub hub: bool,
    /// The hub sends requests only to callbacks on this host (repeat for more) [default:
    /// any host but localhost and loopback, private and link-local addresses]
    #[arg(long, value_name = "HOST", requires = "hub")]
    pub hub_allow: Vec<String>,
    /// The hub takes notifications and publish pings from this address only (repeat for
    /// more) [default: loopback addresses: a Source publishing beside it]
    #[arg(long, value_name = "IP", requires = "hub")]
    pub hub_publisher: Vec<std::net::IpAddr>,
    /// The hub relays only topics whose URL starts with this (repeat for more) [default:
    /// this server's URL]
    #[arg(long, value_name = "URL-PREFIX", requires = "hub")]
    pub hub_topic: Vec<String>,
    /// The hub elsewhere the publication's notifications go through: the topic
    /// (resourcesync/change-notification.xml) is served with a Link header naming it and
    /// itself, which a hub checks when it fetches the topic after a publish ping
    #[arg(long, value_name = "URL", conflicts_with = "hub")]
    pub hub_url: Option<String>,
    /// Where the hub keeps its subscriptions [default: `.NAME.hub.json` beside PUBLISH-DIR,
    /// NAME its name]
    #[arg(long, value_name = "FILE", requires = "hub")]
    pub hub_state: Option<PathBuf>,
    /// The shortest lease the hub grants (at least 1s) [default: 5m]
    #[arg(long, value_name = "DURATION", value_parser = resourcesync_cli::units::duration, requires = "hub")]
    pub hub_lease_min: Option<Duration>,
    /// The longest lease the hub grants: no subscription outlives it unrenewed [default:
    /// 31d]
    #[arg(long, value_name = "DURATION", value_parser = resourcesync_cli::units::duration, requires = "hub")]
    pub hub_lease_max: Option<Duration>,
}

impl ServeArgs {
    /// The connection limits the arguments ask for; without `--max-connections`, as many
    /// as the process's limit of open files allows, up to [`DEFAULT_MAX_CONNECTIONS`].
    pub(crate) fn limits(&self) -> ServeLimits {
        ServeLimits {
            max_connections: self
                .max_connections
                .unwrap_or_else(max_connections_that_fit),
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// The descriptors a server keeps besides its connections' (standard streams, the
/// listener, the runtime's event queue and wakers, a Source Description being read).
const OWN_FILES: u64 = 16;

/// [`DEFAULT_MAX_CONNECTIONS`], or fewer where the process may open fewer than twice as
/// many files (macOS's default limit is 256): past the limit of open files, accepting
/// fails and connections wait in the listen queue anyway, with those served unable to
/// open a file.
fn max_connections_that_fit() -> u32 {
    #[cfg(unix)]
    if let Some(files) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        let fit = files.saturating_sub(OWN_FILES) / 2;
        return u32::try_from(fit)
            .unwrap_or(u32::MAX)
            .clamp(1, DEFAULT_MAX_CONNECTIONS);
    }
    DEFAULT_MAX_CONNECTIONS
}

/// Runs `serve` and returns its exit status: binds, prints the start line, serves until
/// Ctrl-C or SIGTERM.
pub(crate) fn run(args: &ServeArgs) -> ExitCode {
    block_on("serve", async {
        // Checked once to refuse a typo at startup; never canonicalized or kept open, so
        // that a swap of the link is seen (a directory missing later gives 404s).
        if !args.dir.is_dir() {
            return Err(Error::NotADirectory(args.dir.clone()));
        }
        let shutdown = ctrl_c().map_err(Error::Signals)?;
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(|source| Error::Bind {
                addr: args.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(Error::LocalAddr)?;
        let dir = args.dir.display().to_string();
        let hub_url = format!("http://{addr}{HUB_PATH}");
        let hub = if args.hub {
            Some(open_hub(args, addr, &hub_url)?)
        } else {
            None
        };
        if args.json {
            let mut line = serde_json::json!({"addr": addr.to_string(), "dir": dir,
                "url": format!("http://{addr}/")});
            if hub.is_some() {
                line["hub"] = serde_json::Value::String(hub_url.clone());
            }
            println!("{line}");
        } else if hub.is_some() {
            println!("serving {dir} at http://{addr}/ with a hub at {hub_url}");
        } else {
            println!("serving {dir} at http://{addr}/");
        }
        if let Some(warning) = built_for_elsewhere(&args.dir, addr).await {
            eprintln!("resourcesync serve: warning: {warning}");
        }
        // A file the server cannot read is its operator's to look into: said here.
        let report: Reporter =
            std::sync::Arc::new(|failure| eprintln!("resourcesync serve: {failure}"));
        let topic_hub = match &args.hub_url {
            Some(url) => Some(url.parse().map_err(|e| Error::url(url, e))?),
            None => None,
        };
        let served = match (hub, topic_hub) {
            (None, Some(topic_hub)) => {
                serve_with_topic_hub(
                    listener,
                    args.dir.clone(),
                    args.limits(),
                    report,
                    topic_hub,
                    shutdown,
                )
                .await
            }
            (Some(hub), _) => {
                serve_with_hub(
                    listener,
                    args.dir.clone(),
                    args.limits(),
                    report,
                    hub,
                    HUB_PATH,
                    shutdown,
                )
                .await
            }
            (None, None) => {
                serve_reporting(listener, args.dir.clone(), args.limits(), report, shutdown).await
            }
        };
        match served {
            Ok(()) => Ok(0),
            Err(e) => {
                eprintln!("resourcesync serve: {}", resourcesync_cli::Chain(&e));
                Ok(1)
            }
        }
    })
}

/// Where the hub answers.
const HUB_PATH: &str = "/hub";

/// The hub `--hub` asks for, its subscriptions restored.
fn open_hub(
    args: &ServeArgs,
    addr: SocketAddr,
    hub_url: &str,
) -> Result<std::sync::Arc<HubServer>, Error> {
    let url = hub_url.parse().map_err(|e| Error::url(hub_url, e))?;
    let topics = if args.hub_topic.is_empty() {
        vec![format!("http://{addr}/")]
    } else {
        args.hub_topic.clone()
    };
    let mut options = HubOptions::new(url, topics);
    if !args.hub_allow.is_empty() {
        options = options.with_callbacks(CallbackPolicy::Hosts(args.hub_allow.clone()));
    }
    if args.hub_lease_min.is_some() || args.hub_lease_max.is_some() {
        let leases = options.leases;
        let max = args.hub_lease_max.unwrap_or(leases.max);
        // A longest lease under the default shortest one lowers that one too (rather
        // than be raised to it).
        let min = args.hub_lease_min.unwrap_or(leases.min.min(max));
        options = options.with_leases(Leases::new(leases.default, min, max));
    }
    let state = args.hub_state.clone().unwrap_or_else(|| {
        let name = args.dir.file_name().map_or_else(
            || "publication".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let parent = args
            .dir
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        parent.join(format!(".{name}.hub.json"))
    });
    let report: HubReporter = std::sync::Arc::new(print_notice);
    HubServer::open(options, args.hub_publisher.clone(), Some(state), report).map_err(Error::Hub)
}

/// A callback as the operator's log shows it: its scheme, host and port. The rest (its
/// userinfo, its path) is the subscriber's secret (WebSub 6: an unguessable URL authenticates the hub's requests).
fn shown(callback: &resourcesync_model::Uri) -> String {
    match callback.host_port() {
        Some(host_port) => format!("{}://{host_port}/…", callback.scheme()),
        None => "a callback".into(),
    }
}

/// What the operator of a hub hears of: subscriptions made and ended, what was lost.
fn print_notice(notice: HubNotice<'_>) {
    let line = match notice {
        HubNotice::Event(event) => match event {
            HubEvent::Subscribed {
                topic,
                callback,
                lease,
                renewed,
            } => {
                let what = if *renewed {
                    "renewed its subscription"
                } else {
                    "subscribed"
                };
                format!(
                    "{} {what} to {topic} for {} s",
                    shown(callback),
                    lease.as_secs()
                )
            }
            HubEvent::Unsubscribed { topic, callback } => {
                format!("{} unsubscribed from {topic}", shown(callback))
            }
            HubEvent::NotVerified {
                topic,
                callback,
                status,
            } => match status {
                Some(status) => format!(
                    "{} did not confirm its request about {topic} ({status})",
                    shown(callback)
                ),
                None => format!(
                    "{} did not answer the verification about {topic}",
                    shown(callback)
                ),
            },
            HubEvent::Expired { topic, callback } => {
                format!("the lease of {} on {topic} ended", shown(callback))
            }
            HubEvent::Gone { topic, callback } => {
                format!(
                    "{} is gone (410): its subscription to {topic} ended",
                    shown(callback)
                )
            }
            HubEvent::Dropped {
                topic,
                callback,
                why,
            } => {
                format!(
                    "a body of {topic} for {} was dropped: {why}",
                    shown(callback)
                )
            }
            HubEvent::FetchFailed { topic, status } => match status {
                Some(status) => format!("could not fetch {topic} ({status}); trying again"),
                None => format!("could not fetch {topic}; trying again"),
            },
            _ => return,
        },
        HubNotice::NotSaved(e) => format!("{}", resourcesync_cli::Chain(e)),
        // The reason may quote what the client sent: escaped for the terminal.
        HubNotice::Refused {
            status,
            reason,
            callback_not_allowed,
        } => {
            // What the operator can do about it, where it is theirs to do.
            let allow = match callback_not_allowed {
                true => "; --hub-allow HOST lets the hub send to a host",
                false => "",
            };
            format!(
                "refused a request ({status}): {}{allow}",
                resourcesync_model::text::escaped(reason)
            )
        }
        _ => return,
    };
    // The URIs in it were parsed: no control character reaches the terminal.
    eprintln!("resourcesync serve: hub: {line}");
}

/// Completes at Ctrl-C (or SIGTERM, as a service manager stops a server). The handlers
/// are installed here, before the start line is printed, so that a signal right after it
/// is not missed: `tokio::signal::ctrl_c()` installs its handler only when first polled.
fn ctrl_c() -> io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(windows)]
    {
        let mut ctrl_c = tokio::signal::windows::ctrl_c()?;
        Ok(async move {
            ctrl_c.recv().await;
        })
    }
}
