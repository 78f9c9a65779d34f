//! `dsh trust [<folder>]` and `dsh untrust [<folder>]`: whether a folder's own
//! `.dsh/config.toml`, hooks and `.env` keys (and those of the folders under it in its
//! repository) may do what only a trusted project may (where a credential goes, whose key is
//! used, programs run unasked, more for commands:
//! docs/config.md#what-a-repositorys-config-may-do). The decision is an entry of
//! `$DSH_HOME/config.toml`. And the question the terminal UI's first run in a folder asks, when
//! its config wants any of that and nobody decided yet.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use dsh_core::config::{SetAside, Trust};
use dsh_core::{ConfigFiles, Environment, Flags};

/// `trust` or `untrust`, and the folder (default: the working directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustCommand {
    pub trusted: bool,
    pub folder: Option<PathBuf>,
}

pub fn parse(untrust: bool, args: &[String]) -> Result<TrustCommand, String> {
    let verb = if untrust { "untrust" } else { "trust" };
    match args {
        [] => Ok(TrustCommand {
            trusted: !untrust,
            folder: None,
        }),
        [folder] if !folder.starts_with('-') => Ok(TrustCommand {
            trusted: !untrust,
            folder: Some(PathBuf::from(folder)),
        }),
        _ => Err(format!(
            "`dsh {verb}` takes at most one folder (default: this one), and no options"
        )),
    }
}

pub fn run(command: &TrustCommand) -> u8 {
    match decide(command) {
        Ok(text) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
            0
        }
        Err(message) => {
            crate::surface::notice(&message);
            1
        }
    }
}

fn decide(command: &TrustCommand) -> Result<String, String> {
    let env = Environment::from_process();
    let home = dsh_core::config::home(&env).map_err(|e| e.message)?.value;
    let cwd = crate::place::cwd().map_err(|e| e.message)?;
    let folder = match &command.folder {
        Some(folder) => cwd.join(folder),
        None => cwd,
    };
    // What the folder's config sets that needs trust: set aside now (to trust), or once
    // refused (to untrust). A config that cannot be read is the next run's to report: the
    // decision is written all the same.
    let before = set_aside(&home, &folder, &env);
    let (real, file) =
        dsh_core::config::set_trust(&home, &folder, command.trusted).map_err(|e| e.to_string())?;
    let after = set_aside(&home, &folder, &env);
    let entry = format!(
        "[projects.{}] trusted = {}",
        dsh_core::config::trust::quote_path(&real),
        command.trusted
    );
    let shown = dsh_core::config::trust::shown_path(&real);
    let config = real.join(".dsh").join("config.toml");
    let has_config = config.is_file();
    Ok(if command.trusted {
        let more = if !has_config && before.is_empty() {
            " (it has no .dsh/config.toml yet)".to_owned()
        } else if before.is_empty() {
            String::new()
        } else {
            format!(
                ", what only a trusted project may set included:\n{}",
                listed(&before)
            )
        };
        format!(
            "{} is trusted: its .dsh/config.toml, .dsh/hooks.json and .env keys, and those of the \
             folders under it in the same Git repository, apply in full{more}\nSaved in {} as \
             {entry}; `dsh untrust` takes it back.\n",
            shown,
            file.display()
        )
    } else {
        let more = if after.is_empty() {
            String::new()
        } else {
            format!(":\n{}", listed(&after))
        };
        format!(
            "{} is not trusted: what its .dsh/config.toml, .dsh/hooks.json and .env set that only \
             a trusted project may is set aside, and nobody asks again{more}\nSaved in {} as \
             {entry}; `dsh trust` trusts it.\n",
            shown,
            file.display()
        )
    })
}

/// What of the folder's config is set aside as a run there reads it (nothing, when the files
/// cannot be read).
fn set_aside(home: &Path, folder: &Path, env: &Environment) -> Vec<SetAside> {
    ConfigFiles::load(home, folder, env, &[], false)
        .map(|files| files.set_aside().to_vec())
        .unwrap_or_default()
}

/// One line per value: its file (from the folder: `.dsh/config.toml`, `.dsh/hooks.json`,
/// `.env`), key, value, why.
fn listed(set_aside: &[SetAside]) -> String {
    set_aside
        .iter()
        .map(|s| {
            let name = Path::new(s.file.file_name().unwrap_or_default());
            let in_dsh = s.file.parent().and_then(Path::file_name) == Some(".dsh".as_ref());
            let file = if in_dsh {
                Path::new(".dsh").join(name)
            } else {
                name.to_path_buf()
            };
            format!(
                "  {}: {} = {}  ({})\n",
                dsh_core::config::trust::shown_path(&file),
                s.key,
                s.value,
                s.reason.says()
            )
        })
        .collect()
}

/// Before the terminal UI opens in a folder whose config sets what only a trusted project may,
/// and that nobody trusted or refused yet: asks on the terminal, as a first run asks for a
/// key. 1 trusts it, 3 refuses it (neither is asked again), anything else (Enter alone
/// included) runs without those values this time. Config files that cannot be read are left to
/// the UI to report.
pub fn ask_first(flags: &Flags) -> Result<(), String> {
    let env = Environment::from_process();
    let (Ok(home), Ok(cwd)) = (dsh_core::config::home(&env), crate::place::cwd()) else {
        return Ok(());
    };
    let Ok(files) = ConfigFiles::load(&home.value, &cwd, &env, &flags.patches, false) else {
        return Ok(());
    };
    if files.set_aside().is_empty() || files.trust().trust != Trust::Undecided {
        return Ok(());
    }
    let mut out = std::io::stdout();
    let _ = write!(
        out,
        "{} sets what only a project you trust may:\n{}Trust it? Its config, hooks and .env keys \
         then apply in full, in every run here and in its repository's folders under it.\n  \
         1  Trust it (saved in {})\n  2  Not now: run without those values\n  3  Never: keep them set aside and do not ask \
         again\nType 1, 2 or 3 and Enter (Enter alone: 2): ",
        dsh_core::config::trust::shown_path(&files.trust().folder),
        listed(files.set_aside()),
        files.trust().home_config.display()
    );
    let _ = out.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    let trusted = match answer.trim() {
        "1" => true,
        "3" => false,
        _ => {
            let _ = writeln!(
                out,
                "Not trusted this time: those values are set aside. `dsh trust` trusts it."
            );
            return Ok(());
        }
    };
    let (_, file) =
        dsh_core::config::set_trust(&home.value, &cwd, trusted).map_err(|e| e.to_string())?;
    let _ = writeln!(
        out,
        "{} in {}.",
        if trusted {
            "Trusted: saved"
        } else {
            "Not trusted, and not asked again: saved"
        },
        file.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_one_folder_at_most() {
        let words = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            parse(false, &[]),
            Ok(TrustCommand {
                trusted: true,
                folder: None
            })
        );
        assert_eq!(
            parse(true, &words(&["../x"])),
            Ok(TrustCommand {
                trusted: false,
                folder: Some("../x".into())
            })
        );
        assert!(parse(false, &words(&["a", "b"])).is_err());
        assert!(parse(false, &words(&["--yes"])).is_err());
    }
}
