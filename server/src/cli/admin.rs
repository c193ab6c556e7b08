//! `tracker admin ...`: accounts of the admin panel, for the first one and for lost passwords.

use crate::cli::stdout::outln;

use super::CliError;
use crate::{
    ops::{accounts, Actor},
    store::{Role, Store},
};
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
    /// Lift the limit on an account's logins from every address (after a guessing run), now
    /// rather than when its window lapses; the limits per address stay.
    Unlock {
        /// Account name.
        name: String,
    },
}

/// Runs an account command, audited under [`crate::ops::CLI_ACTOR`].
pub async fn run(store: &Store, cmd: AdminCommand) -> Result<(), CliError> {
    let cli = Actor::cli();
    match cmd {
        AdminCommand::CreateUser {
            name,
            global,
            project,
            read_only,
        } => {
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
            let password = read_password()?;
            let account = accounts::create(store, &cli, &name, password, role, project).await?;
            outln!("created {} account {}", role.as_str(), account.name);
            Ok(())
        }
        AdminCommand::ResetPassword { name } => {
            let change = accounts::AccountChange {
                password: Some(read_password()?),
                ..Default::default()
            };
            let account = accounts::update(store, &cli, &name, change).await?;
            outln!("new password set for {}", account.name);
            Ok(())
        }
        AdminCommand::Unlock { name } => {
            let name = name.trim().to_lowercase();
            if store.people().account(&name).await?.is_none() {
                return Err(CliError::Usage(format!("no account {name:?}")));
            }
            let had = store.people().forget_login_name(&name).await?;
            cli.record(store, "user.unlock", "", u64::from(had), name.clone())
                .await?;
            outln!(
                "{name}: {}",
                if had {
                    "login attempts forgotten"
                } else {
                    "no login attempts were counted"
                }
            );
            Ok(())
        }
    }
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
