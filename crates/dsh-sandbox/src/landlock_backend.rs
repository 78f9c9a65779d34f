//! The Landlock backend: the kernel confines the command itself, with no helper process.
//!
//! The ruleset is built in the parent with the `landlock` crate (opening each granted path
//! `O_PATH` and adding its rule, which restricts nothing yet). Between fork and exec the child
//! makes only raw, async-signal-safe syscalls: `PR_SET_NO_NEW_PRIVS`,
//! `landlock_restrict_self` on that ruleset, and, when the network is off, a seccomp filter.
//!
//! Grants: `/` readable and executable, `/dev/null`, `/dev/zero` and `/dev/full` writable, and
//! under `workspace-write` every writable root of the policy with all access. The ABI is
//! negotiated down (best effort); below ABI 6 the confinement is `partial`.
//! ABI 6 scopes keep the command from signalling processes outside its sandbox (dsh itself
//! among them) and from connecting to abstract Unix sockets made outside it, which a PID
//! namespace gives under bubblewrap. With the network off, TCP bind and connect are handled
//! with no port allowed (ABI 4), and the seccomp filter refuses every socket that is not a Unix
//! socket, which also covers UDP and raw sockets on any ABI.

use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::fs::MetadataExt as _;

use ::landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, PathBeneath,
    Ruleset, RulesetAttr as _, RulesetCreatedAttr as _, Scope,
};

use crate::kinds::LANDLOCK_TARGET_ABI as TARGET_ABI;
use crate::secrets::Hidden;
use crate::unusable::Unusable;
use crate::{Enforcement, SandboxMode, SandboxPolicy};

/// The file-access rights we handle: everything up to ABI 5 (IOCTL on devices).
const FS_ABI: ABI = ABI::V5;

/// The rights that show a file's content: what a hidden path is never granted.
fn content_rights() -> BitFlags<AccessFs> {
    AccessFs::ReadFile | AccessFs::Execute
}

/// `access` beneath `top` (opened as `handle`), less reading what is `hidden` beneath it
/// ([`SandboxPolicy::hidden_paths`]). Landlock only adds access, so nothing can be taken out
/// of a grant above it: where a hidden path lies beneath `top`, `top` is granted `access`
/// without [`content_rights`] and without `REFER`, and each entry of each folder on the way
/// down (but the next folder on the way and the hidden path itself) `access` whole. An entry
/// is opened without following a symlink (a link grants nothing, whatever it points at), and
/// one made in those folders after the ruleset was built is not readable. Without `REFER` on
/// the way, which every folder below inherits, nothing can be linked or moved from one of
/// those folders into another: a secret renamed stays in its folder, where dsh finds it by
/// identity ([`crate::secrets`]). An entry that is `skip` (by device and inode) is granted
/// nothing whatever its name: a secret, or a folder on the way, renamed while this ran.
fn grants_beneath(
    top: &std::path::Path,
    handle: OwnedFd,
    access: BitFlags<AccessFs>,
    hidden: &Hidden,
) -> Vec<(OwnedFd, BitFlags<AccessFs>)> {
    use std::collections::BTreeSet;
    use std::path::Path;
    let inside: Vec<&Path> = (hidden.paths.iter())
        .map(std::path::PathBuf::as_path)
        .filter(|h| h.starts_with(top) && *h != top)
        .collect();
    if inside.is_empty() {
        return vec![(handle, access)];
    }
    let ways: BTreeSet<&Path> = (inside.iter())
        .flat_map(|h| h.ancestors().skip(1))
        .filter(|a| a.starts_with(top))
        .collect();
    let mut grants = vec![(handle, access & !(content_rights() | AccessFs::Refer))];
    for way in &ways {
        let Ok(entries) = std::fs::read_dir(way) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if ways.contains(path.as_path()) || inside.contains(&path.as_path()) {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_symlink() {
                continue;
            }
            let Ok(fd) = open_nofollow(&path) else {
                continue;
            };
            // What was opened, not what the name was when listed.
            let file = std::fs::File::from(fd);
            let Ok(meta) = file.metadata() else {
                continue;
            };
            if hidden.identities.contains(&(meta.dev(), meta.ino())) {
                continue;
            }
            let rights = if meta.is_dir() {
                access
            } else {
                access & AccessFs::from_file(FS_ABI)
            };
            grants.push((OwnedFd::from(file), rights));
        }
    }
    grants
}

/// `path` opened `O_PATH`, its last component not followed.
fn open_nofollow(path: &std::path::Path) -> std::io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map(OwnedFd::from)
}

/// The kernel's Landlock ABI, or why there is none.
pub(crate) fn kernel_abi() -> Result<i32, Unusable> {
    // SAFETY: the documented version query: no attribute, size 0, the VERSION flag.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if version >= 1 {
        return Ok(version as i32);
    }
    Err(match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => Unusable::LandlockDisabled,
        Some(libc::ENOSYS) => Unusable::NoLandlock,
        _ => Unusable::VersionQuery(std::io::Error::last_os_error().to_string()),
    })
}

/// The oldest ABI we confine with: below 3, Landlock cannot refuse `truncate(2)`, so a
/// command could empty any file outside the roots.
const MIN_ABI: i32 = 3;

/// Whether Landlock can confine commands here, and how fully: the kernel's ABI, then a real
/// confined start of `true` (a seccomp policy around dsh, or a kernel that refuses the
/// restriction, shows here rather than at the first command).
pub(crate) fn probe(network: bool) -> Result<Enforcement, Unusable> {
    let abi = kernel_abi()?;
    if abi < MIN_ABI {
        return Err(Unusable::OldAbi {
            abi,
            needed: MIN_ABI,
        });
    }
    if !network {
        network_filter().ok_or(Unusable::NoNetworkFilter(std::env::consts::ARCH))?;
        seccomp_available()?;
    }
    confined_true(network)?;
    Ok(if abi >= TARGET_ABI {
        Enforcement::Full
    } else {
        Enforcement::Partial
    })
}

/// Runs `true` under a read-only ruleset.
fn confined_true(network: bool) -> Result<(), Unusable> {
    use std::os::unix::process::CommandExt as _;
    let policy = SandboxPolicy::new(SandboxMode::ReadOnly, std::path::Path::new("/"), Vec::new());
    let restrictions = ChildRestrictions::build(&policy, network)?;
    let mut command = std::process::Command::new("true");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the hook makes raw system calls only (see `ChildRestrictions::apply`).
    unsafe {
        command.pre_exec(move || restrictions.apply());
    }
    let status = command
        .status()
        .map_err(|e| Unusable::ConfinedStart(e.to_string()))?;
    if status.success() {
        Ok(())
    } else {
        Err(Unusable::ConfinedFailed(status.to_string()))
    }
}

fn seccomp_available() -> Result<(), Unusable> {
    // SAFETY: PR_GET_SECCOMP only reads the calling thread's mode.
    let mode = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if mode < 0 {
        return Err(Unusable::NoSeccomp(
            std::io::Error::last_os_error().to_string(),
        ));
    }
    Ok(())
}

/// What the child applies to itself before exec.
pub(crate) struct ChildRestrictions {
    ruleset: OwnedFd,
    seccomp: Option<Vec<libc::sock_filter>>,
}

impl std::fmt::Debug for ChildRestrictions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildRestrictions")
            .field("ruleset", &self.ruleset)
            .field("seccomp", &self.seccomp.as_ref().map(Vec::len))
            .finish()
    }
}

impl ChildRestrictions {
    /// The ruleset for `policy`; an error says why it cannot be built (fail closed).
    pub(crate) fn build(policy: &SandboxPolicy, network: bool) -> Result<Self, Unusable> {
        let fail = |e: &dyn std::fmt::Display| Unusable::Ruleset(e.to_string());
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(|e| fail(&e))?
            .scope(Scope::AbstractUnixSocket | Scope::Signal)
            .map_err(|e| fail(&e))?;
        if !network {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
                .map_err(|e| fail(&e))?;
        }
        let hidden = policy.hidden();
        let slash = open_nofollow(std::path::Path::new("/")).map_err(|e| fail(&e))?;
        let mut grants = grants_beneath(
            std::path::Path::new("/"),
            slash,
            AccessFs::from_read(FS_ABI),
            &hidden,
        );
        for device in ["/dev/null", "/dev/zero", "/dev/full"] {
            if let Ok(fd) = open_nofollow(std::path::Path::new(device)) {
                grants.push((fd, AccessFs::from_file(FS_ABI)));
            }
        }
        if policy.mode() == SandboxMode::WorkspaceWrite {
            // The directories pinned when the policy was made, by handle: a root renamed and
            // replaced by a symlink since then grants nothing new.
            for root in policy.pinned_roots() {
                let handle = root.handle.try_clone().map_err(|e| fail(&e))?;
                let all = AccessFs::from_all(FS_ABI);
                grants.extend(grants_beneath(&root.path, handle, all, &hidden));
            }
        }
        let mut created = ruleset.create().map_err(|e| fail(&e))?;
        for (fd, access) in grants {
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| fail(&e))?;
        }
        let ruleset: Option<OwnedFd> = created.into();
        let ruleset = ruleset.ok_or(Unusable::NotEnforced)?;
        let seccomp = if network {
            None
        } else {
            Some(network_filter().ok_or(Unusable::NoFilterFor(std::env::consts::ARCH))?)
        };
        Ok(ChildRestrictions { ruleset, seccomp })
    }

    /// Confines the calling process.
    ///
    /// # Safety
    /// Meant for the child between fork and exec: it makes raw system calls only, allocates
    /// nothing and takes no lock.
    pub(crate) unsafe fn apply(&self) -> std::io::Result<()> {
        let last = std::io::Error::last_os_error;
        // SAFETY: plain system calls on values prepared by the parent.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(last());
            }
            crate::caps::drop_capabilities()?;
            if libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            ) != 0
            {
                return Err(last());
            }
            if let Some(filter) = &self.seccomp {
                let program = libc::sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_ptr().cast_mut(),
                };
                if libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &program as *const libc::sock_fprog,
                ) != 0
                {
                    return Err(last());
                }
            }
        }
        Ok(())
    }
}

/// The audit architecture of the build target, as seccomp reports it.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: Option<u32> = None;

/// A classic BPF seccomp program: `socket()` for anything but `AF_UNIX`, and `io_uring_setup`
/// (whose operations can open sockets without the `socket` call), fail with `EPERM`. So do
/// x32 system calls, which would otherwise reach `socket` under another number. A foreign
/// architecture's system call kills the process.
fn network_filter() -> Option<Vec<libc::sock_filter>> {
    let arch = AUDIT_ARCH?;
    let op = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    };
    let load = |offset: u32| op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset, 0, 0);
    let ret = |k: u32| op(libc::BPF_RET | libc::BPF_K, k, 0, 0);
    let jeq = |k: u32, jt: u8, jf: u8| op(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K, k, jt, jf);
    let jge = |k: u32, jt: u8, jf: u8| op(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, k, jt, jf);
    // struct seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low word, little endian).
    Some(vec![
        /* 0 */ load(4),
        /* 1 */ jeq(arch, 1, 0),
        /* 2 */ ret(libc::SECCOMP_RET_KILL_PROCESS),
        /* 3 */ load(0),
        /* 4 */ jge(0x4000_0000, 5, 0),
        /* 5 */ jeq(libc::SYS_socket as u32, 0, 2),
        /* 6 */ load(16),
        /* 7 */ jeq(libc::AF_UNIX as u32, 1, 2),
        /* 8 */ jeq(libc::SYS_io_uring_setup as u32, 1, 0),
        /* 9 */ ret(libc::SECCOMP_RET_ALLOW),
        /* 10 */ ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_jumps_stay_inside_the_program() {
        let filter = network_filter().unwrap();
        for (pc, insn) in filter.iter().enumerate() {
            if insn.code as u32 & 0x07 == libc::BPF_JMP {
                assert!(pc + 1 + (insn.jt as usize) < filter.len());
                assert!(pc + 1 + (insn.jf as usize) < filter.len());
            }
        }
        assert_eq!(
            filter.last().map(|i| i.k),
            Some(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32)
        );
    }
}
