//! What `tracker migrate` carries beside the projects: blocks, the accounts, Warrior HQ's
//! project list.

use crate::cli::stdout::outln;

use super::{fail, old_err, redacted, CliError, Run, Source};
use crate::ops::blocks;
use crate::store::{self, Account, BlockKind, Role, Store};
use std::collections::{HashMap, HashSet};

impl Run<'_> {
    /// Blocks `value` (an IP or a downloader, as the old lists mix them) in `project` or globally.
    pub(super) async fn block(&self, project: Option<&str>, value: &str) -> Result<(), CliError> {
        let kind = if value.parse::<std::net::IpAddr>().is_ok() {
            BlockKind::Ip
        } else {
            BlockKind::Downloader
        };
        let how = blocks::NewBlock {
            project: project.map(String::from),
            reason: "blocked in the universal tracker".into(),
            hours: None,
        };
        if let Err(e) = blocks::block(self.store, &self.actor, kind, value, how).await {
            outln!(
                "{}: block of {value:?} not carried: {e}",
                project.unwrap_or("global")
            );
        }
        Ok(())
    }

    /// The old accounts: `admins` global, a project's `tracker_admins` its admins; each keeps
    /// its bcrypt hash until its first login here.
    pub(super) async fn accounts(&mut self, imported: &[String]) -> Result<(), CliError> {
        let mut global = HashSet::new();
        self.old
            .scan_all("SSCAN", "admins", |p| {
                global.extend(p.into_iter().map(|n| n.to_lowercase()))
            })
            .await
            .map_err(old_err)?;
        let mut of: HashMap<String, Vec<String>> = HashMap::new();
        for slug in imported {
            self.old
                .scan_all("SSCAN", &format!("{slug}:tracker_admins"), |p| {
                    for name in p {
                        of.entry(name.to_lowercase())
                            .or_default()
                            .push(slug.clone());
                    }
                })
                .await
                .map_err(old_err)?;
        }
        let mut users = Vec::new();
        self.old
            .scan_all("HSCAN", "users", |p| users.extend(p))
            .await
            .map_err(old_err)?;
        for pair in users.chunks(2) {
            let (old_name, hash) = (
                pair[0].to_lowercase(),
                pair.get(1).cloned().unwrap_or_default(),
            );
            let mut name = old_name.clone();
            if store::RESERVED_USER_NAMES.contains(&name.as_str()) {
                name = format!("{name}-ut");
                outln!("user {old_name}: the name is reserved here; carried as {name}");
            }
            if let Some(problem) = store::user_name_problem(&name) {
                outln!("user {old_name}: not carried: {problem}");
                continue;
            }
            if !hash.starts_with("$2") {
                outln!("user {old_name}: not carried: its password hash is not bcrypt");
                continue;
            }
            let (role, projects) = if global.contains(&old_name) {
                (Role::Global, vec![])
            } else {
                (Role::Project, of.remove(&old_name).unwrap_or_default())
            };
            let account = Account {
                name: name.clone(),
                hash,
                role,
                projects,
                t: store::now_ms(),
                gen: store::new_session_gen(),
            };
            if self.store.people().create_account(&account).await? {
                self.actor
                    .record(
                        self.store,
                        "account.create",
                        "",
                        1,
                        format!("{name} (migrated)"),
                    )
                    .await?;
                outln!("user {name}: carried as {} (password kept)", role.as_str());
            } else {
                outln!("user {name}: an account of that name exists here: not touched");
            }
        }
        if global.is_empty() && !users.is_empty() {
            outln!("note: the old `admins` set is empty, so its admin pages were open to anyone; the users carried are no global admins here");
        }
        Ok(())
    }

    pub(super) async fn global_blocks(&mut self) -> Result<(), CliError> {
        if self.saved("global:blocks") == Some("done") {
            return Ok(());
        }
        let mut blocked = Vec::new();
        self.old
            .scan_all("SSCAN", "global_blocked", |p| blocked.extend(p))
            .await
            .map_err(old_err)?;
        for value in blocked {
            self.block(None, &value).await?;
        }
        self.mark("global:blocks", "done").await
    }
}

/// Warrior HQ's project list at `url`, saved as this tracker's when it has none yet.
pub(super) async fn project_list(store: &Store, url: &str) -> Result<(), CliError> {
    let hq = Source::connect(url).await.map_err(fail)?;
    let list = hq.get("warriorhq:projects_json").await.map_err(old_err);
    hq.quit().await;
    let Some(list) = list? else {
        outln!(
            "warrior hq: no warriorhq:projects_json at {}",
            redacted(url)
        );
        return Ok(());
    };
    if store.fleet().warrior_projects().await?.is_some() {
        outln!("warrior hq: a project list is saved here already: not touched");
        return Ok(());
    }
    match crate::admin::project_list::validate_list(&list) {
        Ok(doc) => {
            store
                .fleet()
                .save_warrior_projects(&doc.to_string(), crate::store::CLI_ACTOR, store::now_ms())
                .await?;
            let n = doc["projects"].as_array().map_or(0, Vec::len);
            outln!("warrior hq: project list carried ({n} projects)");
        }
        Err(why) => outln!("warrior hq: project list not carried: {why}"),
    }
    Ok(())
}
