//! The subcommands of `tracker project`, `tracker items` and `tracker storage`.

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
    /// Print the project's Warrior listing as JSON, or change it: `KEY=VALUE` ... of `listed`,
    /// `repository`, `logo`, `deadline`, `host`, `marker_html`, `lat_lng` (`LAT,LNG`), `weight`
    /// (0-1000: its share of today's "auto" Warriors, `auto_projects_config`).
    Listing {
        /// Project slug.
        slug: String,
        /// Changes (none: print it).
        changes: Vec<String>,
    },
}

/// `tracker items ...`
#[derive(clap::Subcommand, Debug)]
pub enum ItemsCommand {
    /// Queue items, one per line (plain, gzip or zstd), from FILE or `-` (standard input);
    /// prints how many were new. A bad line (not UTF-8, longer than the longest item, NUL)
    /// stops it there.
    Add {
        /// Project slug.
        slug: String,
        /// Queue to add to.
        #[arg(long, default_value = "todo")]
        queue: String,
        /// Longest item name, in bytes: the same setting as `tracker serve`'s.
        #[arg(long = "max-item", env = "TRACKER_MAX_ITEM", default_value_t = crate::limits::MAX_ITEM_LEN)]
        max_item: usize,
        /// File of items, or `-` for standard input.
        #[arg(default_value = "-")]
        file: String,
    },
    /// Items found by state, name, claimant and claim age, one a line (name, state, and for a
    /// claimed item its claimant and claim time, tab-separated); a page at a time, the next
    /// page's cursor on standard error.
    Search {
        /// Project slug.
        slug: String,
        /// `queued`, a queue part, `todo:d` (personal queues), `claimed`, `done` or `failed`.
        #[arg(long, default_value = "")]
        state: String,
        /// A glob on the name (`*`, `?`, `[...]`).
        #[arg(long = "match", default_value = "")]
        glob: String,
        /// A regular expression on the name.
        #[arg(long, default_value = "")]
        regex: String,
        /// Claimed by this downloader.
        #[arg(long, default_value = "")]
        claimant: String,
        /// Claimed at least this long ago (`90s`, `15m`, `2h`).
        #[arg(long = "older-than", default_value = "")]
        older_than: String,
        /// The most items (1 to 1,000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// The cursor a page before gave.
        #[arg(long, default_value = "")]
        cursor: String,
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
/// `tracker storage ...`.
#[derive(clap::Subcommand, Debug)]
pub enum StorageCommand {
    /// Copies every object of `--from` to `--to`, verified by SHA-256; prints what it did.
    Copy {
        /// The storage copied (`file://DIR` or `s3://BUCKET/PREFIX`).
        #[arg(long)]
        from: String,
        /// The storage written.
        #[arg(long)]
        to: String,
    },
}
