//! The walk a snapshot is taken from: every covered path of the workspace with its metadata,
//! in path order. Each folder is read through its own descriptor, opened from its parent's
//! without following a link, and each entry is asked of the folder that holds it by its name
//! alone; a folder's names are sorted before the walk goes on, so what it finds comes out in
//! order, with nothing left to sort.

mod listing;
mod rules;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_fence::Folder;

use crate::entries::Entry;
use crate::snapshot::Uncovered;
use crate::store::{CheckpointError, CheckpointStore, Coverage};
use crate::watch::Watch;
use listing::Kind;
use rules::Rules;

/// What one walk of the workspace found.
#[derive(Default)]
pub(crate) struct Walked {
    /// Each covered path's entry, in path order; a file's not named yet
    /// ([`crate::BlobId::UNNAMED`]): resolution names it in place, in the same array, so that
    /// a snapshot of 50,000 files is never held twice.
    pub seen: Vec<(String, Entry)>,
    pub uncovered: Vec<Uncovered>,
    /// Whether a `.gitattributes` is among the covered files: Git may then convert content.
    pub attributes: bool,
}

/// Which paths a walk looks at: all, or (for a snapshot taken from what a [`Watch`] saw) the
/// entries of some folders and everything in others, and the folders on the way to them.
#[derive(Clone)]
pub(crate) enum Focus {
    Everything,
    Some {
        /// Folders whose own entries are looked at.
        listed: BTreeSet<String>,
        /// Folders looked at whole.
        whole: BTreeSet<String>,
    },
}

impl Focus {
    /// Whether the walk reports `key`.
    pub(crate) fn takes(&self, key: &str) -> bool {
        let Focus::Some { listed, whole } = self else {
            return true;
        };
        let parent = key.rsplit_once('/').map_or("", |(parent, _)| parent);
        !key.is_empty() && (listed.contains(parent) || within(whole, key))
    }

    /// Whether the walk goes into `key` (or, for a file, looks at it).
    fn descends(&self, key: &str) -> bool {
        let Focus::Some { listed, whole } = self else {
            return true;
        };
        let on_the_way = |set: &BTreeSet<String>| {
            let below = format!("{key}/");
            (set.range(below.clone()..).next()).is_some_and(|s| s.starts_with(&below))
        };
        self.takes(key) || on_the_way(listed) || on_the_way(whole) || listed.contains(key)
    }
}

/// Whether `key` is one of `folders` or inside one.
pub(crate) fn within(folders: &BTreeSet<String>, key: &str) -> bool {
    // Asked of every entry of a snapshot when a turn made no folder: nothing to search.
    if folders.is_empty() {
        return false;
    }
    key.match_indices('/')
        .map(|(at, _)| &key[..at])
        .chain(std::iter::once(key))
        .any(|prefix| folders.contains(prefix))
}

/// Why a snapshot stopped before it was whole.
pub(crate) const STOPPED: &str = "the snapshot was stopped before it was taken";

/// Whether a failure to read something only leaves it out of a snapshot (it cannot be
/// read, or it is gone), rather than failing the snapshot.
pub(crate) fn left_out(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
    )
}

impl CheckpointStore {
    /// Every covered path's metadata (of those `focus` asks for), each covered folder it meets
    /// watched by `watch`. A focused walk still starts at the top, so that every ignore file
    /// on the way applies as it does to a whole walk. One thread: two took as much CPU time
    /// and more memory, for a shorter walk only on a machine with a core to spare.
    pub(crate) fn walk(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        stop: &AtomicBool,
        focus: &Focus,
        watch: Option<&Watch>,
    ) -> Result<Walked, CheckpointError> {
        // What is excluded is folders, named by their path (the store's own, when it is in
        // the workspace); a file is never compared.
        let excluded: Vec<String> = (coverage.exclude.iter())
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .chain(std::iter::once(self.root().to_path_buf()))
            .filter_map(|p| Some(p.strip_prefix(workspace).ok()?.to_str()?.to_owned()))
            .filter(|key| !key.is_empty())
            .collect();
        if let Some(watch) = watch
            && focus.takes("")
        {
            watch.add(workspace, "");
        }
        let mut walker = Walker {
            workspace,
            coverage,
            focus,
            watch,
            stop,
            excluded,
            found: Walked::default(),
            buffer: vec![0; 32 << 10],
        };
        let failed = |why: String| CheckpointError::Corrupt {
            path: workspace.to_path_buf(),
            why,
        };
        let top = match listing::open_top(workspace) {
            Ok(top) => top,
            // A workspace that cannot be read (or is gone) has nothing to cover.
            Err(e) if left_out(e.kind()) || e.raw_os_error() == Some(libc::ENOTDIR) => {
                return Ok(Walked::default());
            }
            Err(e) => return Err(failed(walker.cannot("", &e))),
        };
        let rules = Rules::new(workspace, !coverage.include_ignored);
        walker.folder(&top, "", &rules).map_err(failed)?;
        if stop.load(Ordering::Relaxed) {
            return Err(failed(STOPPED.to_owned()));
        }
        let mut walked = walker.found;
        walked.uncovered.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(walked)
    }
}

/// One walk under way.
struct Walker<'a> {
    workspace: &'a Path,
    coverage: &'a Coverage,
    focus: &'a Focus,
    watch: Option<&'a Watch>,
    stop: &'a AtomicBool,
    /// The keys of the folders never covered.
    excluded: Vec<String>,
    found: Walked,
    /// Where a folder's listing is read into.
    buffer: Vec<u8>,
}

/// A name in the folder being read.
struct Item {
    /// Its key: the folder's, a `/` and the name.
    key: String,
    /// Where the name starts in the key.
    at: usize,
    folder: bool,
}

impl Item {
    fn name(&self) -> &str {
        &self.key[self.at..]
    }
}

impl Walker<'_> {
    /// Walks the folder `key`, open as `folder`, where `rules` (those of the folder it is in)
    /// apply: reports what the focus takes of it and goes into its folders, in path order. An
    /// error only for a walk that cannot go on.
    fn folder(&mut self, folder: &Folder, key: &str, rules: &Rules) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        let at = if key.is_empty() { 0 } else { key.len() + 1 };
        let mut items = Vec::new();
        let mut found = rules::Found::default();
        let listed = listing::list(folder, &mut self.buffer, |name, kind| {
            found.note(name);
            // `.git` is the user's repository, never covered; a name that is not UTF-8
            // cannot be keyed, and such an entry is not covered either.
            let Some(name) = std::str::from_utf8(name).ok().filter(|n| *n != ".git") else {
                return;
            };
            let mut item = String::with_capacity(at + name.len());
            if at > 0 {
                item.push_str(key);
                item.push('/');
            }
            item.push_str(name);
            items.push((item, kind));
        });
        if let Err(e) = listed {
            return self.unreadable(key, &e);
        }
        let rules = rules.below(|| self.workspace.join(key), key, found);
        let mut scratch = Vec::new();
        let items = self.kept(folder, &rules, items, at, &mut scratch);
        self.in_order(folder, items, &rules, &mut scratch)
    }

    /// The names listed that the walk looks at: neither ignored nor excluded, and in focus.
    fn kept(
        &self,
        folder: &Folder,
        rules: &Rules,
        listed: Vec<(String, Kind)>,
        at: usize,
        scratch: &mut Vec<u8>,
    ) -> Vec<Item> {
        let mut items = Vec::with_capacity(listed.len());
        for (key, kind) in listed {
            let is_folder = match kind {
                Kind::Folder => true,
                Kind::Other => false,
                Kind::Unknown => listing::c_name(scratch, &key[at..])
                    .and_then(|name| listing::stat_at(folder.as_fd(), name).ok())
                    .is_some_and(|stat| listing::is_folder(&stat)),
            };
            if rules.ignore(&key, is_folder)
                || (is_folder && self.excluded.contains(&key))
                || !self.focus.descends(&key)
            {
                continue;
            }
            items.push(Item {
                key,
                at,
                folder: is_folder,
            });
        }
        items
    }

    /// Reports `items` and walks their folders (where `rules` apply), in path order: a
    /// folder's entry comes where its name sorts, and what is in it where its name and a `/`
    /// do (after `a.b` for the folder `a`, before `a0`).
    fn in_order(
        &mut self,
        folder: &Folder,
        mut items: Vec<Item>,
        rules: &Rules,
        scratch: &mut Vec<u8>,
    ) -> Result<(), String> {
        let mut order: Vec<(usize, bool)> = Vec::with_capacity(items.len() * 2);
        for (i, item) in items.iter().enumerate() {
            order.push((i, false));
            if item.folder {
                order.push((i, true));
            }
        }
        order.sort_unstable_by(|&(a, a_in), &(b, b_in)| {
            let slash = |inside: bool| inside.then_some(&b'/');
            let a = items[a].name().as_bytes().iter().chain(slash(a_in));
            a.cmp(items[b].name().as_bytes().iter().chain(slash(b_in)))
        });
        for (i, inside) in order {
            let item = &mut items[i];
            // A file's key is gone once reported; a folder found to be something else when
            // reported is not gone into.
            if inside && !item.folder {
                continue;
            }
            let Some(name) = listing::c_name(scratch, item.name()) else {
                continue;
            };
            if !inside {
                if self.focus.takes(&item.key) {
                    self.report(folder, name, item);
                }
                continue;
            }
            match listing::open_folder(folder, name) {
                Ok(inner) => self.folder(&inner, &item.key, rules)?,
                Err(e) => self.unreadable(&item.key, &e)?,
            }
        }
        Ok(())
    }

    /// Adds the entry at `name` in `folder` (`item`) to what was found, and watches it if it
    /// is a folder. A file's key is moved out: it is not needed again.
    fn report(&mut self, folder: &Folder, name: &std::ffi::CStr, item: &mut Item) {
        // Gone since it was listed (a build's temporary file): nothing to keep.
        let Ok(stat) = listing::stat_at(folder.as_fd(), name) else {
            return;
        };
        item.folder = listing::is_folder(&stat);
        let found = &mut self.found;
        let entry = match stat.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                let Ok(target) = folder.read_link(name) else {
                    return;
                };
                Entry::Symlink {
                    target: target.to_string_lossy().into_owned(),
                }
            }
            libc::S_IFDIR => {
                if let Some(watch) = self.watch {
                    watch.add(&self.workspace.join(&item.key), &item.key);
                }
                let mode = listing::mode(&stat);
                found.seen.push((item.key.clone(), Entry::Dir { mode }));
                return;
            }
            libc::S_IFREG => {
                let name = OsStr::from_bytes(name.to_bytes());
                found.attributes |= name == ".gitattributes";
                let size = listing::size(&stat);
                let secret = (self.coverage.holds_secrets)(name)
                    || self.coverage.secret_files.contains(&item.key);
                if size > self.coverage.max_file_bytes || secret {
                    (found.uncovered).push(Uncovered::new(std::mem::take(&mut item.key), size));
                    return;
                }
                listing::file_entry(&stat)
            }
            // Sockets, pipes and devices have no content to keep.
            _ => return,
        };
        found.seen.push((std::mem::take(&mut item.key), entry));
    }

    /// A folder that could not be opened or listed: not covered, and listed so that a
    /// restore leaves what is in it (the rest of the tree still is). A folder gone, or
    /// swapped for a link, since it was listed is the same. Any other failure (out of file
    /// handles) fails the walk rather than leave a folder looking empty.
    fn unreadable(&mut self, key: &str, error: &std::io::Error) -> Result<(), String> {
        let swapped = matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR));
        if !left_out(error.kind()) && !swapped {
            return Err(self.cannot(key, error));
        }
        if !key.is_empty() {
            (self.found.uncovered).push(Uncovered::new(key.to_owned(), 0));
        }
        Ok(())
    }

    /// Why the walk stopped at `key`.
    fn cannot(&self, key: &str, error: &std::io::Error) -> String {
        let path = self.workspace.join(key);
        format!("cannot walk the workspace: {}: {error}", path.display())
    }
}
