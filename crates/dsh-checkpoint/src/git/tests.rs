use super::*;
use std::collections::HashMap;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `git ls-files -s`'s ids, by path.
fn staged(dir: &Path) -> HashMap<String, String> {
    git(dir, &["ls-files", "-s"])
        .lines()
        .map(|line| {
            let (head, path) = line.split_once('\t').unwrap();
            (path.to_owned(), head.split(' ').nth(1).unwrap().to_owned())
        })
        .collect()
}

#[test]
fn the_index_is_read_as_git_reads_it_in_every_version() {
    if !dsh_testkit::git_available() {
        return;
    }
    for version in ["2", "3", "4"] {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        git(&ws, &["init", "-q"]);
        // Enough long names that the index is read in several windows.
        let many: Vec<(String, String)> = (0..1500)
            .map(|i| {
                (
                    format!("many/{i:04}-{}.txt", "x".repeat(80)),
                    format!("{i}\n"),
                )
            })
            .collect();
        let few = [
            ("a.txt", "one\n"),
            ("src/deep/lib.rs", "fn x() {}\n"),
            ("src/deep/lib2.rs", "fn y() {}\n"),
            ("src/other.rs", "z"),
        ];
        let all = (few.into_iter()).chain(many.iter().map(|(p, t)| (p.as_str(), t.as_str())));
        for (path, text) in all {
            std::fs::create_dir_all(ws.join(path).parent().unwrap()).unwrap();
            std::fs::write(ws.join(path), text).unwrap();
            // Changed well before the index is written, so that no entry is racily clean.
            let past = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
            let file = std::fs::File::options()
                .write(true)
                .open(ws.join(path))
                .unwrap();
            file.set_modified(past).unwrap();
        }
        git(&ws, &["add", "-A"]);
        git(&ws, &["update-index", "--index-version", version]);
        let repository = Repository::find(&ws).unwrap();
        let ids: HashMap<String, String> = (repository.entries(false).unwrap())
            .map(|(path, t)| (path, t.id.hex()))
            .collect();
        assert_eq!(ids, staged(&ws), "index version {version}");
        // In order, as lookups made in order need.
        let paths: Vec<String> = repository.entries(false).unwrap().map(|(p, _)| p).collect();
        let mut sorted = paths.clone();
        sorted.sort();
        assert_eq!(paths, sorted);
        // From a subfolder, its own paths only, relative to it.
        let sub = Repository::find(&ws.join("src")).unwrap();
        let paths: Vec<String> = sub.entries(false).unwrap().map(|(p, _)| p).collect();
        assert_eq!(paths, ["deep/lib.rs", "deep/lib2.rs", "other.rs"]);
        // An attributes file inside the workspace: nothing is taken from the index.
        assert!(repository.entries(true).is_none());
        assert_eq!(repository.held().len(), 4 + 1500);
        let index = std::fs::metadata(ws.join(".git/index")).unwrap().len();
        assert!(index > 3 * (64 << 10), "index of {index} bytes");
    }
}

#[test]
fn borrowed_blobs_are_read_back_from_a_private_repository() {
    if !dsh_testkit::git_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    git(&ws, &["init", "-q"]);
    std::fs::write(ws.join("kept.txt"), "committed content\n").unwrap();
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "x"]);
    let repository = Repository::find(&ws).unwrap();
    let store = dir.path().join("store");
    let private =
        crate::store::private_repository(&crate::CheckpointStore::new(&store), &repository.objects)
            .unwrap();
    let mut reader = BlobReader::start(&private).unwrap();
    let id = BlobId::of(b"committed content\n");
    assert_eq!(
        reader.read(&id).unwrap().as_deref(),
        Some(&b"committed content\n"[..])
    );
    assert_eq!(reader.read(&BlobId::of(b"never stored")).unwrap(), None);
}
