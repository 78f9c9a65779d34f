//! A folder open as a descriptor, and every step of a write as a call relative to it.

use std::ffi::{CStr, CString, OsStr};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// A folder, open. Names given to its methods are one component each (no `/`, never `.` or
/// `..`), and none of them follows a symlink at that name.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
}

impl From<OwnedFd> for Folder {
    fn from(fd: OwnedFd) -> Self {
        Folder { fd }
    }
}

impl AsFd for Folder {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Folder {
    /// The folder's own metadata (its mode, its owner).
    pub fn metadata(&self) -> io::Result<Metadata> {
        // SAFETY: the descriptor is open for as long as `self` is, and the `File` around it
        // is never dropped, so it is not closed here.
        let file = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(self.fd.as_raw_fd()) });
        file.metadata()
    }

    /// What is at `name` now, a symlink as itself; `None` when nothing is.
    pub fn entry(&self, name: &CStr) -> io::Result<Option<Metadata>> {
        match open_at(
            self.as_fd(),
            name,
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            0,
        ) {
            Ok(file) => file.metadata().map(Some),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The file at `name`, opened for reading; a symlink there is `ELOOP`, and a FIFO swapped
    /// in does not block the open.
    pub fn open_read(&self, name: &CStr) -> io::Result<File> {
        open_at(
            self.as_fd(),
            name,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
            0,
        )
    }

    /// A new file at `name`, for writing, with `mode`: fails if anything is there already, a
    /// dangling symlink included.
    pub fn create_new(&self, name: &CStr, mode: u32) -> io::Result<File> {
        open_at(
            self.as_fd(),
            name,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            mode as libc::mode_t,
        )
    }

    /// The folder at `name`, not followed if it is a symlink (`ELOOP` or `ENOTDIR` then).
    pub fn folder(&self, name: &CStr) -> io::Result<Folder> {
        let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        match open_at(self.as_fd(), name, libc::O_RDONLY | flags, 0) {
            // A folder that cannot be listed can still be written in, through a bare handle.
            Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
                open_at(self.as_fd(), name, libc::O_PATH | flags, 0)
            }
            other => other,
        }
        .map(|file| Folder::from(OwnedFd::from(file)))
    }

    /// The file at `name`, opened to append to (not followed if it is a symlink).
    pub fn open_append(&self, name: &CStr) -> io::Result<File> {
        open_at(
            self.as_fd(),
            name,
            libc::O_WRONLY | libc::O_APPEND | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK,
            0,
        )
    }

    /// The names in this folder (the folder the descriptor holds, whatever path leads there
    /// now), each with what it is, a symlink as itself.
    pub fn entries(&self) -> io::Result<Vec<(std::ffi::OsString, Metadata)>> {
        let listed = std::fs::read_dir(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))?;
        let mut found = Vec::new();
        for entry in listed {
            let name = entry?.file_name();
            if let Some(meta) = self.entry(&c_name(&name)?)? {
                found.push((name, meta));
            }
        }
        Ok(found)
    }

    /// A new folder at `name` with `mode` (the umask applies).
    pub fn make_folder(&self, name: &CStr, mode: u32) -> io::Result<()> {
        // SAFETY: an open descriptor and a NUL-terminated name.
        check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), name.as_ptr(), mode as libc::mode_t) })
    }

    /// A new symlink at `name` whose text is `target` (never resolved here).
    pub fn symlink(&self, target: &OsStr, name: &CStr) -> io::Result<()> {
        let target = CString::new(target.as_bytes()).map_err(|_| invalid())?;
        // SAFETY: an open descriptor and two NUL-terminated strings.
        check(unsafe { libc::symlinkat(target.as_ptr(), self.fd.as_raw_fd(), name.as_ptr()) })
    }

    /// The text of the symlink at `name`.
    pub fn read_link(&self, name: &CStr) -> io::Result<std::ffi::OsString> {
        let mut buffer = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: an open descriptor, a NUL-terminated name and a buffer of the length given.
        let n = unsafe {
            libc::readlinkat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buffer.truncate(n as usize);
        Ok(std::os::unix::ffi::OsStringExt::from_vec(buffer))
    }

    /// Renames `from` in this folder to `to` in `into` (which may be this folder), replacing
    /// what is there unless `flags` has `RENAME_NOREPLACE`; a symlink at either name is moved
    /// or replaced itself, never what it points at.
    pub fn rename(
        &self,
        from: &CStr,
        into: BorrowedFd<'_>,
        to: &CStr,
        flags: libc::c_uint,
    ) -> io::Result<()> {
        // The system call itself rather than libc's wrapper, which musl (the static build)
        // does not have.
        // SAFETY: open descriptors and NUL-terminated names that outlive the call; the flags
        // are a plain integer.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_renameat2,
                self.fd.as_raw_fd(),
                from.as_ptr(),
                into.as_raw_fd(),
                to.as_ptr(),
                flags,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// A hard link at `to` in `into` to the file `from` of this folder; fails if `to` exists.
    pub fn link(&self, from: &CStr, into: BorrowedFd<'_>, to: &CStr) -> io::Result<()> {
        // SAFETY: open descriptors and NUL-terminated names; no flag follows anything.
        check(unsafe {
            libc::linkat(
                self.fd.as_raw_fd(),
                from.as_ptr(),
                into.as_raw_fd(),
                to.as_ptr(),
                0,
            )
        })
    }

    /// Removes the file or symlink at `name` (a symlink itself, never what it points at).
    pub fn remove_file(&self, name: &CStr) -> io::Result<()> {
        // SAFETY: an open descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), 0) })
    }

    /// Removes the empty folder at `name`.
    pub fn remove_folder(&self, name: &CStr) -> io::Result<()> {
        // SAFETY: an open descriptor and a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) })
    }

    /// Sets this folder's own permission bits.
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        // SAFETY: an open descriptor and a plain mode.
        let rc = unsafe { libc::fchmod(self.fd.as_raw_fd(), mode as libc::mode_t) };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EBADF) {
            return Err(error);
        }
        // A bare (`O_PATH`) handle, for a folder that could not be opened for reading: its
        // entry under `/proc/self/fd` names the very folder the handle holds, whatever path
        // now leads there, so the mode cannot land on anything else.
        let magic = CString::new(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .map_err(|_| invalid())?;
        // SAFETY: a NUL-terminated path and a plain mode.
        check(unsafe { libc::chmod(magic.as_ptr(), mode as libc::mode_t) })
    }

    /// Flushes the folder's entries to disk (a no-op error on a bare handle is ignored).
    pub fn sync(&self) {
        // SAFETY: a plain fsync of an open descriptor.
        unsafe { libc::fsync(self.fd.as_raw_fd()) };
    }

    /// Runs `work` with this folder writable by its owner, its mode put back after: a folder
    /// made read-only must not keep an entry from being made or removed in it.
    pub fn while_writable<T>(&self, work: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        use std::os::unix::fs::PermissionsExt;
        let mode = self.metadata()?.permissions().mode() & 0o7777;
        let locked = mode & 0o300 != 0o300;
        if locked {
            self.set_mode(mode | 0o700)?;
        }
        let done = work();
        if locked {
            let _ = self.set_mode(mode);
        }
        done
    }
}

/// `openat(2)` as a `File`.
pub fn open_at(
    dir: BorrowedFd<'_>,
    name: &CStr,
    flags: libc::c_int,
    mode: libc::mode_t,
) -> io::Result<File> {
    // SAFETY: `dir` is an open descriptor and `name` NUL-terminated; the mode is read only
    // with O_CREAT.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// One path component as a C string: `EINVAL` for a NUL byte in it.
pub fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| invalid())
}

/// Whether `error` is the fence refusing a symlink it met on the way or at the name (`ELOOP`,
/// `ENOTDIR`) or a path that would leave the root (`EXDEV`).
pub fn met_a_link(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ELOOP | libc::ENOTDIR | libc::EXDEV)
    )
}

fn invalid() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
