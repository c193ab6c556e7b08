//! Projects: creating one, recounting its items, and its upload targets.

use super::{
    invalid,
    settings::{domains_problem, title_problem},
    Actor, OpsError, OpsResult,
};
use crate::store::{valid_slug, NewProject, Store, StoreError};

/// Creates project `slug`: the title trimmed (empty: the slug), the byte domains without
/// empty names (none: `data`), both checked as a settings save checks them.
pub async fn create(
    store: &Store,
    actor: &Actor,
    slug: &str,
    title: &str,
    domains: Vec<String>,
) -> OpsResult<NewProject> {
    // A new slug also starts with a letter or digit: one starting with '-' reads as an option
    // on the command line (`tracker check -1`) and in the tools operators pass it to.
    if !valid_slug(slug) || slug.starts_with('-') {
        return Err(invalid(
            "Slugs are 1 to 64 of a-z, 0-9 and '-', starting with a letter or digit, and not a reserved path such as admin or api.",
        ));
    }
    let title = match title.trim() {
        "" => slug.to_string(),
        t => t.to_string(),
    };
    let mut domains: Vec<String> = domains.into_iter().filter(|d| !d.is_empty()).collect();
    if domains.is_empty() {
        domains.push("data".into());
    }
    if let Some(problem) = title_problem(&title).or_else(|| domains_problem(&domains)) {
        return Err(invalid(problem));
    }
    let p = NewProject {
        slug: slug.to_string(),
        title,
        domains,
    };
    match store.projects().create_project(&p).await {
        Err(StoreError::ProjectExists) => {
            return Err(OpsError::Conflict("That project exists.".into()))
        }
        Err(StoreError::BeingRemoved) => {
            return Err(OpsError::Conflict(
                "A project of that slug was destroyed and its files are still being deleted; try again in a minute.".into(),
            ))
        }
        other => other?,
    }
    actor
        .record(store, "project.create", &p.slug, 0, p.title.as_str())
        .await?;
    Ok(p)
}

/// Sets the count of items project `slug` knows to the items in a state now; the count before
/// (none: not kept) and after.
pub async fn recount(store: &Store, actor: &Actor, slug: &str) -> OpsResult<(Option<i64>, i64)> {
    super::project(store, slug).await?;
    let (before, now) = store
        .upkeep()
        .recount(slug)
        .await?
        .ok_or_else(|| OpsError::NoProject(slug.into()))?;
    let was = before.map_or("not kept".to_string(), |n| n.to_string());
    actor
        .record(
            store,
            "project.recount",
            slug,
            now.max(0) as u64,
            format!("was {was}"),
        )
        .await?;
    Ok((before, now))
}

/// What to do with an upload target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetAction {
    /// Hand it out (adding a new one is activating it).
    Activate,
    /// Keep it, but do not hand it out.
    Deactivate,
    /// Remove it.
    Remove,
}

impl TargetAction {
    /// `activate`, `deactivate` or `remove`.
    pub fn parse(action: &str) -> OpsResult<Self> {
        match action {
            "activate" => Ok(Self::Activate),
            "deactivate" => Ok(Self::Deactivate),
            "remove" => Ok(Self::Remove),
            _ => Err(invalid("action is activate, deactivate or remove.")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Activate => "activate",
            Self::Deactivate => "deactivate",
            Self::Remove => "remove",
        }
    }
}

/// Does `action` to upload target `target` (trimmed: one URL without spaces) of project
/// `slug`; the targets after, with whether each is active.
pub async fn change_target(
    store: &Store,
    actor: &Actor,
    slug: &str,
    target: &str,
    action: TargetAction,
) -> OpsResult<Vec<(String, bool)>> {
    super::project(store, slug).await?;
    let target = target.trim();
    if target.is_empty() || target.len() > 1024 || target.chars().any(char::is_whitespace) {
        return Err(invalid("A target is one URL without spaces."));
    }
    match action {
        TargetAction::Activate => {
            store
                .projects()
                .set_upload_target(slug, target, true)
                .await?
        }
        TargetAction::Deactivate => {
            store
                .projects()
                .set_upload_target(slug, target, false)
                .await?
        }
        TargetAction::Remove => store.projects().remove_upload_target(slug, target).await?,
    }
    let audited = format!("target.{}", action.as_str());
    actor.record(store, &audited, slug, 0, target).await?;
    Ok(store.projects().upload_targets(slug).await?)
}
