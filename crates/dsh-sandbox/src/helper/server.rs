//! The helper's side, run by `bwrap` inside a run's sandbox: it reads requests from dsh and
//! starts each command in a PID and mount namespace of its own, under a small init that
//! forwards signals to the command's process group, reports how it ended, and whose exit
//! takes down whatever the command left running (as bwrap's own init does for a sandbox of one
//! command).
//!
//! Process layout per command, inside the sandbox:
//!
//! ```text
//! helper ── clone(NEWPID|NEWNS) ──> init (PID 1: fresh /proc, signal forwarding)
//!                                     └─ fork ──> command (setsid, no capabilities, execve)
//! ```
//!
//! The helper is single-threaded and never starts a thread, so after each fork the child may
//! do anything the parent could (allocate, format), not only async-signal-safe calls.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

use super::wire::{self, Reply, Request, Stage};

/// A command being run: its init's PID (as the helper sees it) and a pidfd to poll.
struct Running {
    id: u64,
    init: libc::pid_t,
    pidfd: OwnedFd,
}

/// Serves on `socket` until dsh closes it; returns the process's exit code.
pub(crate) fn serve(socket: OwnedFd) -> i32 {
    // A panic here or in a forked child must not unwind into this loop (a child would become
    // a second helper on the same socket).
    std::panic::set_hook(Box::new(|_| {
        // SAFETY: leaving at once, as a failed child does.
        unsafe { libc::_exit(127) }
    }));
    // Nothing in the sandbox may read this process's memory or descriptors through /proc, and
    // it does not outlive bwrap's init. Mounts the host makes from now on (a USB drive, an
    // automount) do not reach the sandbox, which lives as long as the run.
    // SAFETY: prctl and mount with integer arguments and valid C strings.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return 1;
        }
    }
    let socket = socket.as_fd();
    if super::relay::start_if_asked(socket.as_raw_fd()).is_err() {
        return 1;
    }
    if wire::send(socket, &Reply::Ready.encode(), &[]).is_err() {
        return 1;
    }
    let mut running: Vec<Running> = Vec::new();
    let mut buf = vec![0u8; wire::MAX_PACKET];
    loop {
        let mut polls: Vec<libc::pollfd> = std::iter::once(socket.as_raw_fd())
            .chain(running.iter().map(|r| r.pidfd.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `polls` is a valid array of its length.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, -1) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            stop_all(&running);
            return 1;
        }
        let ended: Vec<usize> = (polls[1..].iter().enumerate())
            .filter(|(_, poll)| poll.revents != 0)
            .map(|(i, _)| i)
            .collect();
        for index in ended.into_iter().rev() {
            if reap(socket, &running[index]) {
                running.swap_remove(index);
            }
        }
        if polls[0].revents == 0 {
            continue;
        }
        loop {
            match wire::recv(socket, &mut buf) {
                Ok(Some((n, fds))) => match Request::decode(&buf[..n]) {
                    Some(request) => handle(socket, request, fds, &mut running),
                    // Garbage from dsh itself: stop rather than guess.
                    None => {
                        stop_all(&running);
                        return 1;
                    }
                },
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                // dsh is gone (or the socket broke): so is every command.
                Ok(None) | Err(_) => {
                    stop_all(&running);
                    return 0;
                }
            }
        }
    }
}

fn stop_all(running: &[Running]) {
    for command in running {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(command.init, libc::SIGKILL);
        }
    }
}

fn handle(socket: BorrowedFd<'_>, request: Request, fds: Vec<OwnedFd>, running: &mut Vec<Running>) {
    match request {
        Request::Spawn { id, argv, env, cwd } => {
            let Ok(stdio) = <[OwnedFd; 3]>::try_from(fds) else {
                let _ = send(
                    socket,
                    Reply::Failed {
                        id,
                        stage: Stage::Setup,
                        errno: libc::EBADF,
                    },
                );
                return;
            };
            match launch(socket, id, &argv, &env, &cwd, &stdio) {
                Ok(command) => running.push(command),
                Err(errno) => {
                    let _ = send(
                        socket,
                        Reply::Failed {
                            id,
                            stage: Stage::Setup,
                            errno,
                        },
                    );
                }
            }
            // `stdio` is closed here: only the command holds its ends now.
        }
        Request::Signal { id, signal } => {
            if let Some(command) = running.iter().find(|r| r.id == id) {
                // The init forwards anything but SIGKILL to the command's process group;
                // SIGKILL ends the init, and with it everything in its namespace.
                // SAFETY: signalling our own child.
                unsafe {
                    libc::kill(command.init, signal);
                }
            }
        }
    }
}

fn send(socket: BorrowedFd<'_>, reply: Reply) -> std::io::Result<()> {
    wire::send(socket, &reply.encode(), &[])
}

/// Collects an init that ended; false if it has not yet. One that exited on its own has
/// reported already; one that was killed (a stop's SIGKILL) or could not report could not, so
/// its end is reported here.
fn reap(socket: BorrowedFd<'_>, command: &Running) -> bool {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    let reaped = unsafe { libc::waitpid(command.init, &mut status, libc::WNOHANG) };
    if reaped == 0 {
        return false;
    }
    if reaped != command.init {
        // Gone without a status (cannot happen to our own child): say it ended.
        let _ = send(
            socket,
            Reply::Ended {
                id: command.id,
                code: None,
                signal: None,
            },
        );
        return true;
    }
    let report = if libc::WIFSIGNALED(status) {
        Some(Reply::Ended {
            id: command.id,
            code: None,
            signal: Some(libc::WTERMSIG(status)),
        })
    } else if libc::WEXITSTATUS(status) != 0 {
        Some(Reply::Ended {
            id: command.id,
            code: None,
            signal: None,
        })
    } else {
        None
    };
    if let Some(report) = report {
        let _ = send(socket, report);
    }
    true
}

/// Starts one command's init in new PID and mount namespaces; returns it, or the errno of
/// the `clone`.
fn launch(
    socket: BorrowedFd<'_>,
    id: u64,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    cwd: &[u8],
    stdio: &[OwnedFd; 3],
) -> Result<Running, i32> {
    let mut pidfd: libc::c_int = -1;
    let flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS | libc::CLONE_PIDFD | libc::SIGCHLD;
    // SAFETY: a fork-like clone (no new stack: the child runs on a copy of ours), from a
    // single-threaded process; the pidfd is written to `pidfd`, the third argument on the
    // architectures the helper is offered on (x86_64, aarch64: `super::offer`).
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags as libc::c_ulong,
            0 as libc::c_ulong,
            &mut pidfd as *mut libc::c_int,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    if pid == 0 {
        init(socket, id, argv, env, cwd, stdio);
    }
    Ok(Running {
        id,
        init: pid as libc::pid_t,
        // SAFETY: the kernel just gave us this descriptor.
        pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
    })
}

/// The command's process group, for the init's signal handler.
static COMMAND: AtomicI32 = AtomicI32::new(0);
/// The last signal dsh had passed on (a stop, an interrupt); 0 if none.
static PASSED_ON: AtomicI32 = AtomicI32::new(0);

/// The signals a stop or an interrupt sends, passed on to the command's process group.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

extern "C" fn forward(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // Only dsh's signals: sent with kill(2) (SI_USER, which no process can fake for
    // another with sigqueue) from outside the command's PID namespace, so with no sender
    // (si_pid 0). One the command sends its PID 1 is ignored, as bwrap's init ignores it.
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    if unsafe { (*info).si_code != libc::SI_USER || (*info).si_pid() != 0 } {
        return;
    }
    let group = COMMAND.load(Ordering::SeqCst);
    PASSED_ON.store(signal, Ordering::SeqCst);
    if group > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(-group, signal);
        }
    }
}

/// PID 1 of the command's namespaces: a private /proc, the command, then its report.
fn init(
    socket: BorrowedFd<'_>,
    id: u64,
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    cwd: &[u8],
    stdio: &[OwnedFd; 3],
) -> ! {
    let fail = |stage: Stage, errno: i32| -> ! {
        let reported = send(socket, Reply::Failed { id, stage, errno }).is_ok();
        // SAFETY: leaving the forked child without running the parent's exit handlers. A
        // report that did not go out is the helper's to make (an init that did not exit 0).
        unsafe { libc::_exit(if reported { 0 } else { 1 }) }
    };
    let last_errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: prctl and mount with valid C strings. The mounts stay in our new mount
    // namespace: it is a copy of the helper's, whose mounts are all private (`serve`).
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        // The command's own /proc: its PIDs are the ones `ps` shows and `kill` takes.
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            fail(Stage::Setup, last_errno());
        }
    }
    // What bwrap's `--proc` covers: kernel settings a uid-0 command could change without
    // any capability (`/proc/sys/kernel/core_pattern` runs a program as host root), and the
    // SysRq trigger.
    for cover in crate::bwrap::PROC_COVERS {
        let Ok(cover) = CString::new(cover) else {
            fail(Stage::Setup, libc::EINVAL)
        };
        if let Err(errno) = read_only_in_place(&cover) {
            fail(Stage::Setup, errno);
        }
    }
    // The init needs no privilege from here on: only to wait, pass signals on and report.
    if let Err(errno) = drop_capabilities() {
        fail(Stage::Setup, errno);
    }
    // SAFETY: prctl with integer arguments; dropping capabilities must not make it dumpable.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let mut pipe = [-1; 2];
    // SAFETY: a valid array for the two new descriptors.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        fail(Stage::Setup, last_errno());
    }
    // SAFETY: just created, owned here.
    let (status_read, status_write) =
        unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    // SAFETY: fork in a single-threaded process.
    let child = unsafe { libc::fork() };
    if child < 0 {
        fail(Stage::Setup, last_errno());
    }
    if child == 0 {
        command(argv, env, cwd, stdio, status_write.as_raw_fd());
    }
    drop(status_write);
    // Only the command holds its stdio now, so its pipes end when it and what it started do.
    for fd in stdio {
        // SAFETY: closing this forked copy's descriptors, which it never uses again.
        unsafe {
            libc::close(fd.as_raw_fd());
        }
    }
    COMMAND.store(child, Ordering::SeqCst);
    for signal in FORWARDED {
        // SAFETY: installing a handler that only calls kill.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as *const () as usize;
            action.sa_flags = libc::SA_RESTART | libc::SA_SIGINFO;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    // The command reports a failed chdir or exec through the pipe; a successful exec closes it.
    let mut report = [0u8; 8];
    let read = read_full(status_read.as_raw_fd(), &mut report);
    if read == report.len() {
        let stage = match report[0] {
            1 => Stage::Chdir,
            2 => Stage::Exec,
            _ => Stage::Setup,
        };
        let errno = i32::from_le_bytes(report[4..8].try_into().unwrap_or_default());
        wait_for(child);
        fail(stage, errno);
    }
    let _ = send(socket, Reply::Started { id });
    let status = wait_for(child);
    // Reported as a `bwrap` of its own would have ended: a command that a signal of its own
    // ended (`kill -9 $$`) as bwrap's init exits, with 128 + the signal; one that dsh stopped
    // as bwrap itself, killed by that signal.
    let (code, signal) = if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        if PASSED_ON.load(Ordering::SeqCst) != 0 {
            (None, Some(signal))
        } else {
            (Some(128 + signal), None)
        }
    } else {
        (Some(libc::WEXITSTATUS(status)), None)
    };
    let reported = send(socket, Reply::Ended { id, code, signal }).is_ok();
    // SAFETY: as above. Everything else in the namespace dies with us. A report that did not
    // go out is the helper's to make (it reports an init that did not exit 0).
    unsafe { libc::_exit(if reported { 0 } else { 1 }) }
}

/// Binds `path` over itself read-only (no setuid, devices or exec); one that does not exist
/// is left alone. Err: the errno.
fn read_only_in_place(path: &std::ffi::CStr) -> Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: mount with valid C strings, in our own mount namespace.
    unsafe {
        if libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ) != 0
        {
            let error = errno();
            return if error == libc::ENOENT {
                Ok(())
            } else {
                Err(error)
            };
        }
        if libc::mount(
            std::ptr::null(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND
                | libc::MS_REMOUNT
                | libc::MS_RDONLY
                | libc::MS_NOSUID
                | libc::MS_NODEV
                | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(errno());
        }
    }
    Ok(())
}

fn read_full(fd: RawFd, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reading into the rest of `buf`.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        match n {
            0 => break,
            n if n > 0 => got += n as usize,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => break,
        }
    }
    got
}

/// Waits for `child`, reaping whatever else ends meanwhile (orphans of the command's are
/// ours, as PID 1); its wait status. One that cannot be had ends the init: the helper then
/// reports the command as ended without a status.
fn wait_for(child: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: waiting for any child of ours.
        let reaped = unsafe { libc::waitpid(-1, &mut status, 0) };
        if reaped == child {
            return status;
        }
        if reaped < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // SAFETY: leaving the forked child.
            unsafe { libc::_exit(1) }
        }
    }
}

/// The command itself: a session of its own, its stdio, its folder, no capabilities, then
/// its program. A failure is written to `report` (stage, errno) before exiting.
fn command(
    argv: &[Vec<u8>],
    env: &[Vec<u8>],
    cwd: &[u8],
    stdio: &[OwnedFd; 3],
    report: RawFd,
) -> ! {
    let fail = |stage: u8, errno: i32| -> ! {
        let mut bytes = [0u8; 8];
        bytes[0] = stage;
        bytes[4..8].copy_from_slice(&errno.to_le_bytes());
        // SAFETY: writing a small buffer, then leaving the forked child.
        unsafe {
            libc::write(report, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127)
        }
    };
    let last_errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: plain system calls on our own process.
    unsafe {
        // Default dispositions and no blocked signal: the helper's process inherited
        // SIG_IGN for SIGPIPE from the Rust runtime, which a command must not.
        for signal in 1..libc::SIGRTMAX() {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        if libc::setsid() < 0 {
            fail(0, last_errno());
        }
        for (target, fd) in stdio.iter().enumerate() {
            if libc::dup2(fd.as_raw_fd(), target as RawFd) < 0 {
                fail(0, last_errno());
            }
        }
        // Nothing else of the helper's reaches the command (all of it is close-on-exec
        // already; this is the guard against one that is not).
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC as libc::c_uint,
        );
    }
    let Ok(cwd) = CString::new(cwd) else {
        fail(1, libc::EINVAL)
    };
    // SAFETY: a valid C string.
    if unsafe { libc::chdir(cwd.as_ptr()) } != 0 {
        fail(1, last_errno());
    }
    if let Err(errno) = drop_capabilities() {
        fail(0, errno);
    }
    scope_abstract_sockets();
    let Ok(argv) = argv
        .iter()
        .map(|a| CString::new(a.as_slice()))
        .collect::<Result<Vec<_>, _>>()
    else {
        fail(2, libc::EINVAL)
    };
    let Ok(env) = env
        .iter()
        .map(|e| CString::new(e.as_slice()))
        .collect::<Result<Vec<_>, _>>()
    else {
        fail(2, libc::EINVAL)
    };
    let Some(program) = argv.first() else {
        fail(2, libc::ENOENT)
    };
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let mut env_ptrs: Vec<*const libc::c_char> = env.iter().map(|e| e.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());
    let mut errno = libc::ENOENT;
    for candidate in candidates(program.as_bytes(), &env) {
        // SAFETY: null-terminated arrays of valid C strings.
        unsafe {
            libc::execve(candidate.as_ptr(), argv_ptrs.as_ptr(), env_ptrs.as_ptr());
        }
        let error = last_errno();
        // Keep the most telling failure: a program found but not runnable beats "not here".
        if error != libc::ENOENT && error != libc::ENOTDIR {
            errno = error;
        }
    }
    fail(2, errno)
}

/// Where to look for `program`: itself when it holds a slash, else each folder of the
/// command's own `PATH` (as bwrap's `execvp` would, in the command's environment).
fn candidates(program: &[u8], env: &[CString]) -> Vec<CString> {
    if program.contains(&b'/') {
        return CString::new(program).into_iter().collect();
    }
    let path = env
        .iter()
        .find_map(|e| e.as_bytes().strip_prefix(b"PATH="))
        .unwrap_or(b"/usr/local/bin:/usr/bin:/bin");
    path.split(|b| *b == b':')
        .map(|dir| if dir.is_empty() { &b"."[..] } else { dir })
        .filter_map(|dir| {
            let mut full = dir.to_vec();
            full.push(b'/');
            full.extend_from_slice(program);
            CString::new(full).ok()
        })
        .collect()
}

/// Keeps the command from connecting to abstract Unix sockets made outside it, with a Landlock
/// domain that restricts nothing else (ABI 6 scoping). With the network on, the sandbox shares
/// the host's network namespace, and with it the host's abstract sockets: on a desktop the X
/// server's among them. Best effort: a kernel before 6.12 refuses the ruleset, and the command
/// runs as before. Raw system calls only (after fork, before exec).
fn scope_abstract_sockets() {
    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
        handled_access_net: u64,
        scoped: u64,
    }
    const LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
    let attr = RulesetAttr {
        handled_access_fs: 0,
        handled_access_net: 0,
        scoped: LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET,
    };
    // SAFETY: the kernel's ruleset attribute, its size, no flags; then restricting this
    // process (which has `no_new_privs`) to the new ruleset, and closing it.
    unsafe {
        let ruleset = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            std::mem::size_of::<RulesetAttr>(),
            0u32,
        );
        if ruleset >= 0 {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                ruleset as libc::c_int,
                0u32,
            );
            libc::close(ruleset as libc::c_int);
        }
    }
}

/// Gives up every capability for good (`crate::caps::drop_capabilities`), with
/// `no_new_privs`, so that no `execve` of a set-user-ID or file-capability program grants any
/// back; the errno when it cannot.
fn drop_capabilities() -> Result<(), i32> {
    let errno = |e: std::io::Error| e.raw_os_error().unwrap_or(libc::EPERM);
    // SAFETY: prctl with integer arguments, and raw system calls on our own process.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(errno(std::io::Error::last_os_error()));
        }
        crate::caps::drop_capabilities().map_err(errno)
    }
}
