//! What no command may read: the secrets dsh keeps in its home, held by what they are (their
//! device and inode) as well as by their names.
//!
//! A home in a writable root (the workspace, `/tmp`) is a folder commands can change under
//! Landlock, which cannot take rights back from one entry of a writable folder: a command
//! could rename a secret, or the home itself, and the next command's grants, made by name,
//! would show it. So every secret found is remembered by identity for the life of the process
//! and hidden under whatever name it has in its folder; the folders that hold secrets (the
//! home, and where a symlinked secret leads) are remembered too, and commands are refused once
//! one is no longer where it was ([`HomeSecrets::moved`]). Under Landlock nothing can be moved
//! or linked out of those folders into another one (the way to them is granted no `REFER`
//! right: `landlock_backend`), so a secret is always in one of them.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// What dsh's home holds that no command may read ([`crate::SandboxPolicy::hidden_paths`]):
/// the keys `dsh login` saved, the home's `.env`, the MCP sign-ins; the config files, which
/// hold headers, URL passwords, MCP `env` values and OAuth client secrets (`config.toml`, the
/// reference's patch files `cordis.patch.yml` and `profiles/`); and `web/`, where
/// `dsh web --open` leaves the page that holds the web app's token, with which a command could
/// open a session of its own and run unconfined.
pub(crate) const HOME_SECRETS: &[&str] = &[
    "credentials",
    ".env",
    "mcp-auth",
    "config.toml",
    "cordis.patch.yml",
    "profiles",
    "web",
];

/// A file's device and inode.
pub(crate) type Identity = (u64, u64);

fn identity(meta: &std::fs::Metadata) -> Identity {
    (meta.dev(), meta.ino())
}

/// What one command's sandbox hides.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Hidden {
    /// Each secret under the name it has now: the home's secrets, a symlink among them and
    /// where it leads, and any entry that is a secret seen before under another name.
    pub(crate) paths: Vec<PathBuf>,
    /// What is never granted, whatever it is called when the grants are made: the secrets, the
    /// folders that hold them and every folder above those (a folder renamed while the grants
    /// are made must not be granted whole under its new name).
    pub(crate) identities: Vec<Identity>,
}

/// dsh's home and its secrets as this process has seen them.
#[derive(Debug, Default)]
struct Seen {
    /// The home, as a real path, from the first time it existed.
    home: Option<(PathBuf, Identity)>,
    /// Where symlinked secrets lead: each one's folder.
    elsewhere: Vec<(PathBuf, Identity)>,
    /// Every secret ever found.
    secrets: Vec<Identity>,
}

impl Seen {
    fn folders(&self) -> impl Iterator<Item = &(PathBuf, Identity)> {
        self.home.iter().chain(&self.elsewhere)
    }

    fn remember(&mut self, secret: Identity) {
        if !self.secrets.contains(&secret) {
            self.secrets.push(secret);
        }
    }
}

/// The secrets of one dsh home, shared by every policy this process makes for it (each
/// subagent's, each `dsh web` session's), so that a policy made after a command moved
/// something still knows what was there.
#[derive(Debug, Clone)]
pub(crate) struct HomeSecrets {
    home: PathBuf,
    seen: Arc<Mutex<Seen>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HomeSecrets {
    /// The secrets of `home`, found now if this process has not looked yet.
    pub(crate) fn of(home: &Path) -> HomeSecrets {
        static HOMES: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<Seen>>>>> = OnceLock::new();
        let seen = lock(HOMES.get_or_init(Default::default))
            .entry(home.to_path_buf())
            .or_default()
            .clone();
        let secrets = HomeSecrets {
            home: home.to_path_buf(),
            seen,
        };
        secrets.hidden();
        secrets
    }

    /// What to hide now. A secret found for the first time is remembered; so is the home the
    /// first time it exists, and the folder a symlinked secret leads to. A folder that is no
    /// longer where it was is not listed: commands are refused then ([`HomeSecrets::moved`]).
    pub(crate) fn hidden(&self) -> Hidden {
        let mut seen = lock(&self.seen);
        if seen.home.is_none()
            && let Ok(real) = std::fs::canonicalize(&self.home)
            && let Ok(meta) = std::fs::metadata(&real)
            && meta.is_dir()
        {
            seen.home = Some((real, identity(&meta)));
        }
        let mut paths = Vec::new();
        let mut listed = 0;
        // A symlinked secret adds its folder to the list while it is walked.
        loop {
            let Some((folder, id)) = seen.folders().nth(listed).cloned() else {
                break;
            };
            listed += 1;
            let is_home = listed == 1 && seen.home.is_some();
            if !in_place(&folder, id) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let named = is_home && HOME_SECRETS.iter().any(|name| entry.file_name() == *name);
                if !named && !seen.secrets.contains(&identity(&meta)) {
                    continue;
                }
                if meta.file_type().is_symlink() {
                    // Where it leads is found when its folder is listed, in this same loop.
                    if let Some((target, folder)) = leads_to(&path) {
                        seen.remember(target);
                        if !seen.folders().any(|(known, _)| *known == folder.0) {
                            seen.elsewhere.push(folder);
                        }
                    }
                } else {
                    seen.remember(identity(&meta));
                }
                paths.push(path);
            }
        }
        paths.sort();
        paths.dedup();
        let mut identities = seen.secrets.clone();
        for (folder, _) in seen.folders() {
            for above in folder.ancestors() {
                if let Ok(meta) = std::fs::metadata(above)
                    && !identities.contains(&identity(&meta))
                {
                    identities.push(identity(&meta));
                }
            }
        }
        Hidden { paths, identities }
    }

    /// A folder that holds secrets (the home, or where a symlinked secret leads) and is no
    /// longer the folder it was, or no longer reached by its real path: a command moved or
    /// replaced it (or a folder above it), and what it holds is no longer where the sandbox
    /// hides it.
    pub(crate) fn moved(&self) -> Option<PathBuf> {
        let seen = lock(&self.seen);
        seen.folders()
            .find(|(path, id)| !in_place(path, *id))
            .map(|(path, _)| path.clone())
    }
}

/// Whether `path` is still the folder `id`, reached by that real path.
fn in_place(path: &Path, id: Identity) -> bool {
    std::fs::canonicalize(path).is_ok_and(|real| real == path)
        && std::fs::metadata(path).is_ok_and(|meta| identity(&meta) == id)
}

/// Where the symlink `link` leads, if anywhere: the file's identity, and its folder (its real
/// path and identity).
fn leads_to(link: &Path) -> Option<(Identity, (PathBuf, Identity))> {
    let target = std::fs::canonicalize(link).ok()?;
    let meta = std::fs::metadata(&target).ok()?;
    let folder = target.parent()?.to_path_buf();
    let folder_meta = std::fs::metadata(&folder).ok()?;
    Some((identity(&meta), (folder, identity(&folder_meta))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with_secrets() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(home.join("credentials"), "K=v\n").unwrap();
        std::fs::create_dir(home.join("mcp-auth")).unwrap();
        std::fs::write(home.join("config.toml"), "").unwrap();
        (dir, home)
    }

    #[test]
    fn a_secret_renamed_or_linked_in_its_folder_stays_hidden() {
        let (_dir, home) = home_with_secrets();
        let secrets = HomeSecrets::of(&home);
        std::fs::rename(home.join("credentials"), home.join("c2")).unwrap();
        std::fs::hard_link(home.join("c2"), home.join("c3")).unwrap();
        std::fs::rename(home.join("mcp-auth"), home.join("m2")).unwrap();
        let hidden = secrets.hidden();
        assert_eq!(
            hidden.paths,
            [
                home.join("c2"),
                home.join("c3"),
                home.join("config.toml"),
                home.join("m2")
            ]
        );
        let meta = std::fs::metadata(home.join("c2")).unwrap();
        assert!(hidden.identities.contains(&identity(&meta)));
        assert!(secrets.moved().is_none());
        // Another policy made for the same home later knows them too.
        assert_eq!(HomeSecrets::of(&home).hidden().paths, hidden.paths);
    }

    #[test]
    fn a_symlinked_secret_hides_where_it_leads_and_a_moved_folder_is_told() {
        let (_dir, home) = home_with_secrets();
        let dotfiles = tempfile::tempdir().unwrap();
        let dotfiles = std::fs::canonicalize(dotfiles.path()).unwrap();
        std::fs::write(dotfiles.join("dsh.env"), "K=v\n").unwrap();
        std::os::unix::fs::symlink(dotfiles.join("dsh.env"), home.join(".env")).unwrap();
        let secrets = HomeSecrets::of(&home);
        let hidden = secrets.hidden();
        assert!(hidden.paths.contains(&home.join(".env")), "{hidden:?}");
        assert!(
            hidden.paths.contains(&dotfiles.join("dsh.env")),
            "{hidden:?}"
        );
        // Renamed where it is, it is still found.
        std::fs::rename(dotfiles.join("dsh.env"), dotfiles.join("other")).unwrap();
        assert!(secrets.hidden().paths.contains(&dotfiles.join("other")));
        // The home moved away is told, and so is the home replaced by a link to it.
        let moved = home.with_extension("moved");
        std::fs::rename(&home, &moved).unwrap();
        assert_eq!(secrets.moved(), Some(home.clone()));
        std::os::unix::fs::symlink(&moved, &home).unwrap();
        assert_eq!(secrets.moved(), Some(home.clone()));
        std::fs::remove_file(&home).unwrap();
        std::fs::rename(&moved, &home).unwrap();
        assert_eq!(secrets.moved(), None);
    }
}
