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

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,fred=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Cli::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.worker_threads {
        runtime.worker_threads(usize::from(n));
    }
    let runtime = match runtime.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tracker: the async runtime did not start: {e}");
            return ExitCode::FAILURE;
        }
    };
    // A command whose stdout reader has gone unwinds to here (cli::stdout).
    let ran =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(args))));
    match ran {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("tracker: {e}");
            ExitCode::FAILURE
        }
        Err(payload) if payload.is::<server::cli::stdout::ReaderGone>() => {
            ExitCode::from(server::cli::stdout::READER_GONE_STATUS)
        }
        Err(payload) => std::panic::resume_unwind(payload),
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
    if let Some(Command::Script { name }) = &args.command {
        let scripts = server::store::scripts::Scripts::new();
        if name == "library" {
            server::cli::stdout::write(format_args!("{}", scripts.library.text), false);
            return Ok(());
        }
        let script = scripts.all().into_iter().find(|s| s.name == name);
        let script = script.ok_or_else(|| format!("no script named {name:?}"))?;
        server::cli::stdout::write(format_args!("{}", script.composed()), false);
        return Ok(());
    }
    if let Some(Command::Storage(server::cli::StorageCommand::Copy { from, to })) = &args.command {
        let runtime = tokio::runtime::Handle::current();
        let open = |url: &str| {
            server::storage::Storage::open(Some(url), std::path::Path::new(""), runtime.clone())
        };
        let (from, to) = (open(from)?, open(to)?);
        let copied = tokio::task::spawn_blocking(move || from.copy_to(&to)).await??;
        println!(
            "{} objects ({} bytes) copied, {} already there; every one verified by SHA-256",
            copied.copied, copied.bytes, copied.skipped
        );
        return Ok(());
    }
    // The server's stop signals are caught from now on, before its private Redis starts: a
    // SIGTERM at any instant of the start-up still stops that Redis.
    let stop = matches!(args.command, None | Some(Command::Serve(_)))
        .then(stop_signals)
        .transpose()?;
    // The offloader deletes unregistered files under its directory: the private Redis's
    // directory may not be it or lie inside it.
    if args.redis.redis_url.is_none() {
        if let Some(why) = server::config::offload_dir_conflict(
            &args.redis.offload_dir(),
            &[("data", &args.redis.data_dir)],
        ) {
            return Err(why.into());
        }
    }
    let (url, embedded) = cli::redis(&args.redis).await?;
    let command = args
        .command
        .unwrap_or_else(|| Command::Serve(Box::new(ServeArgs::parse_from(["serve"]))));
    let result = match command {
        Command::Serve(serve) => {
            let stop = stop.expect("caught for serve");
            run_server(server::Config::from_args(url, &args.redis, &serve), stop).await
        }
        mut admin => {
            // The archive directory's default is under the data directory, as `serve`'s.
            if let Command::Archives { archive_dir, .. } = &mut admin {
                archive_dir.get_or_insert_with(|| args.redis.data_dir.join("archive"));
            }
            let storage = server::storage::Storage::open(
                args.redis.storage.as_deref(),
                &args.redis.offload_dir(),
                tokio::runtime::Handle::current(),
            )?;
            match Store::connect(&url, &args.redis.namespace, 2, args.redis.offload_dir()).await {
                Ok(store) => {
                    let store = store.with_storage(storage);
                    let result = cli::run_admin(&store, admin).await;
                    store.quit().await;
                    result.map_err(Into::into)
                }
                Err(e) => Err(e.into()),
            }
        }
    };
    if let Some(redis) = embedded {
        redis.stop().await;
    }
    result
}

async fn run_server(
    config: server::Config,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut stop = Box::pin(stop);
    let running = tokio::select! {
        running = server::start(config) => running?,
        () = &mut stop => return Ok(()),
    };
    if let Some(link) = &running.setup_link {
        // On stdout, so an installer (and the browser tests) can read it.
        println!("No admin account exists yet. Create the first one at: {link}");
    }
    running.serve(stop).await?;
    tracing::info!("tracker stopped");
    Ok(())
}

/// SIGTERM or SIGINT (Ctrl-C), caught from the moment this is called: a signal that comes
/// before the returned future is awaited is not lost.
fn stop_signals() -> std::io::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
        tracing::info!("shutting down");
    })
}
