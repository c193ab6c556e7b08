//! Plain writes to a project's keys made only while the project exists (`project_write.lua`):
//! a destroy deletes the project's `meta` first and then sweeps its keys, so a write of a
//! process that has not heard of the destroy yet is refused ([`StoreError::NoProject`]) rather
//! than left behind for a project made again with the slug.

use super::{StoreError, StoreResult};
use fred::types::Value;

/// One command of [`crate::store::projects::Projects::write_in_project`]: its name, key and arguments.
pub type Command = Vec<String>;

impl super::Projects<'_> {
    /// Runs `commands` (writes to keys of project `slug`) in one step if the project exists;
    /// their replies, in order.
    pub async fn write_in_project(
        self,
        slug: &str,
        commands: Vec<Command>,
    ) -> StoreResult<Vec<Value>> {
        let k = self.keys.project(slug);
        let mut args = vec![Value::from(k.prefix())];
        for command in commands {
            args.push(Value::from(command.len() as i64));
            args.extend(command.into_iter().map(Value::from));
        }
        let replies: Value = self
            .scripts
            .run(
                self.pool.next(),
                &self.scripts.project_write,
                vec![k.meta()],
                args,
            )
            .await?;
        match replies {
            Value::Array(v) => Ok(v),
            other => Err(StoreError::Reply {
                script: "project_write",
                detail: format!("{other:?}"),
            }),
        }
    }
}

/// A command of `words`.
pub fn command<const N: usize>(words: [&str; N]) -> Command {
    words.iter().map(|w| w.to_string()).collect()
}
