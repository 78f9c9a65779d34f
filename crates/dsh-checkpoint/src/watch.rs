//! Watching the workspace's folders between two snapshots (inotify), so that the next one
//! re-reads only what changed instead of walking the whole tree again: the end of a turn, and
//! in a front end that stays open the start of the next.
//!
//! A watch is on every covered folder, added as the walk that took the snapshot met it. What
//! it cannot see makes it give up, and the next snapshot walks the tree: a folder it could not
//! watch (the kernel's limit), events lost (the queue overflowed), or an ignore file that
//! changed (what is covered may have changed anywhere below it).

use std::collections::{BTreeSet, HashMap};
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// What changed since the watch began, by path relative to the workspace.
#[derive(Debug, Default, Clone)]
pub(crate) struct Changed {
    /// Entries made, changed or removed (a removed folder takes what was in it).
    pub paths: BTreeSet<String>,
    /// Folders made or moved in, to be walked whole.
    pub folders: BTreeSet<String>,
}

/// The workspace's covered folders, watched since a snapshot (its base).
pub struct Watch {
    fd: OwnedFd,
    /// The folder each watch descriptor is on (`""` for the workspace itself).
    folders: Mutex<HashMap<i32, String>>,
    /// What changed since the base, as read from the kernel so far: kept until a snapshot
    /// taken from it becomes the new base ([`Watch::rebase`]), so that a snapshot taken and
    /// then given up loses nothing.
    seen: Mutex<Changed>,
    /// A folder could not be watched, or events were lost: the next snapshot walks.
    gave_up: AtomicBool,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("gave_up", &self.gave_up.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

const EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_DONT_FOLLOW
    | libc::IN_ONLYDIR
    | libc::IN_EXCL_UNLINK;

impl Watch {
    /// A new watch with no folder yet; `None` where the kernel gives none.
    pub(crate) fn new() -> Option<Watch> {
        // SAFETY: a plain system call; its descriptor, when there is one, is owned below.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        Some(Watch {
            // SAFETY: a new descriptor that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            folders: Mutex::new(HashMap::new()),
            seen: Mutex::new(Changed::default()),
            gave_up: AtomicBool::new(false),
        })
    }

    /// Watches the folder `full`, `key` in the workspace.
    pub(crate) fn add(&self, full: &Path, key: &str) {
        let Ok(path) = CString::new(full.as_os_str().as_bytes()) else {
            self.give_up();
            return;
        };
        // SAFETY: an open descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), path.as_ptr(), EVENTS) };
        if wd < 0 {
            // Out of watches (the kernel's limit), or the folder is gone already.
            self.give_up();
            return;
        }
        self.lock().insert(wd, key.to_owned());
    }

    fn give_up(&self) {
        self.gave_up.store(true, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, String>> {
        lock(&self.folders)
    }

    /// Whether it gave up: the next snapshot walks the tree.
    pub fn gave_up(&self) -> bool {
        self.gave_up.load(Ordering::Relaxed)
    }

    /// The snapshot just taken from what it saw is the new base: what it saw until then is
    /// in that snapshot.
    pub fn rebase(&self) {
        *lock(&self.seen) = Changed::default();
    }

    /// What changed since the base; `None` when the watch cannot say (it gave up), and the
    /// tree must be walked.
    pub(crate) fn changed(&self) -> Option<Changed> {
        let mut seen = lock(&self.seen);
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            // SAFETY: an open descriptor and a buffer of the length given.
            let read = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            if read <= 0 {
                break;
            }
            self.take_events(&buffer[..read as usize], &mut seen);
        }
        (!self.gave_up()).then(|| seen.clone())
    }

    /// Adds what the events in `bytes` say to `changed`.
    fn take_events(&self, bytes: &[u8], changed: &mut Changed) {
        let header = std::mem::size_of::<libc::inotify_event>();
        let mut at = 0;
        while at + header <= bytes.len() {
            let field = |offset: usize| -> u32 {
                let start = at + offset;
                u32::from_ne_bytes(bytes[start..start + 4].try_into().unwrap_or_default())
            };
            let (wd, mask, length) = (field(0) as i32, field(4), field(12) as usize);
            let name_bytes = bytes
                .get(at + header..at + header + length)
                .unwrap_or_default();
            at += header + length;
            let name_end = name_bytes
                .iter()
                .position(|&b| b == 0)
                .unwrap_or(name_bytes.len());
            let name = String::from_utf8_lossy(&name_bytes[..name_end]).into_owned();
            if mask & libc::IN_Q_OVERFLOW != 0 {
                self.give_up();
                continue;
            }
            let folder = if mask & libc::IN_IGNORED != 0 {
                self.lock().remove(&wd);
                continue;
            } else {
                match self.lock().get(&wd) {
                    Some(folder) => folder.clone(),
                    None => continue,
                }
            };
            // What decides coverage changed: anything below may now be in or out.
            if matches!(name.as_str(), ".gitignore" | ".ignore") {
                self.give_up();
                continue;
            }
            let path = match (folder.is_empty(), name.is_empty()) {
                (_, true) => folder,
                (true, false) => name,
                (false, false) => format!("{folder}/{name}"),
            };
            if path.is_empty() {
                // The workspace itself was moved or removed: nothing can be said of it.
                if mask & (libc::IN_DELETE_SELF | libc::IN_MOVE_SELF) != 0 {
                    self.give_up();
                }
                continue;
            }
            let made = mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
            if mask & libc::IN_ISDIR != 0 && made {
                changed.folders.insert(path);
            } else {
                changed.paths.insert(path);
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_made_are_what_the_watch_says() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        std::fs::write(root.join("keep.txt"), "k").unwrap();
        let watch = Watch::new().unwrap();
        watch.add(root, "");
        watch.add(&root.join("src"), "src");
        std::fs::write(root.join("src/a.rs"), "changed").unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        std::fs::create_dir_all(root.join("made/deep")).unwrap();
        std::fs::remove_file(root.join("keep.txt")).unwrap();
        let changed = watch.changed().unwrap();
        assert_eq!(
            changed.paths.into_iter().collect::<Vec<_>>(),
            ["keep.txt", "new.txt", "src/a.rs"]
        );
        assert_eq!(changed.folders.into_iter().collect::<Vec<_>>(), ["made"]);
        // Until a snapshot taken from them becomes the base, they are still what changed.
        assert_eq!(watch.changed().unwrap().paths.len(), 3);
        watch.rebase();
        assert!(watch.changed().unwrap().paths.is_empty());
        // An ignore file changed: the watch cannot say what is covered now.
        std::fs::write(root.join("src/.gitignore"), "*.rs\n").unwrap();
        assert!(watch.changed().is_none());
    }
}
