//! The repositories an index embeds (its gitlinks, mode 160000), read from the index file
//! itself. Git's own listing (`git ls-files --stage`) of a 50,000-file index takes tens of
//! milliseconds, most of it printing every entry; the view needs only the gitlinks, which a
//! walk over the file's entries finds in a few. An index this reader does not know (a version
//! other than 2 to 4, a split or sparse index, another hash) is left to Git.

use std::path::Path;

/// The paths of the gitlink entries of the index file `index`, relative to the repository's
/// top, in the index's order: none when there is no index; `None` when the file is not one
/// this reader knows, for Git to be asked instead.
pub(super) fn read(index: &Path) -> Option<Vec<String>> {
    match std::fs::read(index) {
        Ok(bytes) => parse(&bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(Vec::new()),
        Err(_) => None,
    }
}

/// The bytes of a SHA-1 object id, and of the index's closing checksum.
const HASH: usize = 20;
/// A gitlink's mode.
const GITLINK: u32 = 0o160000;

fn parse(bytes: &[u8]) -> Option<Vec<String>> {
    let be32 = |at: usize| -> Option<usize> {
        let b = bytes.get(at..at + 4)?;
        usize::try_from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(8)?;
    let end = bytes.len().checked_sub(HASH)?;
    let mut at = 12;
    let mut path: Vec<u8> = Vec::new();
    let mut found = Vec::new();
    for _ in 0..count {
        let start = at;
        // Times, device, inode; then the mode, owner, size and id; then the flags.
        let mode = be32(at + 24)?;
        let flags = bytes.get(at + 40 + HASH..at + 42 + HASH)?;
        at += 42 + HASH;
        if flags[0] & 0x40 != 0 {
            if version < 3 {
                return None;
            }
            at += 2;
        }
        let name = bytes.get(at..end)?;
        if version == 4 {
            // The path is the one before with `strip` bytes taken off its end, then these.
            let (strip, used) = varint(name)?;
            path.truncate(path.len().checked_sub(strip)?);
            let len = name.get(used..)?.iter().position(|b| *b == 0)?;
            path.extend_from_slice(&name[used..used + len]);
            at += used + len + 1;
        } else {
            // Padded with one to eight NULs to a multiple of eight bytes.
            let len = name.iter().position(|b| *b == 0)?;
            path.clear();
            path.extend_from_slice(&name[..len]);
            at = start + ((at - start + len + 8) & !7);
        }
        if at > end {
            return None;
        }
        if mode == GITLINK as usize {
            found.push(String::from_utf8_lossy(&path).into_owned());
        }
    }
    // The extensions, each a signature and a size, up to the checksum. A split index
    // (`link`) keeps entries in another file, and a sparse one (`sdir`) folds whole folders
    // into one entry; an index of another hash does not end where this one's would.
    while at < end {
        let signature = bytes.get(at..at + 4)?;
        if signature == b"link" || signature == b"sdir" {
            return None;
        }
        at = at.checked_add(8)?.checked_add(be32(at + 4)?)?;
    }
    (at == end).then_some(found)
}

/// Index version 4's offset integer: seven bits a byte, each continuation adding one.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut byte = *bytes.first()?;
    let mut value = usize::from(byte & 0x7f);
    let mut used = 1;
    while byte & 0x80 != 0 {
        byte = *bytes.get(used)?;
        used += 1;
        value = value
            .checked_add(1)?
            .checked_mul(128)?
            .checked_add(usize::from(byte & 0x7f))?;
    }
    Some((value, used))
}
