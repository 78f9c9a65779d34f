//! What a checkpoint borrows from the workspace's Git repository, read-only: the index's
//! record of each tracked file (its blob id, and the size, times and inode Git saw it with),
//! and the blobs themselves, read back for a restore.
//!
//! A file whose size, times and inode are what the index recorded, in a repository where no
//! attribute or setting converts content between the index and the files (`.gitattributes`,
//! `core.autocrlf`), has exactly the bytes of the index's blob: a checkpoint names that blob and
//! copies nothing, so the first checkpoint of a committed tree reads no file. Nothing is ever
//! written into the repository: blobs are read by a `git cat-file` run against a private
//! repository of the store's that borrows the user's objects (Git's alternates) and reads no
//! configuration of the user's repository.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use crate::id::BlobId;

/// The repository a workspace lies in, as far as a checkpoint needs it.
#[derive(Debug, Clone)]
pub(crate) struct Repository {
    /// The index file (`<gitdir>/index`).
    index: PathBuf,
    /// Where its objects are (a linked worktree's are the common folder's).
    pub objects: PathBuf,
    /// The workspace's path inside the worktree (`""` at its top, else `sub/dir/`).
    prefix: String,
    /// Whether an attribute or a setting may convert content between the index and the
    /// files: then no index entry is taken without reading the file.
    converts: bool,
}

/// One tracked file as the index recorded it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tracked {
    pub id: BlobId,
    mtime: (u32, u32),
    ctime: (u32, u32),
    ino: u32,
    size: u32,
    mode: u32,
}

impl Tracked {
    /// Whether a file with these times (seconds, nanoseconds), inode, size and executable bit
    /// is the one the index saw (the fields as Git keeps them, cut to 32 bits).
    pub fn matches(
        &self,
        mtime: (u32, u32),
        ctime: (u32, u32),
        ino: u32,
        size: u32,
        executable: bool,
    ) -> bool {
        self.mtime == mtime
            && self.ctime == ctime
            && self.ino == ino
            && self.size == size
            && (self.mode == 0o100755) == executable
    }
}

/// Whether `git` can be run here: without it, borrowed blobs could not be read back, so none
/// is borrowed. Asked once a process.
pub(crate) fn git_runs() -> bool {
    static RUNS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RUNS.get_or_init(|| {
        Command::new("git")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

impl Repository {
    /// The repository `workspace` is in, if any (a `.git` folder, or a `.git` file naming
    /// one, in it or above it).
    pub fn find(workspace: &Path) -> Option<Repository> {
        let (top, gitdir) = workspace.ancestors().find_map(|dir| {
            let dot = dir.join(".git");
            let meta = std::fs::symlink_metadata(&dot).ok()?;
            if meta.is_dir() {
                return Some((dir.to_path_buf(), dot));
            }
            // A linked worktree or a submodule: `gitdir: <path>`.
            let text = std::fs::read_to_string(&dot).ok()?;
            let named = text.strip_prefix("gitdir:")?.trim();
            Some((dir.to_path_buf(), dir.join(named)))
        })?;
        let common = std::fs::read_to_string(gitdir.join("commondir"))
            .ok()
            .map(|c| gitdir.join(c.trim()))
            .unwrap_or_else(|| gitdir.clone());
        let relative = workspace.strip_prefix(&top).ok()?;
        let mut prefix = relative.to_str()?.to_owned();
        if !prefix.is_empty() {
            prefix.push('/');
        }
        let converts = converts(&top, workspace, &gitdir, &common);
        Some(Repository {
            index: gitdir.join("index"),
            objects: common.join("objects"),
            prefix,
            converts,
        })
    }

    /// The index's entries for files under the workspace, by path relative to it and in
    /// order, read one at a time from the file; `None` when its entries cannot be taken as the
    /// files' content (an attribute or setting may convert it, `attributes_inside` saying
    /// whether the workspace holds a `.gitattributes`) or it cannot be read. Entries Git may
    /// not have written yet (racily clean: changed in the same instant the index was written)
    /// are left out, as Git itself does not trust them.
    pub fn entries(&self, attributes_inside: bool) -> Option<IndexEntries> {
        if self.converts || attributes_inside {
            return None;
        }
        IndexEntries::read(&self.index, &self.prefix)
    }

    /// Every blob id the index names (Git holds each), sorted.
    pub fn held(&self) -> Vec<BlobId> {
        let mut held: Vec<BlobId> = IndexEntries::read(&self.index, "")
            .map(|entries| entries.every().map(|(_, t)| t.id).collect())
            .unwrap_or_default();
        held.sort_unstable();
        held.dedup();
        held
    }
}

/// Whether content may differ between the index and the files, as far as it shows outside the
/// workspace's own files: an attributes file Git reads there (the repository's own, the
/// user's, a `.gitattributes` in a folder above the workspace), or a setting that converts
/// line ends. Checked coarsely, so that a repository that converts nothing (most) is never
/// read file by file; the `.gitattributes` files inside the workspace are seen by the walk.
fn converts(top: &Path, workspace: &Path, gitdir: &Path, common: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    let mut attribute_files = vec![
        gitdir.join("info/attributes"),
        common.join("info/attributes"),
    ];
    attribute_files.extend(xdg.as_ref().map(|x| x.join("git/attributes")));
    let above = (workspace.ancestors().skip(1))
        .take_while(|dir| dir.starts_with(top))
        .map(|dir| dir.join(".gitattributes"));
    attribute_files.extend(above);
    if attribute_files.iter().any(|p| p.exists()) {
        return true;
    }
    let mut configs = vec![common.join("config"), gitdir.join("config.worktree")];
    configs.extend(home.map(|h| h.join(".gitconfig")));
    configs.extend(xdg.map(|x| x.join("git/config")));
    configs.push(PathBuf::from("/etc/gitconfig"));
    configs.iter().any(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            let text = text.to_ascii_lowercase();
            // Any mention at all: a setting in an included file is not followed here, so an
            // include is taken as a possible conversion too.
            ["autocrlf", "attributesfile", "eol", "safecrlf", "[include"]
                .iter()
                .any(|key| text.contains(key))
        })
    })
}

/// The stage-0 file entries of an index file (versions 2 to 4), read one at a time from its
/// bytes, in path order. A file this reader does not know (another hash, a split index) reads
/// as having none, which only costs reading the files.
pub(crate) struct IndexEntries {
    source: crate::window::Window,
    version: u32,
    left: usize,
    previous: String,
    prefix: String,
    /// When the index was written: entries changed at or after it are not trusted.
    stamp: (u32, u32),
    /// Whether entries Git may not have written yet are left out.
    careful: bool,
}

/// More than one entry takes: its fixed part, and a path (at most 4,096 bytes on Linux). A
/// longer entry ends the reading, which only costs reading the files it would have named.
const ENTRY_AHEAD: usize = 8 << 10;

impl IndexEntries {
    fn read(index: &Path, prefix: &str) -> Option<IndexEntries> {
        let file = std::fs::File::open(index).ok()?;
        let written = file.metadata().ok()?;
        let mut source = crate::window::Window::new(file);
        let head = source.ahead(12);
        if head.get(..4)? != b"DIRC" {
            return None;
        }
        let version = u32::from_be_bytes(head.get(4..8)?.try_into().ok()?);
        let left = u32::from_be_bytes(head.get(8..12)?.try_into().ok()?) as usize;
        if !(2..=4).contains(&version) {
            return None;
        }
        source.advance(12);
        Some(IndexEntries {
            source,
            version,
            left,
            previous: String::new(),
            prefix: prefix.to_owned(),
            stamp: (written.mtime() as u32, written.mtime_nsec() as u32),
            careful: true,
        })
    }

    /// Every entry, racily clean or not, of the whole index.
    fn every(mut self) -> Self {
        self.careful = false;
        self.prefix.clear();
        self
    }

    /// The next entry of any kind: its path and, for a regular file at stage 0 that Git's
    /// index trusts, what it recorded. `None` at the end or at bytes it cannot read.
    fn next_any(&mut self) -> Option<(String, Option<Tracked>)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let bytes = self.source.ahead(ENTRY_AHEAD);
        let u32_at = |at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
        };
        let u16_at = |at: usize| -> Option<u16> {
            Some(u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
        };
        let start = 0;
        let mut at = start;
        let stat: Vec<u32> = (0..10).map(|i| u32_at(at + 4 * i)).collect::<Option<_>>()?;
        at += 40;
        let id = BlobId::from_bytes(bytes.get(at..at + 20)?)?;
        at += 20;
        let flags = u16_at(at)?;
        at += 2;
        let mut skip = false;
        if flags & 0x4000 != 0 {
            if self.version < 3 {
                return None;
            }
            let extended = u16_at(at)?;
            at += 2;
            // skip-worktree and intent-to-add: the file is not what the blob says.
            skip = extended & 0x6000 != 0;
        }
        // Assume-unchanged: Git does not look at the file, so neither does its entry count.
        skip |= flags & 0x8000 != 0;
        let stage = (flags >> 12) & 0x3;
        let path = if self.version == 4 {
            let (strip, used) = varint(bytes.get(at..)?)?;
            at += used;
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            let keep = self.previous.len().checked_sub(strip)?;
            let mut path = self.previous.get(..keep)?.to_owned();
            path.push_str(std::str::from_utf8(bytes.get(at..end)?).ok()?);
            at = end + 1;
            path
        } else {
            let end = at + bytes.get(at..)?.iter().position(|&b| b == 0)?;
            let path = std::str::from_utf8(bytes.get(at..end)?).ok()?.to_owned();
            // Entries are padded with NULs to a multiple of eight bytes.
            let length = end - start;
            at = start + (length + 8) / 8 * 8;
            path
        };
        self.source.advance(at);
        self.previous.clone_from(&path);
        let mode = stat[6];
        let mtime = (stat[2], stat[3]);
        // Regular files only: links and gitlinks are read as themselves.
        let usable = !skip
            && stage == 0
            && (mode == 0o100644 || mode == 0o100755)
            && !(self.careful && mtime >= self.stamp);
        let tracked = usable.then_some(Tracked {
            id,
            ctime: (stat[0], stat[1]),
            mtime,
            ino: stat[5],
            mode,
            size: stat[9],
        });
        Some((path, tracked))
    }
}

impl Iterator for IndexEntries {
    type Item = (String, Tracked);

    /// The next usable entry under the prefix, its path relative to it.
    fn next(&mut self) -> Option<(String, Tracked)> {
        loop {
            let (path, tracked) = self.next_any()?;
            let (Some(tracked), Some(inside)) = (tracked, path.strip_prefix(&self.prefix)) else {
                continue;
            };
            return Some((inside.to_owned(), tracked));
        }
    }
}

/// Index version 4's offset integer: seven bits a byte, each continuation adding one.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value = usize::from(*bytes.first()? & 0x7f);
    let mut used = 1;
    let mut byte = bytes[0];
    while byte & 0x80 != 0 {
        byte = *bytes.get(used)?;
        value = ((value + 1) << 7) | usize::from(byte & 0x7f);
        used += 1;
    }
    Some((value, used))
}

/// A running `git cat-file --batch`: blobs by id, as many as a restore needs, from one
/// process.
pub(crate) struct BlobReader {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl BlobReader {
    /// Starts one against the private repository `dir`, with no configuration but its own
    /// (neither the system's nor the user's global file).
    pub fn start(dir: &Path) -> std::io::Result<BlobReader> {
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(["cat-file", "--batch"])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env_remove("GIT_DIR")
            .env_remove("GIT_OBJECT_DIRECTORY")
            .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let input = child
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let output = child
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        Ok(BlobReader {
            child,
            input,
            output: BufReader::new(output),
        })
    }

    /// The blob `id`, or `None` when the repository no longer has it (Git removed it since).
    pub fn read(&mut self, id: &BlobId) -> std::io::Result<Option<Vec<u8>>> {
        writeln!(self.input, "{}", id.hex())?;
        self.input.flush()?;
        let mut head = String::new();
        self.output.read_line(&mut head)?;
        if head.ends_with(" missing\n") {
            return Ok(None);
        }
        let mut fields = head.split_whitespace();
        let (Some(_), Some("blob"), Some(size)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(std::io::Error::other(format!("git cat-file said {head:?}")));
        };
        let size: usize = size
            .parse()
            .map_err(|_| std::io::Error::other(format!("git cat-file said {head:?}")))?;
        let mut content = vec![0; size + 1];
        self.output.read_exact(&mut content)?;
        content.pop();
        Ok(Some(content))
    }
}

impl Drop for BlobReader {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests;
