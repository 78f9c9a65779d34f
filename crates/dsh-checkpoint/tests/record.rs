//! A process's first snapshot, taken after the store's record of the last whole walk, is kept
//! as the changes from the snapshot that record lists, and loads back as it was taken: after
//! every kind of change a turn makes, made between processes, and when the record is damaged.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod changes;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use changes::{Dice, change, write};
use dsh_checkpoint::{CheckpointStore, Coverage};
use pretty_assertions::assert_eq;

/// What a new process does first: a store of its own over the same folder, a whole walk after
/// the record, and the snapshot kept. Its id and the size of the file it was kept in.
fn first_of_a_process(store_dir: &Path, root: &Path, coverage: &Coverage) -> (String, u64) {
    let store = CheckpointStore::new(store_dir);
    let stop = AtomicBool::new(false);
    let mut taken = store.take_watched(root, coverage, None, &stop).unwrap();
    let id = store.save_taken(&mut taken, None).unwrap();
    let walked = store.take(root, coverage, None).unwrap();
    assert_eq!(*taken.snapshot, walked);
    assert_eq!(
        store.load(&id).unwrap().changes(&taken.snapshot),
        Vec::new()
    );
    let kept = std::fs::metadata(store_dir.join("snapshots").join(&id)).unwrap();
    (id, kept.len())
}

#[test]
fn each_process_keeps_its_first_snapshot_as_the_changes_from_the_recorded_one() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, ".gitignore", "target/\n*.log\n");
    // Last in path order.
    write(root, "zzz.txt", "last\n");
    // Enough files that a whole snapshot is much larger than a few changes.
    for i in 0..400 {
        write(
            root,
            &format!("src/m{}/file{i}.rs", i % 20),
            &format!("// {i}\n"),
        );
    }
    let coverage = Coverage {
        holds_secrets: |name| name.to_string_lossy().starts_with(".env"),
        ..Coverage::default()
    };
    let (_, whole) = first_of_a_process(store_dir.path(), root, &coverage);
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    let mut as_changes = 0;
    for round in 0..40 {
        for _ in 0..=dice.roll(4) {
            change(root, &mut dice, round);
        }
        if round == 20 {
            // A record cut short in its last entry, that of a file removed since: the record
            // cannot say the file is gone, so the snapshot is kept whole (kept as changes,
            // it would have the file still).
            std::fs::remove_file(root.join("zzz.txt")).unwrap();
            let record = store_dir.path().join("stat-cache");
            let bytes = std::fs::read(&record).unwrap();
            std::fs::write(&record, &bytes[..bytes.len() - 10]).unwrap();
        }
        let (_, size) = first_of_a_process(store_dir.path(), root, &coverage);
        if size * 4 < whole {
            as_changes += 1;
        }
    }
    // All but the round after the damage (and any that changed a quarter of the tree).
    assert!(as_changes >= 38, "{as_changes} of 40 kept as changes");
    // Nothing changed: the recorded snapshot itself.
    let (id, _) = first_of_a_process(store_dir.path(), root, &coverage);
    assert_eq!(first_of_a_process(store_dir.path(), root, &coverage).0, id);
}
