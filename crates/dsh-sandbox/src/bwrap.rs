//! The bubblewrap backend: the command runs as `bwrap <profile> -- bash -c <command>`.
//!
//! The profile is the reference's: `/` bound read-only, a fresh `/dev` and `/proc`, a private
//! PID namespace (host processes are invisible, and everything inside dies with the sandbox's
//! first process), `--die-with-parent`; under `workspace-write` a private tmpfs at `/tmp` and
//! the writable roots bound read-write over it. We add `--cap-drop ALL` when dsh runs as root
//! (bwrap would keep every capability, and CAP_SYS_ADMIN remounts `/` read-write),
//! `--unshare-ipc`, `--unshare-net` when the network is off, a private tmpfs at the OS
//! temporary directory when it is not under `/tmp`, and we hide the sockets of daemons that
//! would run commands unconfined (the session's `XDG_RUNTIME_DIR`, the system bus, container
//! engines).

use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::unusable::Unusable;
use crate::{SandboxMode, SandboxPolicy};

/// How long the probe may take before bwrap counts as unusable.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// `bwrap` in a system folder, else on `PATH`. A `PATH` entry that is relative or under a
/// temporary area is skipped: a command could have planted a `bwrap` there.
pub(crate) fn locate() -> Option<PathBuf> {
    let temp = std::env::temp_dir();
    let system = ["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"].map(PathBuf::from);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let from_path = std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && !dir.starts_with("/tmp") && !dir.starts_with(&temp));
    system
        .into_iter()
        .chain(from_path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| is_executable(candidate))
}

/// Unix sockets of host daemons that would run commands for the sandbox unconfined (the
/// system bus's `systemd-run`, container engines); each that exists is covered with
/// `/dev/null`.
const DAEMON_SOCKETS: &[&str] = &[
    "/run/dbus/system_bus_socket",
    "/run/systemd/private",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
];

/// Unix sockets of host daemons that look names up for a client (systemd-resolved's varlink
/// socket, nscd, Avahi's mDNS): with the network off or under the allowlist, a command could
/// still send a name (and whatever it encodes in one) to the world's name servers through
/// them. Covered like [`DAEMON_SOCKETS`], but only then: with the network on, names resolve
/// anyway.
const RESOLVER_SOCKETS: &[&str] = &[
    "/run/systemd/resolve/io.systemd.Resolve",
    "/run/systemd/resolve/io.systemd.Resolve.Monitor",
    "/run/nscd/socket",
    "/var/run/nscd/socket",
    "/run/avahi-daemon/socket",
];

/// The daemon sockets each sandbox covers, with the network on or not.
fn hidden_sockets(network: bool) -> impl Iterator<Item = &'static &'static str> {
    let resolvers: &[&str] = if network { &[] } else { RESOLVER_SOCKETS };
    DAEMON_SOCKETS.iter().chain(resolvers)
}

pub(crate) fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether bwrap can start a read-only sandbox here; the error is bwrap's own words.
pub(crate) fn probe(bwrap: &Path, network: bool) -> Result<(), Unusable> {
    let mut argv = profile(SandboxMode::ReadOnly, None, &[], network);
    argv.extend(["--".into(), "true".into()]);
    let mut child = Command::new(bwrap)
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Unusable::CannotStart {
            program: bwrap.to_path_buf(),
            reason: e.to_string(),
        })?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > PROBE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Unusable::ProbeTimedOut(PROBE_TIMEOUT));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(Unusable::CannotWait(e.to_string())),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    let line = stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    Err(if line.is_empty() {
        Unusable::ProbeFailed(status.to_string())
    } else {
        Unusable::BwrapSaid(line.to_owned())
    })
}

/// The whole argv: `bwrap <profile> -- <argv...>`.
pub(crate) fn wrap(bwrap: &Path, profile: &[OsString], argv: Vec<OsString>) -> Vec<OsString> {
    let mut wrapped = vec![bwrap.as_os_str().to_owned()];
    wrapped.extend_from_slice(profile);
    wrapped.push("--".into());
    wrapped.extend(argv);
    wrapped
}

/// What a sandbox made with `profile` is bound to: the device and inode of both ends of each
/// bind, as they are now. A sandbox that lives longer than one command (the run's helper) is
/// only as good as its binds, and a bind goes away, in that sandbox, when what it covers is
/// replaced on the host (Git writes `.git/config` by renaming a new file over it, an editor
/// saves `.env` the same way, a daemon re-creates its socket). So the helper is reused only
/// while these are unchanged.
pub(crate) fn bind_identity(profile: &[OsString]) -> Vec<OsString> {
    use std::os::unix::fs::MetadataExt as _;
    let mut identity = Vec::new();
    let mut options = profile.iter();
    while let Some(option) = options.next() {
        if option != "--bind" && option != "--ro-bind" {
            continue;
        }
        for path in [options.next(), options.next()].into_iter().flatten() {
            identity.push(match std::fs::metadata(path) {
                Ok(m) => format!("{}:{}", m.dev(), m.ino()).into(),
                Err(_) => "absent".into(),
            });
        }
    }
    identity
}

/// The argv that starts a sandbox helper (`crate::helper`) under `profile`: the same sandbox,
/// except that the helper keeps two capabilities in it: CAP_SYS_ADMIN, to give each command
/// PID and mount namespaces and a /proc of its own, and CAP_SETPCAP, to empty the bounding
/// set. Each command's init gives up both (and every other) before the command starts.
pub(crate) fn helper_start(bwrap: &Path, profile: &[OsString], exe: &Path) -> Vec<OsString> {
    let mut argv = vec![bwrap.as_os_str().to_owned()];
    argv.extend_from_slice(profile);
    // After root's `--cap-drop ALL`, where there is one: the two are all the helper keeps.
    argv.extend([
        "--cap-add".into(),
        "CAP_SYS_ADMIN".into(),
        "--cap-add".into(),
        "CAP_SETPCAP".into(),
    ]);
    argv.extend([
        "--".into(),
        exe.as_os_str().to_owned(),
        crate::helper::HELPER_ARG.into(),
    ]);
    argv
}

/// What of /proc is read-only in every sandbox (see [`profile`]; the sandbox helper covers
/// each command's own /proc the same way).
pub(crate) const PROC_COVERS: [&str; 4] =
    ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// The options before `--`; `protected` is `policy`'s
/// [`SandboxPolicy::protected_paths`], worked out once by the caller, which needs them too.
pub(crate) fn profile(
    mode: SandboxMode,
    policy: Option<&SandboxPolicy>,
    protected: &[std::path::PathBuf],
    network: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--unshare-pid",
        "--proc",
        "/proc",
        "--die-with-parent",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    // Kernel settings in /proc that a uid-0 command may write without any capability
    // (`/proc/sys/kernel/core_pattern` names a program the kernel runs as host root), and
    // the SysRq trigger: bwrap's `--proc` leaves them writable to root.
    for cover in PROC_COVERS {
        args.extend(["--ro-bind-try".into(), cover.into(), cover.into()]);
    }
    // Run as root, bwrap keeps every capability inside the sandbox, and CAP_SYS_ADMIN can
    // remount `/` read-write: the reference's profile is escapable by root. Drop them all.
    // SAFETY: geteuid cannot fail and touches no memory.
    if unsafe { libc::geteuid() } == 0 {
        args.extend(["--cap-drop".into(), "ALL".into()]);
    }
    // System V IPC objects are the host's otherwise (shared memory a command could attach to).
    args.push("--unshare-ipc".into());
    if !network {
        args.push("--unshare-net".into());
    }
    // The session's runtime folder holds the user's bus and other daemons' sockets.
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute() && dir.is_dir())
    {
        args.extend(["--tmpfs".into(), runtime.into_os_string()]);
    }
    for socket in hidden_sockets(network) {
        use std::os::unix::fs::FileTypeExt as _;
        if std::fs::metadata(socket).is_ok_and(|m| m.file_type().is_socket()) {
            args.extend(["--ro-bind".into(), "/dev/null".into(), (*socket).into()]);
        }
    }
    let (SandboxMode::WorkspaceWrite, Some(policy)) = (mode, policy) else {
        if let Some(policy) = policy {
            hide(&mut args, policy);
        }
        return args;
    };
    let tmp = Path::new("/tmp");
    let temp_dir = std::fs::canonicalize(std::env::temp_dir()).unwrap_or_else(|_| tmp.into());
    // A temporary area is a private tmpfs, unless it is itself the workspace or a granted
    // folder: then it is bound like any other root.
    let granted =
        |dir: &Path| dir == policy.workspace() || policy.extra_roots().iter().any(|r| r == dir);
    let mut private = Vec::new();
    if !granted(tmp) {
        private.push(tmp.to_path_buf());
    }
    if temp_dir != tmp && !temp_dir.starts_with(tmp) && temp_dir.is_dir() && !granted(&temp_dir) {
        private.push(temp_dir);
    }
    for dir in &private {
        args.extend(["--tmpfs".into(), dir.clone().into_os_string()]);
    }
    // Every other root is the host's folder, bound after the tmpfs so that a workspace under
    // /tmp shows through it.
    for root in policy.writable_roots() {
        if private.contains(root) || !root.is_dir() {
            continue;
        }
        args.extend([
            "--bind".into(),
            root.clone().into_os_string(),
            root.clone().into_os_string(),
        ]);
    }
    // The protected paths, bound read-only over the writable workspace. One that does not
    // exist (`.dsh/` only) is made, empty, and bound, so that a command cannot create it
    // (bwrap would leave a mount point for it behind anyway; making it here keeps the profile,
    // and with it the run's sandbox helper, the same from one command to the next). Where
    // dsh itself cannot create it (a workspace it may not write), neither can a command: it
    // is left out.
    // `.git` itself is made a mount point, so that it cannot be renamed away and replaced by
    // a folder of a command's own making (with its own hooks).
    let git = policy.workspace().join(".git");
    if std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        let git = git.into_os_string();
        args.extend(["--bind".into(), git.clone(), git]);
    }
    for path in protected {
        // Only `.dsh/` is made when absent: a folder made for `.git/config` breaks Git.
        let absent_dsh = path.file_name().is_some_and(|name| name == ".dsh")
            && std::fs::symlink_metadata(path).is_err()
            && path.parent().is_some_and(writable_by_us);
        if absent_dsh {
            let _ = std::fs::create_dir(path);
        }
        if std::fs::symlink_metadata(path).is_ok() {
            let path = path.clone().into_os_string();
            args.extend(["--ro-bind".into(), path.clone(), path]);
        }
    }
    hide(&mut args, policy);
    args
}

/// Covers what commands may not read ([`SandboxPolicy::hidden_paths`]), last, so that no
/// bind of a root above shows it again: a file by `/dev/null`, a folder by an empty tmpfs. A
/// symlink is left as it is: bwrap cannot mount at a link, and where it leads is listed and
/// covered itself.
fn hide(args: &mut Vec<OsString>, policy: &SandboxPolicy) {
    for path in policy.hidden_paths() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        let path = path.into_os_string();
        if meta.is_dir() {
            args.extend(["--tmpfs".into(), path.clone(), "--remount-ro".into(), path]);
        } else {
            args.extend(["--ro-bind".into(), "/dev/null".into(), path]);
        }
    }
}

/// Whether this process may create entries in `dir`.
fn writable_by_us(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c_path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access(2) reads the NUL-terminated path and nothing else.
    unsafe { libc::access(c_path.as_ptr(), libc::W_OK) == 0 }
}

/// Whether a failed run shows bwrap itself failing: it prints `bwrap: <why>` as the first
/// line of stderr and exits 1 before the command starts, so nothing is on stdout. A command
/// of the user's that runs bwrap and fails the same way is indistinguishable (documented).
pub(crate) fn runner_failure<'a>(
    code: Option<i32>,
    stdout: &str,
    stderr: &'a str,
) -> Option<&'a str> {
    if code != Some(1) || !stdout.is_empty() {
        return None;
    }
    stderr
        .lines()
        .find(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("bwrap: "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the network (or under the allowlist) a name lookup through a host daemon's
    /// socket would carry data out as a name: those sockets are covered then too.
    #[test]
    fn name_lookup_daemons_are_hidden_when_the_network_is_not_open() {
        let open: Vec<_> = hidden_sockets(true).collect();
        let closed: Vec<_> = hidden_sockets(false).collect();
        assert!(!open.contains(&&"/run/nscd/socket"));
        for socket in [
            "/run/systemd/resolve/io.systemd.Resolve",
            "/run/nscd/socket",
            "/run/avahi-daemon/socket",
            "/run/dbus/system_bus_socket",
        ] {
            assert!(closed.contains(&&socket), "{socket}");
        }
    }

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn read_only_is_the_reference_profile_and_ours() {
        let policy = SandboxPolicy::new(SandboxMode::ReadOnly, Path::new("/w"), Vec::new());
        let argv = wrap(
            Path::new("/usr/bin/bwrap"),
            &profile(
                policy.mode(),
                Some(&policy),
                &policy.protected_paths(),
                true,
            ),
            vec!["bash".into(), "-c".into(), "ls".into()],
        );
        let text = strings(&argv).join(" ");
        assert!(
            text.starts_with(
                "/usr/bin/bwrap --ro-bind / / --dev /dev --unshare-pid --proc /proc \
                 --die-with-parent "
            ),
            "{text}"
        );
        assert!(text.ends_with(" -- bash -c ls"), "{text}");
        assert!(text.contains(" --unshare-ipc "), "{text}");
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        assert_eq!(text.contains(" --cap-drop ALL "), root, "{text}");
        assert!(
            !text.contains("--tmpfs /tmp"),
            "read-only has no private /tmp: {text}"
        );
    }

    #[test]
    fn workspace_write_binds_the_roots_over_a_private_tmp() {
        let ws = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let extra_real = std::fs::canonicalize(extra.path()).unwrap();
        let policy = SandboxPolicy::new(
            SandboxMode::WorkspaceWrite,
            ws.path(),
            vec![extra_real.clone()],
        );
        let args = strings(&profile(
            policy.mode(),
            Some(&policy),
            &policy.protected_paths(),
            false,
        ));
        let text = args.join(" ");
        assert!(text.contains("--unshare-net --tmpfs /tmp"));
        let ws_real = std::fs::canonicalize(ws.path()).unwrap();
        let ws_bind = format!("--bind {0} {0}", ws_real.display());
        let extra_bind = format!("--bind {0} {0}", extra_real.display());
        assert!(text.contains(&ws_bind), "{text}");
        assert!(text.contains(&extra_bind), "{text}");
        assert!(text.find("--tmpfs /tmp") < text.find(&ws_bind));
        assert!(!text.contains("--bind /tmp /tmp"));
    }

    #[test]
    fn only_bwraps_own_lines_are_runner_failures() {
        let line = "bwrap: setting up uid map: Permission denied\n";
        assert_eq!(
            runner_failure(Some(1), "", line),
            Some("bwrap: setting up uid map: Permission denied")
        );
        assert_eq!(
            runner_failure(Some(1), "", "make: *** error: bwrap: no\n"),
            None
        );
        // The command ran (it printed) or failed its own way (another status).
        assert_eq!(runner_failure(Some(1), "partial output", line), None);
        assert_eq!(runner_failure(Some(2), "", line), None);
        assert_eq!(
            runner_failure(Some(1), "", "warning: x\nbwrap: late\n"),
            None
        );
    }

    #[test]
    fn a_workspace_that_is_the_temp_folder_is_bound_not_hidden() {
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, Path::new("/tmp"), Vec::new());
        let args = strings(&profile(
            policy.mode(),
            Some(&policy),
            &policy.protected_paths(),
            true,
        ));
        let text = args.join(" ");
        // `/tmp` itself must not be a tmpfs here (`/tmp/.dsh`, a protected path, is bound).
        assert!(
            !args.windows(2).any(|pair| pair == ["--tmpfs", "/tmp"]),
            "{text}"
        );
        assert!(text.contains("--bind /tmp /tmp"), "{text}");
        assert!(text.contains("--unshare-ipc"), "{text}");
    }

    #[test]
    fn an_absent_dsh_folder_is_made_and_bound_read_only_where_it_could_be_made() {
        let ws = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(ws.path()).unwrap();
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        let args = strings(&profile(
            policy.mode(),
            Some(&policy),
            &policy.protected_paths(),
            true,
        ));
        let dsh = real.join(".dsh").display().to_string();
        let text = args.join(" ");
        assert!(text.contains(&format!("--ro-bind {dsh} {dsh}")), "{text}");
        assert!(real.join(".dsh").is_dir());
        // The next command's profile is the same (its helper too).
        assert_eq!(
            strings(&profile(
                policy.mode(),
                Some(&policy),
                &policy.protected_paths(),
                true
            )),
            args
        );
        std::fs::remove_dir(real.join(".dsh")).unwrap();
        // Root may write anywhere, so only another user sees a folder it cannot write.
        // SAFETY: geteuid cannot fail and touches no memory.
        if unsafe { libc::geteuid() } == 0 {
            return;
        }
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o555)).unwrap();
        let args = strings(&profile(
            policy.mode(),
            Some(&policy),
            &policy.protected_paths(),
            true,
        ));
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!args.join(" ").contains(".dsh"), "{args:?}");
    }
}

#[cfg(test)]
mod absent_git_paths {
    use super::*;

    #[test]
    fn no_mount_point_is_made_inside_git() {
        let ws = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let real = std::fs::canonicalize(ws.path()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(real.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        let policy = SandboxPolicy::new(SandboxMode::WorkspaceWrite, &real, Vec::new());
        let args: Vec<String> = profile(
            policy.mode(),
            Some(&policy),
            &policy.protected_paths(),
            true,
        )
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
        // `.git` itself is bound (a mount point, so it cannot be renamed away); nothing is
        // made inside it.
        let git = real.join(".git").display().to_string();
        assert!(
            args.iter().all(|a| !a.contains(".git") || *a == git),
            "{args:?}"
        );
    }
}
