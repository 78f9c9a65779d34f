//! How a file a walk found changed gets its name in the store: as the workspace's Git index
//! has it, where the index saw the file as it is and asking is worth reading the index, or
//! read through the fence, named by its content and stored unless the store or Git holds it.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use dsh_fence::{Folder, Root};

use crate::git::{IndexEntries, Repository, Tracked};
use crate::id::BlobId;
use crate::snapshot::Uncovered;
use crate::stat::Stat;
use crate::store::{CheckpointError, CheckpointStore, Coverage, io};
use crate::walk::left_out;

/// A file read at least this large is looked for in Git's index before it is copied.
const ASK_GIT_FROM_BYTES: usize = 256 << 10;
/// Past this many files read in one snapshot, every one is looked for in Git's index.
const ASK_GIT_FROM_FILES: usize = 64;

/// What naming a walk's changed files goes through: the workspace reached through the fence
/// (the folder of the last file read kept open), Git's index, the store's budget.
pub(crate) struct Naming {
    pub root: Root,
    pub folder: Option<(PathBuf, Folder)>,
    pub git: Borrowing,
    pub budget: crate::store::Budget,
    pub misses: usize,
    pub files_read: usize,
    pub knew_nothing: bool,
}

impl Naming {
    /// The name in the store of the file `key` (metadata `stat`), not known unchanged: as Git's
    /// index has it when that is worth asking, or read and stored. `None` when it cannot be
    /// kept (listed in `uncovered`).
    pub(crate) fn name(
        &mut self,
        store: &CheckpointStore,
        workspace: &Path,
        coverage: &Coverage,
        key: &str,
        stat: &Stat,
        uncovered: &mut Vec<Uncovered>,
    ) -> Result<Option<BlobId>, CheckpointError> {
        self.misses += 1;
        // The index is read (megabytes, in a large repository) when it can save reading
        // many files: with nothing known before, or past a few files not known.
        let ask_index = self.knew_nothing || self.misses > ASK_GIT_FROM_FILES;
        if let Some(id) = ask_index.then(|| self.git.tracked_as(key, stat)).flatten() {
            return Ok(Some(id));
        }
        let relative = Path::new(key);
        let max = coverage.max_file_bytes;
        let content = match read_file(&self.root, &mut self.folder, relative, stat, max) {
            Ok(Some(content)) => content,
            // Swapped for another file since the walk saw it (a bigger one, say): left out
            // as the walk would have left it out.
            Ok(None) => {
                uncovered.push(Uncovered::new(key.to_owned(), stat.size));
                return Ok(None);
            }
            // Unreadable, gone, or its folder swapped for a link: listed as not covered, so
            // a rewind leaves it be.
            Err(e) if left_out(e.kind()) || dsh_fence::met_a_link(&e) => {
                uncovered.push(Uncovered::new(key.to_owned(), stat.size));
                return Ok(None);
            }
            Err(e) => return Err(io(&workspace.join(relative))(e)),
        };
        let id = BlobId::of(&content);
        self.files_read += 1;
        // Asking Git reads its whole index once: worth it for a large file, or when many
        // files were read (a branch switched), not for the one small file a turn wrote.
        let ask_git = content.len() >= ASK_GIT_FROM_BYTES || self.files_read > ASK_GIT_FROM_FILES;
        // A copy the store has is named again now, so that a prune beside this keeps it.
        let kept = store.touch_content(&id) || (ask_git && self.git.holds(&id));
        if !kept {
            if !self.budget.take(content.len() as u64) {
                uncovered.push(Uncovered::over_budget(key.to_owned(), stat.size));
                return Ok(None);
            }
            store.put_named(&id.hex(), &content)?;
        }
        Ok(Some(id))
    }
}

/// What a snapshot may take from the workspace's Git repository: the index's record of the
/// files, read once, in order, and only as far as a file is not known from the snapshot
/// before (its lookups come in path order, as a walk's resolution makes them).
pub(crate) struct Borrowing {
    repository: Option<Repository>,
    attributes: bool,
    /// The index's entries not yet passed, and the one at hand; `None` before it is opened.
    entries: Option<Option<IndexEntries>>,
    current: Option<(String, Tracked)>,
    /// The blob ids the index names, sorted: content Git already holds, never copied.
    held: Option<Vec<BlobId>>,
    borrowed: bool,
}

impl Borrowing {
    pub(crate) fn new(workspace: &Path, attributes: bool) -> Borrowing {
        Borrowing {
            // Without Git to read the blobs back there is nothing to borrow.
            repository: Repository::find(workspace).filter(|_| crate::git::git_runs()),
            attributes,
            entries: None,
            current: None,
            held: None,
            borrowed: false,
        }
    }

    /// The blob `key` is, when the index saw the file as it is now. Keys come in order.
    fn tracked_as(&mut self, key: &str, stat: &Stat) -> Option<BlobId> {
        let (repository, attributes) = (self.repository.as_ref()?, self.attributes);
        let entries = self
            .entries
            .get_or_insert_with(|| repository.entries(attributes))
            .as_mut()?;
        while self
            .current
            .as_ref()
            .is_none_or(|(path, _)| path.as_str() < key)
        {
            self.current = Some(entries.next()?);
        }
        let (path, tracked) = self.current.as_ref()?;
        if path != key || !stat.as_tracked(tracked) {
            return None;
        }
        self.borrowed = true;
        Some(tracked.id)
    }

    /// Whether Git holds the blob `id` (the index names it).
    fn holds(&mut self, id: &BlobId) -> bool {
        let Some(repository) = &self.repository else {
            return false;
        };
        let held = self.held.get_or_insert_with(|| repository.held());
        let found = held.binary_search(id).is_ok();
        self.borrowed |= found;
        found
    }

    pub(crate) fn borrowed(&self) -> bool {
        self.borrowed
    }

    pub(crate) fn objects(&self) -> Option<&Path> {
        self.repository.as_ref().map(|r| r.objects.as_path())
    }
}

/// The file `relative` (to the workspace), read through the fence: its folder reached beneath
/// `root` following no symlink (the last one reached kept in `cached`, as a walk's files come
/// folder by folder), the file opened without following one. `None` when what was opened is
/// not the file the walk saw (another inode now) or has grown past `max` bytes: nothing more
/// than `max` is ever read.
fn read_file(
    root: &Root,
    cached: &mut Option<(PathBuf, Folder)>,
    relative: &Path,
    seen: &Stat,
    max: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    };
    if cached.as_ref().is_none_or(|(at, _)| at != parent) {
        *cached = Some((parent.to_path_buf(), root.folder(parent, false)?));
    }
    let Some((_, folder)) = cached else {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    };
    let file = folder.open_read(&dsh_fence::c_name(name)?)?;
    let opened = file.metadata()?;
    if opened.ino() != seen.ino || !opened.is_file() || opened.len() > max {
        return Ok(None);
    }
    let mut content = Vec::with_capacity(usize::try_from(opened.len()).unwrap_or(0));
    file.take(max.saturating_add(1)).read_to_end(&mut content)?;
    if content.len() as u64 > max {
        return Ok(None);
    }
    Ok(Some(content))
}
