//! Reaching a folder beneath a root: once, as a descriptor, following no symlink.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use crate::folder::{Folder, c_name, open_at};

/// A folder opened once by its path; everything beneath it is reached from that descriptor,
/// so what its path names later does not matter.
#[derive(Debug)]
pub struct Root {
    folder: Folder,
    path: PathBuf,
}

impl Root {
    /// Opens `path`, the folder the work is confined to (as given: a symlink naming it is
    /// followed this once, when the root is chosen, never after).
    pub fn open(path: &Path) -> io::Result<Root> {
        let flags = libc::O_DIRECTORY | libc::O_CLOEXEC;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(flags)
            .open(path)
        {
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(flags | libc::O_PATH)
                .open(path)?,
            other => other?,
        };
        Ok(Root {
            folder: Folder::from(OwnedFd::from(file)),
            path: path.to_path_buf(),
        })
    }

    /// The path it was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether its path still names this very folder (the same device and inode), followed
    /// as when it was opened: `false` once the folder was moved, or replaced (by another, or
    /// by a link to one), since.
    pub fn is_at_its_path(&self) -> io::Result<bool> {
        use std::os::unix::fs::MetadataExt;
        let (held, named) = (self.folder.metadata()?, std::fs::metadata(&self.path)?);
        Ok(held.dev() == named.dev() && held.ino() == named.ino())
    }

    /// The root folder itself.
    pub fn top(&self) -> &Folder {
        &self.folder
    }

    /// The folder `relative` (relative, plain names only) beneath the root, making missing
    /// folders (mode 0o777 less the umask) when `make_missing`.
    pub fn folder(&self, relative: &Path, make_missing: bool) -> io::Result<Folder> {
        let make = make_missing.then_some(0o777);
        open_dir_beneath(self.folder.as_fd(), relative, make).map(Folder::from)
    }

    /// As [`Root::folder`], missing folders made with `mode` (less the umask): a store that
    /// must stay private makes its folders 0o700.
    pub fn folder_made(&self, relative: &Path, mode: u32) -> io::Result<Folder> {
        open_dir_beneath(self.folder.as_fd(), relative, Some(mode)).map(Folder::from)
    }

    /// The folder of `relative`'s last component, and that component: where it is written.
    pub fn site(&self, relative: &Path, make_missing: bool) -> io::Result<WriteSite> {
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EISDIR));
        };
        Ok(WriteSite {
            dir: self.folder(parent, make_missing)?,
            name: c_name(name)?,
        })
    }
}

/// The folder a file is written in, open, and the file's name in it.
#[derive(Debug)]
pub struct WriteSite {
    dir: Folder,
    name: CString,
}

impl WriteSite {
    /// The folder, for `*at` calls.
    pub fn dir(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// The folder, for its own steps.
    pub fn folder(&self) -> &Folder {
        &self.dir
    }

    /// The file's name in [`WriteSite::dir`]: one component, never `.` or `..`.
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// What is at the name now, without following a symlink there (a symlink is reported as
    /// itself, so it is never taken for the file it points at); `None` when nothing is.
    pub fn metadata(&self) -> io::Result<Option<std::fs::Metadata>> {
        self.dir.entry(&self.name)
    }

    /// The file, opened for reading without following a symlink at its name (a FIFO swapped in
    /// does not block the open).
    pub fn open_read(&self) -> io::Result<File> {
        self.dir.open_read(&self.name)
    }
}

/// Opens the folder of `path`, which lies beneath `root` (the directory `root_path` named when it
/// was pinned), without following a symlink, making missing folders when `make_missing`.
pub fn write_site(
    root: BorrowedFd<'_>,
    root_path: &Path,
    path: &Path,
    make_missing: bool,
) -> io::Result<WriteSite> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    };
    let inside = parent
        .strip_prefix(root_path)
        .map_err(|_| io::Error::from_raw_os_error(libc::EXDEV))?;
    let dir = open_dir_beneath(root, inside, make_missing.then_some(0o777))?;
    Ok(WriteSite {
        dir: Folder::from(dir),
        name: c_name(name)?,
    })
}

/// The folder `inside` (relative, no `..`) beneath `root`, opened for reading (so that it can be
/// synced), or as a bare handle where it cannot be read; missing folders made with the mode
/// `make_missing` gives.
fn open_dir_beneath(
    root: BorrowedFd<'_>,
    inside: &Path,
    make_missing: Option<u32>,
) -> io::Result<OwnedFd> {
    let mut parts = Vec::new();
    for part in inside.components() {
        match part {
            Component::Normal(name) => parts.push(c_name(name)?),
            Component::CurDir => {}
            // The paths given are real paths; a `..` or a second root is never one.
            _ => return Err(io::Error::from_raw_os_error(libc::EXDEV)),
        }
    }
    // With no component, the root itself is the folder.
    if parts.is_empty() {
        parts.push(CString::from(c"."));
    }
    let joined = CString::new(
        (parts.iter())
            .map(|part| part.to_bytes())
            .collect::<Vec<_>>()
            .join(&b'/'),
    )?;
    match openat2_dir(root, &joined) {
        Ok(fd) => return Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) && make_missing.is_some() => {}
        Err(e) if unsupported(&e) => {}
        Err(e) => return Err(e),
    }
    // One component at a time: on a kernel without openat2, and to make what is missing.
    let mut current: Option<OwnedFd> = None;
    for part in &parts {
        let at = current.as_ref().map_or(root, |fd| fd.as_fd());
        let next = match (open_component(at, part), make_missing) {
            (Err(e), Some(mode)) if e.raw_os_error() == Some(libc::ENOENT) => {
                // SAFETY: `at` is an open descriptor and `part` a NUL-terminated name.
                let rc =
                    unsafe { libc::mkdirat(at.as_raw_fd(), part.as_ptr(), mode as libc::mode_t) };
                if rc != 0 {
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
                open_component(at, part)?
            }
            (other, _) => other?,
        };
        current = Some(next);
    }
    current.ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// A kernel (or a seccomp filter) without `openat2`.
fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM))
}

/// `path` beneath `root` as a folder, following no symlink and never leaving `root`.
fn openat2_dir(root: BorrowedFd<'_>, path: &CStr) -> io::Result<OwnedFd> {
    let resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    let open = |flags: libc::c_int| -> io::Result<OwnedFd> {
        // SAFETY: `open_how` is plain data; zeroed, then the three fields set.
        let mut how: libc::open_how = unsafe { std::mem::zeroed() };
        how.flags = (flags | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
        how.resolve = resolve;
        // SAFETY: `root` is an open descriptor, `path` NUL-terminated and `how` lives across
        // the call with its size passed.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                path.as_ptr(),
                &how as *const libc::open_how,
                std::mem::size_of::<libc::open_how>(),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
    };
    match open(libc::O_RDONLY) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => open(libc::O_PATH),
        other => other,
    }
}

/// One name in `at` as a folder, not followed if it is a symlink (which is then `ENOTDIR`
/// or `ELOOP`).
fn open_component(at: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    match open_at(at, name, libc::O_RDONLY | flags, 0) {
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            open_at(at, name, libc::O_PATH | flags, 0)
        }
        other => other,
    }
    .map(OwnedFd::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    fn root(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(path)
            .unwrap()
    }

    #[test]
    fn missing_folders_are_made_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let handle = root(&real);
        let site = write_site(handle.as_fd(), &real, &real.join("a/b/c.txt"), true).unwrap();
        assert_eq!(site.name().to_bytes(), b"c.txt");
        assert!(real.join("a/b").is_dir());
        assert!(site.metadata().unwrap().is_none());
        // The root's own files: the folder is the root.
        let site = write_site(handle.as_fd(), &real, &real.join("top.txt"), false).unwrap();
        assert!(site.metadata().unwrap().is_none());
    }

    #[test]
    fn a_symlink_on_the_way_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), real.join("link")).unwrap();
        let handle = root(&real);
        for make in [false, true] {
            let error =
                write_site(handle.as_fd(), &real, &real.join("link/x/f.txt"), make).unwrap_err();
            assert!(
                matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
                "{error:?}"
            );
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // A path that is not beneath the root at all.
        let error = write_site(handle.as_fd(), &real, outside.path(), true).unwrap_err();
        assert_eq!(error.raw_os_error(), Some(libc::EXDEV));
    }

    #[test]
    fn a_symlink_at_the_name_is_seen_as_itself() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(real.join("target.txt"), "x").unwrap();
        std::os::unix::fs::symlink(real.join("target.txt"), real.join("link.txt")).unwrap();
        let handle = root(&real);
        let site = write_site(handle.as_fd(), &real, &real.join("link.txt"), false).unwrap();
        assert!(site.metadata().unwrap().unwrap().file_type().is_symlink());
        assert_eq!(
            site.open_read().unwrap_err().raw_os_error(),
            Some(libc::ELOOP)
        );
    }
}
