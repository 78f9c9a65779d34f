//! Checkpoints of a workspace in a Git repository: what Git holds is named, not copied, the
//! repository is never written, and a restore brings every byte back, also where Git converts
//! content between its index and the files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use dsh_checkpoint::{CheckpointStore, Coverage};
use pretty_assertions::assert_eq;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Writes `files` with their times well in the past (so that the index written after them
/// trusts them), then commits them.
fn committed(ws: &Path, files: &[(&str, &[u8])]) {
    std::fs::create_dir_all(ws).unwrap();
    git(ws, &["init", "-q"]);
    for (path, content) in files {
        let full = ws.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(&full, content).unwrap();
        let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
        let file = std::fs::File::options().write(true).open(&full).unwrap();
        file.set_modified(past).unwrap();
    }
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "first"]);
}

/// Every file under `dir` with its bytes: what a test compares to see nothing changed.
fn contents(dir: &Path) -> BTreeMap<String, String> {
    dsh_testkit::tree(dir, &[])
}

/// The copies the store keeps (`objects/`), by name.
fn copies(store: &CheckpointStore) -> Vec<String> {
    let objects = store.root().join("objects");
    let mut names = Vec::new();
    for folder in std::fs::read_dir(objects).into_iter().flatten().flatten() {
        for object in std::fs::read_dir(folder.path()).unwrap().flatten() {
            names.push(format!(
                "{}{}",
                folder.file_name().to_string_lossy(),
                object.file_name().to_string_lossy()
            ));
        }
    }
    names.sort();
    names
}

#[test]
fn what_git_holds_is_named_not_copied_and_the_repository_is_never_written() {
    if !dsh_testkit::git_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    committed(
        &ws,
        &[
            ("src/lib.rs", b"fn main() {}\n"),
            ("README.md", b"# readme\n"),
            ("bytes.bin", &(0..=255u8).collect::<Vec<u8>>()),
        ],
    );
    let git_before = contents(&ws.join(".git"));
    let store = CheckpointStore::new(dir.path().join("store"));
    let coverage = Coverage::default();
    let first = store.take(&ws, &coverage, None).unwrap();
    let first_id = store.save(&first).unwrap();
    // Nothing Git holds was copied: the store keeps only its folder objects.
    let files: Vec<String> = (first.entries.values())
        .filter_map(|e| match e {
            dsh_checkpoint::Entry::File { hash, .. } => Some(hash.hex()),
            _ => None,
        })
        .collect();
    assert_eq!(files.len(), 3);
    assert!(
        files.iter().all(|f| !copies(&store).contains(f)),
        "{files:?}"
    );

    // A changed file and a new one are copied; the rest is not read again.
    let tree = contents(&ws);
    std::fs::write(ws.join("README.md"), "# changed\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "untracked\n").unwrap();
    let second = store.take(&ws, &coverage, Some(&first)).unwrap();
    let copied: Vec<String> = ["README.md", "notes.txt"]
        .iter()
        .map(|p| match second.entries.get(p).unwrap() {
            dsh_checkpoint::Entry::File { hash, .. } => hash.hex(),
            _ => unreachable!(),
        })
        .collect();
    for name in &copied {
        assert!(copies(&store).contains(name), "{name} not copied");
    }

    // Everything gone, then back from the first checkpoint: Git's blobs read back whole.
    for path in ["src/lib.rs", "README.md", "bytes.bin", "notes.txt"] {
        std::fs::remove_file(ws.join(path)).unwrap();
    }
    let now = store.take(&ws, &coverage, Some(&second)).unwrap();
    let target = store.load(&first_id).unwrap();
    let done = store.restore(&ws, &target, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    let mut expected = tree;
    expected.retain(|path, _| !path.starts_with(".git"));
    let mut restored = contents(&ws);
    restored.retain(|path, _| !path.starts_with(".git"));
    assert_eq!(restored, expected);
    // And the repository was only ever read.
    assert_eq!(contents(&ws.join(".git")), git_before);
}

#[test]
fn where_git_converts_line_ends_the_files_own_bytes_are_kept() {
    if !dsh_testkit::git_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    // Git keeps this file with LF line ends; the file itself has CRLF.
    committed(
        &ws,
        &[
            (".gitattributes", b"*.txt text eol=crlf\n"),
            ("dos.txt", b"one\r\ntwo\r\n"),
        ],
    );
    let store = CheckpointStore::new(dir.path().join("store"));
    let first = store.take(&ws, &Coverage::default(), None).unwrap();
    std::fs::write(ws.join("dos.txt"), "changed\n").unwrap();
    let now = store.take(&ws, &Coverage::default(), Some(&first)).unwrap();
    let done = store.restore(&ws, &first, &now).unwrap();
    assert_eq!(done.failed, Vec::<(String, String)>::new());
    assert_eq!(
        std::fs::read(ws.join("dos.txt")).unwrap(),
        b"one\r\ntwo\r\n"
    );
}

#[test]
fn a_blob_git_has_since_removed_is_reported_not_guessed() {
    if !dsh_testkit::git_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    committed(&ws, &[("gone.txt", b"only in git\n")]);
    let store = CheckpointStore::new(dir.path().join("store"));
    let first = store.take(&ws, &Coverage::default(), None).unwrap();
    // The repository is replaced by a new one that never had it.
    std::fs::remove_dir_all(ws.join(".git")).unwrap();
    git(&ws, &["init", "-q"]);
    std::fs::remove_file(ws.join("gone.txt")).unwrap();
    let now = store.take(&ws, &Coverage::default(), None).unwrap();
    let done = store.restore(&ws, &first, &now).unwrap();
    assert_eq!(done.failed.len(), 1, "{done:?}");
    assert_eq!(done.failed[0].0, "gone.txt");
    assert!(
        done.failed[0].1.contains("the repository no longer has it"),
        "{}",
        done.failed[0].1
    );
}

#[test]
fn outside_git_a_checkpoint_keeps_to_the_budget_and_says_what_it_left_out() {
    let ws = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    let store = CheckpointStore::new(store_dir.path());
    std::fs::write(ws.path().join("small.txt"), "x".repeat(100)).unwrap();
    std::fs::write(ws.path().join("big.txt"), "y".repeat(5_000)).unwrap();
    let coverage = Coverage {
        budget_bytes: Some(1_000),
        ..Coverage::default()
    };
    let snapshot = store.take(ws.path(), &coverage, None).unwrap();
    assert!(snapshot.entries.contains_key("small.txt"));
    assert!(!snapshot.entries.contains_key("big.txt"));
    assert_eq!(snapshot.uncovered.len(), 1);
    assert_eq!(snapshot.uncovered[0].path, "big.txt");
    assert!(snapshot.uncovered[0].over_budget);
}
