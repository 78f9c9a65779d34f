//! Turning a command into a confined command.
//!
//! [`Sandbox::confine`] takes the argv of a command and the policy of the call and returns what
//! to spawn: the argv (wrapped in `bwrap` under bubblewrap), what the child must apply to itself
//! before exec (the Landlock ruleset and seccomp filter), and how to read the result afterwards.
//! With no usable backend it refuses: a command is never run unconfined unless the mode is
//! `danger-full-access`.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use crate::classify::{self, Verdict};
use crate::{Backend, Enforcement, Sandbox, SandboxMode, SandboxPolicy};

/// A command ready to spawn, and how to interpret its outcome.
#[derive(Debug, Clone)]
pub struct ConfinedCommand {
    pub argv: Vec<OsString>,
    pub backend: Backend,
    pub mode: SandboxMode,
    pub enforcement: Enforcement,
    /// Whether the command may use the network.
    pub network: bool,
    policy: SandboxPolicy,
    child: Option<ChildSetup>,
    /// The protected paths it could create.
    watch: Option<crate::CreationWatch>,
    /// How to run it through the run's sandbox helper instead of `argv` (bubblewrap only).
    helper: Option<crate::HelperLaunch>,
    /// Under the network allowlist: the proxy, from the command's start.
    net: Option<crate::network_use::NetworkWatch>,
}

/// What the child process applies to itself between fork and exec: the resource limits (under
/// every backend; under bubblewrap bwrap inherits them, and so does the command), then Landlock's
/// restrictions.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    limits: crate::CommandLimits,
    #[cfg(target_os = "linux")]
    restrictions: Option<Arc<crate::landlock_backend::ChildRestrictions>>,
}

impl ChildSetup {
    /// Confines the calling process.
    ///
    /// # Safety
    /// Call it only in the child between fork and exec (a `pre_exec` hook): it makes raw
    /// system calls and nothing else.
    pub unsafe fn apply(&self) -> std::io::Result<()> {
        // SAFETY: the caller is the forked child.
        unsafe { self.limits.apply()? };
        #[cfg(target_os = "linux")]
        if let Some(restrictions) = &self.restrictions {
            // SAFETY: the caller is the forked child.
            unsafe { restrictions.apply()? };
        }
        Ok(())
    }
}

impl ConfinedCommand {
    /// The policy it runs under.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// What the command's protected paths were when it started (`workspace-write` only).
    pub fn watch(&self) -> Option<&crate::CreationWatch> {
        self.watch.as_ref()
    }

    /// The protected paths the command created (to be set aside: [`crate::set_aside`]); only
    /// ever some under `workspace-write`.
    pub fn created_protected(&self) -> Vec<std::path::PathBuf> {
        self.watch
            .as_ref()
            .map(crate::CreationWatch::created)
            .unwrap_or_default()
    }

    /// How to run it through the run's sandbox helper, when one may: a faster way to the same
    /// sandbox as `argv`, which is what to run when the helper refuses.
    pub fn helper(&self) -> Option<&crate::HelperLaunch> {
        self.helper.as_ref()
    }

    /// The hosts dsh's proxy refused since the command started (network allowlist only).
    pub fn network_denials(&self) -> Vec<crate::network::NetworkDenial> {
        self.net
            .as_ref()
            .map(crate::network_use::NetworkWatch::denials)
            .unwrap_or_default()
    }

    /// The command's environment: `base`, and under the network allowlist the proxy
    /// variables that lead to dsh's proxy, in place of any of the same names (a process
    /// reads the first of two).
    pub fn environment(&self, base: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
        let extra = match self.net {
            Some(_) => crate::network::proxy_environment(),
            None => return base,
        };
        let mut env: Vec<_> = (base.into_iter())
            .filter(|(name, _)| !extra.iter().any(|(n, _)| n == name))
            .collect();
        env.extend(extra);
        env
    }

    /// The workspace of its policy.
    pub fn workspace(&self) -> &Path {
        self.policy.workspace()
    }

    /// What the child must apply before exec, if anything.
    pub fn child_setup(&self) -> Option<&ChildSetup> {
        self.child.as_ref()
    }

    /// What a finished run amounted to. `code` is its exit code (`None` when a signal ended
    /// it); `cwd` is where it ran, for relative paths in error lines.
    pub fn verdict(&self, code: Option<i32>, stdout: &str, stderr: &str, cwd: &Path) -> Verdict {
        let failed = matches!(code, Some(c) if c != 0);
        if !failed {
            return Verdict::Ran;
        }
        match self.backend {
            Backend::None => Verdict::Ran,
            Backend::Bubblewrap => {
                if let Some(line) = crate::bwrap::runner_failure(code, stdout, stderr) {
                    return Verdict::RunnerFailed(line.to_owned());
                }
                if classify::erofs_denied(&[stdout, stderr], &self.policy, cwd) {
                    Verdict::Denied
                } else {
                    Verdict::Ran
                }
            }
            Backend::Landlock => {
                if classify::eacces_denied(&[stdout, stderr], &self.policy, cwd) {
                    Verdict::Denied
                } else {
                    Verdict::Ran
                }
            }
        }
    }
}

/// No backend can confine the command in the wanted mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "sandbox mode \"{mode}\" is requested but no sandbox backend is usable on this host; refusing \
     to run the command unconfined. Install bubblewrap or run a Landlock-enforcing kernel \
     (Linux), ensure sandbox-exec is usable (macOS), or ensure the ACL restricted-token runner \
     can start (Windows) — otherwise switch the consumer to danger-full-access.{}{}",
    detail.as_ref().map(|d| format!(" Runner failure: {d}")).unwrap_or_default(),
    probes.as_ref().map(|p| format!(" ({p}; `dsh sandbox check` says what to do)")).unwrap_or_default()
)]
pub struct SandboxUnavailable {
    pub mode: SandboxMode,
    /// The runner's own failure line, when it started and failed.
    pub detail: Option<String>,
    /// Why each backend was not usable, when none was. The reference's text ends before this.
    pub probes: Option<String>,
}

impl SandboxUnavailable {
    /// The reference's error code.
    pub const CODE: &'static str = "SANDBOX_UNAVAILABLE";
    /// The reference's error name.
    pub const NAME: &'static str = "SandboxUnavailableError";

    /// The runner started and failed before the command ran.
    pub fn runner_failed(mode: SandboxMode, line: String) -> Self {
        SandboxUnavailable {
            mode,
            detail: Some(line),
            probes: None,
        }
    }
}

impl Sandbox {
    /// How to run `argv` through the run's sandbox helper for `profile`, when helpers are on
    /// and this process offers one. Not when a command under `policy` could write the
    /// executable: the helper keeps CAP_SYS_ADMIN in the sandbox, and a helper started later
    /// in the run from a file a command replaced could undo the sandbox's mounts.
    pub(crate) fn helper_launch(
        &self,
        policy: &SandboxPolicy,
        bwrap: &Path,
        profile: &[OsString],
        argv: Vec<OsString>,
    ) -> Option<crate::HelperLaunch> {
        let exe = crate::helper::executable().filter(|_| self.settings().helper)?;
        // Where a command could replace the file, or the sandbox would not show it (the
        // host's temporary folders, which each sandbox replaces), the helper starts from a
        // sealed copy that no command can reach or change.
        let in_temp = [Path::new("/tmp"), &std::env::temp_dir()]
            .iter()
            .any(|temp| exe.starts_with(temp));
        let writable =
            policy.allows_write(exe) || exe.parent().is_some_and(|p| policy.allows_write(p));
        let sealed = if writable || in_temp {
            Some(crate::helper::sealed_executable()?)
        } else {
            None
        };
        let program = match sealed {
            Some(_) => {
                std::path::PathBuf::from(format!("/proc/self/fd/{}", crate::helper::SEALED_FD))
            }
            None => exe.clone(),
        };
        Some(crate::HelperLaunch {
            pool: self.helpers(),
            start: crate::bwrap::helper_start(bwrap, profile, &program),
            sealed,
            limits: self.settings().limits,
            profile: profile.to_vec(),
            argv,
            key: [profile.to_vec(), crate::bwrap::bind_identity(profile)].concat(),
        })
    }

    /// The command to spawn for `argv` under `policy`.
    pub fn confine(
        &self,
        argv: Vec<OsString>,
        policy: &SandboxPolicy,
    ) -> Result<ConfinedCommand, SandboxUnavailable> {
        let network = self.settings().open_network();
        let limits = self.settings().limits;
        let mode = policy.mode();
        let plain = ChildSetup {
            limits,
            #[cfg(target_os = "linux")]
            restrictions: None,
        };
        let unconfined = |argv| ConfinedCommand {
            argv,
            backend: Backend::None,
            mode,
            enforcement: Enforcement::Full,
            network: true,
            policy: policy.clone(),
            child: Some(plain.clone()),
            watch: None,
            helper: None,
            net: None,
        };
        if mode == SandboxMode::DangerFullAccess {
            return Ok(unconfined(argv));
        }
        if let Some(moved) = policy.moved_secrets() {
            return Err(SandboxUnavailable::runner_failed(
                mode,
                format!(
                    "{} holds secrets that commands may not read (it is dsh's home, or where a \
                     symlinked secret in it leads), and it is no longer the folder dsh found \
                     there: a command moved or replaced it, so the sandbox would not hide what \
                     it holds. Put it back where it was to run commands again",
                    moved.display()
                ),
            ));
        }
        let Some((backend, enforcement)) = self.chosen() else {
            return Err(SandboxUnavailable {
                mode,
                detail: None,
                probes: Some(
                    self.probes()
                        .iter()
                        .map(|p| match &p.result {
                            Ok(_) => format!("{}: usable", p.backend),
                            Err(reason) => format!("{}: {reason}", p.backend),
                        })
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            });
        };
        // Bound read-only (bubblewrap) and watched for creation (both backends).
        let protected = policy.protected_paths();
        let confined = |argv, child| ConfinedCommand {
            argv,
            backend,
            mode,
            enforcement,
            network,
            policy: policy.clone(),
            child,
            watch: crate::CreationWatch::new(policy, backend, &protected),
            helper: None,
            net: None,
        };
        match backend {
            Backend::Bubblewrap => {
                // bwrap binds roots by path: one renamed and replaced since the policy was made
                // (a symlink in its place) must not be bound as it is now.
                if let Some(moved) = policy.moved_root()
                    && mode == SandboxMode::WorkspaceWrite
                {
                    return Err(SandboxUnavailable::runner_failed(
                        mode,
                        format!(
                            "the writable root {} is no longer the directory that was granted \
                             (it was moved or replaced during the run); refusing to bind what \
                             is there now",
                            moved.display()
                        ),
                    ));
                }
                let bwrap = self.bwrap_path().unwrap_or(Path::new("bwrap"));
                let profile = (self.bwrap_profile(mode, policy, &protected))
                    .map_err(|why| SandboxUnavailable::runner_failed(mode, why))?;
                let helper = self.helper_launch(policy, bwrap, &profile, argv.clone());
                let mut argv = crate::bwrap::wrap(bwrap, &profile, argv);
                let mut net = None;
                if self.network_allowlist().is_some() {
                    // Only the helper relays to the proxy: a `bwrap` of the command's own
                    // would leave it without a way out, so that way refuses, saying why.
                    if helper.is_none() {
                        return Err(SandboxUnavailable::runner_failed(
                            mode,
                            crate::network_use::NEEDS_HELPER.into(),
                        ));
                    }
                    argv = refusal(crate::network_use::NEEDS_HELPER);
                    net = self.network_watch();
                }
                Ok(ConfinedCommand {
                    helper,
                    net,
                    ..confined(argv, Some(plain.clone()))
                })
            }
            #[cfg(target_os = "linux")]
            Backend::Landlock if self.network_allowlist().is_some() => {
                Err(SandboxUnavailable::runner_failed(
                    mode,
                    crate::network_use::NOT_UNDER_LANDLOCK.into(),
                ))
            }
            #[cfg(target_os = "linux")]
            Backend::Landlock => {
                let restrictions =
                    crate::landlock_backend::ChildRestrictions::build(policy, network)
                        .map_err(|why| SandboxUnavailable::runner_failed(mode, why.to_string()))?;
                Ok(confined(
                    argv,
                    Some(ChildSetup {
                        limits,
                        restrictions: Some(Arc::new(restrictions)),
                    }),
                ))
            }
            #[cfg(not(target_os = "linux"))]
            Backend::Landlock => Err(SandboxUnavailable::runner_failed(
                mode,
                "Landlock is a Linux feature".into(),
            )),
            Backend::None => Ok(unconfined(argv)),
        }
    }
}

/// A command line that runs nothing and fails as a runner failure (`bwrap: ` and `why`), for
/// when a command may run one way only and that way is refused.
fn refusal(why: &str) -> Vec<OsString> {
    let line = format!("bwrap: {why}").replace('\'', "'\\''");
    vec![
        "/bin/sh".into(),
        "-c".into(),
        format!("printf '%s\\n' '{line}' >&2; exit 1").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendChoice, SandboxSettings};

    #[test]
    fn full_access_runs_the_command_as_it_is() {
        let policy = SandboxPolicy::new(
            SandboxMode::DangerFullAccess,
            std::path::Path::new("/w"),
            Vec::new(),
        );
        let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), "true".into()];
        let confined = Sandbox::default().confine(argv.clone(), &policy).unwrap();
        assert_eq!(confined.argv, argv);
        assert_eq!(confined.backend, Backend::None);
        assert_eq!(
            confined.verdict(Some(1), "", "Read-only file system", Path::new("/w")),
            Verdict::Ran
        );
    }

    #[test]
    fn the_refusal_is_the_reference_text_then_why() {
        let error = SandboxUnavailable {
            mode: SandboxMode::WorkspaceWrite,
            detail: None,
            probes: Some("bubblewrap: bwrap is not installed".into()),
        };
        let text = error.to_string();
        assert!(text.starts_with(
            "sandbox mode \"workspace-write\" is requested but no sandbox backend is usable on \
             this host; refusing to run the command unconfined."
        ));
        assert!(text.contains(
            "switch the consumer to danger-full-access. (bubblewrap: bwrap is not installed; \
             `dsh sandbox check` says what to do)"
        ));
        let runner = SandboxUnavailable::runner_failed(SandboxMode::ReadOnly, "bwrap: x".into());
        assert!(
            runner
                .to_string()
                .ends_with("danger-full-access. Runner failure: bwrap: x")
        );
    }

    #[test]
    fn a_forced_backend_that_cannot_start_is_not_replaced_by_another() {
        let sandbox = Sandbox::new(SandboxSettings {
            backend: BackendChoice::Bubblewrap,
            network: true,
            ..SandboxSettings::default()
        });
        assert_eq!(sandbox.probes().len(), 1);
        assert_eq!(sandbox.probes()[0].backend, Backend::Bubblewrap);
    }
}
