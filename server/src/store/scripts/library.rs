//! The Redis Functions library the scripts run as (see [`super`]'s doc): its text, its name,
//! and where each script's function starts in it.

use super::{prelude, prelude_and_lib, LuaScript};
use fred::bytes_utils::Str;

#[cfg(test)]
mod tests;

/// The line splitting a script into what its library function needs made once (before it:
/// local state declared, and functions) and what runs at each call (after it).
pub const PER_CALL: &str = "-- per call\n";

/// The Redis Functions library of every script (see the module's doc).
#[derive(Default)]
pub struct Library {
    /// Its source, for `FUNCTION LOAD`.
    pub text: Str,
    /// Its name, `tracker_<hash>`.
    pub name: String,
    /// Each script's name and the library line of its function's first line, which is its
    /// file's first line; a script's parts (`claim/take`) each the line of theirs, before it.
    pub(super) starts: Vec<(&'static str, usize)>,
}

impl Library {
    /// The library of `scripts`, each given the name of its function.
    pub(super) fn new(scripts: &mut [&mut LuaScript]) -> Self {
        // Written with a stand-in for the hash, which is then that text's own.
        const HASH: &str = "@hash@";
        let mut text = format!("#!lua name=tracker_{HASH}\n{}", prelude_and_lib(&prelude()));
        let mut starts = Vec::new();
        for s in scripts.iter() {
            let function = format!("{}_{HASH}", s.name);
            let (shebang, body) = s.source.split_once('\n').unwrap_or((s.source, ""));
            let flags = shebang
                .strip_prefix("#!lua")
                .and_then(|rest| rest.trim().strip_prefix("flags="))
                .map(|f| f.split(',').map(|f| format!("'{f}'")).collect::<Vec<_>>())
                .unwrap_or_default()
                .join(", ");
            starts.push((s.name, text.lines().count() + 1));
            let opener = format!(
                "redis.register_function{{ function_name = '{function}', flags = {{ {flags} }}, \
                 callback = function(KEYS, ARGV) begin()\n"
            );
            // A script split by a `-- per call` line: what comes before it is made once, in a
            // block of its own (its parts first), and the function (on the marker's line) runs
            // the rest.
            let split = body
                .split_once(PER_CALL)
                .filter(|(once, _)| once.is_empty() || once.ends_with('\n'));
            match split {
                Some((once, per_call)) => {
                    text.push_str("do\n");
                    if !s.parts.is_empty() {
                        for (part, source) in s.parts {
                            starts.push((part, text.lines().count() + 1));
                            text.push_str(source);
                            if !text.ends_with('\n') {
                                text.push('\n');
                            }
                        }
                        // The line standing for the file's first (its shebang).
                        starts.push((s.name, text.lines().count() + 1));
                        text.push_str(&format!("-- {}.lua\n", s.name));
                    }
                    text.push_str(&format!("{once}{opener}{per_call}"));
                }
                None => text.push_str(&format!("{opener}{body}")),
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(if split.is_some() {
                "end }\nend\n"
            } else {
                "end }\n"
            });
        }
        let hash = &fred::util::sha1_hash(&text)[..12];
        for s in scripts.iter_mut() {
            s.function = format!("{}_{hash}", s.name).into();
        }
        Self {
            text: text.replace(HASH, hash).into(),
            name: format!("tracker_{hash}"),
            starts,
        }
    }

    /// `detail` (a Redis error) with the script file and line of its first `user_function:N`
    /// added, e.g. `... (claim.lua:12)`.
    pub(super) fn locate(&self, detail: &str) -> Option<String> {
        let at = detail.find("user_function:")? + "user_function:".len();
        let digits: String = detail[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let line: usize = digits.parse().ok()?;
        let (name, start) = self.starts.iter().rev().find(|(_, start)| *start <= line)?;
        Some(format!("{detail} ({name}.lua:{})", line - start + 1))
    }
}
