//! The `tracker` command line: serve, and the admin commands that need no browser.

use crate::cli::stdout::outln;

use crate::{
    config::{RedisArgs, ServeArgs},
    embedded_redis::EmbeddedRedis,
    ops::{self, blocks, projects::TargetAction, Actor, OpsError},
    store::{Store, StoreError},
};

mod admin;
mod archives;
mod commands;
pub mod dictionary;
mod migrate;
mod pipeline;
pub mod progress;
pub mod stdout;
pub use admin::AdminCommand;
pub use commands::{ItemsCommand, ProjectCommand, StorageCommand};
pub use dictionary::DictionaryCommand;
pub use migrate::MigrateArgs;
pub use pipeline::PipelineCommand;

/// `tracker [COMMAND]`
#[derive(clap::Parser, Debug)]
#[command(
    name = "tracker",
    version,
    about = "A tracker for distributed archiving"
)]
pub struct Cli {
    /// Redis settings, shared by every command.
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Threads that run the tracker's tasks (the async runtime's workers). Default: one per
    /// core. On a small machine shared with its Redis, one less than the cores cut the
    /// tracker's CPU per claim and done pair by 12-22 % on 2 cores, at the cost of its p99
    /// latency (twice at half of the peak) and of 6 % of pairs/s at 256 warriors
    /// (bench/README.md).
    #[arg(long, env = "TRACKER_WORKER_THREADS", global = true,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    /// What to do (default: serve).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Run the web server (the default).
    Serve(Box<ServeArgs>),
    /// Write the Wasm, JS and CSS bundles' brotli and gzip copies, served to browsers that
    /// accept them (`make build` runs it; the server also does it when it starts). Needs no Redis.
    Precompress {
        /// The bundles' directory.
        #[arg(default_value = "target/site/pkg")]
        dir: std::path::PathBuf,
    },
    /// Print the Redis Functions library the tracker runs (`library`: for reading a Redis
    /// error's line number), or one Lua script alone for `EVAL`, prelude and helpers included
    /// (for measuring a change to it). Needs no Redis.
    #[command(hide = true)]
    Script {
        /// `library`, or a script's name (`claim`, `done`, ...).
        name: String,
    },
    /// Where segment files live: `tracker storage copy --from URL --to URL` copies every
    /// object of one storage to another (`file://DIR`, `s3://BUCKET/PREFIX`), to move an
    /// install into a bucket or back. Resumable: an object the destination holds with the same
    /// SHA-256 is skipped; each copy is read back and its SHA-256 checked. Needs no Redis.
    #[command(subcommand)]
    Storage(StorageCommand),
    /// Manage projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Manage items.
    #[command(subcommand)]
    Items(ItemsCommand),
    /// Block an IP or downloader name, in a project or globally (checked as in the panel).
    Block {
        /// `ip` or `dl` (downloader name).
        kind: String,
        /// The IP or name.
        value: String,
        /// The project (default: the global list).
        #[arg(long)]
        project: Option<String>,
        /// Why.
        #[arg(long, default_value = "")]
        reason: String,
        /// Hours until the block lifts (default: never).
        #[arg(long)]
        hours: Option<u64>,
    },
    /// Lift a block.
    Unblock {
        /// `ip` or `dl`.
        kind: String,
        /// The IP or name.
        value: String,
        /// The project (default: the global list).
        #[arg(long)]
        project: Option<String>,
    },
    /// Add (`--off` deactivates) or remove (`--remove`) an upload target; lists them after.
    Target {
        /// Project slug.
        slug: String,
        /// e.g. `rsync://host/module/:downloader/`.
        target: Option<String>,
        /// Keep it but do not hand it out.
        #[arg(long)]
        off: bool,
        /// Remove it.
        #[arg(long)]
        remove: bool,
    },
    /// Manage admin panel accounts.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Manage pipeline tokens (what warrior clients claim with, for projects that ask for one).
    #[command(subcommand)]
    Pipeline(PipelineCommand),
    /// Manage a project's zstd dictionaries (what the grab scripts compress their WARCs with).
    #[command(subcommand)]
    Dictionary(DictionaryCommand),
    /// Import a live universal tracker's database (read-only, resumable).
    Migrate(MigrateArgs),
    /// A project's completion log archives, where any process stored them (the archive
    /// directory, or the object store of `TRACKER_STORAGE`): listed (name and bytes), or one
    /// written to stdout (gzip NDJSON, as the panel downloads it).
    Archives {
        /// Project slug.
        slug: String,
        /// An archive's name (from the list): written to stdout.
        name: Option<String>,
        /// Where archives are files (default: `archive` under the data directory).
        #[arg(long, env = "TRACKER_ARCHIVE_DIR")]
        archive_dir: Option<std::path::PathBuf>,
    },
    /// Verify a project's invariant; exits non-zero on any violation.
    Check {
        /// Project slug.
        slug: String,
        /// First set the count of items the project knows to the items in a state now: for a
        /// project from before the count was kept, or to accept a loss already reported.
        #[arg(long)]
        recount: bool,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The user asked for something invalid.
    #[error("{0}")]
    Usage(String),
    /// Reading input failed.
    #[error("reading {0}: {1}")]
    Io(String, std::io::Error),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The operation was refused, or failed.
    #[error(transparent)]
    Ops(#[from] OpsError),
    /// The private Redis could not start.
    #[error(transparent)]
    Launch(#[from] crate::embedded_redis::LaunchError),
}

/// The Redis to use: `REDIS_URL`, or the private one (started if needed; stop it when done).
pub async fn redis(args: &RedisArgs) -> Result<(String, Option<EmbeddedRedis>), CliError> {
    match &args.redis_url {
        Some(url) => {
            if let Some(fsync) = args.fsync {
                // That server's durability is its operator's: the tracker does not reconfigure it.
                tracing::warn!(
                    fsync = fsync.as_str(),
                    "TRACKER_FSYNC is ignored with REDIS_URL: set appendfsync on that server"
                );
            }
            Ok((url.clone(), None))
        }
        None => {
            let embedded =
                EmbeddedRedis::ensure(&args.data_dir, args.redis_maxmemory, args.fsync).await?;
            Ok((embedded.url(), Some(embedded)))
        }
    }
}

/// Runs an admin command against `store`; every change is audited under [`ops::CLI_ACTOR`].
pub async fn run_admin(store: &Store, command: Command) -> Result<(), CliError> {
    let cli = Actor::cli();
    match command {
        Command::Serve(_)
        | Command::Precompress { .. }
        | Command::Script { .. }
        | Command::Storage(_) => Err(CliError::Usage(
            "serve, precompress and script are not admin commands".into(),
        )),
        Command::Admin(cmd) => admin::run(store, cmd).await,
        Command::Archives {
            slug,
            name,
            archive_dir,
        } => {
            let dir = archive_dir.unwrap_or_else(|| std::path::PathBuf::from("data/archive"));
            archives::run(store, &slug, name, &dir).await
        }
        Command::Pipeline(cmd) => pipeline::run(store, cmd).await,
        Command::Dictionary(cmd) => dictionary::run(store, cmd).await,
        Command::Migrate(args) => migrate::run(store, args).await,
        Command::Project(cmd) => run_project(store, &cli, cmd).await,
        Command::Items(ItemsCommand::Search {
            slug,
            state,
            glob,
            regex,
            claimant,
            older_than,
            limit,
            cursor,
        }) => {
            let q = crate::ops::items::search_query(&crate::ops::items::SearchParams {
                state,
                glob,
                regex,
                claimant,
                older_than,
                limit: Some(limit),
                cursor,
            })?;
            if store.projects().project(&slug).await?.is_none() {
                return Err(CliError::Usage(format!("no such project {slug:?}")));
            }
            let page = store
                .queue()
                .search_items(&slug, &q, crate::store::now_ms())
                .await?;
            for f in &page.items {
                match (&f.claimant, f.claimed_at) {
                    (Some(who), Some(t)) => outln!("{}\t{}\t{who}\t{t}", f.item, f.state),
                    _ => outln!("{}\t{}", f.item, f.state),
                }
            }
            match &page.cursor {
                Some(c) => eprintln!("next page: --cursor {c}"),
                None => eprintln!("last page"),
            }
            Ok(())
        }
        Command::Items(ItemsCommand::Show { slug, item }) => {
            let status = store.queue().item_status(&slug, &item).await?;
            let body = serde_json::json!({
                "status": status.state,
                "downloader": status.downloader,
                "detail": status.detail,
                "score": status.score,
                "reclaims": status.reclaims,
                "history": serde_json::from_str::<serde_json::Value>(&status.timeline).unwrap_or_default(),
            });
            outln!(
                "{}",
                serde_json::to_string_pretty(&body).unwrap_or_default()
            );
            Ok(())
        }
        Command::Items(ItemsCommand::Add {
            slug,
            queue,
            max_item,
            file,
        }) => {
            let (source, size): (Box<dyn std::io::Read + Send>, _) = if file == "-" {
                (Box::new(std::io::stdin()), None)
            } else {
                let f = std::fs::File::open(&file).map_err(|e| CliError::Io(file.clone(), e))?;
                let size = f.metadata().ok().map(|m| m.len());
                (Box::new(f), size)
            };
            let shown = progress::Progress::new("items add", size);
            let source = shown.reader(source);
            let how = ops::items::Adding {
                queue: &queue,
                dry_run: false,
                max_item,
            };
            let added = ops::items::add(store, &cli, &slug, how, source, &|n| shown.items(n)).await;
            shown.finish();
            let added = added?;
            outln!("{added} new items added to {slug} {queue}");
            Ok(())
        }
        Command::Block {
            kind,
            value,
            project,
            reason,
            hours,
        } => {
            let kind = blocks::parse_kind(&kind)?;
            let scope = project
                .as_ref()
                .map(|p| format!("in {p}"))
                .unwrap_or_else(|| "globally".into());
            let how = blocks::NewBlock {
                project,
                reason,
                hours,
            };
            let value = blocks::block(store, &cli, kind, &value, how).await?;
            outln!("blocked {value} {scope}");
            Ok(())
        }
        Command::Unblock {
            kind,
            value,
            project,
        } => {
            let kind = blocks::parse_kind(&kind)?;
            blocks::unblock(store, &cli, project.as_deref(), kind, &value).await?;
            outln!("unblocked {value}");
            Ok(())
        }
        Command::Target {
            slug,
            target,
            off,
            remove,
        } => {
            let targets = match target {
                Some(target) => {
                    let action = match (remove, off) {
                        (true, _) => TargetAction::Remove,
                        (false, true) => TargetAction::Deactivate,
                        (false, false) => TargetAction::Activate,
                    };
                    ops::projects::change_target(store, &cli, &slug, &target, action).await?
                }
                None => {
                    ops::project(store, &slug).await?;
                    store.projects().upload_targets(&slug).await?
                }
            };
            for (t, active) in targets {
                outln!("{} {t}", if active { "active  " } else { "inactive" });
            }
            Ok(())
        }
        Command::Check { slug, recount } => {
            if recount {
                let (before, now) = ops::projects::recount(store, &cli, &slug).await?;
                let before = before.map_or("not kept".to_string(), |n| n.to_string());
                outln!(
                    "{slug}: item count set to {now} from the items in a state (was {before}); \
                     what was lost before cannot be seen"
                );
            }
            let started = std::time::Instant::now();
            let shown = progress::Steps::new(&format!("check {slug}"));
            let problems = store
                .upkeep()
                .check_with(&slug, &|done, total| shown.at(done, total))
                .await;
            shown.finish();
            let problems = problems?;
            let took = format!("checked in {:.1} s", started.elapsed().as_secs_f64());
            for p in &problems {
                outln!("{p}");
            }
            if problems.is_empty() {
                outln!("ok: {slug} holds its invariant ({took})");
                Ok(())
            } else {
                Err(CliError::Usage(format!(
                    "{} violations in {slug} ({took})",
                    problems.len()
                )))
            }
        }
    }
}

/// `tracker project ...`
async fn run_project(store: &Store, cli: &Actor, command: ProjectCommand) -> Result<(), CliError> {
    match command {
        ProjectCommand::Create {
            slug,
            title,
            domains,
        } => {
            let title = title.unwrap_or_default();
            let p = ops::projects::create(store, cli, &slug, &title, domains).await?;
            outln!("created project {}", p.slug);
        }
        ProjectCommand::Set { slug, changes } => {
            let current = ops::project(store, &slug).await?;
            let updated = ops::settings::apply_changes(&current, &changes)?;
            ops::settings::save(store, cli, &slug, &current, &updated).await?;
            outln!("updated {slug}");
            if updated.settings().fifo != current.fifo {
                outln!("note: the new order applies to items queued from now on; items already waiting keep their place");
            }
        }
        ProjectCommand::Show { slug } => {
            let current = ops::project(store, &slug).await?;
            outln!(
                "{}",
                serde_json::to_string_pretty(&*current).unwrap_or_default()
            );
        }
        ProjectCommand::Listing { slug, changes } => {
            ops::project(store, &slug).await?;
            let current = store.projects().listing(&slug).await?;
            if changes.is_empty() {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&current).unwrap_or_default()
                );
            } else {
                let mut updated = ops::listing::apply_changes(&current, &changes)?;
                // The operator's command line is a global admin's: what it saves is approved.
                updated.approved = Some(updated.repository.clone());
                ops::listing::save(store, cli, &slug, &current, &updated).await?;
                outln!("updated the listing of {slug}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
