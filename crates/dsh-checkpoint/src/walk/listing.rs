//! A folder's names and an entry's metadata, read through the descriptor of the folder that
//! holds them: each look-up is one name in one folder, never a path the kernel walks again from
//! the top (in a 50,000-file tree, that walk was most of a snapshot's time).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use dsh_fence::Folder;

use crate::entries::Entry;
use crate::id::BlobId;

/// What a folder's listing says a name is, before anything is asked of the name itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Folder,
    Other,
    /// The file system does not say (some do not fill `d_type`): the entry is asked.
    Unknown,
}

/// The workspace's own folder, opened by its path (a link naming it is followed this once).
pub(super) fn open_top(path: &Path) -> io::Result<Folder> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(path)?;
    Ok(Folder::from(OwnedFd::from(file)))
}

/// The folder `name` in `folder`, opened to be listed; a link there is not followed (`ELOOP`
/// or `ENOTDIR`).
pub(super) fn open_folder(folder: &Folder, name: &CStr) -> io::Result<Folder> {
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let file = dsh_fence::open_at(folder.as_fd(), name, flags, 0)?;
    Ok(Folder::from(OwnedFd::from(file)))
}

/// Gives `each` every name in `folder` (`.` and `..` left out) with what the listing says it
/// is, reading the listing `buffer`'s length at a time.
pub(super) fn list(
    folder: &Folder,
    buffer: &mut [u8],
    mut each: impl FnMut(&[u8], Kind),
) -> io::Result<()> {
    // The fixed part of a `linux_dirent64`: inode (8), offset (8), record length (2), type (1).
    const NAME_AT: usize = 19;
    loop {
        // SAFETY: an open descriptor and a buffer of the length given, which the kernel fills.
        let read = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                folder.as_fd().as_raw_fd(),
                buffer.as_mut_ptr(),
                buffer.len(),
            )
        };
        if read < 0 {
            return Err(io::Error::last_os_error());
        }
        if read == 0 {
            return Ok(());
        }
        let mut records = buffer.get(..read as usize).unwrap_or_default();
        while let Some(header) = records.get(..NAME_AT) {
            let length = usize::from(u16::from_ne_bytes([header[16], header[17]]));
            let Some(record) = records.get(NAME_AT..length) else {
                break;
            };
            let name = record.split(|&b| b == 0).next().unwrap_or_default();
            let kind = match header[18] {
                libc::DT_DIR => Kind::Folder,
                libc::DT_UNKNOWN => Kind::Unknown,
                _ => Kind::Other,
            };
            if name != b"." && name != b".." {
                each(name, kind);
            }
            records = records.get(length..).unwrap_or_default();
        }
    }
}

/// What is at `name` in `folder`, a link as itself.
pub(super) fn stat_at(folder: BorrowedFd<'_>, name: &CStr) -> io::Result<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: an open descriptor, a NUL-terminated name and room for one `stat`.
    let rc = unsafe {
        libc::fstatat(
            folder.as_raw_fd(),
            name.as_ptr(),
            stat.as_mut_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so the kernel filled it.
    Ok(unsafe { stat.assume_init() })
}

/// Whether `stat` is of a folder.
pub(super) fn is_folder(stat: &libc::stat) -> bool {
    stat.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// The permission bits of `stat`.
pub(super) fn mode(stat: &libc::stat) -> u32 {
    stat.st_mode & 0o7777
}

/// The entry of the file `stat` is of, not named yet.
pub(super) fn file_entry(stat: &libc::stat) -> Entry {
    let nanos = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
    Entry::File {
        hash: BlobId::UNNAMED,
        size: size(stat),
        mode: mode(stat),
        mtime_ns: nanos(stat.st_mtime, stat.st_mtime_nsec),
        ctime_ns: nanos(stat.st_ctime, stat.st_ctime_nsec),
        ino: stat.st_ino,
    }
}

/// The size `stat` gives.
pub(super) fn size(stat: &libc::stat) -> u64 {
    u64::try_from(stat.st_size).unwrap_or_default()
}

/// `name` as a C string, made in `scratch` (no allocation once it is large enough).
pub(super) fn c_name<'a>(scratch: &'a mut Vec<u8>, name: &str) -> Option<&'a CStr> {
    scratch.clear();
    scratch.extend_from_slice(name.as_bytes());
    scratch.push(0);
    CStr::from_bytes_with_nul(scratch).ok()
}
