//! A folder's whole state, for comparing trees byte for byte in tests.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Every path under `root` but the top-level names in `skip`, each with its kind, its mode
/// and its content or link target: two trees compare equal only when they are the same byte
/// for byte, modes and links too. Names and contents are kept as their exact bytes, escaped
/// (`\xff`, `\n`) so that two different bytes never read the same, as a lossy UTF-8 view
/// would make every invalid sequence.
pub fn tree(root: &Path, skip: &[&str]) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, skip: &[&str], out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let name = exact(relative.as_os_str().as_bytes());
            if skip.contains(&name.as_str()) {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let mode = meta.permissions().mode() & 0o7777;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                out.insert(
                    name,
                    format!("link {}", exact(target.as_os_str().as_bytes())),
                );
            } else if meta.is_dir() {
                out.insert(name, format!("dir {mode:o}"));
                walk(root, &path, skip, out);
            } else {
                let content = std::fs::read(&path).unwrap_or_default();
                out.insert(name, format!("file {mode:o} {}", exact(&content)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, skip, &mut out);
    out
}

/// `bytes` as text that tells every byte apart: printable ASCII as it is, the rest escaped.
fn exact(bytes: &[u8]) -> String {
    bytes.escape_ascii().to_string()
}
