//! `tracker`: reads settings, sets up logging, and runs the command (by default, the server).

use clap::Parser as _;
use server::{
    cli::{self, Cli, Command},
    config::ServeArgs,
    store::{Store, StoreError},
    App,
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
            let archive_dir = serve.archive_dir(&args.redis.data_dir);
            run_server(&url, &args.redis.namespace, archive_dir, *serve).await
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

async fn run_server(
    url: &str,
    namespace: &str,
    archive_dir: std::path::PathBuf,
    serve: ServeArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    let site_root = serve.site_root();
    let mut state = connect(url, namespace, &site_root.to_string_lossy()).await?;
    state.trust_proxy = serve.trust_proxy;
    state.admin_token = serve.admin_token.clone();
    state.secure_cookies = serve.secure_cookies();
    state.archive_dir = archive_dir;
    state.limits = serve.limits.clone();
    let listener = tokio::net::TcpListener::bind(serve.listen).await?;
    tracing::info!(addr = %listener.local_addr()?, site_root = %site_root.display(), "tracker listening");
    let pkg_dir = site_root.join(&*state.leptos.site_pkg_dir);
    for bundle in [&*state.leptos.output_name, app::ADMIN_BUNDLE] {
        let js = pkg_dir.join(format!("{bundle}.js"));
        if !js.exists() {
            tracing::warn!(missing = %js.display(), "a Wasm bundle is missing: its pages will not come alive (`make build` builds both; a bare `cargo leptos build` leaves out the admin panel's)");
        }
    }
    tokio::task::spawn_blocking(move || match server::precompress::refresh(&pkg_dir) {
        Ok(written) if !written.is_empty() => {
            tracing::info!(copies = written.len(), dir = %pkg_dir.display(), "compressed the bundles")
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, dir = %pkg_dir.display(), "could not compress the bundles; they go out gzip-compressed per request")
        }
    });
    let store = state.store.clone();
    tokio::spawn(async move {
        match store.shuffle_all_queues().await {
            Ok(scored) => {
                for (slug, items) in scored {
                    tracing::info!(%slug, items, "scored the waiting items for random order");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not score the queues of older projects; they keep drawing at random (tried again at the next start)")
            }
        }
    });
    if let Some(token) = server::admin::prepare_setup(&state.store).await? {
        let base = serve
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{}", serve.listen));
        let link = format!("{}/admin/setup?token={token}", base.trim_end_matches('/'));
        // On stdout, so an installer (and the browser tests) can read it.
        println!("No admin account exists yet. Create the first one at: {link}");
    }
    server::serve(listener, state, shutdown_signal()).await?;
    tracing::info!("tracker stopped");
    Ok(())
}

/// The app, once Redis answers: a Redis given by `REDIS_URL` that is not up yet (or restarting)
/// is waited for, with the wait logged, rather than given up on.
async fn connect(url: &str, namespace: &str, site_root: &str) -> Result<App, StoreError> {
    let mut wait = std::time::Duration::from_millis(100);
    let started = std::time::Instant::now();
    loop {
        match App::new(url, namespace, site_root).await {
            Err(StoreError::Unavailable(e)) => {
                tracing::warn!(error = %e, waited_s = started.elapsed().as_secs(), "waiting for redis");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(5));
            }
            other => return other,
        }
    }
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
