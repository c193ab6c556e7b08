//! The Redis core every slice of the store stands on: the connection pool and its errors, the
//! install's key names, the scripts, and each slice's own state. It imports nothing from the
//! slices.

/// The reason given to every caller (and page) while Redis cannot be reached.
pub const RECONNECTING: &str = "The tracker is reconnecting to its database; retry shortly.";
pub use super::error::{is_oom, is_unavailable, StoreError, StoreResult};
use super::scripts::Scripts;
use crate::keys::Keys;
use fred::prelude::*;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// How long any one Redis command may take in the server before it fails as
/// [`StoreError::Unavailable`]. Long enough for the slowest legitimate command of a big
/// project (a page of a claim list, a bulk move); short enough that nothing waits on a hung
/// Redis for ever. Warrior calls give up much sooner (`TRACKER_REDIS_DEADLINE`).
pub const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The Redis store's core, cheap to clone: the connection pool, the install's key names and
/// its scripts, and each slice's own state (see [`Store::slice`]). The features reach it
/// through their handles ([`super::Store::queue`], ...).
#[derive(Clone)]
pub struct Store {
    pub(super) pool: Pool,
    /// Kept to connect the subscriber; shared, as every handler clones the store.
    config: Arc<Config>,
    pub(super) keys: Keys,
    pub(super) scripts: Arc<Scripts>,
    /// Where segment files live: `TRACKER_OFFLOAD_DIR`, given when the store connects, or
    /// the object store of `TRACKER_STORAGE` ([`Store::with_storage`]).
    pub(super) storage: Arc<crate::storage::Storage>,
    slices: Arc<Slices>,
}

/// Each slice's own state (its caches, its pending notes), by type, made on its first use: the
/// core keeps it without naming it.
#[derive(Default)]
struct Slices(RwLock<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl Store {
    /// Connects a pool of `size` connections to `url` (see [`crate::redis_url`]), with
    /// [`COMMAND_TIMEOUT`]; segment files live under `offload_dir` (`TRACKER_OFFLOAD_DIR`).
    pub async fn connect(
        url: &str,
        namespace: &str,
        size: usize,
        offload_dir: std::path::PathBuf,
    ) -> StoreResult<Self> {
        Self::connect_with(url, namespace, size, COMMAND_TIMEOUT, offload_dir).await
    }

    /// [`Store::connect`] with a command timeout of `timeout` (the CLI's `check` of a big
    /// project reads for longer than a server should wait).
    ///
    /// A command in flight when its connection drops is not sent again (fred would by
    /// default): a script that may have run is not run twice, its caller gets
    /// [`StoreError::Unavailable`] and retries.
    pub async fn connect_with(
        url: &str,
        namespace: &str,
        size: usize,
        timeout: std::time::Duration,
        offload_dir: std::path::PathBuf,
    ) -> StoreResult<Self> {
        let config = if let Some(path) = url.strip_prefix("redis+unix://") {
            Config {
                server: ServerConfig::new_unix_socket(path),
                ..Config::default()
            }
        } else {
            Config::from_url(url)?
        };
        let pool = Builder::from_config(config.clone())
            .with_connection_config(|c| {
                c.connection_timeout = std::time::Duration::from_secs(2);
                c.internal_command_timeout = std::time::Duration::from_secs(2);
                c.max_command_attempts = 1;
            })
            .with_performance_config(|p| p.default_command_timeout = timeout)
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build_pool(size)?;
        pool.init().await?;
        Ok(Self {
            pool,
            config: config.into(),
            keys: Keys::new(namespace),
            scripts: Arc::new(Scripts::new()),
            storage: Arc::new(crate::storage::Storage::Local(offload_dir)),
            slices: Default::default(),
        })
    }

    /// This store with its segments in `storage` instead of the directory it connected with.
    pub fn with_storage(mut self, storage: crate::storage::Storage) -> Self {
        self.storage = Arc::new(storage);
        self
    }

    /// Where segment files live.
    pub fn storage(&self) -> &crate::storage::Storage {
        &self.storage
    }

    /// The state of type `T` a slice keeps (one per store and type), made with `T::default()`
    /// on its first use.
    pub fn slice<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let id = TypeId::of::<T>();
        let found = self
            .slices
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned();
        let any = match found {
            Some(any) => any,
            None => self
                .slices
                .0
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .entry(id)
                .or_insert_with(|| Arc::new(T::default()))
                .clone(),
        };
        any.downcast::<T>()
            .unwrap_or_else(|_| unreachable!("a slice's state is stored under its own type"))
    }

    /// The key names of this install.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A client of the pool, for commands outside the typed operations (health, pub/sub setup).
    pub fn client(&self) -> &Client {
        self.pool.next()
    }

    /// The Redis round trip, in seconds.
    pub async fn ping(&self) -> StoreResult<f64> {
        let start = std::time::Instant::now();
        let _: String = self.pool.next().ping(None).await?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// Closes the connections.
    pub async fn quit(&self) {
        let _ = self.pool.quit().await;
    }

    /// A new pub/sub client on the same server. Its message channel holds
    /// [`SUBSCRIBER_BACKLOG`] messages, so a busy moment of the hub does not lose events (fred's
    /// default of 32 is 32 ms of completions at 1,000 a second).
    pub fn subscriber(&self) -> Result<fred::clients::SubscriberClient, fred::error::Error> {
        Builder::from_config((*self.config).clone())
            .with_performance_config(|p| p.broadcast_channel_capacity = SUBSCRIBER_BACKLOG)
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build_subscriber_client()
    }

    /// A client on a connection of its own, for probing whether Redis answers: pings on the
    /// pool would wait behind the scripts queued there.
    pub async fn probe_client(&self) -> StoreResult<Client> {
        let client = Builder::from_config((*self.config).clone())
            .with_connection_config(|c| {
                c.connection_timeout = std::time::Duration::from_secs(1);
                c.max_command_attempts = 1;
            })
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 1_000, 2))
            .build()?;
        client.init().await?;
        Ok(client)
    }

    /// The connection pool, for the session store.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The scripts, for tests that call them all.
    pub fn scripts(&self) -> &Scripts {
        &self.scripts
    }
}

/// A slice's handle `$T<'a>` (a view of the [`Store`] it was taken from, which it derefs to)
/// and the store's method `$name()` that gives it.
macro_rules! handle {
    ($T:ident, $name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy)]
        pub struct $T<'a>(&'a Store);

        impl std::ops::Deref for $T<'_> {
            type Target = Store;
            fn deref(&self) -> &Store {
                self.0
            }
        }

        impl Store {
            #[doc = concat!("This store's ", stringify!($name), " slice.")]
            pub fn $name(&self) -> $T<'_> {
                $T(self)
            }
        }
    };
}
pub(crate) use handle;

/// Published messages the pub/sub client buffers for the hub before it must resync watchers.
pub const SUBSCRIBER_BACKLOG: usize = 16 * 1024;

/// Milliseconds since the epoch, the clock passed to every script.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
