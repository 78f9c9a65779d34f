//! Where snapshots and the contents they name are kept, and how a snapshot is taken.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::git::BlobReader;
use crate::id::{BlobId, hex};

/// What a snapshot covers.
#[derive(Debug, Clone)]
pub struct Coverage {
    /// Files larger than this are left out and listed as uncovered.
    pub max_file_bytes: u64,
    /// Whether files `.gitignore`, `.ignore` and Git's excludes leave out are covered too.
    pub include_ignored: bool,
    /// Folders never covered (dsh's home, when it is inside the workspace).
    pub exclude: Vec<PathBuf>,
    /// Whether a file's name says it holds secrets (`.env`, `.env.local`): such a file is
    /// never copied into the store (which would keep its keys where the run's redaction
    /// cannot reach them); it is listed as uncovered, so a rewind leaves it as it is.
    pub holds_secrets: fn(&std::ffi::OsStr) -> bool,
    /// Files of the workspace the run read its settings from (`.dsh/config.toml`, a patch
    /// file), by path relative to it with `/` between names: they may hold keys (a header, an
    /// MCP server's environment, a password in an address) the redactor knows, so they are
    /// left out as files named like secrets are.
    pub secret_files: Vec<String>,
    /// The most the store may hold of copies of the workspace's files (what Git holds is not
    /// copied, so in a repository this is rarely reached): a file whose copy would pass it is
    /// listed as uncovered, as a file over the size limit is. `None`: no limit.
    pub budget_bytes: Option<u64>,
}

impl Default for Coverage {
    fn default() -> Self {
        Coverage {
            max_file_bytes: 16 << 20,
            include_ignored: false,
            exclude: Vec::new(),
            holds_secrets: |_| false,
            secret_files: Vec::new(),
            budget_bytes: None,
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
    #[error(
        "{}: this is no longer the folder the run started in (it was moved, or replaced by \
         another or by a link to one), so no checkpoint is taken or restored there\nhint: \
         start dsh again in the workspace",
        path.display()
    )]
    Replaced { path: PathBuf },
}

/// Refuses a workspace `root` whose path no longer names it: a snapshot taken, or a restore
/// made, by that path would be of (or into) another folder.
pub fn still_at_its_path(root: &dsh_fence::Root) -> Result<(), CheckpointError> {
    match root.is_at_its_path() {
        Ok(true) => Ok(()),
        Ok(false) | Err(_) => Err(CheckpointError::Replaced {
            path: root.path().to_path_buf(),
        }),
    }
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Snapshots (`manifests/<id>.json`) and the contents they name (`objects/<2>/<38>`, by Git's
/// blob id; a store from before keeps its `objects/<2>/<62>` by SHA-256), under one folder;
/// what the workspace's Git repository holds is read from it (`git/`, a private repository
/// that borrows its objects).
#[derive(Clone)]
pub struct CheckpointStore {
    root: PathBuf,
    /// Reads borrowed blobs, started at the first one a restore needs.
    reader: Arc<Mutex<Option<BlobReader>>>,
    /// The blob ids of contents a store from before named by SHA-256, as worked out so far.
    renamed: Arc<Mutex<std::collections::HashMap<String, BlobId>>>,
}

impl std::fmt::Debug for CheckpointStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckpointStore")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// What a snapshot may still add to the store ([`Coverage::budget_bytes`]).
pub(crate) struct Budget {
    left: Option<u64>,
    added: u64,
}

impl Budget {
    /// Takes `bytes` from the budget: false (taking nothing) when they do not fit.
    pub fn take(&mut self, bytes: u64) -> bool {
        match &mut self.left {
            Some(left) if *left < bytes => return false,
            Some(left) => *left -= bytes,
            None => {}
        }
        self.added += bytes;
        true
    }

    /// Records what was added in the store's running total.
    pub fn keep(self, store: &CheckpointStore) {
        if self.added > 0 {
            let total = store.size().saturating_add(self.added);
            let _ = store.write_atomically(&store.root.join("size"), total.to_string().as_bytes());
        }
    }
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
        CheckpointStore {
            root: root.into(),
            reader: Arc::default(),
            renamed: Arc::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes the store's own folder owner-only if it is not: a store made before its files
    /// were made private, or in a home whose mode lets others in, still holds copies of the
    /// workspace's files.
    pub(crate) fn keep_private(&self) {
        if let Ok(meta) = std::fs::symlink_metadata(&self.root)
            && meta.is_dir()
            && meta.permissions().mode() & 0o077 != 0
        {
            let _ = std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(0o700));
        }
    }

    fn object_path(&self, hash: &str) -> PathBuf {
        let (head, tail) = hash.split_at(2.min(hash.len()));
        self.root.join("objects").join(head).join(tail)
    }

    pub(crate) fn manifest_path(&self, id: &str) -> PathBuf {
        self.root.join("manifests").join(format!("{id}.json"))
    }

    /// Stores `content` unless it is stored already; returns its name.
    pub fn put(&self, content: &[u8]) -> Result<BlobId, CheckpointError> {
        let id = BlobId::of(content);
        self.put_named(&id.hex(), content)?;
        Ok(id)
    }

    /// Stores `content` under `name` (its id, worked out by the caller) unless it is stored.
    pub(crate) fn put_named(&self, name: &str, content: &[u8]) -> Result<(), CheckpointError> {
        let path = self.object_path(name);
        // Named again now: a prune running beside this must not take it as old; one that
        // took it already leaves it to be written again.
        if !self.touch(&path) {
            self.write_atomically(&path, content)?;
        }
        Ok(())
    }

    /// Marks the store's copy of `id` as named now (so that a prune running beside this keeps
    /// it); false when it has none.
    pub(crate) fn touch_content(&self, id: &BlobId) -> bool {
        self.touch(&self.object_path(&id.hex()))
    }

    /// Whether the store keeps a copy named `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        (self.site_of(&self.object_path(name), false))
            .and_then(|(folder, name)| folder.entry(&name))
            .is_ok_and(|meta| meta.is_some_and(|m| m.is_file()))
    }

    /// Lets the store read what the repository whose objects are at `objects` holds: its
    /// private repository borrows them (nothing of the user's is written).
    pub(crate) fn borrow_from(&self, objects: Option<&Path>) -> Result<(), CheckpointError> {
        let Some(objects) = objects else {
            return Ok(());
        };
        private_repository(self, objects)
            .map(|_| ())
            .map_err(io(&self.root))
    }

    /// The bytes of copies the store holds, as it keeps count (made once from the disk).
    fn size(&self) -> u64 {
        let path = self.root.join("size");
        if let Some(size) =
            (std::fs::read_to_string(&path).ok()).and_then(|t| t.trim().parse().ok())
        {
            return size;
        }
        let size = self.disk_usage();
        let _ = self.write_atomically(&path, size.to_string().as_bytes());
        size
    }

    /// What a snapshot under `coverage` may add to the store.
    pub(crate) fn budget(&self, coverage: &Coverage) -> Budget {
        Budget {
            left: coverage
                .budget_bytes
                .map(|budget| budget.saturating_sub(self.size())),
            added: 0,
        }
    }

    /// The stored content `id`: the store's copy, or what the repository it borrows from
    /// holds.
    pub fn content(&self, id: &BlobId) -> Result<Vec<u8>, CheckpointError> {
        self.content_named(&id.hex())
    }

    /// The stored content named `hash` (a blob id, or a store from before's SHA-256).
    pub(crate) fn content_named(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.object_path(hash);
        let content = match self.read(&path) {
            Ok(content) => content,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && hash.len() == 40 => {
                return self.borrowed(hash);
            }
            Err(e) => return Err(io(&path)(e)),
        };
        let named = if hash.len() == 40 {
            BlobId::of(&content).hex()
        } else {
            hex(&Sha256::digest(&content))
        };
        if named != hash {
            return Err(CheckpointError::Corrupt {
                path,
                why: "the stored content does not match its name".to_owned(),
            });
        }
        Ok(content)
    }

    /// The name `hash` has now: a content a store from before named by its SHA-256 is named by
    /// its blob id, as every content is now (the copy linked to that name), so that snapshots
    /// from before compare with new ones by name.
    pub(crate) fn current_name(&self, hash: String) -> Result<BlobId, CheckpointError> {
        if hash.len() != 64 {
            return BlobId::parse(&hash).ok_or_else(|| CheckpointError::Corrupt {
                path: self.root.clone(),
                why: format!("\"{hash}\" names no content"),
            });
        }
        if let Some(id) = self.lock_renamed().get(&hash) {
            return Ok(*id);
        }
        let content = self.content_named(&hash)?;
        let id = BlobId::of(&content);
        let name = id.hex();
        if !self.has(&name) {
            let (old, new) = (self.object_path(&hash), self.object_path(&name));
            if let Some(dir) = new.parent() {
                std::fs::create_dir_all(dir).map_err(io(dir))?;
            }
            if std::fs::hard_link(&old, &new).is_err() {
                self.put_named(&name, &content)?;
            }
        }
        self.lock_renamed().insert(hash, id);
        Ok(id)
    }

    fn lock_renamed(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, BlobId>> {
        self.renamed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The blob `hash` from the repository the store borrows from.
    fn borrowed(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let corrupt = |why: String| CheckpointError::Corrupt {
            path: self.root.join("git"),
            why,
        };
        let id = BlobId::parse(hash).ok_or_else(|| corrupt(format!("\"{hash}\" is no blob id")))?;
        let git = self.root.join("git");
        let mut reader = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if reader.is_none() {
            *reader = Some(BlobReader::start(&git).map_err(io(&git))?);
        }
        let Some(running) = reader.as_mut() else {
            return Err(corrupt("no reader".to_owned()));
        };
        match running.read(&id) {
            Ok(Some(content)) if BlobId::of(&content) == id => Ok(content),
            Ok(Some(_)) => Err(corrupt(format!("Git's blob {hash} does not match its id"))),
            Ok(None) => Err(corrupt(format!(
                "the content {hash} was Git's, and the repository no longer has it (Git \
                 removed it since, or the repository is gone)"
            ))),
            Err(e) => {
                *reader = None;
                Err(io(&git)(e))
            }
        }
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

/// The store's own files, reached beneath its folder as descriptors and never through a
/// symlink: a link planted in the store (by anything that can write the home) cannot have a
/// write, a prune or a touch land elsewhere.
impl CheckpointStore {
    /// The store's folder, made owner-only when missing, opened.
    fn fenced(&self) -> std::io::Result<dsh_fence::Root> {
        use std::os::unix::fs::DirBuilderExt;
        if !self.root.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.root)?;
        }
        dsh_fence::Root::open(&self.root)
    }

    /// `path` (inside the store) as its folder, reached beneath the store (made owner-only
    /// where missing, when `make`), and its name.
    fn site_of(
        &self,
        path: &Path,
        make: bool,
    ) -> std::io::Result<(dsh_fence::Folder, std::ffi::CString)> {
        let relative = path
            .strip_prefix(&self.root)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EXDEV))?;
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
        };
        let root = self.fenced()?;
        let folder = if make {
            root.folder_made(parent, 0o700)?
        } else {
            root.folder(parent, false)?
        };
        Ok((folder, dsh_fence::c_name(name)?))
    }

    /// Marks `path` as written now; false when it is gone (a prune just took it).
    pub(crate) fn touch(&self, path: &Path) -> bool {
        self.site_of(path, false)
            .and_then(|(folder, name)| folder.open_append(&name))
            .is_ok_and(|file| file.set_modified(std::time::SystemTime::now()).is_ok())
    }

    /// The entries of the folder `dir` (inside the store), each as its name, its path and
    /// what it is (a symlink as itself); none when the folder is missing.
    pub(crate) fn read_dir(
        &self,
        dir: &Path,
    ) -> Result<Vec<(String, PathBuf, std::fs::Metadata)>, CheckpointError> {
        let listed = (dir.strip_prefix(&self.root))
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EXDEV))
            .and_then(|relative| self.fenced()?.folder(relative, false))
            .and_then(|folder| folder.entries());
        match listed {
            Ok(entries) => Ok(entries
                .into_iter()
                .map(|(name, meta)| {
                    let name = name.to_string_lossy().into_owned();
                    (name.clone(), dir.join(&name), meta)
                })
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(io(dir)(e)),
        }
    }

    /// The whole file `path` (inside the store), not read through a link.
    pub(crate) fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut content = Vec::new();
        self.open(path)?.read_to_end(&mut content)?;
        Ok(content)
    }

    /// The file `path` (inside the store), opened for reading, not through a link.
    pub(crate) fn open(&self, path: &Path) -> std::io::Result<std::fs::File> {
        let (folder, name) = self.site_of(path, false)?;
        folder.open_read(&name)
    }

    /// Removes the file `path` (inside the store); one already gone is not an error.
    pub(crate) fn remove(&self, path: &Path) -> Result<(), CheckpointError> {
        match self
            .site_of(path, false)
            .and_then(|(folder, name)| folder.remove_file(&name))
        {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
            _ => Ok(()),
        }
    }

    /// Writes `content` to a temporary file beside `path` (inside the store), then renames it
    /// into place: a reader never sees half of it. What the store keeps (copies of the
    /// workspace's files) is private whatever the mode of the home it is in: folders are
    /// made 0700 and files 0600.
    pub(crate) fn write_atomically(
        &self,
        path: &Path,
        content: &[u8],
    ) -> Result<(), CheckpointError> {
        self.write_atomically_by(path, |file| file.write_all(content))
    }

    /// Writes a file of the store whole or not at all, its content written by `write` (a
    /// large one a window at a time, never held whole).
    pub(crate) fn write_atomically_by(
        &self,
        path: &Path,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), CheckpointError> {
        let (folder, name) = self.site_of(path, true).map_err(io(path))?;
        let temp = dsh_fence::c_name(std::ffi::OsStr::new(&format!(
            ".tmp-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        )))
        .map_err(io(path))?;
        let _ = folder.remove_file(&temp);
        let file = folder.create_new(&temp, 0o600).map_err(io(path))?;
        let mut file = std::io::BufWriter::with_capacity(64 * 1024, file);
        let written = write(&mut file).and_then(|()| file.flush());
        drop(file);
        if let Err(e) = written {
            let _ = folder.remove_file(&temp);
            return Err(io(path)(e));
        }
        folder
            .rename(&temp, std::os::fd::AsFd::as_fd(&folder), &name, 0)
            .map_err(io(path))
    }
}

/// A private repository of the store's whose objects are the user's (`objects/info/
/// alternates`), made once: what reads borrowed blobs without reading, or writing, anything
/// of the user's repository but its objects.
pub(crate) fn private_repository(
    store: &CheckpointStore,
    objects: &Path,
) -> std::io::Result<PathBuf> {
    let dir = store.root().join("git");
    let alternates = dir.join("objects/info/alternates");
    let wanted = format!("{}\n", objects.display());
    if std::fs::read_to_string(&alternates).is_ok_and(|text| text == wanted) {
        return Ok(dir);
    }
    use std::os::unix::fs::DirBuilderExt;
    for sub in ["objects/info", "refs"] {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join(sub))?;
    }
    let write = |path: &Path, text: &str| {
        store
            .write_atomically(path, text.as_bytes())
            .map_err(std::io::Error::other)
    };
    write(&dir.join("HEAD"), "ref: refs/heads/main\n")?;
    write(
        &dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    )?;
    write(&alternates, &wanted)?;
    Ok(dir)
}
