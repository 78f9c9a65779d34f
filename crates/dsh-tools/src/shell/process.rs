//! A running command and its process tree.
//!
//! Each command starts in a new session (`setsid`), so it and everything it starts share one
//! process group, which is signalled as a whole: SIGTERM, then SIGKILL after a 3 s grace if any
//! of it is still alive. Descendants can leave the group (`setsid`, double forks: how daemons
//! start), so every command's environment carries a tag ([`TAG_VARIABLE`]) and a stop also
//! signals every process that still has the tag, found through `/proc/<pid>/environ`. Only a
//! process that clears its own environment escapes that; under bubblewrap the PID namespace
//! catches those too.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::AsyncReadExt as _;
use tokio::sync::watch;

use super::capture::{SpillTarget, StreamCapture};

/// The variable that marks every process a command starts.
pub const TAG_VARIABLE: &str = "DSH_PROCESS_TAG";
/// From SIGTERM to SIGKILL; also how long pipes held open by descendants are drained after exit.
pub const GRACE: Duration = Duration::from_secs(3);

/// What to run.
#[derive(Debug, Clone)]
pub struct Spec {
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub tag: String,
    /// Where full copies of long streams go; the stream name is appended.
    pub spill: Option<SpillTarget>,
    /// What the child applies to itself before exec (Landlock, seccomp).
    pub confinement: Option<dsh_sandbox::ChildSetup>,
    /// Written to its stdin, which is then closed; `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Takes secrets out of its output as it is read (see [`StreamCapture`]).
    pub redactor: Option<crate::Redactor>,
    /// The run's sandbox helper, when the command may run through it (`argv` is then what to
    /// run if it cannot).
    pub helper: Option<dsh_sandbox::HelperLaunch>,
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.signal.is_none()
    }
}

/// How a command was started, which decides how it is signalled.
#[derive(Debug)]
enum Launched {
    /// dsh spawned it (its argv may be `bwrap ...`); this is its process group.
    Direct { pgid: i32 },
    /// The run's sandbox helper runs it, in namespaces dsh's PIDs do not reach.
    Helper(dsh_sandbox::HelperChild),
}

/// A started command.
#[derive(Debug)]
pub struct ShellProcess {
    launched: Launched,
    tag: String,
    pub stdout: Arc<Mutex<StreamCapture>>,
    pub stderr: Arc<Mutex<StreamCapture>>,
    exit: watch::Receiver<Option<Exit>>,
    stopping: AtomicBool,
}

impl ShellProcess {
    /// Starts the command; stdin is `spec.stdin`, or `/dev/null`. Through the run's sandbox
    /// helper when the command may use one; when the helper cannot take it, as its own
    /// `bwrap` (the same sandbox, started the slow way).
    pub async fn spawn(spec: Spec) -> std::io::Result<Arc<ShellProcess>> {
        if let Some(launch) = &spec.helper {
            match spawn_by_helper(&spec, launch).await {
                Ok(process) => return Ok(process),
                Err(dsh_sandbox::HelperRefusal::Failed(error)) => return Err(error),
                Err(dsh_sandbox::HelperRefusal::FallBack(_)) => {}
            }
        }
        Self::spawn_directly(spec)
    }

    fn spawn_directly(spec: Spec) -> std::io::Result<Arc<ShellProcess>> {
        let (program, args) = spec
            .argv
            .split_first()
            .ok_or_else(|| std::io::Error::other("empty command line"))?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(if spec.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let confinement = spec.confinement.clone();
        // SAFETY: between fork and exec the hook makes system calls only: setsid, prctl, and
        // the sandbox's own restrictions, prepared by the parent.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                // The command does not outlive dsh if dsh is killed outright (its own
                // descendants are caught by the sandbox or the end-of-run sweep).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                if let Some(setup) = &confinement {
                    setup.apply()?;
                }
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        if let (Some(bytes), Some(pipe)) = (spec.stdin.clone(), child.stdin.take()) {
            feed(pipe, bytes);
        }
        let pid = child.id().map_or(-1, |id| id as i32);
        let (stdout, stderr) = captures(&spec);
        let readers = [
            child.stdout.take().map(|pipe| pump(pipe, stdout.clone())),
            child.stderr.take().map(|pipe| pump(pipe, stderr.clone())),
        ];
        let ended = async move {
            use std::os::unix::process::ExitStatusExt as _;
            match child.wait().await {
                Ok(status) => Exit {
                    code: status.code(),
                    signal: status.signal(),
                },
                Err(_) => Exit {
                    code: None,
                    signal: None,
                },
            }
        };
        let exit = settle(ended, readers, [stdout.clone(), stderr.clone()]);
        Ok(Arc::new(ShellProcess {
            launched: Launched::Direct { pgid: pid },
            tag: spec.tag,
            stdout,
            stderr,
            exit,
            stopping: AtomicBool::new(false),
        }))
    }

    /// How it ended, once it has.
    pub fn exit(&self) -> Option<Exit> {
        *self.exit.borrow()
    }

    /// Waits until it has ended and its output is collected.
    pub async fn settled(&self) -> Exit {
        let mut rx = self.exit.clone();
        loop {
            if let Some(exit) = *rx.borrow_and_update() {
                return exit;
            }
            if rx.changed().await.is_err() {
                return Exit {
                    code: None,
                    signal: None,
                };
            }
        }
    }

    /// Whether a stop was asked for.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Stops the whole tree: SIGTERM now, SIGKILL after the grace to whatever is left.
    /// Idempotent; returns at once.
    pub fn terminate(self: &Arc<Self>) {
        if self.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        self.signal_tree(libc::SIGTERM);
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(GRACE).await;
            this.signal_tree(libc::SIGKILL);
        });
    }

    /// Signals its process group and every process carrying its tag; for a command the helper
    /// runs, only its group, through the helper: what left the group dies with its PID
    /// namespace when the command ends, and a signal from outside would reach the command
    /// before its init knew that dsh had stopped it (the init reports a stopped command as
    /// killed by the stop, as a `bwrap` of its own would be).
    fn signal_tree(&self, signal: i32) {
        match &self.launched {
            Launched::Direct { pgid } => {
                if *pgid > 0 {
                    // SAFETY: signalling a process group we created.
                    unsafe {
                        libc::kill(-pgid, signal);
                    }
                }
                sweep(&format!("{TAG_VARIABLE}={}", self.tag), signal);
            }
            Launched::Helper(child) => child.signal(signal),
        }
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        // A command whose call was abandoned must not run on unseen. What a finished command
        // left running is stopped at the end of the run (see `JobRegistry::shutdown`).
        if self.exit().is_none() {
            self.signal_tree(libc::SIGKILL);
        }
    }
}

fn pump(
    mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    into: Arc<Mutex<StreamCapture>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => into
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(&buf[..n]),
            }
        }
    })
}

/// Starts the command through the run's sandbox helper, with pipes of dsh's making as its
/// stdio. Boxed so that it is compiled once, here, and not in every crate whose `async` code
/// reaches it.
fn spawn_by_helper<'a>(
    spec: &'a Spec,
    launch: &'a dsh_sandbox::HelperLaunch,
) -> BoxFuture<'a, Result<Arc<ShellProcess>, dsh_sandbox::HelperRefusal>> {
    Box::pin(spawn_through(spec, launch))
}

async fn spawn_through(
    spec: &Spec,
    launch: &dsh_sandbox::HelperLaunch,
) -> Result<Arc<ShellProcess>, dsh_sandbox::HelperRefusal> {
    use dsh_sandbox::HelperRefusal;
    use std::os::fd::AsFd as _;
    let fall_back = |e: std::io::Error| HelperRefusal::FallBack(e.to_string());
    let (out_read, out_write) = pipe().map_err(fall_back)?;
    let (err_read, err_write) = pipe().map_err(fall_back)?;
    let (stdin, stdin_write) = match &spec.stdin {
        Some(_) => {
            let (read, write) = pipe().map_err(fall_back)?;
            (read, Some(write))
        }
        None => (
            std::fs::File::open("/dev/null").map_err(fall_back)?.into(),
            None,
        ),
    };
    // Everything that can fail is done before the request: once it is sent, the command may
    // be running, and must not be run a second way.
    let receiver = |fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).map_err(fall_back);
    let (out_read, err_read) = (receiver(out_read)?, receiver(err_read)?);
    let stdin_sender = match stdin_write {
        Some(write) => {
            Some(tokio::net::unix::pipe::Sender::from_owned_fd(write).map_err(fall_back)?)
        }
        None => None,
    };
    let child = launch
        .spawn(
            &spec.env,
            &spec.cwd,
            [stdin.as_fd(), out_write.as_fd(), err_write.as_fd()],
        )
        .await?;
    // Only the command holds the other ends now, so the pipes end when it does.
    drop((stdin, out_write, err_write));
    if let (Some(bytes), Some(sender)) = (spec.stdin.clone(), stdin_sender) {
        feed(sender, bytes);
    }
    let (stdout, stderr) = captures(spec);
    let readers = [
        Some(pump(out_read, stdout.clone())),
        Some(pump(err_read, stderr.clone())),
    ];
    let waiting = child.waiter();
    let launched = Launched::Helper(child);
    let ended = async move {
        let exit = waiting.wait().await;
        Exit {
            code: exit.code,
            signal: exit.signal,
        }
    };
    let exit = settle(ended, readers, [stdout.clone(), stderr.clone()]);
    Ok(Arc::new(ShellProcess {
        launched,
        tag: spec.tag.clone(),
        stdout,
        stderr,
        exit,
        stopping: AtomicBool::new(false),
    }))
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd as _;
    let mut fds = [-1; 2];
    // SAFETY: a valid array for the two new descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: just created, owned here.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Writes `bytes` to a command's stdin, then closes it. A reader that stops early (a hook
/// that ignores its input) is not an error.
fn feed(mut pipe: impl tokio::io::AsyncWrite + Unpin + Send + 'static, bytes: Vec<u8>) {
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt as _;
        let _ = pipe.write_all(&bytes).await;
    });
}

/// The two captures of a command's output.
fn captures(spec: &Spec) -> (Arc<Mutex<StreamCapture>>, Arc<Mutex<StreamCapture>>) {
    let capture = |stream: &str| {
        let target = spec.spill.as_ref().map(|t| SpillTarget {
            dir: t.dir.clone(),
            name: format!("{}-{stream}.log", t.name),
        });
        Arc::new(Mutex::new(StreamCapture::new(
            target,
            spec.redactor.clone(),
        )))
    };
    (capture("stdout"), capture("stderr"))
}

/// Once `ended` says how the command ended, gives the readers of pipes a descendant still
/// holds the grace period (then abandons them), settles the captures, and publishes the exit.
fn settle(
    ended: impl std::future::Future<Output = Exit> + Send + 'static,
    readers: [Option<tokio::task::JoinHandle<()>>; 2],
    captures: [Arc<Mutex<StreamCapture>>; 2],
) -> watch::Receiver<Option<Exit>> {
    let (tx, rx) = watch::channel(None);
    tokio::spawn(async move {
        let exit = ended.await;
        for reader in readers.into_iter().flatten() {
            let abort = reader.abort_handle();
            if tokio::time::timeout(GRACE, reader).await.is_err() {
                abort.abort();
            }
        }
        for capture in captures {
            capture
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .finish();
        }
        let _ = tx.send(Some(exit));
    });
    rx
}

/// What one pass of [`sweep`] over `/proc` found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Processes that carried the entry and were signalled.
    pub signalled: usize,
    /// Processes caught in the middle of an `execve`: for that instant the kernel shows no
    /// environment (the new image's is not laid out yet), so whether they carry the entry
    /// cannot be told. A caller that must reach every process passes over `/proc` again.
    pub mid_exec: usize,
}

/// Signals every process whose environment holds `entry` exactly (or, ending in `*`, starts
/// with it).
pub fn sweep(entry: &str, signal: i32) -> Swept {
    let (needle, prefix) = match entry.strip_suffix('*') {
        Some(stem) => (stem.as_bytes(), true),
        None => (entry.as_bytes(), false),
    };
    let me = std::process::id();
    let mut swept = Swept::default();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return swept;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.is_empty() {
            if in_exec(pid) {
                swept.mid_exec += 1;
            }
            continue;
        }
        let marked = environ.split(|b| *b == 0).any(|var| {
            if prefix {
                var.starts_with(needle)
            } else {
                var == needle
            }
        });
        if marked {
            // SAFETY: signalling a process that carries our tag.
            unsafe {
                libc::kill(pid as i32, signal);
            }
            swept.signalled += 1;
        }
    }
    swept
}

/// Whether a process that shows no environment is between the two images of an `execve`:
/// neither a zombie nor a kernel thread (which never have one), and with no arguments either
/// (a program started with an empty environment still has its arguments).
fn in_exec(pid: u32) -> bool {
    /// `PF_KTHREAD` in the flags field of `/proc/<pid>/stat`.
    const KERNEL_THREAD: u64 = 0x0020_0000;
    let Some(fields) = stat_fields(pid) else {
        return false;
    };
    // From the third: state, ppid, pgrp, session, tty_nr, tpgid, flags.
    let fields: Vec<&str> = fields.split_whitespace().take(7).collect();
    let zombie = fields.first().is_some_and(|s| *s == "Z" || *s == "X");
    let kernel = fields
        .get(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|flags| flags & KERNEL_THREAD != 0);
    !zombie
        && !kernel
        && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|args| args.is_empty())
}

/// The fields of `/proc/<pid>/stat` after the command name (from the third, the state): the
/// name, in parentheses, may hold spaces and parentheses, so they are counted from its last
/// `)`. `None` for a process that is gone.
pub(super) fn stat_fields(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.to_owned())
}

/// The name of a signal, as the reference prints it.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}
