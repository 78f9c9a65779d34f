//! `dsh login [--model NAME]` and `dsh logout [--model NAME]`: the API key of the provider the
//! model is routed to, asked for without echo on a terminal (or read as one line from standard
//! input otherwise), checked with the provider, and saved for every later run
//! ([`dsh_core::check_and_save_key`]); or forgotten.

use std::io::{BufRead as _, Write as _};

use dsh_core::{Flags, LoginError};

/// How many keys a person is asked for before `dsh login` gives up.
const TRIES: usize = 3;

/// `login` or `logout`, with the model whose provider it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCommand {
    pub logout: bool,
    pub model: Option<String>,
}

pub fn run(command: &KeyCommand) -> u8 {
    match sign(command) {
        Ok(line) => {
            let _ = std::io::stdout().write_all(line.as_bytes());
            0
        }
        Err(message) => {
            crate::surface::notice(&message);
            1
        }
    }
}

fn sign(command: &KeyCommand) -> Result<String, String> {
    let flags = Flags {
        model: command.model.clone(),
        ..Flags::default()
    };
    let settings = crate::place::settings(&flags).map_err(|e| e.message)?;
    let target = dsh_core::key_target(&settings).map_err(|e| e.to_string())?;
    if command.logout {
        let (forgotten, file) = dsh_core::forget_saved_key(&settings.home().value, &target)
            .map_err(|e| e.to_string())?;
        return Ok(if forgotten {
            format!(
                "The key saved for {} ({}) was removed from {}.\n",
                target.provider,
                target.variable,
                file.display()
            )
        } else {
            format!(
                "No key was saved for {} ({}); nothing changed.\n",
                target.provider, target.variable
            )
        });
    }
    // Refused before a key is typed, not after.
    dsh_core::check_key_destination(&settings).map_err(|e| e.to_string())?;
    if let Some(found) = target
        .found_in
        .as_ref()
        .filter(|f| !f.ends_with("credentials"))
    {
        crate::surface::notice(&format!(
            "{} is already set in {found}, which runs read ahead of a saved key",
            target.variable
        ));
    }
    ask_and_save(&settings, &target)
}

/// Before the terminal UI opens: when no key is found anywhere for the model's provider, asks
/// for one on the terminal as `dsh login` does, so a first run starts signed in instead of
/// failing to open its session. Nothing is asked when a key is found, when the provider needs
/// none, or when the variable is exported empty (a saved key would be hidden by it; the UI
/// then says so). The settings are loaded as the UI loads them (`interactive`: no headless
/// profile), and handed on when nothing was saved; after a key is saved, the UI reads them
/// again, the new key with them.
pub fn ensure_key(flags: &Flags) -> Result<Option<dsh_core::Settings>, String> {
    let flags = Flags {
        interactive: true,
        ..flags.clone()
    };
    let Ok(settings) = crate::place::settings(&flags) else {
        // The UI reports what is wrong with the settings.
        return Ok(None);
    };
    let Ok(target) = dsh_core::key_target(&settings) else {
        return Ok(Some(settings));
    };
    let exported = std::env::var_os(&target.variable).is_some();
    if target.found_in.is_some() || exported {
        return Ok(Some(settings));
    }
    dsh_core::check_key_destination(&settings).map_err(|e| e.to_string())?;
    let _ = writeln!(
        std::io::stdout(),
        "dsh has no API key for {} yet ({} is not set). Paste one to save it for every run: it \
         is checked with {} first, kept readable by you alone, and `dsh logout` removes it. \
         Ctrl-C quits.",
        target.provider,
        target.variable,
        target.provider
    );
    let saved = ask_and_save(&settings, &target)?;
    let _ = std::io::stdout().write_all(saved.as_bytes());
    Ok(None)
}

/// Asks for keys until the provider takes one (on a terminal, a few tries), and saves it.
fn ask_and_save(
    settings: &dsh_core::Settings,
    target: &dsh_core::KeyTarget,
) -> Result<String, String> {
    let runtime = dsh_core::runtime()?;
    let mut asker = KeyAsker::open();
    for attempt in 1..=TRIES {
        let key = asker
            .ask(&format!(
                "API key for {} at {} (input hidden): ",
                target.provider, target.base_url
            ))
            .map_err(|e| format!("cannot read the key: {e}"))?;
        match runtime.block_on(dsh_core::check_and_save_key(settings, &key)) {
            Ok(file) => {
                return Ok(format!(
                    "The key was accepted by {} and saved in {} (readable by you alone) as \
                     {}. `dsh logout` removes it.\n",
                    target.provider,
                    file.display(),
                    target.variable
                ));
            }
            Err(LoginError::Refused(why)) if asker.interactive && attempt < TRIES => {
                crate::surface::notice(&format!("{why}; try again (Ctrl-C gives up)"));
            }
            Err(error) => return Err(error.to_string()),
        }
    }
    Err(format!("no key was accepted after {TRIES} tries"))
}

/// Where the key is read from: the terminal, without echo, when there is one; else a line of
/// standard input (a key piped in by a script).
struct KeyAsker {
    tty: Option<std::fs::File>,
    interactive: bool,
}

impl KeyAsker {
    fn open() -> KeyAsker {
        // SAFETY: isatty only reads the descriptor's state.
        let stdin_is_tty = unsafe { libc::isatty(libc::STDIN_FILENO) } == 1;
        let tty = stdin_is_tty
            .then(|| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/tty")
                    .ok()
            })
            .flatten();
        KeyAsker {
            interactive: tty.is_some(),
            tty,
        }
    }

    fn ask(&mut self, prompt: &str) -> std::io::Result<String> {
        let Some(tty) = &mut self.tty else {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            return Ok(line.trim().to_owned());
        };
        // Echo off (and the signal handlers in) before the prompt shows: a key typed or a
        // Ctrl-C pressed as soon as it appears is handled as meant.
        let echo = EchoOff::on(tty)?;
        tty.write_all(prompt.as_bytes())?;
        let mut line = String::new();
        let read = std::io::BufReader::new(&*tty).read_line(&mut line);
        drop(echo);
        tty.write_all(b"\n")?;
        read?;
        Ok(line.trim().to_owned())
    }
}

/// The terminal's echo turned off until dropped (also when the read fails), and given back by
/// a signal that ends the process meanwhile (Ctrl-C at the prompt must not leave the shell
/// without echo). Ctrl-Z is ignored while the key is typed: stopped there, the terminal would
/// have to keep echo off for the shell, or echo the rest of the key when resumed.
struct EchoOff {
    fd: i32,
    saved: libc::termios,
    handlers: Vec<(libc::c_int, libc::sighandler_t)>,
}

/// What the signal handler gives back: the terminal and its settings before the prompt.
static RESTORE_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);
static RESTORE_TERMIOS: std::sync::OnceLock<libc::termios> = std::sync::OnceLock::new();

/// Async-signal-safe: `tcsetattr`, `signal` and `raise` only.
extern "C" fn restore_then_die(signal: libc::c_int) {
    let fd = RESTORE_FD.load(std::sync::atomic::Ordering::SeqCst);
    if let (true, Some(saved)) = (fd >= 0, RESTORE_TERMIOS.get()) {
        // SAFETY: restores settings read from the same terminal; all three calls are
        // async-signal-safe.
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, saved) };
    }
    // SAFETY: as above; the default action then ends the process as the signal meant.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
}

impl EchoOff {
    fn on(tty: &std::fs::File) -> std::io::Result<EchoOff> {
        use std::os::fd::AsRawFd as _;
        let fd = tty.as_raw_fd();
        // SAFETY: a zeroed termios is a valid value for tcgetattr to fill in.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is an open terminal and `saved` a valid termios.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let _ = RESTORE_TERMIOS.set(saved);
        RESTORE_FD.store(fd, std::sync::atomic::Ordering::SeqCst);
        let restore = restore_then_die as extern "C" fn(libc::c_int) as libc::sighandler_t;
        let mut handlers = Vec::new();
        for (signal, action) in [
            (libc::SIGINT, restore),
            (libc::SIGTERM, restore),
            (libc::SIGHUP, restore),
            (libc::SIGQUIT, restore),
            (libc::SIGTSTP, libc::SIG_IGN),
        ] {
            // SAFETY: installs a handler that only makes async-signal-safe calls, or SIG_IGN.
            handlers.push((signal, unsafe { libc::signal(signal, action) }));
        }
        let mut quiet = saved;
        quiet.c_lflag &= !(libc::ECHO | libc::ECHONL);
        quiet.c_lflag |= libc::ICANON;
        let echo_off = EchoOff {
            fd,
            saved,
            handlers,
        };
        // SAFETY: as above.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(echo_off)
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from the same open terminal, then the handlers
        // that were there before.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
        RESTORE_FD.store(-1, std::sync::atomic::Ordering::SeqCst);
        for (signal, handler) in self.handlers.drain(..) {
            // SAFETY: puts back what `signal` returned when the prompt began.
            unsafe { libc::signal(signal, handler) };
        }
    }
}
