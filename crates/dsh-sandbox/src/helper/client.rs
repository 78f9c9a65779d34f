//! dsh's side of a sandbox helper: starting it under bubblewrap, and running commands
//! through it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::sync::{oneshot, watch};

use super::wire::{self, Reply, Request, Stage};

/// How long a new helper may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a command may take from its request to its program running.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How a command run by the helper ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HelperExit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// A running helper. Dropping the last handle closes the socket, which ends the helper and
/// whatever it still runs.
#[derive(Debug)]
pub(crate) struct Helper {
    shared: Arc<Shared>,
    /// bwrap; reaped by tokio once it exits.
    _process: tokio::process::Child,
}

#[derive(Debug)]
struct Shared {
    socket: AsyncFd<OwnedFd>,
    next: AtomicU64,
    commands: Mutex<Commands>,
}

#[derive(Debug, Default)]
struct Commands {
    waiting: HashMap<u64, Waiting>,
    /// The helper is gone: nothing more will start or end.
    gone: bool,
}

#[derive(Debug)]
struct Waiting {
    started: Option<oneshot::Sender<Result<(), (Stage, i32)>>>,
    ended: watch::Sender<Option<HelperExit>>,
}

impl Drop for Helper {
    fn drop(&mut self) {
        // SAFETY: shutting down our own socket; the reader task then sees the end.
        unsafe {
            libc::shutdown(self.shared.socket.get_ref().as_raw_fd(), libc::SHUT_RDWR);
        }
    }
}

/// Why a command did not start through the helper.
#[derive(Debug)]
pub(crate) enum NotStarted {
    /// The helper is no use (it is gone, or cannot make namespaces): run this command and the
    /// later ones another way.
    Broken(String),
    /// This command must be run another way (too long for a message; a working folder the
    /// helper cannot enter, which a `bwrap` of its own reports in its own words).
    Elsewhere(String),
    /// Its program cannot run at all: the command's own failure.
    Failed(io::Error),
}

impl Helper {
    /// Starts `argv` (`bwrap <profile> -- <exe> <HELPER_ARG>`) with one end of a socket pair
    /// as its descriptor 3 (and the sealed copy of the executable, when it is started from
    /// that, as its descriptor 4), and waits until the helper inside says it is ready.
    pub(crate) async fn start(
        argv: &[OsString],
        sealed: Option<BorrowedFd<'static>>,
        limits: crate::CommandLimits,
    ) -> Result<Helper, String> {
        let mut pair = [0; 2];
        // SAFETY: a valid array for the two new descriptors.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
                pair.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(format!("socketpair: {}", io::Error::last_os_error()));
        }
        // SAFETY: just created, owned here.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(pair[0]), OwnedFd::from_raw_fd(pair[1])) };
        // Theirs is blocking for the helper's reads: it waits in poll() anyway.
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(theirs.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(theirs.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        let (program, args) = argv.split_first().ok_or("empty helper command")?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(false);
        let fd = theirs.as_raw_fd();
        let sealed = sealed.map(|copy| copy.as_raw_fd());
        // Its own process group: a Ctrl-C or a `timeout` aimed at dsh's group is dsh's to
        // handle (stopping commands with their grace), not the helper's to die of.
        command.process_group(0);
        // SAFETY: between fork and exec only dup2 or fcntl, on descriptors we own, and
        // setrlimit.
        unsafe {
            command.pre_exec(move || {
                // The copy out of the way first: it may sit at 3 or 4 itself.
                let copy = match sealed {
                    Some(copy) => {
                        let moved = libc::fcntl(copy, libc::F_DUPFD_CLOEXEC, 10);
                        if moved < 0 {
                            return Err(io::Error::last_os_error());
                        }
                        Some(moved)
                    }
                    None => None,
                };
                // dup2 onto itself would leave close-on-exec set.
                let moved = if fd == 3 {
                    libc::fcntl(3, libc::F_SETFD, 0)
                } else {
                    libc::dup2(fd, 3)
                };
                if moved < 0 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(copy) = copy
                    && libc::dup2(copy, super::wire::SEALED_FD) < 0
                {
                    return Err(io::Error::last_os_error());
                }
                limits.apply()
            });
        }
        // `--die-with-parent` (like every PR_SET_PDEATHSIG) follows the thread that starts
        // bwrap: this runs in a tool call's task, on a runtime worker that lives as long as
        // the runtime, never on a short-lived blocking-pool thread.
        let mut process = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        drop(theirs);
        // SAFETY: an OwnedFd, moved in: nothing else can close it while it is registered.
        let socket = unsafe { AsyncFd::register(ours) }
            .map_err(|e| format!("cannot watch the helper's socket: {e}"))?;
        let mut buf = vec![0u8; 64];
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            loop {
                let mut guard = socket.readable().await?;
                match guard.try_io(|s| wire::recv(s.get_ref().as_fd(), &mut buf)) {
                    Ok(Ok(Some((n, _)))) => return Ok(Reply::decode(&buf[..n])),
                    Ok(Ok(None)) => return Ok(None),
                    Ok(Err(e)) => return Err(e),
                    Err(_would_block) => continue,
                }
            }
        })
        .await;
        match ready {
            Ok(Ok(Some(Reply::Ready))) => {
                // Nothing more is read from it: bwrap and the helper write there only when
                // they fail to start.
                drop(process.stderr.take());
            }
            outcome => {
                let _ = process.start_kill();
                let mut said = String::new();
                if let Some(mut stderr) = process.stderr.take() {
                    use tokio::io::AsyncReadExt as _;
                    let _ = tokio::time::timeout(
                        Duration::from_millis(500),
                        stderr.read_to_string(&mut said),
                    )
                    .await;
                }
                let said = said
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .trim();
                return Err(match outcome {
                    Err(_) => "the helper did not start within 5 s".to_owned(),
                    _ if !said.is_empty() => said.to_owned(),
                    Ok(Err(e)) => format!("the helper's socket failed: {e}"),
                    _ => "the helper exited before it was ready".to_owned(),
                });
            }
        }
        let shared = Arc::new(Shared {
            socket,
            next: AtomicU64::new(1),
            commands: Mutex::new(Commands::default()),
        });
        tokio::spawn(read_replies(shared.clone()));
        Ok(Helper {
            shared,
            _process: process,
        })
    }

    /// Ends the helper and, with it, every command it runs (each command's init dies with
    /// the helper, and each command's PID namespace with its init): they are reported killed.
    pub(crate) fn kill(&self) {
        if let Some(pid) = self._process.id() {
            // SAFETY: kill(2) on the helper's own process group (bwrap leads it).
            unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        }
    }

    /// Whether it can still take commands.
    pub(crate) fn alive(&self) -> bool {
        !self.shared.lock().gone
    }

    /// Runs `argv` with exactly `env` in `cwd`, its stdio the three descriptors given;
    /// returns once its program is running.
    pub(crate) async fn spawn(
        self: &Arc<Self>,
        argv: &[OsString],
        env: &[(OsString, OsString)],
        cwd: &Path,
        stdio: [BorrowedFd<'_>; 3],
    ) -> Result<HelperChild, NotStarted> {
        let request = Request::Spawn {
            id: self.shared.next.fetch_add(1, Ordering::SeqCst),
            argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env: env
                .iter()
                .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
                .collect(),
            cwd: cwd.as_os_str().as_bytes().to_vec(),
        };
        let Request::Spawn { id, .. } = request else {
            unreachable!()
        };
        let packet = request.encode();
        if packet.len() > wire::MAX_PACKET {
            return Err(NotStarted::Elsewhere(
                "the command is too long for one helper message".into(),
            ));
        }
        let (started_tx, started_rx) = oneshot::channel();
        let (ended_tx, ended_rx) = watch::channel(None);
        {
            let mut commands = self.shared.lock();
            if commands.gone {
                return Err(NotStarted::Broken("the helper has exited".into()));
            }
            commands.waiting.insert(
                id,
                Waiting {
                    started: Some(started_tx),
                    ended: ended_tx,
                },
            );
        }
        if let Err(e) = self.shared.send(&packet, &stdio).await {
            self.shared.lock().waiting.remove(&id);
            return Err(if e.raw_os_error() == Some(libc::EMSGSIZE) {
                NotStarted::Elsewhere("the command is too long for one helper message".into())
            } else {
                NotStarted::Broken(format!("cannot reach the helper: {e}"))
            });
        }
        // From here the command may be running: if this call is abandoned (the tool call was
        // cancelled), it is stopped; and it is never run a second way unless the helper said
        // that it did not start.
        let mut unclaimed = Unclaimed {
            shared: Some(&self.shared),
            id,
        };
        let started = tokio::time::timeout(SPAWN_TIMEOUT, started_rx).await;
        let outcome = match started {
            Ok(Ok(Ok(()))) => {
                unclaimed.shared = None;
                return Ok(HelperChild {
                    id,
                    helper: self.clone(),
                    ended: ended_rx,
                });
            }
            Ok(Ok(Err(failed))) => failed,
            Ok(Err(_gone)) => {
                return Err(NotStarted::Failed(io::Error::other(
                    "the sandbox helper exited while starting the command",
                )));
            }
            Err(_late) => {
                return Err(NotStarted::Failed(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the sandbox helper did not start the command within 10 s",
                )));
            }
        };
        unclaimed.shared = None;
        match outcome {
            (Stage::Setup, errno) => Err(NotStarted::Broken(format!(
                "the helper cannot give the command its namespaces: {}",
                io::Error::from_raw_os_error(errno)
            ))),
            (Stage::Chdir, errno) => Err(NotStarted::Elsewhere(format!(
                "the helper cannot enter {}: {}",
                cwd.display(),
                io::Error::from_raw_os_error(errno)
            ))),
            (Stage::Exec, errno) => Err(NotStarted::Failed(io::Error::from_raw_os_error(errno))),
        }
    }
}

/// A command whose request went out and that nobody holds yet: stopped if it stays so.
struct Unclaimed<'a> {
    shared: Option<&'a Arc<Shared>>,
    id: u64,
}

impl Drop for Unclaimed<'_> {
    fn drop(&mut self) {
        if let Some(shared) = self.shared {
            shared.signal(self.id, libc::SIGKILL);
        }
    }
}

impl Shared {
    /// Sends a packet, waiting (without blocking the runtime) while the socket is full.
    async fn send(&self, packet: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        loop {
            let mut guard = self.socket.writable().await?;
            match guard.try_io(|s| wire::try_send(s.get_ref().as_fd(), packet, fds)) {
                Ok(sent) => return sent,
                Err(_would_block) => continue,
            }
        }
    }

    /// Asks for `signal` to be sent to command `id`: at once when the socket takes it, else
    /// from a task that waits until it does.
    fn signal(self: &Arc<Self>, id: u64, signal: i32) {
        let packet = Request::Signal { id, signal }.encode();
        match wire::try_send(self.socket.get_ref().as_fd(), &packet, &[]) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    let shared = self.clone();
                    runtime.spawn(async move {
                        let _ = shared.send(&packet, &[]).await;
                    });
                }
            }
            _ => {}
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Commands> {
        self.commands
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Passes each reply to the command it is about, until the helper is gone; then every
/// command still waiting is told it was killed (the helper's end took its namespace down).
async fn read_replies(shared: Arc<Shared>) {
    let mut buf = vec![0u8; 256];
    'reading: loop {
        let Ok(mut guard) = shared.socket.readable().await else {
            break;
        };
        loop {
            match guard.try_io(|s| wire::recv(s.get_ref().as_fd(), &mut buf)) {
                Ok(Ok(Some((n, _)))) => {
                    if let Some(reply) = Reply::decode(&buf[..n]) {
                        dispatch(&shared, reply);
                    }
                }
                Ok(Ok(None)) | Ok(Err(_)) => break 'reading,
                Err(_would_block) => break,
            }
        }
    }
    let mut commands = shared.lock();
    commands.gone = true;
    // A command being started may have started: its `started` is dropped, not answered, so
    // that it is not run a second way.
    for (_, waiting) in commands.waiting.drain() {
        waiting.ended.send_if_modified(|ended| {
            if ended.is_some() {
                return false;
            }
            *ended = Some(HelperExit {
                code: None,
                signal: Some(libc::SIGKILL),
            });
            true
        });
    }
}

fn dispatch(shared: &Shared, reply: Reply) {
    let mut commands = shared.lock();
    match reply {
        Reply::Ready => {}
        Reply::Started { id } => {
            if let Some(started) = commands.waiting.get_mut(&id).and_then(|w| w.started.take()) {
                let _ = started.send(Ok(()));
            }
        }
        Reply::Failed { id, stage, errno } => {
            if let Some(waiting) = commands.waiting.remove(&id)
                && let Some(started) = waiting.started
            {
                let _ = started.send(Err((stage, errno)));
            }
        }
        Reply::Ended { id, code, signal } => {
            // The first report wins: the init's own, before the helper's word that it died.
            if let Some(waiting) = commands.waiting.remove(&id) {
                let _ = waiting.ended.send(Some(HelperExit { code, signal }));
            }
        }
    }
}

/// A command the helper runs.
#[derive(Debug)]
pub struct HelperChild {
    id: u64,
    helper: Arc<Helper>,
    ended: watch::Receiver<Option<HelperExit>>,
}

impl HelperChild {
    /// Sends `signal` to the command's process group; SIGKILL ends its whole namespace.
    pub fn signal(&self, signal: i32) {
        if self.ended.borrow().is_none() {
            self.helper.shared.signal(self.id, signal);
        }
    }

    /// What waits for its end, apart from this handle.
    pub fn waiter(&self) -> HelperWaiter {
        HelperWaiter(self.ended.clone())
    }
}

/// A command nobody holds any more must not run on unseen.
impl Drop for HelperChild {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
    }
}

/// Waits for the end of a command the helper runs.
#[derive(Debug, Clone)]
pub struct HelperWaiter(watch::Receiver<Option<HelperExit>>);

impl HelperWaiter {
    /// Waits until the command has ended. A helper that vanished took it down: SIGKILL.
    pub async fn wait(mut self) -> HelperExit {
        loop {
            if let Some(exit) = *self.0.borrow_and_update() {
                return exit;
            }
            if self.0.changed().await.is_err() {
                return HelperExit {
                    code: None,
                    signal: Some(libc::SIGKILL),
                };
            }
        }
    }
}
