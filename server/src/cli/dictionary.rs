//! `tracker dictionary ...`: the zstd dictionaries of a project (`GET /dictionary?project=`).

use crate::cli::stdout::outln;

use super::CliError;
use crate::{
    ops::Actor,
    store::{
        dictionary::{dictionary_problem, DictionaryInfo},
        Store,
    },
};

/// `tracker dictionary ...`
#[derive(clap::Subcommand, Debug)]
pub enum DictionaryCommand {
    /// Make FILE (a zstd dictionary, raw or in a zstd frame) the one the project serves.
    Set {
        /// Project slug.
        slug: String,
        /// The dictionary file.
        file: String,
    },
    /// The dictionary the project serves now.
    Show {
        /// Project slug.
        slug: String,
    },
    /// Build a dictionary from sample files (a tenth held back to measure it), print the
    /// compression it gets on them against none, and make it the one the project serves.
    Train {
        /// Project slug.
        slug: String,
        /// Sample files (WARC records, pages: what the grab downloads).
        #[arg(required = true)]
        samples: Vec<String>,
        /// Largest dictionary, in bytes.
        #[arg(long, default_value_t = 112_640)]
        max_size: usize,
        /// Measure only: do not set it.
        #[arg(long)]
        dry_run: bool,
    },
}

fn print(info: &DictionaryInfo) {
    outln!("{}", serde_json::to_string_pretty(info).unwrap_or_default());
}

/// What training on `samples` gave: the dictionary, and the compressed size of the held-back
/// samples with it and without (zstd level 3).
pub struct Trained {
    /// The dictionary.
    pub dictionary: Vec<u8>,
    /// Samples trained on, and held back.
    pub trained_on: usize,
    /// See [`Trained::trained_on`].
    pub held_back: usize,
    /// Held-back bytes, plain.
    pub plain: u64,
    /// Held-back bytes compressed without a dictionary.
    pub without: u64,
    /// Held-back bytes compressed with it.
    pub with: u64,
}

/// Trains a dictionary of at most `max_size` bytes on nine samples in ten and measures it on
/// the tenth.
pub fn train(samples: &[Vec<u8>], max_size: usize) -> Result<Trained, String> {
    let (mut train, mut held) = (Vec::new(), Vec::new());
    for (i, s) in samples.iter().enumerate() {
        if i % 10 == 9 {
            held.push(s);
        } else {
            train.push(s);
        }
    }
    if train.len() < 8 || held.is_empty() {
        return Err("give at least 10 samples (one in ten is held back to measure)".into());
    }
    let dictionary = zstd::dict::from_samples(&train, max_size)
        .map_err(|e| format!("training failed: {e} (more or larger samples help)"))?;
    let (mut plain, mut without, mut with) = (0u64, 0u64, 0u64);
    let mut compressor =
        zstd::bulk::Compressor::with_dictionary(3, &dictionary).map_err(|e| e.to_string())?;
    for s in &held {
        plain += s.len() as u64;
        without += zstd::bulk::compress(s, 3).map_err(|e| e.to_string())?.len() as u64;
        with += compressor.compress(s).map_err(|e| e.to_string())?.len() as u64;
    }
    Ok(Trained {
        dictionary,
        trained_on: train.len(),
        held_back: held.len(),
        plain,
        without,
        with,
    })
}

/// Runs a dictionary command, audited under [`crate::ops::CLI_ACTOR`].
pub async fn run(store: &Store, cmd: DictionaryCommand) -> Result<(), CliError> {
    let cli = Actor::cli();
    let set = |slug: String, bytes: Vec<u8>| async move {
        crate::ops::project(store, &slug).await?;
        if let Some(why) = dictionary_problem(&bytes) {
            return Err(CliError::Usage(why));
        }
        let info = store.projects().set_dictionary(&slug, &bytes).await?;
        cli.record(
            store,
            "dictionary.set",
            &slug,
            info.bytes,
            format!("id {} sha256 {}", info.id, info.sha256),
        )
        .await?;
        Ok::<_, CliError>(info)
    };
    match cmd {
        DictionaryCommand::Set { slug, file } => {
            let bytes = std::fs::read(&file).map_err(|e| CliError::Io(file.clone(), e))?;
            print(&set(slug, bytes).await?);
        }
        DictionaryCommand::Show { slug } => {
            crate::ops::project(store, &slug).await?;
            match store.projects().dictionary(&slug).await? {
                Some(info) => print(&info),
                None => outln!("{slug} has no dictionary"),
            }
        }
        DictionaryCommand::Train {
            slug,
            samples,
            max_size,
            dry_run,
        } => {
            let mut read = Vec::with_capacity(samples.len());
            for f in &samples {
                read.push(std::fs::read(f).map_err(|e| CliError::Io(f.clone(), e))?);
            }
            let t = train(&read, max_size).map_err(CliError::Usage)?;
            let pct = |n: u64| 100.0 * n as f64 / t.plain.max(1) as f64;
            outln!(
                "trained on {} samples, measured on {} held back ({} bytes): {} bytes without a \
                 dictionary ({:.1} %), {} with it ({:.1} %), a {} byte dictionary",
                t.trained_on,
                t.held_back,
                t.plain,
                t.without,
                pct(t.without),
                t.with,
                pct(t.with),
                t.dictionary.len()
            );
            if !dry_run {
                print(&set(slug, t.dictionary).await?);
            }
        }
    }
    Ok(())
}
