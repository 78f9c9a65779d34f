//! `glob` and `grep` through the registry, on a real tree.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolContext, ToolOutcome, ToolRegistry, ToolSession};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Tree {
    _ws: tempfile::TempDir,
    _spill: tempfile::TempDir,
    registry: ToolRegistry,
    ctx: ToolContext,
    /// Each file written gets a later modification time than the one before.
    clock: std::cell::Cell<u64>,
}

impl Tree {
    fn new() -> Tree {
        let ws = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        let session = ToolSession::new(
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, ws.path(), Vec::new()),
            SpillStore::new(spill.path().join("spill")),
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
        Tree {
            _ws: ws,
            _spill: spill,
            registry: ToolRegistry::with_file_tools(true),
            ctx,
            clock: std::cell::Cell::new(1_600_000_000),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.ctx.cwd.join(name)
    }

    /// Writes `name` (making its folders), stamped later than every file before it.
    fn put(&self, name: &str, content: &[u8]) {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        self.clock.set(self.clock.get() + 60);
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(self.clock.get());
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutcome {
        self.registry
            .execute(tool, &args.to_string(), &self.ctx)
            .await
    }

    async fn text(&self, tool: &str, args: Value) -> String {
        self.call(tool, args).await.text()
    }
}

/// The path a capped result names as holding the full list.
fn saved_path(text: &str) -> PathBuf {
    let after = text.split("stored at: ").nth(1).unwrap();
    PathBuf::from(after.split(". Use read").next().unwrap())
}

#[tokio::test]
async fn glob_lists_hidden_and_ignored_files_oldest_first_without_vcs_folders() {
    let tree = Tree::new();
    tree.put(".gitignore", b"*.log\nbuild/\n");
    tree.put(".git/config", b"x");
    tree.put(".hg/store", b"x");
    tree.put(".env", b"x");
    tree.put("build/out.bin", b"x");
    tree.put("app.log", b"x");
    tree.put("src/main.rs", b"x");
    std::os::unix::fs::symlink(tree.path("src/main.rs"), tree.path("link.rs")).unwrap();

    assert_eq!(
        tree.text("glob", json!({"pattern": "*"})).await,
        ".gitignore\n.env\nbuild/out.bin\napp.log\nsrc/main.rs"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "*.rs"})).await,
        "src/main.rs"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "*", "path": ".git"}))
            .await,
        "No files found"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "src"})).await,
        "No files found",
        "directories are never listed"
    );
}

#[tokio::test]
async fn glob_anchors_patterns_with_a_slash_at_the_workspace() {
    let tree = Tree::new();
    tree.put("src/lib/util.rs", b"x");
    tree.put("src/main.rs", b"x");
    tree.put("tests/src/deep.rs", b"x");
    assert_eq!(
        tree.text("glob", json!({"pattern": "src/*.rs"})).await,
        "src/main.rs"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "src/**/*.rs"})).await,
        "src/lib/util.rs\nsrc/main.rs"
    );
    // Under an explicit folder the shown paths keep the folder's spelling.
    assert_eq!(
        tree.text("glob", json!({"pattern": "*.rs", "path": "tests"}))
            .await,
        "tests/src/deep.rs"
    );
    let outside = tree.text("glob", json!({"pattern": "*.rs", "path": tree.path("src")}));
    assert_eq!(outside.await, "src/lib/util.rs\nsrc/main.rs");
}

#[tokio::test]
async fn glob_over_the_cap_shows_the_oldest_hundred_and_saves_the_rest() {
    let tree = Tree::new();
    for i in 1..=130 {
        tree.put(&format!("many/f{i:03}.txt"), b"x");
    }
    let text = tree.text("glob", json!({"pattern": "*.txt"})).await;
    let (head, footer) = text.split_once("\n\n").unwrap();
    let expected: Vec<String> = (1..=100).map(|i| format!("many/f{i:03}.txt")).collect();
    assert_eq!(head, expected.join("\n"));
    assert!(
        footer.starts_with("(Showing 100 of 130 paths. Full sorted result stored at: "),
        "{footer}"
    );
    assert!(
        footer.ends_with(". Use read with offset/limit, or grep this path to search within it.)")
    );
    let full = std::fs::read_to_string(saved_path(footer)).unwrap();
    let all: Vec<String> = (1..=130).map(|i| format!("many/f{i:03}.txt")).collect();
    assert_eq!(full, all.join("\n"));
}

#[tokio::test]
async fn glob_rejects_bad_patterns_and_paths_with_the_reference_texts() {
    let tree = Tree::new();
    let outcome = tree.call("glob", json!({"pattern": "["})).await;
    assert_eq!(
        outcome.text(),
        "Error: glob pattern rejected by ripgrep: rg: error parsing glob '[': unclosed character \
         class; missing ']'"
    );
    assert_eq!(outcome.error.unwrap().code, "SEARCH_INVALID_PATTERN");
    assert_eq!(
        tree.text("glob", json!({"pattern": " "})).await,
        "Error: pattern must be a non-empty string"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "*", "path": ""})).await,
        "Error: path must be a non-empty string when given"
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "*", "path": "missing"}))
            .await,
        "Error: glob search failed (exit 2): rg: missing: IO error for operation on missing: No \
         such file or directory (os error 2)"
    );
}

#[tokio::test]
async fn grep_groups_matches_by_file_in_path_order() {
    let tree = Tree::new();
    tree.put("src/b.txt", b"say hello\n");
    tree.put("a.txt", b"hello world\nbye\nhello again, hello\n");
    tree.put("src/c.txt", b"nothing here\n");
    assert_eq!(
        tree.text("grep", json!({"pattern": "hello"})).await,
        "Found 3 matches\n\na.txt\nLine 1: hello world\nLine 3: hello again, hello\n\nsrc/b.txt\nLine 1: say hello"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "bye"})).await,
        "Found 1 match\n\na.txt\nLine 2: bye"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "HELLO"})).await,
        "No matches found",
        "matching is case-sensitive"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "hello", "include": "b.*"}))
            .await,
        "Found 1 match\n\nsrc/b.txt\nLine 1: say hello"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "hello", "path": "a.txt"}))
            .await,
        "Found 2 matches\n\na.txt\nLine 1: hello world\nLine 3: hello again, hello"
    );
}

#[tokio::test]
async fn grep_respects_gitignore_and_skips_hidden_and_binary_files() {
    let tree = Tree::new();
    std::fs::create_dir(tree.path(".git")).unwrap();
    tree.put(".gitignore", b"ignored/\n");
    tree.put("ignored/x.txt", b"needle\n");
    tree.put(".hidden/h.txt", b"needle\n");
    tree.put("bin.dat", b"needle\0\x01\x02");
    tree.put("latin1.txt", b"needle caf\xe9\n");
    tree.put("shown.txt", b"needle\r\n");
    assert_eq!(
        tree.text("grep", json!({"pattern": "needle"})).await,
        "Found 2 matches\n\nlatin1.txt\nLine 1: (line is not valid UTF-8)\n\nshown.txt\nLine 1: needle"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "needle", "path": ".hidden"}))
            .await,
        "Found 1 match\n\n.hidden/h.txt\nLine 1: needle"
    );
}

#[tokio::test]
async fn grep_over_the_cap_saves_every_match() {
    let tree = Tree::new();
    let lines: String = (1..=300).map(|i| format!("match {i}\n")).collect();
    tree.put("many.txt", lines.as_bytes());
    let text = tree.text("grep", json!({"pattern": "match"})).await;
    let rows: Vec<String> = (1..=250).map(|i| format!("Line {i}: match {i}")).collect();
    let expected_head = format!(
        "Found 250 of 300 matches\n\nmany.txt\n{}\n\n",
        rows.join("\n")
    );
    assert!(text.starts_with(&expected_head));
    assert!(
        text.ends_with(". Use read with offset/limit, or grep this path to search within it.)")
    );
    let full = std::fs::read_to_string(saved_path(&text)).unwrap();
    let all: Vec<String> = (1..=300).map(|i| format!("Line {i}: match {i}")).collect();
    assert_eq!(
        full,
        format!("Found 300 matches\n\nmany.txt\n{}", all.join("\n"))
    );
}

#[tokio::test]
async fn grep_rejects_patterns_the_engine_cannot_run() {
    let tree = Tree::new();
    let outcome = tree.call("grep", json!({"pattern": "a(?=b)"})).await;
    assert_eq!(
        outcome.text(),
        "Error: grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:a(?=b))\n        \
         ^^^\nerror: look-around, including look-ahead and look-behind, is not supported\n\n\
         Consider enabling PCRE2 with the --pcre2 flag, which can handle backreferences\nand \
         look-around."
    );
    assert_eq!(outcome.error.unwrap().code, "SEARCH_INVALID_PATTERN");
    assert_eq!(
        tree.text("grep", json!({"pattern": ""})).await,
        "Error: pattern must be a non-empty string"
    );
    assert_eq!(
        tree.text("grep", json!({"pattern": "x", "include": "*.rs,*.ts"}))
            .await,
        "Error: include must be one glob, not a comma-separated list (use {a,b} alternation instead)"
    );
}

#[tokio::test]
async fn search_paths_outside_the_workspace_are_absolute() {
    let tree = Tree::new();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("x.txt"), "needle\n").unwrap();
    let root = std::fs::canonicalize(other.path()).unwrap();
    let shown = root.join("x.txt").display().to_string();
    assert_eq!(
        tree.text("grep", json!({"pattern": "needle", "path": root}))
            .await,
        format!("Found 1 match\n\n{shown}\nLine 1: needle")
    );
    assert_eq!(
        tree.text("glob", json!({"pattern": "*.txt", "path": root}))
            .await,
        shown
    );
}

/// The red team's memory attack (issue 31): a file that is one enormous line made grep hold
/// the whole line (a 300 MB file took dsh to 423 MB). The searcher holds at most
/// `MAX_HELD_LINE_BYTES`; such a file is named as not searched past that line, while the
/// other files' matches are reported as usual.
#[tokio::test]
async fn a_line_too_long_to_hold_is_skipped_and_named() {
    let tree = Tree::new();
    let mut huge = vec![b'a'; dsh_tools::MAX_HELD_LINE_BYTES + (1 << 20)];
    huge.extend_from_slice(b" needle\n");
    tree.put("dump.json", &huge);
    tree.put("src/lib.rs", b"// a needle here\n");
    let out = tree.call("grep", json!({"pattern": "needle"})).await;
    assert!(!out.is_error, "{}", out.text());
    assert_eq!(
        out.text(),
        "Found 1 match\n\nsrc/lib.rs\nLine 1: // a needle here\n\n(Not searched past a line \
         longer than 16 MiB, which grep does not hold in memory: dump.json. Search such a file \
         with bash, for example grep -o with a bounded context around the pattern.)"
    );
    dsh_testkit::fault_matrix(
        "attack",
        "grep over a file whose one line is longer than grep may hold",
        "named as not searched past that line; other files searched",
    );
}
