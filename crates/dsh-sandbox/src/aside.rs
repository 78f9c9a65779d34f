//! Setting a protected file a command created aside, where nothing that would trust it looks.

use std::path::{Path, PathBuf};

/// What [`set_aside`] adds to a name.
pub(crate) const SET_ASIDE: &str = ".dsh-set-aside";

/// Renames `path` (a file or a folder a command created at a protected path) beside itself,
/// to `<name>.dsh-set-aside` (then `.2`, `.3`, ...), where it has no effect: no Git, dsh or
/// `.env` reader looks for that name. Nothing is copied or deleted, and nothing leaves its file
/// system. Its folder must be in `workspace` and reached without a symbolic link (a command
/// could otherwise point the rename at another repository's hooks): the folder is opened
/// once, checked by what the open resolved to, and the rename is made relative to it. Returns
/// the new path.
pub fn set_aside(path: &Path, workspace: &Path) -> std::io::Result<PathBuf> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::os::unix::ffi::OsStrExt as _;
    let invalid = |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_owned());
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(invalid("not a path inside the workspace"));
    };
    let c_folder = CString::new(folder.as_os_str().as_bytes()).map_err(|_| invalid("a NUL"))?;
    // SAFETY: open with a valid C string; the descriptor is owned below.
    let fd = unsafe {
        libc::open(
            c_folder.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just opened, owned here.
    let folder_fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", folder_fd.as_raw_fd()))?;
    if opened != folder || !opened.starts_with(workspace) {
        return Err(invalid(
            "its folder is reached through a symbolic link, or is outside the workspace",
        ));
    }
    let exists = |candidate: &CString| {
        // SAFETY: fstatat relative to our folder, into a zeroed stat.
        unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            libc::fstatat(
                folder_fd.as_raw_fd(),
                candidate.as_ptr(),
                &mut stat,
                libc::AT_SYMLINK_NOFOLLOW,
            ) == 0
        }
    };
    let c_name = CString::new(name.as_bytes()).map_err(|_| invalid("a NUL"))?;
    let base = format!("{}{SET_ASIDE}", name.to_string_lossy());
    let mut new_name = base.clone();
    let mut n = 1;
    while exists(&CString::new(new_name.as_bytes()).map_err(|_| invalid("a NUL"))?) {
        n += 1;
        new_name = format!("{base}.{n}");
    }
    let c_new = CString::new(new_name.as_bytes()).map_err(|_| invalid("a NUL"))?;
    // SAFETY: renameat within the folder we opened and checked.
    let renamed = unsafe {
        libc::renameat(
            folder_fd.as_raw_fd(),
            c_name.as_ptr(),
            folder_fd.as_raw_fd(),
            c_new.as_ptr(),
        )
    };
    if renamed != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(folder.join(new_name))
}
