//! Giving up capabilities, for a command about to run (Landlock's child, the sandbox
//! helper's init).

/// Leaves the process no capabilities, now or after exec (with `no_new_privs`, which the
/// caller sets). Landlock confines root too, but root's capabilities reach past file paths
/// (loading a kernel module, raw devices through other calls, changing the clock);
/// bubblewrap drops them with `--cap-drop ALL`, and the sandbox helper's init with this.
///
/// # Safety
/// Raw system calls only, for the child between fork and exec.
pub(crate) unsafe fn drop_capabilities() -> std::io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: plain system calls; the structures are the kernel's v3 layout.
    unsafe {
        // The bounding set keeps an exec from regaining them (dropping needs CAP_SETPCAP; a
        // process without it has nothing to drop, so failures are ignored).
        for capability in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0);
        }
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const Header, none.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
