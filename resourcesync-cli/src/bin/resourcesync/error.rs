//! Why a subcommand could not run (exit status 2): each library error kept whole as a
//! variant of its own, with its causes as [`source`](std::error::Error::source)s, so that
//! the command prints the chain ([`resourcesync_cli::Chain`]) and a test or a later
//! caller can still match on what went wrong. A message here says what the command was
//! doing; the cause says why it failed.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use resourcesync_cli::explore::ExploreError;
use resourcesync_destination::SyncError;
use resourcesync_model::UriError;
use resourcesync_source::collection::BuildError;

/// Why a subcommand could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A URL argument that is not a URL.
    #[error("{input:?} is not a URL")]
    Url {
        /// The argument as given.
        input: String,
        /// Why it is not one.
        #[source]
        source: UriError,
    },
    /// A `--mirror` that is not PREFIX=DIR.
    #[error("--mirror {0:?} is not PREFIX=DIR")]
    Mirror(String),
    /// Arguments missing that the command needs.
    #[error("missing: {0}")]
    Usage(String),
    /// A Sources file (`sync --sources`) that cannot be used.
    #[error(transparent)]
    Sources(#[from] resourcesync_cli::sources::SourcesError),
    /// The async runtime could not be started.
    #[error("cannot start the async runtime")]
    Runtime(#[source] io::Error),
    /// An exploration could not start or go on.
    #[error(transparent)]
    Explore(#[from] ExploreError),
    /// A sync could not start.
    #[error(transparent)]
    Sync(#[from] SyncError),
    /// A publication could not be built (the demo's).
    #[error("build")]
    Build(#[source] Box<BuildError>),
    /// A task of the command ended without its result (it panicked or was cancelled).
    #[error("{0} stopped")]
    Task(&'static str, #[source] tokio::task::JoinError),
    /// A directory or file the command makes or reads.
    #[error("{}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// A directory that must be new or empty (`demo --keep`) is not.
    #[error("{}: not empty; --keep needs a new or empty directory", .0.display())]
    NotEmpty(PathBuf),
    /// No temporary directory could be made.
    #[error("no temporary directory")]
    TempDir(#[source] io::Error),
    /// `serve`'s PUBLISH-DIR is not a directory.
    #[error("PUBLISH-DIR {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// The signal handlers could not be installed.
    #[error("cannot listen for Ctrl-C")]
    Signals(#[source] io::Error),
    /// The address could not be bound.
    #[error("cannot bind address {addr}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        #[source]
        source: io::Error,
    },
    /// The bound socket's address could not be read.
    #[error("no local address")]
    LocalAddr(#[source] io::Error),
    /// The server failed while serving (the demo's).
    #[error("the server failed")]
    Server(#[source] io::Error),
    /// `serve --hub`'s hub could not start.
    #[error(transparent)]
    Hub(#[from] resourcesync_cli::hub::HubError),
    /// The demo's live step could not go on.
    #[error("live: {0}")]
    Live(String),
    /// A summary could not be made JSON.
    #[error("JSON")]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// `input` is not a URL, as `source` says.
    pub(crate) fn url(input: &str, source: UriError) -> Error {
        Error::Url {
            input: input.to_owned(),
            source,
        }
    }

    /// An IO error about `path`, as a `map_err` argument.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
