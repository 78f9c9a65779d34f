//! What a snapshot's walk covers: what ignore files leave out (as Git reads them, nested and
//! negated), links kept as links, folders that cannot be read listed as uncovered, names that
//! are not UTF-8 left out, excluded folders, and every path in order.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod changes;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use changes::write;
use dsh_checkpoint::{CheckpointStore, Coverage, Entry, Snapshot};
use pretty_assertions::assert_eq;

fn take(root: &Path, coverage: &Coverage) -> Snapshot {
    let store_dir = tempfile::tempdir().unwrap();
    CheckpointStore::new(store_dir.path())
        .take(root, coverage, None)
        .unwrap()
}

fn keys(snapshot: &Snapshot) -> Vec<&str> {
    snapshot.entries.keys().map(String::as_str).collect()
}

fn uncovered(snapshot: &Snapshot) -> Vec<&str> {
    (snapshot.uncovered.iter())
        .map(|u| u.path.as_str())
        .collect()
}

#[test]
fn ignore_files_leave_out_what_git_would_nested_and_negated() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(
        root,
        ".gitignore",
        "*.log\n!keep.log\n/build/\ncache/\nlinked/\n",
    );
    // `.ignore` is asked before `.gitignore`: its negation keeps what `.gitignore` leaves out.
    write(root, ".ignore", "notes/\n!wanted.log\n");
    write(root, ".git/info/exclude", "excluded.txt\n");
    write(root, ".git/HEAD", "ref: refs/heads/main\n");
    for path in [
        "a.log",
        "keep.log",
        "wanted.log",
        "build/out.o",
        "sub/build/kept.o",
        "cache/c.bin",
        "sub/cache",
        "notes/n.txt",
        "excluded.txt",
        "sub/excluded.txt",
        ".hidden",
        "sub/x.tmp",
        "sub/important.tmp",
        "sub/deep/y.tmp",
        "sub/deep/anchored.txt",
        "other/z.tmp",
        "other/deep/anchored.txt",
    ] {
        write(root, path, "x\n");
    }
    // Rules in a folder apply below it, relative to it, and a negation there re-includes.
    write(
        root,
        "sub/.gitignore",
        "*.tmp\n!important.tmp\n/deep/anchored.txt\n",
    );
    // A folder pattern does not match a link to a folder.
    std::os::unix::fs::symlink("other", root.join("linked")).unwrap();
    let snapshot = take(root, &Coverage::default());
    assert_eq!(
        keys(&snapshot),
        [
            ".gitignore",
            ".hidden",
            ".ignore",
            "keep.log",
            "linked",
            "other",
            "other/deep",
            "other/deep/anchored.txt",
            "other/z.tmp",
            "sub",
            "sub/.gitignore",
            "sub/build",
            "sub/build/kept.o",
            "sub/cache",
            "sub/deep",
            "sub/important.tmp",
            "wanted.log",
        ]
    );
    // Unless ignored files are covered too; `.git` never is.
    let all = take(
        root,
        &Coverage {
            include_ignored: true,
            ..Coverage::default()
        },
    );
    let all = keys(&all);
    for path in ["a.log", "build/out.o", "cache/c.bin", "notes/n.txt"] {
        assert!(all.contains(&path), "{path} in {all:?}");
    }
    assert_eq!(all.len(), 29, "{all:?}");
    assert!(!all.iter().any(|k| k.starts_with(".git/") || *k == ".git"));
}

#[test]
fn links_are_kept_as_links_and_never_followed() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(outside.path(), "secret/data.txt", "outside\n");
    write(root, "src/lib.rs", "lib\n");
    std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
    std::os::unix::fs::symlink("src", root.join("src-link")).unwrap();
    std::os::unix::fs::symlink("missing", root.join("dangling")).unwrap();
    let snapshot = take(root, &Coverage::default());
    assert_eq!(
        keys(&snapshot),
        ["dangling", "out", "src", "src-link", "src/lib.rs"]
    );
    assert_eq!(
        snapshot.entries.get("out"),
        Some(&Entry::Symlink {
            target: outside.path().to_string_lossy().into_owned()
        })
    );
}

#[test]
fn names_that_are_not_utf8_are_left_out() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "ok.txt", "ok\n");
    let odd = root.join(OsStr::from_bytes(b"odd\xff"));
    std::fs::write(&odd, "odd\n").unwrap();
    std::fs::create_dir(root.join(OsStr::from_bytes(b"dir\xfe"))).unwrap();
    write(
        &root.join(OsStr::from_bytes(b"dir\xfe")),
        "inside.txt",
        "in\n",
    );
    let snapshot = take(root, &Coverage::default());
    assert_eq!(keys(&snapshot), ["ok.txt"]);
    assert_eq!(uncovered(&snapshot), Vec::<&str>::new());
}

#[test]
fn every_path_comes_in_order_whatever_its_folder() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    // `/` sorts after `.` and `-` and before `0`: what is in `a` comes between `a.b` and `a0`.
    for path in ["a/b/x", "a/b.c", "a.b", "a-c", "a0", "A/z", "_", "~", "a/B"] {
        write(root, path, "x\n");
    }
    let snapshot = take(root, &Coverage::default());
    let found = keys(&snapshot);
    let mut sorted = found.clone();
    sorted.sort_unstable();
    assert_eq!(found, sorted);
    assert_eq!(found.len(), 12, "{found:?}");
}

#[test]
fn excluded_folders_and_the_store_inside_the_workspace_are_not_covered() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "home/sessions/s.jsonl", "{}\n");
    write(root, "src/lib.rs", "lib\n");
    // A file of the excluded folder's name elsewhere is covered.
    write(root, "src/home", "a file\n");
    let store = CheckpointStore::new(root.join("store"));
    let coverage = Coverage {
        exclude: vec![root.join("home")],
        ..Coverage::default()
    };
    let snapshot = store.take(root, &coverage, None).unwrap();
    assert_eq!(keys(&snapshot), ["src", "src/home", "src/lib.rs"]);
}

#[test]
fn a_folder_that_cannot_be_read_is_listed_as_uncovered() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "open/a.txt", "a\n");
    write(root, "locked/b.txt", "b\n");
    write(root, "locked/inner/c.txt", "c\n");
    let locked = root.join("locked");
    std::fs::set_permissions(&locked, PermissionsExt::from_mode(0o000)).unwrap();
    let snapshot = {
        let _unprivileged = Unprivileged::begin();
        take(root, &Coverage::default())
    };
    std::fs::set_permissions(&locked, PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(keys(&snapshot), ["locked", "open", "open/a.txt"]);
    assert_eq!(uncovered(&snapshot), ["locked"]);
}

/// This thread without the capabilities that let root read any folder (threads it starts
/// inherit that), so that a folder's mode keeps it out as it keeps out anyone else; they are
/// back when it is dropped. A no-op for a user without them.
struct Unprivileged {
    header: CapHeader,
    data: [CapData; 2],
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

impl Unprivileged {
    fn begin() -> Unprivileged {
        const VERSION_3: u32 = 0x2008_0522;
        const DAC_OVERRIDE: u32 = 1;
        const DAC_READ_SEARCH: u32 = 2;
        let mut this = Unprivileged {
            header: CapHeader {
                version: VERSION_3,
                pid: 0,
            },
            data: [CapData::default(); 2],
        };
        // SAFETY: a header and two data records, as the version-3 interface takes.
        let got = unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut this.header as *mut CapHeader,
                this.data.as_mut_ptr(),
            )
        };
        assert_eq!(got, 0, "capget: {}", std::io::Error::last_os_error());
        let mut lowered = this.data;
        lowered[0].effective &= !((1 << DAC_OVERRIDE) | (1 << DAC_READ_SEARCH));
        this.set(&lowered);
        this
    }

    fn set(&self, data: &[CapData; 2]) {
        let header = CapHeader {
            version: self.header.version,
            pid: 0,
        };
        // SAFETY: as above; only this thread's capabilities change.
        let set =
            unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) };
        assert_eq!(set, 0, "capset: {}", std::io::Error::last_os_error());
    }
}

impl Drop for Unprivileged {
    fn drop(&mut self) {
        self.set(&self.data);
    }
}
