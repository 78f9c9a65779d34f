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

/// A started command.
#[derive(Debug)]
pub struct ShellProcess {
    pgid: i32,
    tag: String,
    pub stdout: Arc<Mutex<StreamCapture>>,
    pub stderr: Arc<Mutex<StreamCapture>>,
    exit: watch::Receiver<Option<Exit>>,
    stopping: AtomicBool,
}

impl ShellProcess {
    /// Starts the command; stdin is `spec.stdin`, or `/dev/null`.
    pub fn spawn(spec: Spec) -> std::io::Result<Arc<ShellProcess>> {
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
        if let (Some(bytes), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
            // A reader that stops early (a hook that ignores its input) is not an error.
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                let _ = pipe.write_all(&bytes).await;
            });
        }
        let pid = child.id().map_or(-1, |id| id as i32);
        let target = |stream: &str| {
            spec.spill.as_ref().map(|t| SpillTarget {
                dir: t.dir.clone(),
                name: format!("{}-{stream}.log", t.name),
            })
        };
        let capture = |stream: &str| {
            Arc::new(Mutex::new(StreamCapture::new(
                target(stream),
                spec.redactor.clone(),
            )))
        };
        let (stdout, stderr) = (capture("stdout"), capture("stderr"));
        let captures = [stdout.clone(), stderr.clone()];
        let readers = [
            child.stdout.take().map(|pipe| pump(pipe, stdout.clone())),
            child.stderr.take().map(|pipe| pump(pipe, stderr.clone())),
        ];
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            // Pipes a descendant still holds are given the grace period, then abandoned.
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
            use std::os::unix::process::ExitStatusExt as _;
            let exit = match status {
                Ok(status) => Exit {
                    code: status.code(),
                    signal: status.signal(),
                },
                Err(_) => Exit {
                    code: None,
                    signal: None,
                },
            };
            let _ = tx.send(Some(exit));
        });
        Ok(Arc::new(ShellProcess {
            pgid: pid,
            tag: spec.tag,
            stdout,
            stderr,
            exit: rx,
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
        signal_tree(self.pgid, &self.tag, libc::SIGTERM);
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(GRACE).await;
            signal_tree(this.pgid, &this.tag, libc::SIGKILL);
        });
    }
}

impl Drop for ShellProcess {
    fn drop(&mut self) {
        // A command whose call was abandoned must not run on unseen. What a finished command
        // left running is stopped at the end of the run (see `JobRegistry::shutdown`).
        if self.exit().is_none() {
            signal_tree(self.pgid, &self.tag, libc::SIGKILL);
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

/// Signals the process group and every process carrying `tag`.
fn signal_tree(pgid: i32, tag: &str, signal: i32) {
    if pgid > 0 {
        // SAFETY: signalling a process group we created.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
    sweep(&format!("{TAG_VARIABLE}={tag}"), signal);
}

/// Signals every process whose environment holds `entry` exactly (or, ending in `*`, starts
/// with it); returns how many.
pub fn sweep(entry: &str, signal: i32) -> usize {
    let (needle, prefix) = match entry.strip_suffix('*') {
        Some(stem) => (stem.as_bytes(), true),
        None => (entry.as_bytes(), false),
    };
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut hit = 0;
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
            hit += 1;
        }
    }
    hit
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
