//! One consolidation or compaction per session at a time: the storage's
//! lock named for the session (an advisory lock on
//! `.mnemo/locks/<session>.lock`, which also excludes other handles of the
//! same process, or a database's advisory lock, which excludes other
//! servers).

use std::time::{Duration, Instant};

use mnemo_store::{Held, SharedStorage};

use crate::error::{Error, Result};

/// A held session lock; released on drop.
#[derive(Debug)]
pub struct SessionLock {
    _held: Held,
    location: String,
}

impl SessionLock {
    /// Takes the lock of `key` in `storage`, waiting up to `wait` for
    /// another holder.
    pub async fn acquire(
        storage: &SharedStorage,
        key: &str,
        wait: Duration,
    ) -> Result<SessionLock> {
        let stem = mnemo_store::session::file_stem(key)?;
        let started = Instant::now();
        loop {
            if let Some(held) = storage.try_lock(&stem)? {
                return Ok(SessionLock {
                    _held: held,
                    location: storage.lock_location(&stem),
                });
            }
            if started.elapsed() >= wait {
                return Err(Error::Busy {
                    key: key.to_string(),
                    lock: storage.lock_location(&stem),
                });
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Where the lock is (a file, or a database's advisory lock).
    pub fn location(&self) -> &str {
        &self.location
    }
}
