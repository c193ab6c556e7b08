//! The `tracker` command line: serve, and the admin commands that need no browser.

use crate::{
    config::{RedisArgs, ServeArgs},
    embedded_redis::EmbeddedRedis,
    keys::QUEUES,
    store::{valid_slug, BlockEntry, BlockKind, NewProject, Store, StoreError},
};
use tokio::io::{AsyncBufReadExt, BufReader};

mod admin;
mod settings;
pub use admin::AdminCommand;
pub use settings::{apply_changes, validate_settings};

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
    /// Manage projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Manage items.
    #[command(subcommand)]
    Items(ItemsCommand),
    /// Block an IP or downloader name, in a project or globally.
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

/// `tracker project ...`
#[derive(clap::Subcommand, Debug)]
pub enum ProjectCommand {
    /// Create a project.
    Create {
        /// `[a-z0-9-]{1,64}`
        slug: String,
        /// Title shown on the pages (default: the slug).
        #[arg(long)]
        title: Option<String>,
        /// Byte domains a done reports, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "data")]
        domains: Vec<String>,
    },
    /// Change settings: `KEY=VALUE` ... (e.g. `rate=10 burst=20 fifo=true domains=data,warc
    /// pattern_limits='[{"name":"img","pattern":"\\.jpg$","rate":5,"burst":5}]'`).
    Set {
        /// Project slug.
        slug: String,
        /// Settings to change.
        #[arg(required = true)]
        changes: Vec<String>,
    },
    /// Print the settings as JSON.
    Show {
        /// Project slug.
        slug: String,
    },
}

/// `tracker items ...`
#[derive(clap::Subcommand, Debug)]
pub enum ItemsCommand {
    /// Queue items, one per line, from FILE or `-` (standard input); prints how many were new.
    Add {
        /// Project slug.
        slug: String,
        /// Queue to add to.
        #[arg(long, default_value = "todo")]
        queue: String,
        /// File of items, or `-` for standard input.
        #[arg(default_value = "-")]
        file: String,
    },
    /// Where an item is, and its last transitions.
    Show {
        /// Project slug.
        slug: String,
        /// The item.
        item: String,
    },
}

/// Errors of a CLI command, printed as they are.
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

/// Runs an admin command against `store`.
pub async fn run_admin(store: &Store, command: Command) -> Result<(), CliError> {
    match command {
        Command::Serve(_) | Command::Precompress { .. } => Err(CliError::Usage(
            "serve and precompress are not admin commands".into(),
        )),
        Command::Admin(cmd) => admin::run(store, cmd).await,
        Command::Project(ProjectCommand::Create {
            slug,
            title,
            domains,
        }) => {
            if !valid_slug(&slug) {
                return Err(CliError::Usage(format!(
                    "invalid slug {slug:?}: use [a-z0-9-]{{1,64}}, not a reserved path such as admin or api"
                )));
            }
            let domains: Vec<String> = domains.into_iter().filter(|d| !d.is_empty()).collect();
            let p = NewProject {
                title: title.unwrap_or_else(|| slug.clone()),
                slug,
                domains,
            };
            match store.create_project(&p).await {
                Err(StoreError::ProjectExists) => {
                    Err(CliError::Usage(format!("project {} exists", p.slug)))
                }
                other => {
                    other?;
                    println!("created project {}", p.slug);
                    Ok(())
                }
            }
        }
        Command::Project(ProjectCommand::Set { slug, changes }) => {
            let current = store
                .project(&slug)
                .await?
                .ok_or_else(|| CliError::Usage(format!("no such project {slug:?}")))?;
            let updated = apply_changes(&current, &changes)?;
            store.save_settings(&slug, &updated).await?;
            println!("updated {slug}");
            if updated.fifo != current.fifo {
                println!("note: the new order applies to items queued from now on; items already waiting keep their place");
            }
            Ok(())
        }
        Command::Project(ProjectCommand::Show { slug }) => {
            let current = store
                .project(&slug)
                .await?
                .ok_or_else(|| CliError::Usage(format!("no such project {slug:?}")))?;
            println!(
                "{}",
                serde_json::to_string_pretty(&*current).unwrap_or_default()
            );
            Ok(())
        }
        Command::Items(ItemsCommand::Show { slug, item }) => {
            let status = store.item_status(&slug, &item).await?;
            let body = serde_json::json!({
                "status": status.state,
                "downloader": status.downloader,
                "detail": status.detail,
                "history": serde_json::from_str::<serde_json::Value>(&status.timeline).unwrap_or_default(),
            });
            println!(
                "{}",
                serde_json::to_string_pretty(&body).unwrap_or_default()
            );
            Ok(())
        }
        Command::Block {
            kind,
            value,
            project,
            reason,
            hours,
        } => {
            let kind = block_kind(&kind)?;
            let now = crate::store::now_ms();
            let expires = hours.map(|h| now + h * 3_600_000).unwrap_or(0);
            let entry = BlockEntry {
                reason,
                by: "cli".into(),
                t: now,
                expires,
            };
            store
                .block(project.as_deref(), kind, &value, &entry)
                .await?;
            println!(
                "blocked {value} {}",
                project
                    .map(|p| format!("in {p}"))
                    .unwrap_or_else(|| "globally".into())
            );
            Ok(())
        }
        Command::Unblock {
            kind,
            value,
            project,
        } => {
            if store
                .unblock(project.as_deref(), block_kind(&kind)?, &value)
                .await?
            {
                println!("unblocked {value}");
                Ok(())
            } else {
                Err(CliError::Usage(format!("{value} was not blocked")))
            }
        }
        Command::Target {
            slug,
            target,
            off,
            remove,
        } => {
            store
                .project(&slug)
                .await?
                .ok_or_else(|| CliError::Usage(format!("no such project {slug:?}")))?;
            if let Some(target) = target {
                if remove {
                    store.remove_upload_target(&slug, &target).await?;
                } else {
                    store.set_upload_target(&slug, &target, !off).await?;
                }
            }
            for (t, active) in store.upload_targets(&slug).await? {
                println!("{} {t}", if active { "active  " } else { "inactive" });
            }
            Ok(())
        }
        Command::Check { slug, recount } => {
            if recount {
                let (before, now) = store
                    .recount(&slug)
                    .await?
                    .ok_or_else(|| CliError::Usage(format!("no such project {slug:?}")))?;
                let before = before.map_or("not kept".to_string(), |n| n.to_string());
                println!(
                    "{slug}: item count set to {now} from the items in a state (was {before}); \
                     what was lost before cannot be seen"
                );
            }
            let problems = store.check(&slug).await?;
            for p in &problems {
                println!("{p}");
            }
            if problems.is_empty() {
                println!("ok: {slug} holds its invariant");
                Ok(())
            } else {
                Err(CliError::Usage(format!(
                    "{} violations in {slug}",
                    problems.len()
                )))
            }
        }
        Command::Items(ItemsCommand::Add { slug, queue, file }) => {
            let personal = queue
                .strip_prefix("todo:d:")
                .is_some_and(crate::api::warrior::valid_downloader);
            if !QUEUES.contains(&queue.as_str()) && !personal {
                return Err(CliError::Usage(format!(
                    "unknown queue {queue:?}: one of {QUEUES:?}"
                )));
            }
            if store.project(&slug).await?.is_none() {
                return Err(CliError::Usage(format!("no such project {slug:?}")));
            }
            let (added, skipped) = add_items_from(store, &slug, &queue, &file).await?;
            println!("{added} new items added to {slug} {queue}");
            if skipped > 0 {
                eprintln!("{skipped} lines skipped (over 4 KiB or containing NUL)");
            }
            Ok(())
        }
    }
}

fn block_kind(kind: &str) -> Result<BlockKind, CliError> {
    match kind {
        "ip" => Ok(BlockKind::Ip),
        "dl" | "downloader" => Ok(BlockKind::Downloader),
        other => Err(CliError::Usage(format!(
            "block kind must be ip or dl, not {other:?}"
        ))),
    }
}

/// Streams items from `file` into the store in batches; returns (new, skipped lines).
async fn add_items_from(
    store: &Store,
    slug: &str,
    queue: &str,
    file: &str,
) -> Result<(u64, u64), CliError> {
    let reader: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if file == "-" {
        Box::new(tokio::io::stdin())
    } else {
        Box::new(
            tokio::fs::File::open(file)
                .await
                .map_err(|e| CliError::Io(file.into(), e))?,
        )
    };
    let mut lines = BufReader::new(reader).lines();
    let (mut added, mut skipped) = (0, 0);
    let mut batch = Vec::with_capacity(10_000);
    loop {
        let line = lines
            .next_line()
            .await
            .map_err(|e| CliError::Io(file.into(), e))?;
        let end = line.is_none();
        if let Some(line) = line {
            let item = line.trim_end_matches('\r');
            if item.len() > crate::api::warrior::MAX_ITEM_LEN || item.contains('\0') {
                skipped += 1;
            } else if !item.is_empty() {
                batch.push(item.to_string());
            }
        }
        if batch.len() >= 10_000 || (end && !batch.is_empty()) {
            added += store.add_items(slug, queue, &batch).await?;
            batch.clear();
        }
        if end {
            return Ok((added, skipped));
        }
    }
}
