//! The sessions this server has run: where each lives, and a lock that lets one turn run in
//! it at a time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::OwnedMutexGuard;

/// Held while a turn runs in a session.
pub type TurnGuard = OwnedMutexGuard<()>;

#[derive(Clone, Default)]
pub struct Sessions {
    known: Arc<Mutex<HashMap<String, Known>>>,
}

struct Known {
    cwd: PathBuf,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Sessions {
    /// The folder a session of this server ran in.
    pub fn folder_of(&self, id: &str) -> Option<PathBuf> {
        let known = self.known.lock().ok()?;
        known.get(id).map(|session| session.cwd.clone())
    }

    /// Waits for the turn running in session `id`, if this server runs one, and holds the
    /// session until the guard is dropped. `None` for a session this server has not run.
    pub async fn turn_of(&self, id: &str) -> Option<TurnGuard> {
        let lock = {
            let known = self.known.lock().ok()?;
            known.get(id)?.turn.clone()
        };
        Some(lock.lock_owned().await)
    }

    /// Records a session just opened and holds it for its turn; `None` when the session is
    /// known already (the call holds it through [`Sessions::turn_of`]).
    pub fn opened(&self, id: &str, cwd: &Path) -> Option<TurnGuard> {
        let mut known = self.known.lock().ok()?;
        if known.contains_key(id) {
            return None;
        }
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        let guard = turn.clone().try_lock_owned().ok();
        let cwd = cwd.to_path_buf();
        known.insert(id.to_owned(), Known { cwd, turn });
        guard
    }
}
