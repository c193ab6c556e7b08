//! Accounts of the admin panel: creating one, changing its role, projects or password, and
//! the password hashes.

use super::{invalid, Actor, OpsError, OpsResult};
use crate::store::{new_session_gen, now_ms, user_name_problem, valid_slug, Account, Role, Store};

/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 10;

/// Longest password accepted, in bytes.
pub const MAX_PASSWORD: usize = 1024;

/// The least strength a new password must have, on zxcvbn's scale of 0 to 4 (3: "safely
/// unguessable", about 10^8 guesses or more): common passwords, names, words, repeats,
/// sequences and keyboard walks score below it.
pub const MIN_PASSWORD_SCORE: u8 = 3;

/// Why `password` may not be account `name`'s new password: shorter than [`MIN_PASSWORD`]
/// characters (spaces at either end not counted), longer than [`MAX_PASSWORD`] bytes, or weaker
/// than [`MIN_PASSWORD_SCORE`] (zxcvbn, knowing the name). Passwords migrated from the universal
/// tracker are kept as they are until changed.
pub fn password_problem(password: &str, name: &str) -> Option<String> {
    if password.trim().chars().count() < MIN_PASSWORD || password.len() > MAX_PASSWORD {
        return Some(format!(
            "Passwords are {MIN_PASSWORD} to {MAX_PASSWORD} characters, not counting spaces at either end."
        ));
    }
    // zxcvbn's work grows with the length; past its first 100 characters, a password that
    // passes there passes.
    let head: String = password.chars().take(100).collect();
    let estimate = zxcvbn::zxcvbn(&head, &[name, "tracker", "archiveteam", "warrior"]);
    if u8::from(estimate.score()) < MIN_PASSWORD_SCORE {
        let hint = estimate
            .feedback()
            .and_then(|f| f.warning())
            .map(|w| {
                let w = w.to_string();
                format!(" ({})", w.trim_end_matches('.').to_lowercase())
            })
            .unwrap_or_default();
        return Some(format!(
            "That password is too easy to guess{hint}: use a few uncommon words, or more characters."
        ));
    }
    None
}

/// The argon2id PHC string of `password` for account `name`, after [`password_problem`]
/// (hashed off the async workers).
pub async fn hash_password(password: String, name: &str) -> OpsResult<String> {
    if let Some(problem) = password_problem(&password, name) {
        return Err(invalid(problem));
    }
    tokio::task::spawn_blocking(move || hash_password_now(&password))
        .await
        .ok()
        .flatten()
        .ok_or_else(|| invalid("The password could not be hashed."))
}

/// The argon2id PHC string of `password`, synchronously and unchecked.
pub fn hash_password_now(password: &str) -> Option<String> {
    use argon2::{
        password_hash::{rand_core::OsRng, PasswordHasher, SaltString},
        Argon2,
    };
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .ok()
        .map(|h| h.to_string())
}

/// A new account (not stored yet): the name trimmed and lowercased and checked, the password
/// checked and hashed.
pub async fn new_account(
    name: &str,
    password: String,
    role: Role,
    projects: Vec<String>,
) -> OpsResult<Account> {
    let name = name.trim().to_lowercase();
    if let Some(problem) = user_name_problem(&name) {
        return Err(invalid(problem));
    }
    let hash = hash_password(password, &name).await?;
    Ok(Account {
        name,
        hash,
        role,
        projects,
        t: now_ms(),
        gen: new_session_gen(),
    })
}

/// Checks every project named exists.
async fn check_projects(store: &Store, projects: &[String]) -> OpsResult<()> {
    for p in projects {
        if !valid_slug(p) {
            return Err(invalid(format!("no project {p:?}")));
        }
        super::project(store, p).await?;
    }
    Ok(())
}

/// Creates an account, audited as `user.create`.
pub async fn create(
    store: &Store,
    actor: &Actor,
    name: &str,
    password: String,
    role: Role,
    projects: Vec<String>,
) -> OpsResult<Account> {
    check_projects(store, &projects).await?;
    let account = new_account(name, password, role, projects).await?;
    if !store.people().create_account(&account).await? {
        return Err(OpsError::Conflict("That name is taken.".into()));
    }
    let detail = format!("{} {}", account.name, role.as_str());
    actor.record(store, "user.create", "", 1, detail).await?;
    Ok(account)
}

/// What to change in an account (none: unchanged).
#[derive(Debug, Default)]
pub struct AccountChange {
    /// A new role.
    pub role: Option<Role>,
    /// The projects of a project admin.
    pub projects: Option<Vec<String>>,
    /// A new password (which ends the account's sessions).
    pub password: Option<String>,
}

/// Whether `name` is the only global admin left.
pub async fn last_global(store: &Store, name: &str) -> OpsResult<bool> {
    let globals: Vec<String> = store
        .people()
        .accounts()
        .await?
        .into_iter()
        .filter(|a| a.role == Role::Global)
        .map(|a| a.name)
        .collect();
    Ok(globals == [name])
}

/// Changes account `name`, audited as `user.update` with what changed. The last global
/// admin stays global.
pub async fn update(
    store: &Store,
    actor: &Actor,
    name: &str,
    change: AccountChange,
) -> OpsResult<Account> {
    let name = name.trim().to_lowercase();
    let mut account = store
        .people()
        .account(&name)
        .await?
        .ok_or_else(|| OpsError::NotFound("No such account.".into()))?;
    let mut changed = Vec::new();
    if let Some(role) = change.role.filter(|r| *r != account.role) {
        if account.role == Role::Global && last_global(store, &name).await? {
            return Err(invalid("The last global admin stays global."));
        }
        account.role = role;
        changed.push(format!("role={}", role.as_str()));
    }
    if let Some(projects) = change.projects {
        check_projects(store, &projects).await?;
        changed.push(format!("projects={}", projects.join(",")));
        account.projects = projects;
    }
    let new_password = change.password.is_some();
    if let Some(password) = change.password {
        // Ends the account's sessions: whoever knew the old password is logged out.
        account.set_password_hash(hash_password(password, &name).await?);
        changed.push("password".into());
    }
    store.people().save_account(&account).await?;
    if new_password {
        // And its API tokens: a token made by whoever had the account dies with its password.
        let revoked = store.people().revoke_all_tokens(&name).await?;
        if revoked > 0 {
            changed.push(format!("tokens_revoked={revoked}"));
        }
    }
    let detail = format!("{name} {}", changed.join(" "));
    actor.record(store, "user.update", "", 1, detail).await?;
    Ok(account)
}

#[cfg(test)]
mod tests {
    use super::password_problem;

    #[test]
    fn weak_or_short_passwords_are_refused_with_a_reason() {
        for weak in [
            "aaaaaaaaaa",
            "          ",
            "  short  ",
            "password123",
            "qwertyuiop",
            "1234567890",
            "alice-alice-1",
            "trustno1trustno1",
        ] {
            let problem = password_problem(weak, "alice");
            assert!(problem.is_some(), "{weak:?} was accepted");
        }
        assert!(password_problem("aaaaaaaaaa", "bob")
            .unwrap()
            .contains("too easy to guess"));
        assert!(password_problem(&"x".repeat(2000), "bob")
            .unwrap()
            .contains("characters"));
    }

    #[test]
    fn passphrases_and_random_strings_pass() {
        for strong in [
            "correct horse battery",
            "a long enough password",
            "a new password for bob",
            "Tr7#kq9!Lm2$",
            "vivid otter juggles plywood",
        ] {
            assert_eq!(password_problem(strong, "alice"), None, "{strong:?}");
        }
    }
}
