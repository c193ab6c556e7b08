//! `tracker pipeline ...`: pipeline tokens, as the panel's Pipelines page manages them.

use crate::cli::stdout::outln;

use super::CliError;
use crate::{
    ops::{
        pipelines::{self, NewPipeline},
        Actor,
    },
    store::Store,
};

/// `tracker pipeline ...`
#[derive(clap::Subcommand, Debug)]
pub enum PipelineCommand {
    /// Issue a pipeline token; its secret is printed once and stored only as its SHA-256.
    Create {
        /// `[A-Za-z0-9_.-]{1,64}`.
        name: String,
        /// Tags, comma-separated (up to 16, each `[a-z0-9_-]{1,32}`).
        #[arg(long, value_delimiter = ',')]
        tags: Vec<String>,
        /// Served only by projects naming one of its tags.
        #[arg(long)]
        match_only: bool,
    },
    /// List the pipelines (never their secrets).
    List,
    /// Revoke a pipeline token.
    Revoke {
        /// The pipeline's name.
        name: String,
    },
}

/// Runs a pipeline command, audited under [`crate::ops::CLI_ACTOR`].
pub async fn run(store: &Store, cmd: PipelineCommand) -> Result<(), CliError> {
    let cli = Actor::cli();
    match cmd {
        PipelineCommand::Create {
            name,
            tags,
            match_only,
        } => {
            let new = NewPipeline {
                name,
                tags,
                match_only,
            };
            let created = pipelines::create(store, &cli, new).await?;
            outln!("created pipeline {}", created.pipeline.name);
            outln!("secret (shown once): {}", created.secret);
            outln!(
                "tracker URL: http://HOST/SLUG/token={}/ (or send Authorization: Bearer SECRET)",
                created.secret
            );
        }
        PipelineCommand::List => {
            for p in store.people().pipelines().await? {
                let only = if p.match_only { " match-only" } else { "" };
                outln!("{} tags={}{only}", p.name, p.tags.join(","));
            }
        }
        PipelineCommand::Revoke { name } => {
            pipelines::revoke(store, &cli, &name).await?;
            outln!("revoked pipeline {name}");
        }
    }
    Ok(())
}
