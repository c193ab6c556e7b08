//! A project's keys as they are now, to copy the project from or to roll it back to (as a
//! Redis restored from an older copy has it).

use crate::{Snapshot, TestApp};

impl TestApp {
    /// Every key of project `slug` with its `DUMP`: a [`Snapshot`] to roll back to
    /// ([`TestApp::roll_back`]), or to copy the project from.
    pub async fn dump_project(&self, slug: &str) -> Snapshot {
        use fred::prelude::*;
        let pattern = format!("{}:{{{slug}}}*", self.store.keys().namespace());
        let keys: Vec<String> = self
            .store
            .client()
            .custom(fred::cmd!("KEYS"), vec![pattern])
            .await
            .expect("KEYS");
        let mut out = Vec::new();
        for k in keys {
            let v: fred::types::Value = self.store.client().dump(k.as_str()).await.expect("DUMP");
            out.push((k, v));
        }
        out
    }

    /// Project `slug` as `snapshot` ([`TestApp::dump_project`]) had it, as a Redis restored from
    /// an older copy (a failover, a restore) has it: its keys now deleted, the snapshot's put
    /// back, in one script, so that no process (the folder, an offloader) sees it half-way or
    /// writes into it meanwhile.
    pub async fn roll_back(&self, slug: &str, snapshot: &Snapshot) {
        use fred::prelude::*;
        const ROLL_BACK: &str = "local n = tonumber(ARGV[1]) \
            for i = 1, n do redis.call('DEL', KEYS[i]) end \
            for i = n + 1, #KEYS do redis.call('RESTORE', KEYS[i], 0, ARGV[i - n + 1], 'REPLACE') end";
        let now: Vec<String> = self
            .dump_project(slug)
            .await
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        let mut keys = now.clone();
        keys.extend(snapshot.iter().map(|(k, _)| k.clone()));
        let mut args = vec![fred::types::Value::from(now.len() as i64)];
        args.extend(snapshot.iter().map(|(_, v)| v.clone()));
        let _: fred::types::Value = self
            .store
            .client()
            .eval(ROLL_BACK, keys, args)
            .await
            .expect("the rollback");
    }
}
