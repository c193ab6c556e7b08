//! `tracker`: reads settings, sets up logging, and runs the command (by default, the server).

use clap::Parser as _;
use server::{
    cli::{self, Cli, Command},
    config::ServeArgs,
    store::Store,
};
use std::process::ExitCode;

/// mimalloc instead of glibc's malloc: under load, about a fifth of the server's CPU time was in
/// glibc's malloc and free (`perf record`, bench pairs phase); see bench/README.md.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,fred=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Cli::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tracker: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Cli) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(Command::Precompress { dir }) = &args.command {
        let written = server::precompress::refresh(dir)?;
        println!(
            "{} compressed copies written in {}",
            written.len(),
            dir.display()
        );
        return Ok(());
    }
    let (url, embedded) = cli::redis(&args.redis).await?;
    let command = args
        .command
        .unwrap_or_else(|| Command::Serve(Box::new(ServeArgs::parse_from(["serve"]))));
    let result = match command {
        Command::Serve(serve) => {
            run_server(server::Config::from_args(url, &args.redis, &serve)).await
        }
        admin => match Store::connect(&url, &args.redis.namespace, 2).await {
            Ok(store) => {
                let result = cli::run_admin(&store, admin).await;
                store.quit().await;
                result.map_err(Into::into)
            }
            Err(e) => Err(e.into()),
        },
    };
    if let Some(redis) = embedded {
        redis.stop().await;
    }
    result
}

async fn run_server(config: server::Config) -> Result<(), Box<dyn std::error::Error>> {
    let running = server::start(config).await?;
    if let Some(link) = &running.setup_link {
        // On stdout, so an installer (and the browser tests) can read it.
        println!("No admin account exists yet. Create the first one at: {link}");
    }
    running.serve(shutdown_signal()).await?;
    tracing::info!("tracker stopped");
    Ok(())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("shutting down");
}
