//! A snapshot taken from what the watch saw is the snapshot a whole walk takes: after every
//! kind of change a turn makes (files written, removed, renamed, made executable; folders
//! made, removed, moved; links; ignored and secret files; changes deep in new folders).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod changes;

use std::sync::atomic::AtomicBool;

use changes::{Dice, change, write};

use dsh_checkpoint::{CheckpointStore, Coverage};
use pretty_assertions::assert_eq;

#[test]
fn a_snapshot_from_the_watch_is_the_snapshot_a_walk_takes() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, ".gitignore", "target/\n*.log\n");
    write(root, "src/lib.rs", "fn main() {}\n");
    write(root, "src/deep/mod.rs", "mod x;\n");
    write(root, "docs/guide.md", "# guide\n");
    write(root, "target/out.o", "built\n");
    write(root, "build.log", "log\n");
    let coverage = Coverage {
        holds_secrets: |name| name.to_string_lossy().starts_with(".env"),
        ..Coverage::default()
    };
    let stop = AtomicBool::new(false);
    let first = store.take_watched(root, &coverage, None, &stop).unwrap();
    let mut id = store.save(&first.snapshot).unwrap();
    let (mut before, mut watch) = (first.snapshot, first.watch.expect("this kernel watches"));
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut from_the_watch = 0;
    for round in 0..60 {
        for _ in 0..=dice.roll(4) {
            change(root, &mut dice, round);
        }
        let taken = store
            .take_watched(root, &coverage, Some((before.clone(), &watch)), &stop)
            .unwrap();
        let walked = store.take(root, &coverage, None).unwrap();
        assert_eq!(*taken.snapshot, walked, "round {round}");
        // Kept as the changes the watch saw, it loads back as it was taken.
        id = match &taken.changes {
            Some(changes) => store.save_changes(&taken.snapshot, &id, changes).unwrap(),
            None => store
                .save_after(&taken.snapshot, Some((&id, &before)))
                .unwrap(),
        };
        assert_eq!(
            store.load(&id).unwrap().changes(&taken.snapshot),
            Vec::new()
        );
        let next = taken.watch.expect("a watch to go on with");
        if std::sync::Arc::ptr_eq(&next, &watch) {
            from_the_watch += 1;
        }
        next.rebase();
        (before, watch) = (taken.snapshot, next);
    }
    // Most rounds went by the watch (an ignore file was never changed here).
    assert!(from_the_watch > 50, "{from_the_watch} of 60");
}

#[test]
fn a_changed_ignore_file_makes_the_next_snapshot_walk() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    let root = ws.path();
    write(root, "a.log", "log\n");
    write(root, "a.txt", "text\n");
    let stop = AtomicBool::new(false);
    let coverage = Coverage::default();
    let first = store.take_watched(root, &coverage, None, &stop).unwrap();
    let watch = first.watch.unwrap();
    assert!(first.snapshot.entries.contains_key("a.log"));
    write(root, ".gitignore", "*.log\n");
    let taken = store
        .take_watched(root, &coverage, Some((first.snapshot, &watch)), &stop)
        .unwrap();
    assert!(!taken.snapshot.entries.contains_key("a.log"));
    assert!(taken.changes.is_none());
    assert!(!std::sync::Arc::ptr_eq(&taken.watch.unwrap(), &watch));
}
