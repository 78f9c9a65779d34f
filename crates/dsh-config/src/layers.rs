//! Configuration files: TOML layers merged key by key, later layers winning.
//!
//! The layers, lowest first: `$DSH_HOME/config.toml`, `.dsh/config.toml` in the workspace, then
//! each `--patch FILE` in the order given. A missing home or workspace file is simply absent; a
//! missing patch file, a syntax error or an unknown key is an error naming the file, so a typo
//! never silently does nothing. Before they merge, the workspace's layer loses what only a
//! trusted project may set ([`super::trust`]). The environment and flags go over them in
//! [`Settings`](super::Settings).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::layer::{ConfigError, Layer, Layers};
use super::sections::Config;
use super::trust::{ProjectTrust, SetAside};
use crate::Environment;

/// The config files of a run, read and merged.
#[derive(Debug, Clone)]
pub struct ConfigFiles {
    cwd: PathBuf,
    layers: Layers,
    merged: Config,
    /// Whether the workspace's own config is trusted.
    trust: ProjectTrust,
    /// What the workspace's config set that was not applied, for want of that trust.
    set_aside: Vec<SetAside>,
}

impl ConfigFiles {
    /// Reads and merges the layers for a run in `cwd` launched with `env`; `headless` adds
    /// the headless profile's patch file.
    pub fn load(
        home: &Path,
        cwd: &Path,
        env: &Environment,
        patches: &[PathBuf],
        headless: bool,
    ) -> Result<ConfigFiles, ConfigError> {
        Self::load_keys(home, cwd, env, patches, headless, None)
    }

    /// As [`ConfigFiles::load`], reading only the top-level table `only` of each file
    /// (`sandbox` for `dsh sandbox check`): whatever else a file says, right or wrong, is left
    /// out. A file that cannot be read as TOML (or as rows) at all is still an error.
    pub fn load_only(
        home: &Path,
        cwd: &Path,
        env: &Environment,
        patches: &[PathBuf],
        headless: bool,
        only: &str,
    ) -> Result<ConfigFiles, ConfigError> {
        Self::load_keys(home, cwd, env, patches, headless, Some(only))
    }

    fn load_keys(
        home: &Path,
        cwd: &Path,
        env: &Environment,
        patches: &[PathBuf],
        headless: bool,
        only: Option<&str>,
    ) -> Result<ConfigFiles, ConfigError> {
        let mut layers = layers(home, cwd, patches, headless, only)?;
        let (trust, set_aside) = super::trust::gate(&mut layers, cwd, env)?;
        let merged = merged(&layers, home, patches)?;
        Ok(ConfigFiles {
            cwd: cwd.to_path_buf(),
            layers: Layers::new(layers),
            merged,
            trust,
            set_aside,
        })
    }

    /// Whether the workspace's own config is trusted, and what decided it.
    pub fn trust(&self) -> &ProjectTrust {
        &self.trust
    }

    /// What the workspace's config set that was not applied because the folder is not
    /// trusted.
    pub fn set_aside(&self) -> &[SetAside] {
        &self.set_aside
    }

    /// The workspace's config file (`.dsh/config.toml`).
    pub fn project_file(&self) -> PathBuf {
        self.cwd.join(".dsh").join("config.toml")
    }

    /// The notice a run gives when the workspace had values set aside.
    pub fn trust_notice(&self) -> Option<String> {
        self.trust.notice(&self.set_aside)
    }

    /// The workspace's own hooks file (`.dsh/hooks.json`), when its hooks may run: only in a
    /// trusted folder ([`super::trust_rules::workspace_files`]), and never when it is
    /// `$DSH_HOME/hooks.json` itself (read as yours already).
    pub fn project_hooks(&self) -> Option<PathBuf> {
        matches!(self.trust.trust, super::trust::Trust::Trusted { .. })
            .then(|| self.cwd.join(super::trust_rules::HOOKS_FILE))
    }

    /// Whether the keys of the workspace's own `.env` may be used (a trusted folder, or
    /// yours); else they are only hidden from what tools return.
    pub fn workspace_env_trusted(&self) -> bool {
        self.trust.is_trusted()
    }

    /// What the files say, merged.
    pub fn config(&self) -> &Config {
        &self.merged
    }

    /// The files read (or looked for), lowest first.
    pub fn layers(&self) -> &[Layer] {
        self.layers.read()
    }

    /// The layers with what each set, for the resolver to name a value's file.
    pub(crate) fn layered(&self) -> &Layers {
        &self.layers
    }

    pub(super) fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Every value the files set, as `(dotted key, value as TOML, file)`.
    pub fn provenance(&self) -> Vec<(String, String, PathBuf)> {
        self.layers.set().to_vec()
    }

    /// `--dump-config`'s rows of the workspace's trust: the decision (when the workspace has a
    /// config, or anything was set aside), and each value set aside under `set_aside.<key>`,
    /// with its file and why.
    pub(crate) fn trust_rows(&self) -> Vec<crate::SettingRow> {
        let project = self.project_file();
        let has_config = (self.layers().iter()).any(|l| l.path == project && l.table.is_some());
        let mut rows = Vec::new();
        if has_config || !self.set_aside.is_empty() {
            rows.push(crate::SettingRow::described(
                "project.trust".to_owned(),
                format!("{:?}", self.trust.shown()),
                self.trust.home_config.display().to_string(),
            ));
        }
        for set_aside in &self.set_aside {
            rows.push(crate::SettingRow::described(
                format!("set_aside.{}", set_aside.key),
                set_aside.value.clone(),
                format!(
                    "{}, not applied: {}; dsh trust applies it",
                    super::trust::shown_path(&set_aside.file),
                    set_aside.reason.says()
                ),
            ));
        }
        rows
    }
}

impl From<ConfigError> for crate::SetupError {
    fn from(e: ConfigError) -> Self {
        crate::SetupError::config(e.to_string())
    }
}

/// The layers for a run in `cwd`, lowest first. A `--patch` file is TOML, or the reference's
/// YAML row list ([`super::rows`]), translated onto the same keys.
fn layers(
    home: &Path,
    cwd: &Path,
    patches: &[PathBuf],
    headless: bool,
    only: Option<&str>,
) -> Result<Vec<Layer>, ConfigError> {
    let mut layers = Vec::new();
    for optional in [
        home.join("config.toml"),
        cwd.join(".dsh").join("config.toml"),
    ] {
        let table = read_layer(&optional, false, only)?;
        layers.push(Layer {
            path: optional,
            table,
            rows: false,
            notes: Vec::new(),
            replaces: Vec::new(),
        });
    }
    let context = super::rows::RowContext {
        home: home.to_path_buf(),
        cwd: cwd.to_path_buf(),
    };
    let mut index = super::rows::RowIndex::default();
    // The reference's own patch files, where its documentation tells users to put rows: the
    // user's patch over every surface, then the headless profile's (for headless runs).
    let mut reference = vec![home.join(REFERENCE_PATCH)];
    if headless {
        reference.push(home.join("profiles").join("headless").join(REFERENCE_PATCH));
    }
    for file in reference {
        // Missing, or nothing in it yet (comments only): no layer. Its documentation has
        // users create it, so an empty one is a placeholder, not a mistake.
        let blank = match std::fs::read_to_string(&file) {
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            Ok(text) => text
                .lines()
                .all(|line| line.trim().is_empty() || line.trim_start().starts_with('#')),
        };
        if !blank {
            layers.push(patch_layer(&file, &context, &mut index, only)?);
        }
    }
    for patch in patches {
        layers.push(patch_layer(patch, &context, &mut index, only)?);
    }
    Ok(layers)
}

/// The name of the reference's patch files.
pub const REFERENCE_PATCH: &str = "cordis.patch.yml";

/// A patch file: the reference's YAML rows (translated) or a TOML config file.
fn patch_layer(
    patch: &Path,
    context: &super::rows::RowContext,
    index: &mut super::rows::RowIndex,
    only: Option<&str>,
) -> Result<Layer, ConfigError> {
    let fail = |message: String| ConfigError {
        path: patch.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(patch).map_err(|e| fail(format!("cannot be read: {e}")))?;
    if super::rows::is_row_list(patch, &text) {
        let mut rows = super::rows::translate(&text, context, index).map_err(fail)?;
        if let Some(only) = only {
            rows.table.retain(|key, _| key == only);
        }
        // What the rows became is checked as a TOML file would be.
        Config::deserialize(rows.table.clone())
            .map_err(|e| fail(format!("translates to a bad setting: {}", e.message())))?;
        Ok(Layer {
            path: patch.to_path_buf(),
            table: Some(rows.table),
            rows: true,
            notes: rows.notes,
            replaces: rows.replaces,
        })
    } else {
        Ok(Layer {
            path: patch.to_path_buf(),
            table: read_layer(patch, true, only)?,
            rows: false,
            notes: Vec::new(),
            replaces: Vec::new(),
        })
    }
}

/// The layers merged, and checked as a whole.
fn merged(layers: &[Layer], home: &Path, patches: &[PathBuf]) -> Result<Config, ConfigError> {
    let mut merged = toml::Table::new();
    for Layer {
        table, replaces, ..
    } in layers.iter().cloned()
    {
        for replaced in &replaces {
            super::rows::remove_path(&mut merged, replaced);
        }
        if let Some(table) = table {
            merge(&mut merged, table);
        }
    }
    Config::deserialize(merged).map_err(|e| ConfigError {
        // The last layer is where a bad key most likely came from; name every layer read.
        path: patches
            .last()
            .cloned()
            .unwrap_or_else(|| home.join("config.toml")),
        message: format!(
            "{}; check the key names and types in docs/config.md",
            e.message()
        ),
    })
}

fn read_layer(
    path: &Path,
    required: bool,
    only: Option<&str>,
) -> Result<Option<toml::Table>, ConfigError> {
    let fail = |message: String| ConfigError {
        path: path.to_path_buf(),
        message,
    };
    // The home's and the workspace's files are found, not named: a workspace's link to
    // /dev/zero or a FIFO would never end, so only a file is read. A --patch may be a pipe.
    if !required
        && let Ok(meta) = std::fs::metadata(path)
        && !meta.is_file()
    {
        return Err(fail(
            "is not a regular file (a device, a FIFO or a folder, maybe through a link); \
             remove it or make it a TOML file"
                .into(),
        ));
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(e) => return Err(fail(format!("cannot be read: {e}"))),
    };
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
    if let Some(only) = only {
        // Which folders are trusted decides what the workspace's layer may say of `only` too.
        table.retain(|key, _| key == only || key == "projects");
        Config::deserialize(table.clone())
            .map_err(|e| fail(format!("[{only}]: {}", e.message())))?;
        return Ok(Some(table));
    }
    // Checked per layer too, from the text, so the error names the file, the line and the key.
    if let Err(e) = toml::from_str::<Config>(&text) {
        let at = e
            .span()
            .map(|span| {
                let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
                format!("line {line}: ")
            })
            .unwrap_or_default();
        return Err(fail(format!("{at}{}", e.message())));
    }
    Ok(Some(table))
}

/// Merges `over` into `base`: tables key by key, anything else replaced.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(over)) => merge(inner, over),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_layers_win_key_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "model = \"a\"\n[models.v]\nimage_input = true\n",
        )
        .unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), "model = \"b\"\n").unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_editor = true\n").unwrap();
        let files = ConfigFiles::load(&home, &ws, &Environment::default(), &[patch], true).unwrap();
        let config = files.config();
        assert_eq!(config.model.as_deref(), Some("b"));
        assert_eq!(config.tools.str_replace_editor, Some(true));
        assert_eq!(config.models["v"].image_input, Some(true));
    }

    #[test]
    fn a_workspace_config_that_is_no_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".dsh")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(".dsh/config.toml")).unwrap();
        let env = Environment::default();
        let error = ConfigFiles::load(dir.path(), dir.path(), &env, &[], true).unwrap_err();
        assert!(
            error.to_string().contains("is not a regular file"),
            "{error}"
        );
    }

    #[test]
    fn no_files_is_the_default() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            *ConfigFiles::load(dir.path(), dir.path(), &Environment::default(), &[], true)
                .unwrap()
                .config(),
            Config::default()
        );
    }

    #[test]
    fn bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let patch = dir.path().join("p.toml");
        std::fs::write(&patch, "[tools]\nstr_replace_edtor = true\n").unwrap();
        let env = Environment::default();
        let error = ConfigFiles::load(
            dir.path(),
            dir.path(),
            &env,
            std::slice::from_ref(&patch),
            true,
        )
        .unwrap_err();
        assert_eq!(error.path, patch);
        assert!(
            error
                .to_string()
                .contains("line 2: unknown field `str_replace_edtor`"),
            "{error}"
        );
        let missing = dir.path().join("missing.toml");
        let error = ConfigFiles::load(dir.path(), dir.path(), &env, &[missing], true).unwrap_err();
        assert!(error.to_string().contains("cannot be read"), "{error}");
    }
}
