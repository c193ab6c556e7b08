//! The `tracker` command line: serve, and the admin commands that need no browser.

use crate::{
    config::{RedisArgs, ServeArgs},
    embedded_redis::EmbeddedRedis,
    keys::QUEUES,
    store::{valid_slug, NewProject, Store, StoreError},
};
use tokio::io::{AsyncBufReadExt, BufReader};

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
    Serve(ServeArgs),
    /// Manage projects.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Manage items.
    #[command(subcommand)]
    Items(ItemsCommand),
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
        Some(url) => Ok((url.clone(), None)),
        None => {
            let embedded = EmbeddedRedis::ensure(&args.data_dir).await?;
            Ok((embedded.url(), Some(embedded)))
        }
    }
}

/// Runs an admin command against `store`.
pub async fn run_admin(store: &Store, command: Command) -> Result<(), CliError> {
    match command {
        Command::Serve(_) => Err(CliError::Usage("serve is not an admin command".into())),
        Command::Project(ProjectCommand::Create {
            slug,
            title,
            domains,
        }) => {
            if !valid_slug(&slug) {
                return Err(CliError::Usage(format!(
                    "invalid slug {slug:?}: use [a-z0-9-]{{1,64}}"
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
        Command::Items(ItemsCommand::Add { slug, queue, file }) => {
            if !QUEUES.contains(&queue.as_str()) {
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
