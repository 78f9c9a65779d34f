//! The file tools through the registry, as the model calls them, on a real disk.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolContext, ToolOutcome, ToolRegistry, ToolSession};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Fixture {
    ws: tempfile::TempDir,
    outside: tempfile::TempDir,
    registry: ToolRegistry,
    ctx: ToolContext,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_mode(SandboxMode::WorkspaceWrite)
    }

    fn with_mode(mode: SandboxMode) -> Fixture {
        // Outside every writable root: not the system temp directory.
        let base = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
        let base = base.as_path();
        let ws = tempfile::Builder::new()
            .prefix("ws-")
            .tempdir_in(base)
            .unwrap();
        let outside = tempfile::Builder::new()
            .prefix("outside-")
            .tempdir_in(base)
            .unwrap();
        let session = ToolSession::new(
            SandboxPolicy::new(mode, ws.path(), Vec::new()),
            SpillStore::new(ws.path().join(".spill")),
            ModelCaps {
                name: "m".into(),
                image_input: false,
            },
        );
        let ctx = ToolContext {
            call_id: "c".into(),
            cwd: std::fs::canonicalize(ws.path()).unwrap(),
            cancel: CancellationToken::new(),
            session: Arc::new(session),
        };
        Fixture {
            ws,
            outside,
            registry: ToolRegistry::with_file_tools(true),
            ctx,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.ctx.cwd.join(name)
    }

    fn put(&self, name: &str, content: &[u8]) {
        std::fs::write(self.path(name), content).unwrap();
    }

    fn text(&self, name: &str) -> String {
        String::from_utf8(std::fs::read(self.path(name)).unwrap()).unwrap()
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx)
            .await
    }

    /// The result text with the workspace written as `<WS>`.
    async fn result(&self, tool: &str, args: Value) -> String {
        let ws = self.ctx.cwd.display().to_string();
        self.call(tool, args).await.text().replace(&ws, "<WS>")
    }

    async fn code(&self, tool: &str, args: Value) -> Option<String> {
        self.call(tool, args).await.error.map(|e| e.code)
    }
}

/// Moves a file's modification time, as an editor or `touch` would.
fn touch(path: &Path) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(7))
        .unwrap();
}

#[tokio::test]
async fn write_creates_new_files_owner_only_and_byte_for_byte() {
    let f = Fixture::new();
    let content = "\u{feff}h\u{e9}\r\nno final newline";
    assert_eq!(
        f.result(
            "write",
            json!({"file_path": "deep/new.txt", "content": content})
        )
        .await,
        "<path><WS>/deep/new.txt</path>\n<type>file</type>\n<content>\nCreated file\n</content>"
    );
    assert_eq!(f.text("deep/new.txt"), content);
    let mode = std::fs::metadata(f.path("deep/new.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Nothing else is left in the folder: the staging directory is gone.
    assert_eq!(std::fs::read_dir(f.path("deep")).unwrap().count(), 1);
}

#[tokio::test]
async fn an_unread_file_is_never_overwritten() {
    let f = Fixture::new();
    f.put("exists.txt", b"original\n");
    assert_eq!(
        f.result("write", json!({"file_path": "exists.txt", "content": "x"}))
            .await,
        "Error: cannot overwrite existing \"<WS>/exists.txt\" without reading it first — read the file, then retry"
    );
    assert_eq!(f.text("exists.txt"), "original\n");
}

#[tokio::test]
async fn a_read_allows_one_overwrite_that_keeps_the_mode() {
    let f = Fixture::new();
    f.put("exists.txt", b"original\n");
    std::fs::set_permissions(f.path("exists.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    f.call("read", json!({"file_path": "exists.txt", "limit": 1}))
        .await;
    let out = f
        .result(
            "write",
            json!({"file_path": "exists.txt", "content": "new\n"}),
        )
        .await;
    assert!(out.contains("Updated file"), "{out}");
    assert_eq!(f.text("exists.txt"), "new\n");
    let mode = std::fs::metadata(f.path("exists.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    // The write's own version is observed: a second write needs no read.
    assert!(
        f.result(
            "write",
            json!({"file_path": "exists.txt", "content": "again\n"})
        )
        .await
        .contains("Updated")
    );
}

#[tokio::test]
async fn any_change_after_the_read_makes_the_file_stale() {
    let f = Fixture::new();
    f.put("a.txt", b"one\n");
    f.call("read", json!({"file_path": "a.txt"})).await;
    touch(&f.path("a.txt"));
    assert_eq!(
        f.result("write", json!({"file_path": "a.txt", "content": "x"}))
            .await,
        "Error: cannot write \"<WS>/a.txt\": file changed since it was read — re-read the file, then retry"
    );
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"})
        )
        .await,
        "Error: cannot edit \"<WS>/a.txt\": file changed since it was read — re-read the file, then retry"
    );
    // chmod alone changes the version too.
    f.call("read", json!({"file_path": "a.txt"})).await;
    std::fs::set_permissions(f.path("a.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    touch(&f.path("a.txt"));
    assert_eq!(
        f.code(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "1"})
        )
        .await
        .as_deref(),
        Some("FS_STALE_VERSION")
    );
    assert_eq!(f.text("a.txt"), "one\n");
}

#[tokio::test]
async fn a_deleted_file_is_stale_then_recreated_after_a_read() {
    let f = Fixture::new();
    f.put("d.txt", b"v1\n");
    f.call("read", json!({"file_path": "d.txt"})).await;
    std::fs::remove_file(f.path("d.txt")).unwrap();
    assert_eq!(
        f.result("write", json!({"file_path": "d.txt", "content": "back\n"}))
            .await,
        "Error: cannot write \"<WS>/d.txt\": file no longer exists — re-read the file, then retry"
    );
    assert_eq!(
        f.code("read", json!({"file_path": "d.txt"}))
            .await
            .as_deref(),
        Some("FS_NOT_FOUND")
    );
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "d.txt", "old_string": "a", "new_string": "b"})
        )
        .await,
        "Error: cannot edit \"<WS>/d.txt\": not found"
    );
    assert!(
        f.result("write", json!({"file_path": "d.txt", "content": "back\n"}))
            .await
            .contains("Created file")
    );
}

#[tokio::test]
async fn edit_needs_a_read_and_replaces_literally() {
    let f = Fixture::new();
    f.put("e.txt", b"alpha $1 beta\n");
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "e.txt", "old_string": "alpha", "new_string": "x"})
        )
        .await,
        "Error: edit requires reading \"<WS>/e.txt\" first — read the file, then retry"
    );
    f.call("read", json!({"file_path": "e.txt"})).await;
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "e.txt", "old_string": "$1", "new_string": "$&"})
        )
        .await,
        "The file <WS>/e.txt has been updated successfully."
    );
    assert_eq!(f.text("e.txt"), "alpha $& beta\n");
}

#[tokio::test]
async fn edit_keeps_crlf_files_crlf_and_a_bom_in_place() {
    let f = Fixture::new();
    f.put("c.txt", b"\xEF\xBB\xBFone\r\ntwo\r\nthree\n");
    f.call("read", json!({"file_path": "c.txt"})).await;
    f.call(
        "edit",
        json!({"file_path": "c.txt", "old_string": "one\ntwo", "new_string": "1\n2"}),
    )
    .await;
    assert_eq!(
        std::fs::read(f.path("c.txt")).unwrap(),
        b"\xEF\xBB\xBF1\r\n2\r\nthree\r\n"
    );
    // A replacement ending in a lone CR before a line end makes one CRLF, not CR CR LF.
    f.call(
        "edit",
        json!({"file_path": "c.txt", "old_string": "2", "new_string": "two\r"}),
    )
    .await;
    assert_eq!(
        std::fs::read(f.path("c.txt")).unwrap(),
        b"\xEF\xBB\xBF1\r\ntwo\r\nthree\r\n"
    );
}

#[tokio::test]
async fn ambiguous_and_missing_text_say_what_to_do() {
    let f = Fixture::new();
    f.put("m.txt", b"foo 1\nfoo 2\n    indented\n");
    f.call("read", json!({"file_path": "m.txt"})).await;
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "m.txt", "old_string": "foo", "new_string": "bar"})
        )
        .await,
        "Error: old_string matched 2 times in \"<WS>/m.txt\"; provide a more specific old_string or set replace_all to true"
    );
    // Two matches on one line count twice, as the reference counts them, and the text names
    // no lines.
    f.put("two.txt", b"aa aa\n");
    f.call("read", json!({"file_path": "two.txt"})).await;
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "two.txt", "old_string": "aa", "new_string": "b"})
        )
        .await,
        "Error: old_string matched 2 times in \"<WS>/two.txt\"; provide a more specific old_string or set replace_all to true"
    );
    assert_eq!(
        f.result("edit", json!({"file_path": "m.txt", "old_string": "  indented", "new_string": "x", "replace_all": false})).await,
        "The file <WS>/m.txt has been updated successfully."
    );
    f.call("read", json!({"file_path": "m.txt"})).await;
    let missing = f
        .call(
            "edit",
            json!({"file_path": "m.txt", "old_string": "Foo 1", "new_string": "x"}),
        )
        .await;
    assert_eq!(missing.error.unwrap().code, "FS_EDIT_NOT_FOUND");
    assert!(
        missing.parts[0]
            .text()
            .ends_with("; line 1 matches it except for letter case: \"foo 1\"")
    );
    assert_eq!(
        f.result("edit", json!({"file_path": "m.txt", "old_string": "foo", "new_string": "bar", "replace_all": true})).await,
        "The file <WS>/m.txt has been updated. All occurrences were successfully replaced."
    );
}

#[tokio::test]
async fn edit_refuses_binary_and_invalid_text_and_leaves_it_alone() {
    let f = Fixture::new();
    let mut late = vec![b'x'; 9000];
    late.extend_from_slice(b"\ntail\0\n");
    f.put("late.txt", &late);
    f.call("read", json!({"file_path": "late.txt"})).await;
    assert_eq!(
        f.result(
            "edit",
            json!({"file_path": "late.txt", "old_string": "tail", "new_string": "T"})
        )
        .await,
        "Error: cannot edit \"<WS>/late.txt\": binary file"
    );
    assert_eq!(std::fs::read(f.path("late.txt")).unwrap(), late);
}

#[tokio::test]
async fn the_fence_refuses_writes_outside_the_roots_however_spelled() {
    let f = Fixture::new();
    std::os::unix::fs::symlink(f.outside.path(), f.path("outlink")).unwrap();
    let denial = "Error: [sandbox: file access denied under workspace-write mode]\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]";
    let outside = f.outside.path().join("x.txt").display().to_string();
    for path in [
        "/etc/dsh-test-denied.txt",
        outside.as_str(),
        "outlink/z.txt",
    ] {
        let out = f
            .call("write", json!({"file_path": path, "content": "x"}))
            .await;
        assert_eq!(out.text(), denial, "{path}");
        assert_eq!(out.error.unwrap().code, "FS_SANDBOX_DENIED");
    }
    let relative = format!(
        "../{}/y.txt",
        f.outside.path().file_name().unwrap().to_string_lossy()
    );
    assert_eq!(
        f.call("write", json!({"file_path": relative, "content": "y"}))
            .await
            .text(),
        denial
    );
    assert_eq!(std::fs::read_dir(f.outside.path()).unwrap().count(), 0);
    // The system temporary directory is writable.
    let temp = tempfile::tempdir().unwrap();
    let out = f
        .call(
            "write",
            json!({"file_path": temp.path().join("t.txt"), "content": "t"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text());
}

/// The red team's race (issue 31): a job beside the model keeps exchanging a folder of the
/// workspace with a symlink to a folder outside it (`renameat2` with `RENAME_EXCHANGE`) while
/// `write` creates files in that folder (and folders under it) and `edit` changes one there.
/// Resolved by path at each step, some writes landed outside; resolved once as a descriptor
/// beneath the workspace, none may, whichever way each call ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_swapped_for_a_symlink_never_lets_a_write_out() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let f = Fixture::new();
    std::fs::create_dir(f.path("sub")).unwrap();
    std::fs::write(f.path("sub/e.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink(f.outside.path(), f.path("swap")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (a, b) = (f.path("sub"), f.path("swap"));
        std::thread::spawn(move || {
            let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            let (a, b) = (c(&a), c(&b));
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                // SAFETY: two NUL-terminated paths; the exchange is atomic.
                let rc = unsafe {
                    libc::syscall(
                        libc::SYS_renameat2,
                        libc::AT_FDCWD,
                        a.as_ptr(),
                        libc::AT_FDCWD,
                        b.as_ptr(),
                        libc::RENAME_EXCHANGE,
                    )
                };
                assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
                swaps += 1;
            }
            swaps
        })
    };
    let (mut written, mut refused) = (0, 0);
    for i in 0..400 {
        let path = if i % 2 == 0 {
            format!("sub/f{i}.txt")
        } else {
            format!("sub/d{i}/g.txt")
        };
        let out = f
            .call("write", json!({"file_path": path, "content": "x"}))
            .await;
        if out.is_error {
            refused += 1;
        } else {
            written += 1;
        }
        // An edit of a file read through the folder while it was in place.
        if f.call("read", json!({"file_path": "sub/e.txt"}))
            .await
            .is_error
        {
            continue;
        }
        let _ = f
            .call(
                "edit",
                json!({"file_path": "sub/e.txt", "old_string": "a", "new_string": "b"}),
            )
            .await;
        let _ = f
            .call(
                "edit",
                json!({"file_path": "sub/e.txt", "old_string": "b", "new_string": "a"}),
            )
            .await;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    // The attack ran: the folder was swapped all along, and calls went both ways.
    assert!(swaps > 1000, "only {swaps} swaps");
    assert!(
        written > 0 && refused > 0,
        "{written} written, {refused} refused"
    );
    let escaped: Vec<_> = walk(f.outside.path());
    assert!(
        escaped.is_empty(),
        "written outside the workspace: {escaped:?}"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "a folder swapped with a symlink out of the workspace while write and edit run",
        "no write lands outside; each call writes inside or is refused",
    );
}

/// Every entry under `dir`, folders included.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[tokio::test]
async fn read_only_refuses_every_mutation() {
    let f = Fixture::with_mode(SandboxMode::ReadOnly);
    let out = f
        .result("write", json!({"file_path": "a.txt", "content": "x"}))
        .await;
    assert!(
        out.starts_with("Error: [sandbox: file access denied under read-only mode]"),
        "{out}"
    );
    assert!(!f.path("a.txt").exists());
}

#[tokio::test]
async fn escalation_arguments_are_checked_and_headless_has_no_approver() {
    let f = Fixture::new();
    let write = |extra: Value| {
        let mut args = json!({"file_path": "/etc/dsh-esc.txt", "content": "x"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    assert_eq!(
        f.result(
            "write",
            write(json!({"sandbox_permissions": "danger-full-access"}))
        )
        .await,
        "Error: invalid escalation: sandbox_permissions requires a justification"
    );
    assert_eq!(
        f.result("write", write(json!({"justification": "need it"})))
            .await,
        "Error: invalid escalation: justification is only valid together with sandbox_permissions"
    );
    assert_eq!(
        f.result(
            "write",
            write(json!({"sandbox_permissions": "danger-full-access", "justification": " "}))
        )
        .await,
        "Error: invalid justification: expected a non-empty sentence"
    );
    assert_eq!(
        f.result(
            "write",
            write(json!({"sandbox_permissions": "root", "justification": "x"}))
        )
        .await,
        "Error: invalid arguments: \"sandbox_permissions\" must be one of [\"workspace-write\",\"danger-full-access\"]"
    );
    assert_eq!(
        f.result(
            "write",
            write(json!({"sandbox_permissions": "danger-full-access", "justification": "x"}))
        )
        .await,
        "Error: sandbox escalation to \"danger-full-access\" requires approval, but no approval channel is available"
    );
    assert!(!Path::new("/etc/dsh-esc.txt").exists());
}

#[tokio::test]
async fn directories_are_not_files() {
    let f = Fixture::new();
    std::fs::create_dir(f.path("sub")).unwrap();
    assert_eq!(
        f.result("write", json!({"file_path": "sub", "content": "x"}))
            .await,
        "Error: cannot write \"<WS>/sub\": not a regular file"
    );
    let ws = f.ctx.cwd.display().to_string();
    assert_eq!(
        f.code("write", json!({"file_path": ws, "content": "x"}))
            .await
            .as_deref(),
        Some("FS_NOT_REGULAR_FILE")
    );
}

#[tokio::test]
async fn odd_paths_get_clear_errors() {
    let f = Fixture::new();
    let long = "x".repeat(5000);
    let out = f.result("read", json!({"file_path": long})).await;
    assert_eq!(
        out,
        format!("Error: cannot resolve \"<WS>/{long}\": file name too long")
    );
    assert_eq!(
        f.result("write", json!({"file_path": "a\u{0}b", "content": "x"}))
            .await,
        "Error: the path contains a NUL byte, which no file name can hold"
    );
    std::os::unix::fs::symlink(f.path("loop"), f.path("loop")).unwrap();
    assert_eq!(
        f.result("read", json!({"file_path": "loop"})).await,
        "Error: cannot resolve \"<WS>/loop\": too many levels of symbolic links (a symlink loop?)"
    );
    drop(f.ws);
}

#[tokio::test]
async fn the_fence_keeps_git_hooks_dsh_and_env_files_read_only_and_says_why() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".git/hooks")).unwrap();
    f.put(".env", b"KEY_ID=1\n");
    f.result("read", json!({"file_path": ".env"})).await;
    for (tool, args, protected) in [
        (
            "write",
            json!({"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
            ".git/hooks",
        ),
        (
            "write",
            json!({"file_path": ".dsh/config.toml", "content": "[sandbox]\n"}),
            ".dsh",
        ),
        (
            "edit",
            json!({"file_path": ".env", "old_string": "1", "new_string": "2"}),
            ".env",
        ),
    ] {
        let out = f.call(tool, args).await;
        let text = out.text();
        assert_eq!(out.error.unwrap().code, "FS_SANDBOX_DENIED", "{protected}");
        assert!(
            text.starts_with("Error: [sandbox: file access denied under workspace-write mode]\n"),
            "{text}"
        );
        let why = format!(
            "{} is protected under workspace-write: Git's hooks and config, dsh's .dsh/ folder \
             and the workspace's .env files change what runs or what dsh trusts later",
            f.path(protected).display()
        );
        assert!(text.contains(&why), "{text}");
        assert!(text.contains("[sandbox: escalation available"), "{text}");
    }
    assert!(!f.path(".git/hooks/pre-commit").exists());
    assert!(!f.path(".dsh").exists());
    assert_eq!(f.text(".env"), "KEY_ID=1\n");
    // Everything else in .git, and the templates beside .env, stay writable.
    f.result(
        "write",
        json!({"file_path": ".env.example", "content": "KEY_ID=\n"}),
    )
    .await;
    assert_eq!(f.text(".env.example"), "KEY_ID=\n");
}

#[tokio::test]
async fn edit_changes_one_line_of_a_huge_file_and_nothing_else() {
    let f = Fixture::new();
    // 32 MiB of lines, one of them unique near the end.
    let line = "an ordinary line of a large generated file, repeated many times\n";
    let mut text = line.repeat((32 << 20) / line.len());
    text.push_str("the one line to change\n");
    text.push_str(&line.repeat(10));
    f.put("huge.txt", text.as_bytes());
    f.result(
        "read",
        json!({"file_path": "huge.txt", "offset": 1, "limit": 1}),
    )
    .await;
    let out = f
        .result(
            "edit",
            json!({"file_path": "huge.txt", "old_string": "the one line to change", "new_string": "changed"}),
        )
        .await;
    assert_eq!(out, "The file <WS>/huge.txt has been updated successfully.");
    let after = std::fs::read_to_string(f.path("huge.txt")).unwrap();
    assert_eq!(after, text.replacen("the one line to change", "changed", 1));
}
