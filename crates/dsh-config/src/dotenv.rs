//! Credentials from `.env` files: a key is read from the launch environment, then
//! `<cwd>/.env` (in a trusted folder only), then `$DSH_HOME/.env`, then the keys `dsh login`
//! saved. A variable exported in the environment, even empty, shadows the files.
//!
//! The files are read for credentials only: nothing in them is copied into dsh's own
//! environment, so commands never inherit them, and a file may not set a name that decides how
//! a process starts or reaches the network (`PATH`, proxies, base URLs, `DSH_*`, ...).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names a `.env` file may not set (compared without case), as the reference reserves them.
const RESERVED: &[&str] = &[
    "PATH",
    "HOME",
    "USERPROFILE",
    "SHELL",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PERL5OPT",
    "PERL5LIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "PYTHONHOME",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_COUNT",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "DEEPSEEK_BASE_URL",
    "DEEPSEEK_SEARCH_BASE_URL",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_TLS_REJECT_UNAUTHORIZED",
];
const RESERVED_PREFIXES: &[&str] = &["DSH_", "XDG_", "DYLD_", "BASH_FUNC_"];

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource {
    Launch,
    File(PathBuf),
}

/// The credentials a run may read, by variable name.
#[derive(Clone, Default)]
pub struct Credentials {
    /// The launch environment's values, which win over the files.
    launch: BTreeMap<String, String>,
    files: BTreeMap<String, (String, PathBuf)>,
    /// The names of the keys `dsh login` saved when the run does not read them (the redactor
    /// hides their values all the same): named when a route's key is missing.
    unread: std::collections::BTreeSet<String>,
    /// Why they are not read.
    unread_because: Option<String>,
    /// The keys of the workspace's own `.env` in a folder not trusted: never used, only hidden
    /// from what tools return ([`crate::trust_rules::workspace_files`] says why).
    held: BTreeMap<String, (String, PathBuf)>,
    /// How to trust the folder, for the error about a key it holds.
    held_because: Option<String>,
}

/// A `.env` file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DotenvError {
    #[error(
        "{}:{line} sets \"{name}\", which only the launching environment may set (it decides \
         how this process starts, where its code and instructions load from, or how it reaches \
         the network); export {name} instead of putting it in a .env file",
        path.display()
    )]
    Reserved {
        path: PathBuf,
        line: usize,
        name: String,
    },
    #[error("cannot read {}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
}

/// Names and where they came from only: the values are secrets.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field(
                "files",
                &self
                    .files
                    .iter()
                    .map(|(k, (_, p))| (k, p))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Reads `<cwd>/.env`, `$DSH_HOME/.env` and the keys `dsh login` saved
    /// ([`crate::saved_keys_path`]), all checked before any is used, under the launch
    /// environment `env`; the earlier a file, the more it counts. With `saved_keys_unused`
    /// (why), the saved keys are read only to be hidden, never used; with `workspace_untrusted`
    /// (how to trust the folder), so are the keys of `<cwd>/.env`, unless it is
    /// `$DSH_HOME/.env` itself.
    pub fn load(
        cwd: &Path,
        home: &Path,
        env: &crate::Environment,
        saved_keys_unused: Option<String>,
        workspace_untrusted: Option<String>,
    ) -> Result<Credentials, DotenvError> {
        let mut files = BTreeMap::new();
        let mut held = BTreeMap::new();
        let home_env = home.join(".env");
        let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        // A link is read as the file it leads to, and named so.
        let here = real(&cwd.join(".env"));
        let mut paths = Vec::new();
        if here != real(&home_env) {
            if workspace_untrusted.is_none() {
                paths.push(here);
            } else {
                for (name, value) in parse_file(&here)? {
                    held.entry(name).or_insert((value, here.clone()));
                }
            }
        }
        paths.push(home_env);
        let saved = crate::home::saved_keys_path(home);
        if saved_keys_unused.is_none() {
            paths.push(saved.clone());
        }
        for path in paths {
            for (name, value) in parse_file(&path)? {
                // The earlier (more specific) file wins.
                files.entry(name).or_insert((value, path.clone()));
            }
        }
        let unread = match saved_keys_unused {
            Some(_) => (parse_file(&saved)?.into_iter())
                .map(|(name, _)| name)
                .collect(),
            None => std::collections::BTreeSet::new(),
        };
        Ok(Credentials {
            launch: env.snapshot(),
            files,
            unread,
            unread_because: saved_keys_unused,
            held,
            held_because: workspace_untrusted,
        })
    }

    /// Why the workspace's `.env` value of `name` is not used, when it has one and is not
    /// trusted: the file, and how to trust the folder.
    pub fn held_key(&self, name: &str) -> Option<String> {
        let (_, file) = self.held.get(name)?;
        Some(format!(
            "{} sets {name}, but this folder is not trusted, so its keys are not used (your \
             requests would be made under whoever's key it is); to use it, {}",
            file.display(),
            self.held_because.as_deref().unwrap_or("trust the folder")
        ))
    }

    /// Why the key `dsh login` saved under `name` is not used, when there is one and it is not.
    pub fn unread_saved_key(&self, name: &str) -> Option<&str> {
        self.unread
            .contains(name)
            .then_some(self.unread_because.as_deref())
            .flatten()
    }

    /// Every variable of the launch environment and the files, by name, the workspace's held
    /// keys included (a name set in several comes as often: each value may be printed).
    pub fn all(&self) -> impl Iterator<Item = (&str, &str)> {
        let files = (self.files.iter().chain(&self.held)).map(|(name, (value, _))| (name, value));
        (self.launch.iter().chain(files)).map(|(name, value)| (name.as_str(), value.as_str()))
    }

    /// The value of `name` as the workspace's held `.env` has it, to hide it.
    pub(crate) fn held_value(&self, name: &str) -> Option<&str> {
        self.held.get(name).map(|(value, _)| value.as_str())
    }

    /// The value of `name` and where it came from: the launch environment, else the files.
    pub fn get(&self, name: &str) -> Option<(String, EnvSource)> {
        if let Some(value) = self.launch.get(name) {
            return Some((value.clone(), EnvSource::Launch));
        }
        self.files
            .get(name)
            .map(|(value, path)| (value.clone(), EnvSource::File(path.clone())))
    }
}

/// Whether only the launching environment may set `name` (compared without case).
pub(crate) fn is_reserved(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    RESERVED.contains(&upper.as_str()) || RESERVED_PREFIXES.iter().any(|p| upper.starts_with(p))
}

pub(crate) fn parse_file(path: &Path) -> Result<Vec<(String, String)>, DotenvError> {
    let unreadable = |reason: String| DotenvError::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(unreadable(e.to_string())),
        // A link to /dev/zero or a FIFO would never end: only a file is read.
        Ok(meta) if !meta.is_file() => {
            return Err(unreadable(
                "it is not a regular file (a device, a FIFO or a folder, maybe through a \
                 link); remove it or make it a file of NAME=value lines"
                    .into(),
            ));
        }
        Ok(_) => {}
    }
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    parse(&text, path)
}

/// `NAME=value` lines; `export ` before a name, blank lines and `#` comments are allowed;
/// values may be quoted (`'...'` taken as is, `"..."` with `\n`, `\"` and `\\`). A line that is
/// not an assignment is skipped, as dotenv readers do: a project's `.env` is often written for
/// other tools, and what dsh cannot read it does not use.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Vec<(String, String)>, DotenvError> {
    let mut out = Vec::new();
    for (line, name, value) in assignments(text) {
        if is_reserved(name) {
            return Err(DotenvError::Reserved {
                path: path.to_path_buf(),
                line,
                name: name.to_owned(),
            });
        }
        out.push((name.to_owned(), value));
    }
    Ok(out)
}

/// The assignments of a `.env` text, with their line numbers; lines that are not one are
/// skipped.
fn assignments(text: &str) -> impl Iterator<Item = (usize, &str, String)> {
    text.lines().enumerate().filter_map(|(index, raw)| {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return None;
        }
        let trimmed = trimmed
            .strip_prefix("export ")
            .unwrap_or(trimmed)
            .trim_start();
        let (name, value) = trimmed.split_once('=')?;
        let name = name.trim();
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return None;
        }
        Some((index + 1, name, unquote(value.trim())?))
    })
}

/// Every assignment in the project's `.env` files, for the redactor: `.env` and `.env.*`
/// (not the templates, [`dsh_sandbox::is_env_file`]) in `cwd` and in the project's root above
/// it. Unlike the credentials dsh reads, nothing here is refused (a `.env.production` may set
/// anything, for other tools) and a file that cannot be read is passed over: this only says
/// which values must not be shown. `<cwd>/.env` is left to [`Credentials`], which read it
/// already.
pub fn project_env_values(cwd: &Path, root: &Path) -> Vec<(String, String)> {
    let mut folders = vec![cwd];
    if root != cwd {
        folders.push(root);
    }
    let mut values = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if !dsh_sandbox::is_env_file(&name) || (folder == cwd && name == ".env") {
                continue;
            }
            // Bounded: a secrets file is small, and a huge one is not worth stalling on.
            let small = entry
                .metadata()
                .is_ok_and(|m| m.is_file() && m.len() <= 1 << 20);
            if let (true, Ok(text)) = (small, std::fs::read_to_string(entry.path())) {
                values.extend(assignments(&text).map(|(_, name, value)| (name.to_owned(), value)));
            }
        }
    }
    values
}

fn unquote(value: &str) -> Option<String> {
    if let Some(inner) = value.strip_prefix('\'') {
        return inner.strip_suffix('\'').map(str::to_owned);
    }
    if let Some(inner) = value.strip_prefix('"') {
        let inner = inner.strip_suffix('"')?;
        let mut out = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some(other) => out.push(other),
                    None => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        return Some(out);
    }
    // An unquoted value ends at a ` #` comment.
    Some(match value.find(" #") {
        Some(at) => value[..at].trim_end().to_owned(),
        None => value.to_owned(),
    })
}

impl From<DotenvError> for crate::SetupError {
    fn from(e: DotenvError) -> Self {
        crate::SetupError::config(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let text =
            "# keys\nexport A_KEY=one\nB='two #x'\nC=\"th\\\"ree\\n\"\nD=four # note\n\nE=\n";
        let values = parse(text, Path::new("/w/.env")).unwrap();
        assert_eq!(
            values,
            vec![
                ("A_KEY".into(), "one".into()),
                ("B".into(), "two #x".into()),
                ("C".into(), "th\"ree\n".into()),
                ("D".into(), "four".into()),
                ("E".into(), String::new()),
            ]
        );
    }

    #[test]
    fn reserved_names_and_bad_lines_name_the_file_and_line() {
        let error = parse("OK=1\nhttps_proxy=http://x\n", Path::new("/w/.env")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "/w/.env:2 sets \"https_proxy\", which only the launching environment may set (it \
             decides how this process starts, where its code and instructions load from, or how \
             it reaches the network); export https_proxy instead of putting it in a .env file"
        );
        assert!(matches!(
            parse("DSH_HOME=/x\n", Path::new("/e")),
            Err(DotenvError::Reserved { line: 1, .. })
        ));
        // Lines that are not assignments are skipped, not fatal.
        assert_eq!(
            parse("x\njust words\nA='unclosed\nB=1\n", Path::new("/e")),
            Ok(vec![("B".into(), "1".into())])
        );
    }

    #[test]
    fn the_project_file_wins_over_the_home_file() {
        let dir = tempfile::tempdir().unwrap();
        let (cwd, home) = (dir.path().join("ws"), dir.path().join("home"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(cwd.join(".env"), "DOTENV_TEST_KEY=project\n").unwrap();
        std::fs::write(
            home.join(".env"),
            "DOTENV_TEST_KEY=home\nDOTENV_TEST_OTHER=h\n",
        )
        .unwrap();
        let launch =
            crate::Environment::from_pairs([("DOTENV_TEST_OTHER".to_owned(), String::new())]);
        let creds = Credentials::load(&cwd, &home, &launch, None, None).unwrap();
        assert_eq!(
            creds.get("DOTENV_TEST_KEY"),
            Some(("project".into(), EnvSource::File(cwd.join(".env"))))
        );
        // An exported variable wins, even empty.
        assert_eq!(
            creds.get("DOTENV_TEST_OTHER"),
            Some((String::new(), EnvSource::Launch))
        );
        assert_eq!(creds.get("DOTENV_TEST_ABSENT"), None);
    }

    /// The attack: a cloned repository commits `.env` with its author's key, which won over the
    /// key the user saved, so the user's requests were billed to and logged in the author's
    /// account. Untrusted, the workspace's keys are never used (only hidden); the user's win.
    #[test]
    fn an_untrusted_workspaces_keys_are_held_and_yours_apply() {
        let dir = tempfile::tempdir().unwrap();
        let (cwd, home) = (dir.path().join("ws"), dir.path().join("home"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            cwd.join(".env"),
            "DOTENV_TEST_KEY=attackers-key-0123\nDOTENV_TEST_ONLY=projects-only-0123\n",
        )
        .unwrap();
        std::fs::write(home.join("credentials"), "DOTENV_TEST_KEY=saved-key-0123\n").unwrap();
        let none = crate::Environment::default();
        let how = Some("run `dsh trust`".to_owned());
        let creds = Credentials::load(&cwd, &home, &none, None, how.clone()).unwrap();
        let saved = home.join("credentials");
        assert_eq!(
            creds.get("DOTENV_TEST_KEY"),
            Some(("saved-key-0123".into(), EnvSource::File(saved)))
        );
        // Even a key nothing of yours has is not taken: it is whose account the run uses.
        assert_eq!(creds.get("DOTENV_TEST_ONLY"), None);
        let why = creds.held_key("DOTENV_TEST_ONLY").unwrap();
        assert!(
            why.contains("not trusted") && why.contains("dsh trust"),
            "{why}"
        );
        // Still hidden from what tools return.
        assert!(creds.all().any(|(_, v)| v == "attackers-key-0123"));
        // The run's folder is the home: its .env is yours.
        std::fs::write(home.join(".env"), "DOTENV_TEST_HOME=home-key-0123\n").unwrap();
        let creds = Credentials::load(&home, &home, &none, None, how).unwrap();
        assert_eq!(
            creds.get("DOTENV_TEST_HOME").map(|(v, _)| v),
            Some("home-key-0123".to_owned())
        );
    }
}
