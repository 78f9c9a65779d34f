//! Saved prompts: a `NAME.md` file in the working directory's `.dsh/prompts/` or in
//! `$DSH_HOME/prompts/` is the command `/NAME` of the terminal UI and the web app. Its text is
//! sent with `$ARGUMENTS` replaced by what follows the command, or with the arguments appended
//! when the file does not say where.
//!
//! The project's prompts come with the repository, which may be anybody's: a prompt there that
//! is a symlink (or sits in a symlinked folder) could send the model a file from elsewhere on
//! the machine the moment the user types its name. So the project's prompts are listed and read
//! as regular files only, opened one component at a time from the working directory without
//! following a symlink. The user's own folder is theirs, and may be linked where they like.
//! And a prompt's text is sent as the user's own message: the project's are used only in a
//! folder the user trusts, as its hooks are ([`dsh_config::trust::workspace_trust`]); the run's
//! notice says they were set aside.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};

/// The front ends' own commands (the terminal UI's and the web app's, without the `/`), which
/// no saved prompt can take over.
pub const BUILT_IN_COMMANDS: &[&str] = &[
    "model",
    "blame",
    "compact",
    "permissions",
    "plan",
    "new",
    "clear",
    "resume",
    "rewind",
    "diff",
    "copy",
    "export",
    "edit",
    "status",
    "skills",
    "prompts",
    "rename",
    "help",
    "quit",
    "exit",
];

/// The largest prompt file read.
const MAX_PROMPT_BYTES: u64 = 256 * 1024;

/// A saved prompt found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedPrompt {
    pub name: String,
    pub path: PathBuf,
    /// From the project's `.dsh/prompts/` (read without following symlinks) rather than the
    /// user's own folder.
    pub in_project: bool,
}

/// Why a saved prompt could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the prompt {}: {reason}", path.display())]
pub struct SavedPromptError {
    pub path: PathBuf,
    pub reason: String,
}

/// The saved prompts for a session in `cwd`: the project's first, then the user's, sorted by
/// name within each; a name is taken once, and never one of the [`BUILT_IN_COMMANDS`].
pub fn saved_prompts(home: &Path, cwd: &Path) -> Vec<SavedPrompt> {
    let mut prompts: Vec<SavedPrompt> = Vec::new();
    let project = dsh_config::project::prompts_folder(cwd);
    // A symlinked `.dsh` or `prompts` folder lists nothing: its files would be refused anyway.
    let project_is_real = [cwd.join(".dsh"), project.clone()]
        .iter()
        .all(|dir| std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()))
        && dsh_config::trust::workspace_trust(home, cwd).is_trusted();
    for (dir, in_project) in [(project, true), (home.join("prompts"), false)] {
        if in_project && !project_is_real {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut found: Vec<SavedPrompt> = entries
            .flatten()
            .filter(|entry| !in_project || entry.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|entry| {
                let path = entry.path();
                let name = path.file_stem()?.to_str()?.to_owned();
                let valid = path.extension().is_some_and(|e| e == "md")
                    && !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_alphanumeric() || c == '-' || c == '_');
                valid.then_some(SavedPrompt {
                    name,
                    path,
                    in_project,
                })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        for prompt in found {
            if !prompts.iter().any(|p| p.name == prompt.name)
                && !BUILT_IN_COMMANDS.contains(&prompt.name.as_str())
            {
                prompts.push(prompt);
            }
        }
    }
    prompts
}

impl SavedPrompt {
    /// The text to send for `/NAME arguments`: the file read now (so an edit counts at once),
    /// `$ARGUMENTS` replaced by `arguments`, or the arguments appended after a blank line when
    /// the file does not say where.
    pub fn expand(&self, arguments: &str) -> Result<String, SavedPromptError> {
        let text = self.read().map_err(|e| SavedPromptError {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        let text = text.trim_end();
        let arguments = arguments.trim();
        Ok(if text.contains("$ARGUMENTS") {
            text.replace("$ARGUMENTS", arguments)
        } else if arguments.is_empty() {
            text.to_owned()
        } else {
            format!("{text}\n\n{arguments}")
        })
    }

    fn read(&self) -> io::Result<String> {
        let file = if self.in_project {
            open_project_prompt(&self.path)?
        } else {
            File::open(&self.path)?
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        if meta.len() > MAX_PROMPT_BYTES {
            return Err(io::Error::other(format!(
                "{} bytes, more than the {MAX_PROMPT_BYTES} a prompt may have",
                meta.len()
            )));
        }
        let mut text = String::new();
        file.take(MAX_PROMPT_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| match e.kind() {
                io::ErrorKind::InvalidData => io::Error::other("not UTF-8 text"),
                _ => e,
            })?;
        Ok(text)
    }
}

/// `<cwd>/.dsh/prompts/NAME.md`, opened from `<cwd>` one name at a time, following no symlink
/// (a symlink on the way is `ELOOP` or `ENOTDIR`, reported as such), and never blocking on a
/// FIFO put in the file's place.
fn open_project_prompt(path: &Path) -> io::Result<File> {
    let refused = |e: io::Error| match e.raw_os_error() {
        Some(libc::ELOOP) | Some(libc::ENOTDIR) => io::Error::other(
            "it is a symlink or lies in a symlinked folder, and a project's prompts are read \
             only as the project's own files (copy it there instead)",
        ),
        _ => e,
    };
    let name = |n: &std::ffi::OsStr| {
        CString::new(std::os::unix::ffi::OsStrExt::as_bytes(n))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    };
    let (Some(file), Some(prompts)) = (path.file_name(), path.parent()) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let Some(cwd) = prompts.parent().and_then(Path::parent) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let dir_flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let mut at = File::open(cwd)?;
    for folder in [".dsh", "prompts"] {
        at = dsh_fence::open_at(at.as_fd(), &name(folder.as_ref())?, dir_flags, 0)
            .map_err(refused)?;
    }
    dsh_fence::open_at(
        at.as_fd(),
        &name(file)?,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
        0,
    )
    .map_err(refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Trusts the folder `cwd` in the home's config.
    fn trust(home: &Path, cwd: &Path) {
        let real = std::fs::canonicalize(cwd).unwrap();
        let entry = dsh_config::trust::quote_path(&real);
        std::fs::write(
            home.join("config.toml"),
            format!("[projects.{entry}]\ntrusted = true\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_projects_prompts_come_first_and_reserved_names_are_skipped() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        write(
            &home.path().join("prompts/review.md"),
            "Review $ARGUMENTS carefully.\n",
        );
        write(&home.path().join("prompts/tests.md"), "user's tests");
        write(&cwd.path().join(".dsh/prompts/tests.md"), "Run the tests.");
        write(&home.path().join("prompts/quit.md"), "shadowed");
        write(&home.path().join("prompts/bad name.md"), "not a command");
        trust(home.path(), cwd.path());
        let prompts = saved_prompts(home.path(), cwd.path());
        let names: Vec<(&str, bool)> = prompts
            .iter()
            .map(|p| (p.name.as_str(), p.in_project))
            .collect();
        assert_eq!(names, [("tests", true), ("review", false)]);
        assert_eq!(
            prompts[1].expand(" src/lib.rs ").unwrap(),
            "Review src/lib.rs carefully."
        );
        assert_eq!(prompts[0].expand("now").unwrap(), "Run the tests.\n\nnow");
        assert_eq!(prompts[0].expand("").unwrap(), "Run the tests.");
    }

    /// The attack: a repository whose prompt is a link to a secret elsewhere on the machine.
    /// Typing its name must not send the secret to the model.
    #[test]
    fn a_projects_symlinked_prompt_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("credentials");
        write(&secret, "aws_secret_access_key = hunter2");
        std::fs::create_dir_all(cwd.path().join(".dsh/prompts")).unwrap();
        let link = cwd.path().join(".dsh/prompts/review.md");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        trust(home.path(), cwd.path());
        assert!(
            saved_prompts(home.path(), cwd.path()).is_empty(),
            "a link is not listed"
        );
        // Named directly (a link swapped in after the listing), it is refused, not followed.
        let swapped = SavedPrompt {
            name: "review".into(),
            path: link,
            in_project: true,
        };
        let error = swapped.expand("").unwrap_err().to_string();
        assert!(error.contains("symlink"), "{error}");
        assert!(!error.contains("hunter2"));

        // A linked folder: nothing listed, nothing read.
        let cwd = tempfile::tempdir().unwrap();
        write(&outside.path().join("prompts/review.md"), "hunter2");
        std::os::unix::fs::symlink(outside.path(), cwd.path().join(".dsh")).unwrap();
        trust(home.path(), cwd.path());
        assert!(saved_prompts(home.path(), cwd.path()).is_empty());
        let through_folder = SavedPrompt {
            name: "review".into(),
            path: cwd.path().join(".dsh/prompts/review.md"),
            in_project: true,
        };
        assert!(
            through_folder
                .expand("")
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
    }

    /// The attack (issue 47, second pass, F6's twin): a cloned repository's `.dsh/prompts`
    /// took the name of the user's own prompt, and typing `/tests` sent the repository's text as
    /// the user's message. Untrusted, the project's prompts are not offered; the user's are.
    #[test]
    fn an_untrusted_projects_prompts_are_not_offered() {
        let home = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        write(&home.path().join("prompts/tests.md"), "user's tests");
        write(&cwd.path().join(".dsh/prompts/tests.md"), "PWN-TRIGGER");
        write(&cwd.path().join(".dsh/prompts/only.md"), "PWN-TRIGGER");
        let prompts = saved_prompts(home.path(), cwd.path());
        let names: Vec<(&str, bool)> = prompts
            .iter()
            .map(|p| (p.name.as_str(), p.in_project))
            .collect();
        assert_eq!(names, [("tests", false)]);
        assert_eq!(prompts[0].expand("").unwrap(), "user's tests");
    }

    #[test]
    fn the_users_own_folder_may_be_linked() {
        let home = tempfile::tempdir().unwrap();
        let dotfiles = tempfile::tempdir().unwrap();
        write(&dotfiles.path().join("fix.md"), "Fix it.");
        std::os::unix::fs::symlink(dotfiles.path(), home.path().join("prompts")).unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let prompts = saved_prompts(home.path(), cwd.path());
        assert_eq!(prompts[0].expand("").unwrap(), "Fix it.");
    }
}
