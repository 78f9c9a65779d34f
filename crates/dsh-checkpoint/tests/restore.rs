//! Snapshots of a real folder, changed the ways a model's commands change files, restored and
//! compared byte for byte (modes and links too).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use dsh_checkpoint::{ChangeKind, CheckpointStore, Coverage, plan_restore};
use pretty_assertions::assert_eq;

/// Everything under `root` but `.git`, byte for byte.
fn tree(root: &Path) -> BTreeMap<String, String> {
    dsh_testkit::tree(root, &[".git"])
}

fn write(root: &Path, path: &str, content: &str) {
    let full = root.join(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(full, content).unwrap();
}

#[test]
fn every_kind_of_change_is_undone_byte_for_byte() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, "src/lib.rs", "fn main() {}\n");
    write(root, "README.md", "# hello\n");
    write(root, "run.sh", "echo hi\n");
    std::fs::set_permissions(root.join("run.sh"), PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("README.md", root.join("readme-link")).unwrap();
    write(root, "docs/guide/intro.md", "intro\n");
    let before = tree(root);
    let coverage = Coverage::default();
    let checkpoint = store.take(root, &coverage, None).unwrap();
    let id = store.save(&checkpoint).unwrap();

    // What a turn does: edits, sed -i, rm, chmod, new files and folders, a link repointed,
    // a folder replaced by a file, a file replaced by a link to outside.
    write(root, "src/lib.rs", "fn main() { changed() }\n");
    std::fs::remove_file(root.join("README.md")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), PermissionsExt::from_mode(0o644)).unwrap();
    write(root, "new/deep/file.txt", "made by the model\n");
    std::fs::remove_file(root.join("readme-link")).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", root.join("readme-link")).unwrap();
    std::fs::remove_dir_all(root.join("docs/guide")).unwrap();
    write(root, "docs/guide", "now a file\n");
    std::fs::remove_file(root.join("src/lib.rs")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("src/lib.rs")).unwrap();

    let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
    let changes: Vec<String> = now
        .changes(&checkpoint)
        .iter()
        .map(|c| format!("{} {}", c.kind.letter(), c.path))
        .collect();
    assert_eq!(
        changes,
        [
            "D README.md",
            "M docs/guide",
            "D docs/guide/intro.md",
            "A new/deep/file.txt",
            "M readme-link",
            "M run.sh",
            "M src/lib.rs"
        ]
    );
    let target = store.load(&id).unwrap();
    let plan = plan_restore(&target, &now);
    assert!(plan.remove.contains(&"new/deep/file.txt".to_owned()));
    let done = store.restore(root, &target, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    assert_eq!(tree(root), before);

    // The snapshot taken before restoring undoes it.
    let back = store.take(root, &coverage, Some(&target)).unwrap();
    store.restore(root, &now, &back).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("new/deep/file.txt")).unwrap(),
        "made by the model\n"
    );
    assert_eq!(
        std::fs::read_link(root.join("src/lib.rs")).unwrap(),
        Path::new("/etc")
    );
}

#[test]
fn ignored_large_and_git_files_are_not_covered_and_stay_put() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, ".gitignore", "target/\n");
    write(root, "target/out.bin", "built");
    write(root, ".git/config", "[core]\n");
    write(root, "big.dat", &"x".repeat(2048));
    write(root, "small.txt", "s");
    let coverage = Coverage {
        max_file_bytes: 1024,
        ..Coverage::default()
    };
    let checkpoint = store.take(root, &coverage, None).unwrap();
    let paths: Vec<&str> = checkpoint.entries.keys().map(String::as_str).collect();
    assert_eq!(paths, [".gitignore", "small.txt"]);
    assert_eq!(checkpoint.uncovered[0].path, "big.dat");
    assert_eq!(checkpoint.uncovered[0].size, 2048);

    write(root, "target/out.bin", "rebuilt");
    write(root, "small.txt", "changed");
    let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
    store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("small.txt")).unwrap(),
        "s"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("target/out.bin")).unwrap(),
        "rebuilt"
    );
    assert!(root.join(".git/config").exists());

    // A file too large to be covered then, made small by the turn, existed then: a restore
    // leaves it rather than removing it.
    write(root, "big.dat", "now small");
    let now = store.take(root, &coverage, None).unwrap();
    assert!(now.entries.contains_key("big.dat"));
    let plan = plan_restore(&checkpoint, &now);
    assert!(!plan.remove.contains(&"big.dat".to_owned()), "{plan:?}");
    store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("big.dat")).unwrap(),
        "now small"
    );

    let everything = Coverage {
        include_ignored: true,
        ..coverage
    };
    let all = store.take(root, &everything, None).unwrap();
    assert!(all.entries.contains_key("target/out.bin"));
    assert!(!all.entries.contains_key(".git/config"));
}

#[test]
fn unchanged_files_are_not_read_again_and_pruning_keeps_what_is_named() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, "a.txt", "one");
    let coverage = Coverage::default();
    // Taken and kept as a run does: the store's record then lists it.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut taken = store.take_watched(root, &coverage, None, &stop).unwrap();
    let first_id = store.save_taken(&mut taken, None).unwrap();
    let first = (*taken.snapshot).clone();
    let hash = match first.entries.get("a.txt").unwrap() {
        dsh_checkpoint::Entry::File { hash, .. } => hash.hex(),
        other => panic!("{other:?}"),
    };
    let object = store_dir
        .path()
        .join("objects")
        .join(&hash[..2])
        .join(&hash[2..]);
    // A file whose size, time and inode did not change is not read: not by this process
    // (the snapshot before), nor by the next (the store's record of what it read), which
    // would otherwise have stored its content again.
    std::fs::remove_file(&object).unwrap();
    assert_eq!(store.take(root, &coverage, Some(&first)).unwrap(), first);
    assert_eq!(store.take(root, &coverage, None).unwrap(), first);
    assert!(!object.exists());
    std::fs::write(&object, "one").unwrap();

    // A rewrite of the same size that puts the old modification time back is still seen
    // (its change time moved).
    let was = std::fs::metadata(root.join("a.txt"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::write(root.join("a.txt"), "owt").unwrap();
    std::fs::File::options()
        .append(true)
        .open(root.join("a.txt"))
        .unwrap()
        .set_modified(was)
        .unwrap();
    let sneaky = store.take(root, &coverage, Some(&first)).unwrap();
    assert_eq!(sneaky.changes(&first)[0].kind, ChangeKind::Modified);

    write(root, "a.txt", "two");
    let second = store.take(root, &coverage, Some(&first)).unwrap();
    let second_id = store.save(&second).unwrap();
    assert_eq!(second.changes(&first)[0].kind, ChangeKind::Modified);
    let pruned = store
        .prune(
            &HashSet::from([second_id.clone()]),
            std::time::Duration::ZERO,
        )
        .unwrap();
    // The rewrite's content goes; the first snapshot is what the store's record lists (the
    // next process's first snapshot is kept as the changes from it), so it stays, and its
    // content with it.
    assert_eq!((pruned.snapshots, pruned.contents), (0, 1));
    assert!(store.load(&first_id).unwrap().changes(&first).is_empty());
    let kept = store.load(&second_id).unwrap();
    store.restore(root, &kept, &second).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "two");
    // Nothing else kept: what the record does not name goes, and is read again.
    let two = match second.entries.get("a.txt").unwrap() {
        dsh_checkpoint::Entry::File { hash, .. } => *hash,
        other => panic!("{other:?}"),
    };
    store
        .prune(&HashSet::new(), std::time::Duration::ZERO)
        .unwrap();
    assert!(store.content(&two).is_err());
    let third = store.take(root, &coverage, None).unwrap();
    store.save(&third).unwrap();
    assert_eq!(store.content(&two).unwrap(), b"two");
}

#[test]
fn a_restore_does_not_follow_a_link_put_where_a_folder_was() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, "conf/app.toml", "a = 1\n");
    let coverage = Coverage::default();
    let checkpoint = store.take(root, &coverage, None).unwrap();
    write(root, "conf/app.toml", "a = 2\n");
    let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
    // After the snapshot of now, the folder becomes a link to somewhere else, whose file a
    // restore must not write.
    std::fs::remove_dir_all(root.join("conf")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("conf")).unwrap();
    write(outside.path(), "app.toml", "outside\n");
    let done = store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(
        done.failed,
        [(
            "conf/app.toml".to_owned(),
            "conf is not a folder now (a link or a file is in its place)".to_owned()
        )]
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("app.toml")).unwrap(),
        "outside\n"
    );
    // With a snapshot that sees the link, the restore takes the link away first.
    let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
    let done = store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    assert!(
        std::fs::symlink_metadata(root.join("conf"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("conf/app.toml")).unwrap(),
        "a = 1\n"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("app.toml")).unwrap(),
        "outside\n"
    );
}

/// As root the kernel lets any folder be written, so this guards the runs that are not root.
#[test]
fn a_folder_made_read_only_does_not_keep_its_files_from_coming_back() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, "src/a.txt", "one");
    write(root, "locked/b.txt", "bee");
    std::fs::set_permissions(root.join("locked"), PermissionsExt::from_mode(0o555)).unwrap();
    let coverage = Coverage::default();
    let checkpoint = store.take(root, &coverage, None).unwrap();
    let before = tree(root);
    // The turn edits, then locks the folder; a folder locked both times has a new file.
    write(root, "src/a.txt", "two");
    std::fs::set_permissions(root.join("src"), PermissionsExt::from_mode(0o555)).unwrap();
    std::fs::set_permissions(root.join("locked"), PermissionsExt::from_mode(0o755)).unwrap();
    write(root, "locked/new.txt", "new");
    std::fs::set_permissions(root.join("locked"), PermissionsExt::from_mode(0o555)).unwrap();
    let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
    let done = store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    assert_eq!(tree(root), before);
    // A link put where a folder was is not read through to cover what is behind it.
    std::fs::set_permissions(root.join("src"), PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::rename(root.join("src"), root.join("src.bak")).unwrap();
    std::os::unix::fs::symlink("src.bak", root.join("src")).unwrap();
    let mut now = store.take(root, &coverage, None).unwrap();
    assert!(!store.cover_path(root, "src/a.txt", &mut now).unwrap());
    for dir in ["locked", "src.bak"] {
        std::fs::set_permissions(root.join(dir), PermissionsExt::from_mode(0o755)).unwrap();
    }
}

/// Exchanges `a` and `b` (a folder and a symlink) until `stop`, as another process in the
/// workspace could while a rewind runs.
fn swapper(
    a: &Path,
    b: &Path,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<u64> {
    use std::os::unix::ffi::OsStrExt;
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    std::thread::spawn(move || {
        let mut swaps = 0u64;
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            // SAFETY: two NUL-terminated paths that outlive the call.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
            if rc == 0 {
                swaps += 1;
            }
        }
        // An even number of exchanges leaves the folder where it was.
        if swaps % 2 == 1 {
            // SAFETY: as above.
            unsafe {
                libc::syscall(
                    libc::SYS_renameat2,
                    libc::AT_FDCWD,
                    a.as_ptr(),
                    libc::AT_FDCWD,
                    b.as_ptr(),
                    libc::RENAME_EXCHANGE,
                )
            };
        }
        swaps
    })
}

/// Everything under `dir`, as paths relative to it.
fn listing(dir: &Path) -> Vec<String> {
    dsh_testkit::tree(dir, &[]).into_keys().collect()
}

#[test]
fn a_folder_swapped_for_a_link_while_restores_run_never_carries_a_write_outside() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    let files: Vec<String> = (0..12)
        .flat_map(|i| [format!("sub/f{i}.txt"), format!("sub/deep/g{i}.txt")])
        .collect();
    for file in &files {
        write(root, file, &format!("the model chose this for {file}\n"));
    }
    std::fs::set_permissions(root.join("sub/deep"), PermissionsExt::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("sub-link")).unwrap();
    let coverage = Coverage::default();
    let checkpoint = store.take(root, &coverage, None).unwrap();
    let mut swaps = 0;
    for _ in 0..50 {
        for file in &files {
            let _ = std::fs::remove_file(root.join(file));
        }
        write(root, "sub/made-later.txt", "x");
        let now = store.take(root, &coverage, Some(&checkpoint)).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swapping = swapper(&root.join("sub"), &root.join("sub-link"), stop.clone());
        let done = store.restore(root, &checkpoint, &now);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swaps += swapping.join().unwrap();
        done.unwrap();
        assert_eq!(listing(outside.path()), Vec::<String>::new());
    }
    assert!(swaps > 0, "the swapper never swapped");
    // With nothing racing it, the same restore puts everything back.
    let now = store.take(root, &coverage, None).unwrap();
    let done = store.restore(root, &checkpoint, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    for file in &files {
        assert!(root.join(file).is_file(), "{file}");
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a folder exchanged with a symlink out of the workspace while 50 rewinds run",
        "nothing lands outside; each path is restored inside or reported",
    );
}

/// A store written before contents were named by their Git blob ids names them by SHA-256:
/// its snapshots still load, restore, and compare with new ones by content.
#[test]
fn a_store_from_before_blob_ids_still_loads_and_compares_by_content() {
    use sha2::Digest;
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    write(ws.path(), "a.txt", "kept since before\n");
    // What such a store holds: the content under its SHA-256, a folder object naming it so,
    // and the root record.
    let put = |name: &str, content: &[u8]| {
        let path = store_dir
            .path()
            .join("objects")
            .join(&name[..2])
            .join(&name[2..]);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    };
    let content = b"kept since before\n";
    let sha = hex(&sha2::Sha256::digest(content));
    put(&sha, content);
    let tree = format!(r#"{{"a.txt":{{"kind":"file","hash":"{sha}","size":18,"mode":420}}}}"#);
    let tree_name = hex(&sha2::Sha256::digest(tree.as_bytes()));
    put(&tree_name, tree.as_bytes());
    let root = format!(r#"{{"tree":"{tree_name}"}}"#);
    let id = hex(&sha2::Sha256::digest(root.as_bytes()));
    std::fs::create_dir_all(store_dir.path().join("manifests")).unwrap();
    std::fs::write(store_dir.path().join(format!("manifests/{id}.json")), root).unwrap();

    let old = store.load(&id).unwrap();
    let now = store.take(ws.path(), &Coverage::default(), None).unwrap();
    assert_eq!(now.changes(&old), Vec::new());
    std::fs::write(ws.path().join("a.txt"), "changed\n").unwrap();
    std::fs::set_permissions(ws.path().join("a.txt"), PermissionsExt::from_mode(0o644)).unwrap();
    let changed = store
        .take(ws.path(), &Coverage::default(), Some(&now))
        .unwrap();
    store.restore(ws.path(), &old, &changed).unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "kept since before\n"
    );
}

/// The red team's finding: links planted in the store (by anything that can write dsh's home)
/// must not carry a prune's removals or a write elsewhere.
#[test]
fn links_planted_in_the_store_carry_no_removal_or_write_outside_it() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    write(ws.path(), "a.txt", "one");
    let snapshot = store.take(ws.path(), &Coverage::default(), None).unwrap();
    let id = store.save(&snapshot).unwrap();
    // Old files in a folder outside, and links to it where the store keeps its files.
    for name in ["kept.txt", "also.txt"] {
        let path = victim.path().join(name);
        std::fs::write(&path, "mine").unwrap();
        let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(past).unwrap();
    }
    std::os::unix::fs::symlink(victim.path(), store_dir.path().join("objects/zz")).unwrap();
    std::os::unix::fs::symlink(
        victim.path().join("kept.txt"),
        store_dir.path().join("snapshots/0123abcd"),
    )
    .unwrap();
    // A content the next checkpoint stores, planted in advance as a link to outside.
    let next = dsh_checkpoint::BlobId::of(b"two").hex();
    let planted = store_dir.path().join("objects").join(&next[..2]);
    std::fs::create_dir_all(&planted).unwrap();
    std::os::unix::fs::symlink(victim.path().join("also.txt"), planted.join(&next[2..])).unwrap();
    store
        .prune(&HashSet::from([id]), std::time::Duration::ZERO)
        .unwrap();
    write(ws.path(), "a.txt", "two");
    let taken = store
        .take(ws.path(), &Coverage::default(), Some(&snapshot))
        .unwrap();
    store.save(&taken).unwrap();
    for name in ["kept.txt", "also.txt"] {
        assert_eq!(
            std::fs::read_to_string(victim.path().join(name)).unwrap(),
            "mine",
            "{name}"
        );
    }
    // The content was written into the store itself, in the link's place.
    assert_eq!(
        store.content(&dsh_checkpoint::BlobId::of(b"two")).unwrap(),
        b"two"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "links planted in the checkpoint store to a folder and files outside it, then a prune and a checkpoint",
        "nothing outside is removed or written; the content is kept in the store in the link's place",
    );
}
