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
    let first = store.take(root, &coverage, None).unwrap();
    let first_id = store.save(&first).unwrap();
    let hash = match &first.entries["a.txt"] {
        dsh_checkpoint::Entry::File { hash, .. } => hash.clone(),
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
    // The first snapshot, its content and its folder object, and the rewrite's content.
    assert_eq!((pruned.snapshots, pruned.contents), (1, 3));
    assert!(store.load(&first_id).is_err());
    let kept = store.load(&second_id).unwrap();
    store.restore(root, &kept, &second).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "two");
    // A prune that removed contents drops the record of what was read: the next snapshot
    // reads every file again.
    let two = match &second.entries["a.txt"] {
        dsh_checkpoint::Entry::File { hash, .. } => hash.clone(),
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
