//! The `resourcesync` command.
//!
//! ```text
//! resourcesync validate [--json] [--deny-warnings] [--max-bytes SIZE] [--timeout D] <INPUT>...
//! resourcesync sync [OPTIONS] <SOURCE-URL> <DIR>
//! resourcesync explore [--json] <URL>
//! resourcesync build [OPTIONS] --base-url <URL> <COLLECTION-DIR> <PUBLISH-DIR>
//! resourcesync demo [--source <URL>] [--live [N]] [--keep <DIR>] [--json]
//! resourcesync serve [--addr IP:PORT] [--json] <PUBLISH-DIR>
//! ```
//!
//! What each subcommand does, what it prints (text and JSON) and its exit statuses are
//! written once, in its help below: `resourcesync validate --help`. Subcommands are
//! variants of [`Command`], each with arguments of its own, so `sync`, `build` and
//! `serve` can join `validate` without touching it.

// No unwrap or expect outside tests: what input or the file system can make fail is an
// error the caller gets (the tests' own setup may unwrap).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use std::process::ExitCode;

/// mimalloc, not the system's allocator: a sync of many small files allocates and frees
/// per request on several threads, and glibc's malloc (its arenas, `malloc_consolidate`)
/// was a sixth of such a run's CPU (perf, 10,000 files of 1 KiB).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

mod build;
mod demo;
mod error;
mod explore;
mod harvest;
mod live;
mod serve;
mod sync;
mod validate;

/// Exit statuses common to the subcommands, for the top-level help.
const TOP_EXIT_STATUS: &str = "\
Exit status:
  0  success: the inputs are valid, the sync completed
  1  the command ran and found a problem: a rule broken, a sync incomplete or refused
  2  the command could not run: an unreadable input, a wrong command line
Each subcommand's --help says exactly when.";

/// ResourceSync (ANSI/NISO Z39.99-2017) documents and packages.
#[derive(Parser)]
#[command(name = "resourcesync", version, after_help = TOP_EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands.
#[derive(Subcommand)]
enum Command {
    /// Checks documents and packages against the standard's rules.
    #[command(
        long_about = validate::VALIDATE_ABOUT,
        after_help = validate::VALIDATE_EXIT,
        after_long_help = format!("{}\n\n{}", validate::VALIDATE_OUTPUT, validate::VALIDATE_EXIT),
    )]
    Validate(validate::ValidateArgs),
    /// Keeps a directory in step with a ResourceSync Source.
    #[command(
        long_about = sync::SYNC_ABOUT,
        after_help = sync::SYNC_EXIT,
        after_long_help = format!("{}\n\n{}\n\n{}", sync::SYNC_OUTPUT, harvest::SOURCES_HELP, sync::SYNC_EXIT),
    )]
    Sync(sync::SyncArgs),
    /// Shows the documents a ResourceSync Source offers, as a tree.
    #[command(long_about = explore::EXPLORE_ABOUT)]
    Explore(explore::ExploreArgs),
    /// Publishes a directory as a ResourceSync Source, incrementally and atomically.
    #[command(
        long_about = build::BUILD_ABOUT,
        after_help = build::BUILD_EXIT,
        after_long_help = format!("{}\n\n{}", build::BUILD_OUTPUT, build::BUILD_EXIT),
    )]
    Build(build::BuildArgs),
    /// Shows the whole family at work: publish, serve, sync, change, sync, audit.
    #[command(
        long_about = demo::DEMO_ABOUT,
        after_help = demo::DEMO_EXIT,
        after_long_help = format!("{}\n\n{}", demo::DEMO_OUTPUT, demo::DEMO_EXIT),
    )]
    Demo(demo::DemoArgs),
    /// Publishes a directory over HTTP as a ResourceSync Source.
    #[command(
        long_about = serve::SERVE_ABOUT,
        after_help = serve::SERVE_EXIT,
        after_long_help = format!("{}\n\n{}", serve::SERVE_OUTPUT, serve::SERVE_EXIT),
    )]
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    // clap prints help and version to stdout with status 0, and usage errors to stderr
    // with status 2, the status of an unreadable input.
    match Cli::parse().command {
        Command::Validate(args) => validate::run(&args),
        Command::Sync(args) => sync::run(args),
        Command::Explore(args) => explore::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Serve(args) => serve::run(&args),
    }
}
