//! Where snapshots and the contents they name are kept, and how a snapshot is taken.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::snapshot::{Entry, Snapshot, Uncovered};

/// What a snapshot covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// Files larger than this are left out and listed as uncovered.
    pub max_file_bytes: u64,
    /// Whether files `.gitignore`, `.ignore` and Git's excludes leave out are covered too.
    pub include_ignored: bool,
    /// Folders never covered (dsh's home, when it is inside the workspace).
    pub exclude: Vec<PathBuf>,
}

impl Default for Coverage {
    fn default() -> Self {
        Coverage {
            max_file_bytes: 16 << 20,
            include_ignored: false,
            exclude: Vec::new(),
        }
    }
}

/// A failure to read the workspace or the store, or to write either.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {why}", path.display())]
    Corrupt { path: PathBuf, why: String },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Snapshots (`manifests/<id>.json`) and the contents they name (`objects/<2>/<62>`, by
/// SHA-256), under one folder.
#[derive(Debug, Clone)]
pub struct CheckpointStore {
    root: PathBuf,
}

/// What a prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub snapshots: usize,
    pub contents: usize,
    pub bytes: u64,
}

impl CheckpointStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        CheckpointStore { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        let (head, tail) = hash.split_at(2.min(hash.len()));
        self.root.join("objects").join(head).join(tail)
    }

    fn manifest_path(&self, id: &str) -> PathBuf {
        self.root.join("manifests").join(format!("{id}.json"))
    }

    /// The covered state of `workspace` now, its new contents stored. `previous` (the last
    /// snapshot of the same workspace, as this process took it) lets unchanged files go
    /// unread; without one, the store's record of the files it last read does.
    pub fn take(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CheckpointError> {
        let cached;
        let previous = match previous {
            Some(previous) => Some(previous),
            None => {
                cached = self.stat_cache();
                cached.as_ref()
            }
        };
        let snapshot = self.walk(workspace, coverage, previous)?;
        // The record on disk is the last snapshot's files: written again only when they
        // changed (a turn that touched nothing costs no write).
        if !previous.is_some_and(|previous| same_files(previous, &snapshot)) {
            self.keep_stat_cache(&snapshot);
        }
        Ok(snapshot)
    }

    fn walk(
        &self,
        workspace: &Path,
        coverage: &Coverage,
        previous: Option<&Snapshot>,
    ) -> Result<Snapshot, CheckpointError> {
        let mut snapshot = Snapshot::default();
        let excluded: Vec<PathBuf> = (coverage.exclude.iter())
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .chain(std::iter::once(self.root.clone()))
            .collect();
        let walk = ignore::WalkBuilder::new(workspace)
            .hidden(false)
            .parents(false)
            .follow_links(false)
            .require_git(false)
            .git_ignore(!coverage.include_ignored)
            .git_global(!coverage.include_ignored)
            .git_exclude(!coverage.include_ignored)
            .ignore(!coverage.include_ignored)
            .filter_entry(move |entry| {
                entry.file_name() != ".git" && !excluded.iter().any(|x| entry.path() == x)
            })
            .build();
        for item in walk {
            let item = match item {
                Ok(item) => item,
                // A folder that cannot be read (or vanished while walked) is not covered, and
                // listed so that a restore leaves what is in it; the rest of the tree still
                // is. Any other failure (out of file handles) fails the snapshot rather than
                // leave a folder looking empty.
                Err(error) => match walk_failure(&error, workspace) {
                    Some(Some(path)) => {
                        snapshot.uncovered.push(Uncovered { path, size: 0 });
                        continue;
                    }
                    Some(None) => continue,
                    None => {
                        return Err(CheckpointError::Corrupt {
                            path: workspace.to_path_buf(),
                            why: format!("cannot walk the workspace: {error}"),
                        });
                    }
                },
            };
            let path = item.path();
            let Ok(relative) = path.strip_prefix(workspace) else {
                continue;
            };
            if relative.as_os_str().is_empty() {
                continue;
            }
            let Some(key) = relative.to_str().map(str::to_owned) else {
                // A name that is not UTF-8 cannot be keyed; such a file is not covered.
                continue;
            };
            // Gone since the walk saw it (a build's temporary file): nothing to keep.
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                continue;
            };
            let kind = meta.file_type();
            let entry = if kind.is_symlink() {
                let Ok(target) = std::fs::read_link(path) else {
                    continue;
                };
                Entry::Symlink {
                    target: target.to_string_lossy().into_owned(),
                }
            } else if kind.is_dir() {
                Entry::Dir {
                    mode: meta.permissions().mode() & 0o7777,
                }
            } else if kind.is_file() {
                if meta.len() > coverage.max_file_bytes {
                    snapshot.uncovered.push(Uncovered {
                        path: key,
                        size: meta.len(),
                    });
                    continue;
                }
                match self.file_entry(path, &meta, previous.and_then(|p| p.entries.get(&key))) {
                    Ok(entry) => entry,
                    // Unreadable, or gone: listed as not covered, so a rewind leaves it be.
                    Err(CheckpointError::Io { source, .. }) if left_out(source.kind()) => {
                        snapshot.uncovered.push(Uncovered {
                            path: key,
                            size: meta.len(),
                        });
                        continue;
                    }
                    Err(other) => return Err(other),
                }
            } else {
                // Sockets, pipes and devices have no content to keep.
                continue;
            };
            snapshot.entries.insert(key, entry);
        }
        Ok(snapshot)
    }

    fn file_entry(
        &self,
        path: &Path,
        meta: &std::fs::Metadata,
        before: Option<&Entry>,
    ) -> Result<Entry, CheckpointError> {
        let nanos = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
        let mtime_ns = nanos(meta.mtime(), meta.mtime_nsec());
        let ctime_ns = nanos(meta.ctime(), meta.ctime_nsec());
        let mode = meta.permissions().mode() & 0o7777;
        if let Some(Entry::File {
            hash,
            size,
            mtime_ns: was,
            ctime_ns: changed,
            ino,
            ..
        }) = before
            && *size == meta.len()
            && *was == mtime_ns
            && *changed == ctime_ns
            && *ino == meta.ino()
        {
            return Ok(Entry::File {
                hash: hash.clone(),
                size: *size,
                mode,
                mtime_ns,
                ctime_ns,
                ino: *ino,
            });
        }
        let content = std::fs::read(path).map_err(io(path))?;
        let hash = self.put(&content)?;
        Ok(Entry::File {
            hash,
            size: content.len() as u64,
            mode,
            mtime_ns,
            ctime_ns,
            ino: meta.ino(),
        })
    }

    /// Stores `content` unless it is stored already; returns its name.
    pub fn put(&self, content: &[u8]) -> Result<String, CheckpointError> {
        let hash = hex(&Sha256::digest(content));
        let path = self.object_path(&hash);
        // Named again now: a prune running beside this must not take it as old; one that
        // took it already leaves it to be written again.
        if !touch(&path) {
            write_atomically(&path, content)?;
        }
        Ok(hash)
    }

    /// Adds `path` (relative to `workspace`) to `snapshot` whatever the coverage says (too
    /// large, ignored), its content stored: what a restore is about to overwrite must be in
    /// the snapshot that undoes it. Returns whether there was a file or link to add.
    pub fn cover_path(
        &self,
        workspace: &Path,
        path: &str,
        snapshot: &mut Snapshot,
    ) -> Result<bool, CheckpointError> {
        // Through real folders only, as a restore writes: a link put where a folder was
        // is not followed.
        let Ok(full) = crate::restore::inside(workspace, path) else {
            return Ok(false);
        };
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            return Ok(false);
        };
        let entry = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).map_err(io(&full))?;
            Entry::Symlink {
                target: target.to_string_lossy().into_owned(),
            }
        } else if meta.is_file() {
            match self.file_entry(&full, &meta, None) {
                Ok(entry) => entry,
                // It cannot be read: it cannot be kept, and a restore reports it.
                Err(CheckpointError::Io { source, .. }) if left_out(source.kind()) => {
                    return Ok(false);
                }
                Err(other) => return Err(other),
            }
        } else {
            return Ok(false);
        };
        snapshot.uncovered.retain(|u| u.path != path);
        snapshot.entries.insert(path.to_owned(), entry);
        Ok(true)
    }

    /// The stored content named `hash`.
    pub fn content(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.object_path(hash);
        let content = std::fs::read(&path).map_err(io(&path))?;
        if hex(&Sha256::digest(&content)) != hash {
            return Err(CheckpointError::Corrupt {
                path,
                why: "the stored content does not match its name".to_owned(),
            });
        }
        Ok(content)
    }

    /// Keeps `snapshot`; returns its id (the SHA-256 of its root record: the same state
    /// saved twice is kept once).
    pub fn save(&self, snapshot: &Snapshot) -> Result<String, CheckpointError> {
        let root = crate::tree::store_trees(self, snapshot)?;
        let text = serde_json::to_vec(&root).map_err(|e| CheckpointError::Corrupt {
            path: self.root.clone(),
            why: e.to_string(),
        })?;
        let id = hex(&Sha256::digest(&text));
        let path = self.manifest_path(&id);
        if !touch(&path) {
            write_atomically(&path, &text)?;
        }
        Ok(id)
    }

    /// The snapshot saved as `id`.
    pub fn load(&self, id: &str) -> Result<Snapshot, CheckpointError> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CheckpointError::Corrupt {
                path: self.root.clone(),
                why: format!("\"{id}\" is not a checkpoint id"),
            });
        }
        let root = self.root_record(id)?;
        crate::tree::load_trees(self, root)
    }

    fn root_record(&self, id: &str) -> Result<crate::tree::Root, CheckpointError> {
        let path = self.manifest_path(id);
        let text = std::fs::read(&path).map_err(io(&path))?;
        serde_json::from_slice(&text).map_err(|e| CheckpointError::Corrupt {
            path,
            why: e.to_string(),
        })
    }

    fn stat_cache_path(&self) -> PathBuf {
        self.root.join("stat-cache.json")
    }

    /// The files as this store last read them (with their sizes, times and inodes), if it
    /// kept a record.
    fn stat_cache(&self) -> Option<Snapshot> {
        let text = std::fs::read(self.stat_cache_path()).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Records the files of `snapshot` as read, for the next process's first snapshot. A
    /// record that cannot be written only costs that snapshot a full read.
    fn keep_stat_cache(&self, snapshot: &Snapshot) {
        let files = Snapshot {
            entries: (snapshot.entries.iter())
                .filter(|(_, e)| matches!(e, Entry::File { .. }))
                .map(|(p, e)| (p.clone(), e.clone()))
                .collect(),
            uncovered: Vec::new(),
        };
        if let Ok(text) = serde_json::to_vec(&files) {
            let _ = write_atomically(&self.stat_cache_path(), &text);
        }
    }

    /// Removes every snapshot but those in `keep`, then every content none of the kept ones
    /// names; what was written less than `min_age` ago stays whatever names it (a snapshot
    /// being taken has stored contents its manifest does not name yet).
    pub fn prune(
        &self,
        keep: &HashSet<String>,
        min_age: std::time::Duration,
    ) -> Result<Pruned, CheckpointError> {
        let young = |entry: &std::fs::DirEntry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().unwrap_or_default() < min_age)
        };
        let mut pruned = Pruned::default();
        let mut named = HashSet::new();
        let manifests = self.root.join("manifests");
        for entry in read_dir(&manifests)? {
            let path = entry.path();
            let Some(id) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
            else {
                continue;
            };
            if keep.contains(id) || young(&entry) {
                crate::tree::named_objects(self, &self.root_record(id)?, &mut named)?;
            } else {
                pruned.bytes += entry.metadata().map_or(0, |m| m.len());
                std::fs::remove_file(&path).map_err(io(&path))?;
                pruned.snapshots += 1;
            }
        }
        for folder in read_dir(&self.root.join("objects"))? {
            for entry in read_dir(&folder.path())? {
                let hash = format!(
                    "{}{}",
                    folder.file_name().to_string_lossy(),
                    entry.file_name().to_string_lossy()
                );
                if !named.contains(&hash) && !young(&entry) {
                    pruned.bytes += entry.metadata().map_or(0, |m| m.len());
                    std::fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
                    pruned.contents += 1;
                }
            }
        }
        // The record of files read may name a content just removed: the next snapshot reads
        // every file again rather than trust it.
        if pruned.contents > 0 {
            let _ = std::fs::remove_file(self.stat_cache_path());
        }
        Ok(pruned)
    }

    /// The bytes the store takes on disk.
    pub fn disk_usage(&self) -> u64 {
        fn size(dir: &Path) -> u64 {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return 0;
            };
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => size(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        }
        size(&self.root)
    }
}

/// Marks `path` as written now; false when it is gone (a prune just took it).
fn touch(path: &Path) -> bool {
    std::fs::File::options()
        .append(true)
        .open(path)
        .is_ok_and(|file| file.set_modified(std::time::SystemTime::now()).is_ok())
}

/// Whether the two snapshots hold the same files, as they were read (times and inodes too).
fn same_files(a: &Snapshot, b: &Snapshot) -> bool {
    fn files(s: &Snapshot) -> impl Iterator<Item = (&String, &Entry)> {
        (s.entries.iter()).filter(|(_, entry)| matches!(entry, Entry::File { .. }))
    }
    files(a).eq(files(b))
}

/// Whether a failure to read something only leaves it out of a snapshot (it cannot be
/// read, or it is gone), rather than failing the snapshot.
fn left_out(kind: std::io::ErrorKind) -> bool {
    matches!(
        kind,
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
    )
}

/// For a walk error that only leaves something out (a folder that cannot be read, or that
/// vanished): `Some` with the path to list as not covered, if the error names one under the
/// workspace. `None`: the walk itself failed.
fn walk_failure(error: &ignore::Error, workspace: &Path) -> Option<Option<String>> {
    if !left_out(error.io_error().map(std::io::Error::kind)?) {
        return None;
    }
    fn path_of(error: &ignore::Error) -> Option<&Path> {
        match error {
            ignore::Error::WithPath { path, .. } => Some(path),
            ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
                path_of(err)
            }
            _ => None,
        }
    }
    Some(
        path_of(error)
            .and_then(|p| p.strip_prefix(workspace).ok())
            .and_then(|p| p.to_str())
            .filter(|p| !p.is_empty())
            .map(str::to_owned),
    )
}

fn read_dir(dir: &Path) -> Result<Vec<std::fs::DirEntry>, CheckpointError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(entries.flatten().collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(dir)(e)),
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Writes `content` to a temporary file beside `path`, then renames it into place: a reader
/// never sees half of it.
fn write_atomically(path: &Path, content: &[u8]) -> Result<(), CheckpointError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let temp = dir.join(format!(
        ".tmp-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let mut file = std::fs::File::create(&temp).map_err(io(&temp))?;
    file.write_all(content).map_err(io(&temp))?;
    drop(file);
    std::fs::rename(&temp, path).map_err(io(path))
}
