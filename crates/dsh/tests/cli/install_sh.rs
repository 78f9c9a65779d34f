//! install.sh's address check, run as a person would run the script: addresses that only look
//! like this machine are refused before anything is downloaded, a loopback mirror still works
//! (and adds a desktop entry for `dsh web --app`), and a failed install leaves no completions,
//! man page or desktop entry behind.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use dsh_testkit::RunOutput;
use dsh_testkit::site::{Page, Site};

const TARGET: &str = "x86_64-unknown-linux-musl";

fn install_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../install.sh")
}

/// A release folder served on loopback: a tarball whose `dsh` is a script that prints a
/// version, and its SHA256SUMS.
fn release(work: &Path) -> Site {
    let folder = work.join(format!("dsh-{TARGET}"));
    std::fs::create_dir_all(folder.join("completions")).unwrap();
    std::fs::create_dir_all(folder.join("man")).unwrap();
    std::fs::write(folder.join("dsh"), "#!/bin/sh\necho dsh 0.0.0-test\n").unwrap();
    for file in [
        "completions/dsh.bash",
        "completions/_dsh",
        "completions/dsh.fish",
    ] {
        std::fs::write(folder.join(file), "# completions\n").unwrap();
    }
    std::fs::write(folder.join("man/dsh.1"), ".TH DSH 1\n").unwrap();
    let tarball = format!("dsh-{TARGET}.tar.gz");
    let packed = Command::new("tar")
        .args(["-czf", &tarball, &format!("dsh-{TARGET}")])
        .current_dir(work)
        .status()
        .unwrap();
    assert!(packed.success());
    let bytes = std::fs::read(work.join(&tarball)).unwrap();
    let sum = Command::new("sha256sum")
        .arg(work.join(&tarball))
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    let sum = sum.split_whitespace().next().unwrap().to_owned();
    Site::start(vec![
        (
            format!("/{tarball}").as_str(),
            Page::new("application/gzip", bytes),
        ),
        (
            "/SHA256SUMS",
            Page::new("text/plain", format!("{sum}  {tarball}\n")),
        ),
    ])
}

/// A folder with a `curl` and a `wget` that write down how they were called and download
/// nothing: were install.sh to try any address, it would show in `log`.
fn recording_downloaders(work: &Path) -> (PathBuf, PathBuf) {
    let bin = work.join("recording-bin");
    let log = work.join("downloads.log");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["curl", "wget"] {
        let path = bin.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexit 22\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    (bin, log)
}

/// install.sh with `base` as the release address, a home of its own and `path` as PATH.
fn install(home: &Path, base: &str, path: &str, more: &[(&str, &str)]) -> RunOutput {
    RunOutput::of(
        Command::new("sh")
            .arg(install_sh())
            .env_clear()
            .env("PATH", path)
            .env("HOME", home)
            .env("DSH_INSTALL_BASE_URL", base)
            .env("DSH_INSTALL_TARGET", TARGET)
            .envs(more.iter().copied()),
    )
}

#[test]
fn addresses_that_only_look_local_are_refused_before_any_download() {
    let work = tempfile::tempdir().unwrap();
    let site = release(work.path());
    let (recording, log) = recording_downloaders(work.path());
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let recorded_path = format!("{}:{system_path}", recording.display());
    let port = site.port();
    let lookalikes = [
        "http://127.0.0.1:80@evil.example".to_owned(),
        "http://localhost:x@evil.example".to_owned(),
        "http://[::1]:1@evil.example".to_owned(),
        "http://127.0.0.1.evil.example".to_owned(),
        "http://localhost.evil.example".to_owned(),
        // Each also with the loopback server's own port: it would answer, were it asked.
        format!("http://127.0.0.1:{port}@evil.example"),
        format!("http://127.0.0.1:{port}.evil.example"),
        format!("http://user@127.0.0.1:{port}"),
        format!("http://127.0.0.1:{port}\\@evil.example"),
        "http://0177.0.0.1".to_owned(),
        "https://user:pass@releases.example".to_owned(),
    ];
    for base in &lookalikes {
        let home = work.path().join("refused-home");
        let out = install(&home, base, &recorded_path, &[]);
        assert_eq!(out.code(), Some(1), "{base} was taken: {}", out.stderr);
        assert!(
            out.stderr.contains("must be an https:// address"),
            "{base}: {}",
            out.stderr
        );
        assert!(
            !log.exists(),
            "{base}: a download was tried: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        assert!(!home.join(".local").exists(), "{base}: something installed");
    }
    assert_eq!(site.hits(&format!("/dsh-{TARGET}.tar.gz")), 0);

    // Off this machine, curl is held to https, redirects included.
    let home = work.path().join("https-home");
    let out = install(&home, "https://releases.example/dsh", &recorded_path, &[]);
    assert_eq!(out.code(), Some(1));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.starts_with("curl -fsSL --proto =https --proto-redir =https "),
        "{calls}"
    );
    std::fs::remove_file(&log).unwrap();

    // The loopback mirror itself still installs, with and without a trailing slash.
    for (n, base) in [site.url(""), site.url("/")].iter().enumerate() {
        let home = work.path().join(format!("home-{n}"));
        let out = install(&home, base, &system_path, &[]);
        assert_eq!(out.code(), Some(0), "{base}: {}", out.stderr);
        let version = Command::new(home.join(".local/bin/dsh"))
            .arg("--version")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&version.stdout), "dsh 0.0.0-test\n");
        assert!(home.join(".local/share/man/man1/dsh.1").exists());
        // The desktop's menu opens the web app in a window of its own.
        let entry =
            std::fs::read_to_string(home.join(".local/share/applications/dsh.desktop")).unwrap();
        assert!(
            entry.starts_with("[Desktop Entry]\nType=Application\nName=dsh\n"),
            "{entry}"
        );
        let exec = format!(
            "Exec=\"{}\" web --app\n",
            home.join(".local/bin/dsh").display()
        );
        assert!(entry.contains(&exec), "{entry}");
        assert!(entry.contains("Terminal=false\n"), "{entry}");
    }
    assert_eq!(site.hits(&format!("/dsh-{TARGET}.tar.gz")), 2);
    zsh_is_told_where_the_completions_are(work.path(), &site.url(""), &system_path);
    dsh_testkit::fault_matrix(
        "attack",
        "install.sh given an address that only looks like this machine (127.0.0.1:80@evil.example, localhost:x@, [::1]:1@, 127.0.0.1.evil.example, localhost.evil.example)",
        "refused before any download; a loopback mirror still installs",
    );
}

#[test]
fn a_failed_binary_step_leaves_no_completions_or_man_page() {
    let work = tempfile::tempdir().unwrap();
    let site = release(work.path());
    let system_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let home = work.path().join("home");
    // The binary's folder cannot be made: a file is where its parent should be.
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("not-a-folder"), "").unwrap();
    let bin_dir = home.join("not-a-folder/bin");
    let share = home.join("share");
    let out = install(
        &home,
        &site.url(""),
        &system_path,
        &[
            ("DSH_INSTALL_DIR", bin_dir.to_str().unwrap()),
            ("XDG_DATA_HOME", share.to_str().unwrap()),
        ],
    );
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("DSH_INSTALL_DIR"), "{}", out.stderr);
    assert!(
        !share.exists(),
        "completions or the man page were installed"
    );
}

/// zsh does not read ~/.local/share/zsh/site-functions unless told to: install.sh says how,
/// unless the zsh it finds has that folder in its fpath already. (A stand-in zsh prints the
/// fpath, so the test does not depend on the machine's zsh or its rc files.)
fn zsh_is_told_where_the_completions_are(work: &Path, base: &str, system_path: &str) {
    for (n, has_it) in [false, true].into_iter().enumerate() {
        let home = work.join(format!("zsh-home-{n}"));
        let folder = home.join(".local/share/zsh/site-functions");
        let bin = work.join(format!("zsh-bin-{n}"));
        std::fs::create_dir_all(&bin).unwrap();
        let fpath = if has_it {
            format!("{}\n/usr/share/zsh/functions", folder.display())
        } else {
            "/usr/local/share/zsh/site-functions\n/usr/share/zsh/functions".to_owned()
        };
        let zsh = bin.join("zsh");
        std::fs::write(&zsh, format!("#!/bin/sh\nprintf '{fpath}\\n'\n")).unwrap();
        std::fs::set_permissions(&zsh, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("{}:{system_path}", bin.display());
        let out = install(&home, base, &path, &[]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
        assert!(folder.join("_dsh").is_file());
        let hint = format!("fpath=(\"{}\" $fpath)", folder.display());
        assert_eq!(out.stderr.contains(&hint), !has_it, "{}", out.stderr);
    }
}
