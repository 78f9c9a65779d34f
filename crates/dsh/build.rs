//! Stamps the binary with the commit it was built from, for `dsh --version`: `DSH_COMMIT`
//! from the environment when set (a release built outside a clone), else what git says of the
//! repository, else nothing (a source tarball without git).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=DSH_COMMIT");
    let stamp = std::env::var("DSH_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(from_git)
        .unwrap_or_default();
    println!("cargo:rustc-env=DSH_COMMIT={stamp}");
}

/// `<12 hex> <YYYY-MM-DD>`, with `-dirty` when tracked files differ from the commit.
fn from_git() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let top = git(&["rev-parse", "--show-toplevel"])?;
    // A new commit or checkout moves HEAD or the branch it names; an edit changes the index's
    // view only once staged, which is as much as a build stamp needs.
    let dir = git(&["rev-parse", "--git-dir"])?;
    let dir = Path::new(&top).join(dir);
    for file in ["HEAD", "index"] {
        println!("cargo:rerun-if-changed={}", dir.join(file).display());
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!("cargo:rerun-if-changed={}", dir.join(branch).display());
    }
    let commit = git(&["log", "-1", "--format=%h %cs", "--abbrev=12"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        commit.replacen(' ', "-dirty ", 1)
    } else {
        commit
    })
}
