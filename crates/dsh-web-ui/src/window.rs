//! `dsh web --app`: the app in a window of its own, as a desktop app's. A Chromium-family
//! browser's app mode (`--app=URL`: a window with no tabs or address bar) where one is on
//! `PATH`, else the default browser (`xdg-open`, or `open` on macOS); an error naming what was
//! looked for when there is neither. The choice is made from `PATH` alone, before the server
//! starts, so a machine with no browser is told so at once.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The Chromium-family browsers looked for, in this order: each takes `--app=URL`.
pub const APP_BROWSERS: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "brave-browser",
    "brave",
    "microsoft-edge",
    "microsoft-edge-stable",
];

/// What opens a file in the default browser: `xdg-open` (Linux, the BSDs), `open` (macOS).
pub const DEFAULT_OPENERS: &[&str] = &["xdg-open", "open"];

/// What opens the app, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// A Chromium-family browser, in its app mode.
    App(PathBuf),
    /// The default browser, through its opener: a tab, where no app mode is at hand.
    Default(PathBuf),
}

impl Window {
    /// The window for `path` (a `PATH` value): the first app-mode browser on it, else the
    /// first default-browser opener, else an error that names what was looked for.
    pub fn choose(path: Option<&OsStr>) -> Result<Window, String> {
        let path = path.unwrap_or_default();
        if let Some(browser) = APP_BROWSERS.iter().find_map(|name| on_path(path, name)) {
            return Ok(Window::App(browser));
        }
        if let Some(opener) = DEFAULT_OPENERS.iter().find_map(|name| on_path(path, name)) {
            return Ok(Window::Default(opener));
        }
        Err(format!(
            "dsh web --app: no browser to open the app in: none of {} (a Chromium-family \
             browser, whose app mode makes a window of its own) nor {} (the default browser) is \
             on PATH; install one, or run dsh web and open the address it prints",
            APP_BROWSERS.join(", "),
            DEFAULT_OPENERS.join(" or ")
        ))
    }

    /// The command that opens `page` (a file holding the address, token and all: a command
    /// line is readable by every user of the machine, a 0600 file is not).
    pub fn command(&self, page: &Path) -> std::process::Command {
        match self {
            Window::App(browser) => {
                let mut command = std::process::Command::new(browser);
                command.arg(format!("--app=file://{}", page.display()));
                command
            }
            Window::Default(opener) => {
                let mut command = std::process::Command::new(opener);
                command.arg(page);
                command
            }
        }
    }
}

/// `name` in one of the folders of `path`, when it is an executable file there.
fn on_path(path: &OsStr, name: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|folder| !folder.as_os_str().is_empty())
        .map(|folder| folder.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    /// A folder of this test's own (no temp-dir crate here), with fake executables.
    struct Folder(PathBuf);

    impl Folder {
        fn new(name: &str, executables: &[&str]) -> Folder {
            let dir =
                std::env::temp_dir().join(format!("dsh-window-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            for executable in executables {
                let file = dir.join(executable);
                std::fs::write(&file, "#!/bin/sh\nexit 0\n").unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
            Folder(dir)
        }

        fn join(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }
    }

    impl Drop for Folder {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn path(folders: &[&Folder]) -> OsString {
        std::env::join_paths(folders.iter().map(|f| f.0.clone())).unwrap()
    }

    #[test]
    fn an_app_mode_browser_is_chosen_over_the_default_browser() {
        let tools = Folder::new("tools", &["xdg-open", "brave"]);
        let chrome = Folder::new("chrome", &["google-chrome"]);
        let both = path(&[&tools, &chrome]);
        // google-chrome comes before brave in the list, wherever each folder is.
        assert_eq!(
            Window::choose(Some(&both)),
            Ok(Window::App(chrome.join("google-chrome")))
        );
        assert_eq!(
            Window::choose(Some(&path(&[&tools]))),
            Ok(Window::App(tools.join("brave")))
        );
    }

    #[test]
    fn the_default_browser_opens_it_where_no_app_mode_is_at_hand() {
        let tools = Folder::new("opener", &["open"]);
        // A file that is not executable is no browser.
        std::fs::write(tools.join("chromium"), "not a program").unwrap();
        assert_eq!(
            Window::choose(Some(&path(&[&tools]))),
            Ok(Window::Default(tools.join("open")))
        );
        let command = Window::App(PathBuf::from("/x/chromium")).command(Path::new("/h/open.html"));
        let args: Vec<_> = command.get_args().collect();
        assert_eq!(args, ["--app=file:///h/open.html"]);
    }

    #[test]
    fn no_browser_is_an_error_naming_what_was_looked_for() {
        let empty = Folder::new("empty", &[]);
        let error = Window::choose(Some(&path(&[&empty]))).unwrap_err();
        assert!(
            error.contains("chromium, chromium-browser, google-chrome"),
            "{error}"
        );
        assert!(error.contains("xdg-open or open"), "{error}");
        assert!(Window::choose(None).is_err());
    }
}
