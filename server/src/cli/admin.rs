//! `tracker admin ...`: accounts of the admin panel, for the first one and for lost passwords.

use super::CliError;
use crate::store::{new_session_gen, now_ms, user_name_problem, Account, AuditEntry, Role, Store};
use std::io::{BufRead, IsTerminal, Write};

/// `tracker admin ...`
#[derive(clap::Subcommand, Debug)]
pub enum AdminCommand {
    /// Create an account; the password is read from a prompt, or from standard input.
    CreateUser {
        /// Account name (case-insensitive).
        name: String,
        /// A global admin (everything).
        #[arg(long, conflicts_with_all = ["project", "read_only"])]
        global: bool,
        /// Admin of these projects (repeatable).
        #[arg(long)]
        project: Vec<String>,
        /// Sees everything, changes nothing.
        #[arg(long)]
        read_only: bool,
    },
    /// Set a new password (from a prompt or standard input).
    ResetPassword {
        /// Account name.
        name: String,
    },
}

/// Runs an account command.
pub async fn run(store: &Store, cmd: AdminCommand) -> Result<(), CliError> {
    match cmd {
        AdminCommand::CreateUser {
            name,
            global,
            project,
            read_only,
        } => {
            let name = name.to_lowercase();
            if let Some(problem) = user_name_problem(&name) {
                return Err(CliError::Usage(problem));
            }
            let role = match (global, read_only, project.is_empty()) {
                (true, _, _) => Role::Global,
                (_, true, true) => Role::ReadOnly,
                (false, false, false) => Role::Project,
                _ => {
                    return Err(CliError::Usage(
                        "say --global, --read-only, or --project SLUG".into(),
                    ))
                }
            };
            for p in &project {
                if store.project(p).await?.is_none() {
                    return Err(CliError::Usage(format!("no such project {p:?}")));
                }
            }
            let hash = hash(&read_password()?)?;
            let account = Account {
                name: name.clone(),
                hash,
                role,
                projects: project,
                t: now_ms(),
                gen: new_session_gen(),
            };
            if !store.create_account(&account).await? {
                return Err(CliError::Usage(format!("account {name} exists")));
            }
            audit(store, "user.create", &format!("{name} {}", role.as_str())).await?;
            println!("created {} account {name}", role.as_str());
            Ok(())
        }
        AdminCommand::ResetPassword { name } => {
            let name = name.to_lowercase();
            let mut account = store
                .account(&name)
                .await?
                .ok_or_else(|| CliError::Usage(format!("no account {name}")))?;
            // A new session generation too: the account's sessions end.
            account.set_password_hash(hash(&read_password()?)?);
            store.save_account(&account).await?;
            audit(store, "user.update", &format!("{name} password")).await?;
            println!("new password set for {name}");
            Ok(())
        }
    }
}

async fn audit(store: &Store, action: &str, detail: &str) -> Result<(), CliError> {
    let entry = AuditEntry {
        t: now_ms(),
        who: "cli".into(),
        action: action.into(),
        count: 1,
        detail: detail.into(),
        ..Default::default()
    };
    Ok(store.audit(&entry).await?)
}

fn hash(password: &str) -> Result<String, CliError> {
    let min = crate::admin::auth::MIN_PASSWORD;
    if password.chars().count() < min {
        return Err(CliError::Usage(format!(
            "passwords are at least {min} characters"
        )));
    }
    crate::admin::auth::hash_password_now(password)
        .ok_or_else(|| CliError::Usage("the password could not be hashed".into()))
}

/// One line from standard input; on a terminal, prompted for and not echoed.
fn read_password() -> Result<String, CliError> {
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    if tty {
        eprint!("Password: ");
        let _ = std::io::stderr().flush();
    }
    let echo = tty.then(|| set_echo(false)).flatten();
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(saved) = echo {
        restore(saved);
        eprintln!();
    }
    read.map_err(|e| CliError::Io("standard input".into(), e))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Turns terminal echo off; the settings to restore.
fn set_echo(on: bool) -> Option<libc::termios> {
    // SAFETY: termios is plain data; tcgetattr fills it for fd 0, which is a terminal here.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(0, &mut t) != 0 {
            return None;
        }
        let saved = t;
        if on {
            t.c_lflag |= libc::ECHO;
        } else {
            t.c_lflag &= !libc::ECHO;
        }
        libc::tcsetattr(0, libc::TCSANOW, &t);
        Some(saved)
    }
}

fn restore(saved: libc::termios) {
    // SAFETY: restores settings tcgetattr returned for the same fd.
    unsafe {
        libc::tcsetattr(0, libc::TCSANOW, &saved);
    }
}
