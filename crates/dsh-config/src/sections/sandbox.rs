//! `[sandbox]`: the permission mode, the directories `--add-dir` makes writable, and what
//! confines commands (the backends, the network, the limits).

use std::path::{Path, PathBuf};

use dsh_sandbox::network::DomainAllowlist;
use dsh_sandbox::{BackendChoice, SandboxSettings};
use serde::Deserialize;

use crate::environment::{Environment, SetupError};
use crate::files::{PermissionMode, limit, parsed};
use crate::flags::Flags;
use crate::resolver::{Resolver, flag};
use crate::sourced::{Source, Sourced};
use crate::trust_look::{Guard, Reason, Widens};

/// How each key can widen what commands may do ([`crate::trust_look::Widens`]); the mode, the
/// backend and `bwrap` have rules of their own ([`crate::trust_rules`]).
pub(crate) const GUARDS: &[Guard] = &[
    Guard::neither(
        "sandbox.network",
        "it is true, false or \"allowlist\", judged by crate::trust_rules (true widens the \
         other two, \"allowlist\" widens false)",
    ),
    Guard::neither(
        "sandbox.helper",
        "either way commands run in the same sandbox, through one helper or a bwrap each",
    ),
    Guard {
        key: "sandbox.max_memory_mb",
        widens: Widens::Higher(None),
        reason: Reason::Sandbox,
    },
    Guard {
        key: "sandbox.max_processes",
        widens: Widens::Higher(None),
        reason: Reason::Sandbox,
    },
];

/// The sandbox of commands and file tools.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// The permission mode: read-only, workspace-write, danger-full-access, plan or auto.
    #[serde(deserialize_with = "parsed")]
    pub mode: Option<PermissionMode>,
    /// Whether confined commands may use the network: true (the default), false, or
    /// "allowlist" (through dsh's proxy to `allowed_domains` only).
    #[serde(deserialize_with = "network_choice")]
    pub network: Option<NetworkChoice>,
    /// Under `network = "allowlist"`, the domains commands may reach (`*.` and a name for the
    /// names below it).
    #[serde(deserialize_with = "domain_list")]
    pub allowed_domains: Option<Vec<String>>,
    /// auto (bubblewrap, else Landlock), bubblewrap, or landlock.
    #[serde(deserialize_with = "parsed")]
    pub backend: Option<BackendChoice>,
    /// The bwrap binary to use.
    pub bwrap: Option<PathBuf>,
    /// Whether bubblewrap's commands run through one sandbox helper per run (default true).
    pub helper: Option<bool>,
    /// MiB of data one process of a command may hold (default: no limit; 0 is refused).
    #[serde(deserialize_with = "limit")]
    pub max_memory_mb: Option<u64>,
    /// Processes the command's user may have at once (default: no limit; 0 is refused).
    #[serde(deserialize_with = "limit")]
    pub max_processes: Option<u64>,
}

/// `sandbox.network`: the host's network, none, or dsh's proxy to the allowed domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkChoice {
    On,
    Off,
    Allowlist,
}

impl crate::shown::Shown for NetworkChoice {
    fn shown(&self) -> String {
        match self {
            NetworkChoice::On => "true".into(),
            NetworkChoice::Off => "false".into(),
            NetworkChoice::Allowlist => "\"allowlist\"".into(),
        }
    }
}

fn network_choice<'de, D>(deserializer: D) -> Result<Option<NetworkChoice>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Switch(bool),
        Word(String),
    }
    match Written::deserialize(deserializer)? {
        Written::Switch(true) => Ok(Some(NetworkChoice::On)),
        Written::Switch(false) => Ok(Some(NetworkChoice::Off)),
        Written::Word(word) if word == "allowlist" => Ok(Some(NetworkChoice::Allowlist)),
        Written::Word(word) => Err(serde::de::Error::custom(format!(
            "sandbox.network must be true, false or \"allowlist\", got \"{word}\""
        ))),
    }
}

/// The allowlist's entries, each checked as it is read so that a typo names the file, the
/// line and the entry.
fn domain_list<'de, D>(deserializer: D) -> Result<Option<Vec<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let entries = Vec::<String>::deserialize(deserializer)?;
    let list = DomainAllowlist::parse(&entries).map_err(serde::de::Error::custom)?;
    Ok(Some(list.entries()))
}

/// What a run's tools may change, and how commands are confined.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub mode: Sourced<PermissionMode>,
    /// More writable directories (`--add-dir`), each its real path.
    pub add_dirs: Sourced<Vec<PathBuf>>,
    /// The sandbox backends, the network switch and the command limits.
    pub confinement: SandboxSettings,
}

pub(crate) fn resolve(
    r: &mut Resolver<'_>,
    config: &SandboxConfig,
    env: &Environment,
    flags: &Flags,
    cwd: &Path,
) -> Result<Sandbox, SetupError> {
    let mode = mode(r, config, env, flags)?;
    let add_dirs = match flags.add_dirs.as_slice() {
        [] => None,
        dirs => Some(check_add_dirs(dirs, cwd)?),
    };
    let add_dirs = r.setting(
        "sandbox.add_dirs",
        [flag(add_dirs, "--add-dir")],
        Vec::new(),
    );
    Ok(Sandbox {
        mode,
        add_dirs,
        confinement: confinement(r, config)?,
    })
}

/// The permission mode (`--permission-mode`, `DSH_PERMISSION_MODE`, `sandbox.mode`).
fn mode(
    r: &mut Resolver<'_>,
    config: &SandboxConfig,
    env: &Environment,
    flags: &Flags,
) -> Result<Sourced<PermissionMode>, SetupError> {
    let env_mode = match env.get("DSH_PERMISSION_MODE") {
        None => None,
        Some(value) => Some(Sourced::new(
            value.trim().parse::<PermissionMode>().map_err(|_| {
                SetupError::config(format!(
                    "DSH_PERMISSION_MODE must be {}, got \"{value}\"",
                    PermissionMode::CHOICES
                ))
            })?,
            Source::Env("DSH_PERMISSION_MODE"),
        )),
    };
    let permission_mode = r.setting(
        "sandbox.mode",
        [
            flag(flags.permission_mode, "--permission-mode"),
            env_mode,
            r.file("sandbox.mode", config.mode),
        ],
        PermissionMode::WorkspaceWrite,
    );
    Ok(permission_mode)
}

/// `[sandbox]`: which backends may confine commands, and whether they may use the network.
pub(crate) fn confinement(
    r: &mut Resolver<'_>,
    config: &SandboxConfig,
) -> Result<SandboxSettings, SetupError> {
    let backend = r.file_setting("sandbox.backend", config.backend, BackendChoice::Auto);
    let network = r.file_setting("sandbox.network", config.network, NetworkChoice::On);
    let domains = r.file_setting(
        "sandbox.allowed_domains",
        config.allowed_domains.clone(),
        Vec::new(),
    );
    let allowed_domains = match network.value {
        NetworkChoice::Allowlist => Some(
            DomainAllowlist::parse(&domains.value)
                .map_err(|e| SetupError::config(e.to_string()))?,
        ),
        // Forgotten, the switch would leave the network open where a list was meant.
        NetworkChoice::On if !domains.value.is_empty() => {
            return Err(SetupError::config(
                "sandbox.allowed_domains is set but sandbox.network is true, so commands would \
                 reach every host; hint: set sandbox.network = \"allowlist\" to limit them to \
                 the list (or remove the list)"
                    .to_owned(),
            ));
        }
        _ => None,
    };
    let bwrap = r.file_setting("sandbox.bwrap", config.bwrap.clone().map(Some), None);
    r.none_means(&bwrap, "looked up: the system folders, then PATH");
    let helper = r.file_setting("sandbox.helper", config.helper, true);
    let max_memory_mb = r.file_setting(
        "sandbox.max_memory_mb",
        config.max_memory_mb.map(Some),
        None,
    );
    r.none_means(&max_memory_mb, "no limit");
    let max_processes = r.file_setting(
        "sandbox.max_processes",
        config.max_processes.map(Some),
        None,
    );
    r.none_means(&max_processes, "no limit");
    Ok(SandboxSettings {
        backend: backend.value,
        network: network.value == NetworkChoice::On,
        allowed_domains,
        bwrap: bwrap.value,
        helper: helper.value,
        limits: dsh_sandbox::CommandLimits {
            memory_bytes: max_memory_mb.value.map(|mb| mb.saturating_mul(1 << 20)),
            processes: max_processes.value,
        },
    })
}

/// `--add-dir` grants: each an absolute path to an existing directory, given as its real path
/// (a symlinked or relative spelling could later point somewhere else).
fn check_add_dirs(dirs: &[PathBuf], cwd: &Path) -> Result<Vec<PathBuf>, SetupError> {
    dirs.iter()
        .map(|dir| {
            let shown = dir.display();
            if !dir.is_absolute() {
                // Said with the path it names from here, so the fix can be copied.
                let meant = cwd.join(dir);
                let named = match std::fs::canonicalize(&meant) {
                    Ok(real) => format!("from here it is \"{}\"; give that", real.display()),
                    Err(_) => format!(
                        "from here it would be \"{}\", which does not exist",
                        meant.display()
                    ),
                };
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not an absolute path: {named} (an existing \
                     directory's full real path)"
                )));
            }
            let real = std::fs::canonicalize(dir).map_err(|e| {
                SetupError::config(format!(
                    "--add-dir \"{shown}\" cannot be used: {}; give an existing directory",
                    match e.kind() {
                        std::io::ErrorKind::NotFound => "it does not exist".to_owned(),
                        _ => e.to_string(),
                    }
                ))
            })?;
            if !real.is_dir() {
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not a directory; give a directory to make writable"
                )));
            }
            if real != *dir {
                return Err(SetupError::config(format!(
                    "--add-dir \"{shown}\" is not a physical path: it resolves to \"{}\"; \
                     give that path instead",
                    real.display()
                )));
            }
            Ok(real)
        })
        .collect()
}
