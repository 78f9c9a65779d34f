//! Properties of the tools on generated input: no arguments a model can send make a tool
//! panic (every call ends in a result the model can read), and `edit` changes exactly what it
//! was asked to in files with either line ending, with or without a BOM, and refuses what is
//! not text. Cases: proptest's default (256), or `PROPTEST_CASES` (`scripts/fuzz`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a failed step should fail the test

use std::sync::Arc;

use dsh_sandbox::{SandboxMode, SandboxPolicy};
use dsh_tools::{ModelCaps, SpillStore, ToolContext, ToolRegistry, ToolSession};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

struct Fixture {
    _ws: tempfile::TempDir,
    registry: ToolRegistry,
    ctx: ToolContext,
}

fn fixture(mode: SandboxMode) -> Fixture {
    let base = dsh_testkit::scratch_outside_temp(env!("CARGO_TARGET_TMPDIR"));
    let ws = tempfile::Builder::new()
        .prefix("props-")
        .tempdir_in(&base)
        .unwrap();
    let session = ToolSession::new(
        SandboxPolicy::new(mode, ws.path(), Vec::new()),
        SpillStore::new(ws.path().join(".spill")),
        ModelCaps {
            name: "m".into(),
            image_input: false,
        },
    );
    let mut registry = ToolRegistry::with_file_tools(true);
    registry.add_shell_tools(true);
    Fixture {
        ctx: ToolContext {
            call_id: "c".into(),
            cwd: std::fs::canonicalize(ws.path()).unwrap(),
            cancel: CancellationToken::new(),
            session: Arc::new(session),
        },
        _ws: ws,
        registry,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Values of every JSON type, the odd ones models send included.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        Just(json!(u64::MAX)),
        Just(json!(-1)),
        Just(json!(0)),
        "[a-z./*?_ -]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
        Just(json!("../../../etc/passwd")),
        Just(json!("\u{0}nul")),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arguments with the tools' own names and values of any type, or text that is not JSON.
fn arguments() -> impl Strategy<Value = String> {
    let keys = proptest::sample::select(vec![
        "file_path",
        "content",
        "old_string",
        "new_string",
        "replace_all",
        "offset",
        "limit",
        "pattern",
        "path",
        "glob",
        "output_mode",
        "head_limit",
        "-i",
        "-n",
        "-A",
        "type",
        "command",
        "description",
        "timeout",
        "run_in_background",
        "workdir",
        "job_id",
        "wait",
        "timeout_ms",
        "sandbox_permissions",
        "justification",
        "filter",
        "other",
    ]);
    prop_oneof![
        proptest::collection::vec((keys, value()), 0..6).prop_map(|pairs| {
            let map: Map<String, Value> =
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            Value::Object(map).to_string()
        }),
        any::<String>(),
        value().prop_map(|v| v.to_string()),
    ]
}

proptest! {
    #[test]
    fn no_arguments_make_a_tool_panic(
        tool in proptest::sample::select(vec![
            "read", "write", "edit", "glob", "grep", "bash", "job_output", "job_list",
            "job_kill", "no_such_tool",
        ]),
        arguments in arguments(),
    ) {
        // Read-only: generated writes are refused by the fence after their arguments were
        // read, so nothing lands anywhere.
        let f = fixture(SandboxMode::ReadOnly);
        let prepared = f.registry.prepare(tool, &arguments);
        // A valid command is not run: generated text is no command to run on a machine.
        if matches!(tool, "bash" | "job_kill") {
            return Ok(());
        }
        let outcome = runtime().block_on(prepared.run(&f.ctx));
        let text = outcome.text();
        prop_assert!(!text.is_empty(), "{} {}: an empty result", tool, arguments);
        // The registry turns a panic into a result too: that result is the failure.
        prop_assert!(
            !text.contains("failed unexpectedly (a bug in dsh)"),
            "{} {}: {}", tool, arguments, text
        );
        dsh_testkit::fault_matrix(
            "hostile input",
            "tool-call arguments of any shape (most refused by the schema)",
            "a result the model reads, never a caught panic",
        );
    }

    #[test]
    fn edit_replaces_exactly_what_it_was_asked_to_in_any_line_ending(
        lines in proptest::collection::vec("[a-z é€🦀]{0,10}", 1..8),
        crlf in any::<bool>(),
        bom in any::<bool>(),
        pick in any::<proptest::sample::Index>(),
        new in "[A-Z\n]{0,6}",
    ) {
        let f = fixture(SandboxMode::WorkspaceWrite);
        let lf = lines.join("\n") + "\n";
        let ending = if crlf { "\r\n" } else { "\n" };
        let on_disk = format!("{}{}", if bom { "\u{feff}" } else { "" }, lf.replace('\n', ending));
        std::fs::write(f.ctx.cwd.join("f.txt"), &on_disk).unwrap();
        // A whole line (its text, as the model sees it) that occurs once.
        let line = &lines[pick.index(lines.len())];
        if line.is_empty() || lf.matches(line.as_str()).count() != 1 {
            return Ok(());
        }
        let rt = runtime();
        rt.block_on(f.registry.execute("read", r#"{"file_path":"f.txt"}"#, &f.ctx));
        let args = json!({"file_path": "f.txt", "old_string": line, "new_string": new});
        let outcome = rt.block_on(f.registry.execute("edit", &args.to_string(), &f.ctx));
        let after = std::fs::read_to_string(f.ctx.cwd.join("f.txt")).unwrap();
        if line == &new {
            prop_assert!(outcome.is_error, "{}", outcome.text());
            prop_assert_eq!(after, on_disk);
            return Ok(());
        }
        prop_assert!(!outcome.is_error, "{}", outcome.text());
        let expected = format!(
            "{}{}",
            if bom { "\u{feff}" } else { "" },
            lf.replacen(line.as_str(), &new, 1).replace('\n', ending)
        );
        prop_assert_eq!(after, expected);
        dsh_testkit::fault_matrix(
            "hostile input",
            "edit in LF and CRLF files, with and without a BOM",
            "exactly the change asked for",
        );
    }

    #[test]
    fn edit_refuses_what_is_not_utf8_text_and_leaves_it_alone(
        mut bytes in proptest::collection::vec(any::<u8>(), 1..200),
        bad in any::<proptest::sample::Index>(),
    ) {
        let f = fixture(SandboxMode::WorkspaceWrite);
        // No NUL, so the file is text by edit's binary test and its UTF-8 refusal is the one
        // that must answer.
        for b in &mut bytes {
            if *b == 0 {
                *b = b'a';
            }
        }
        let at = bad.index(bytes.len());
        bytes[at] = 0xFF; // never valid in UTF-8
        let path = f.ctx.cwd.join("b.bin");
        std::fs::write(&path, &bytes).unwrap();
        let rt = runtime();
        let read = rt.block_on(f.registry.execute("read", r#"{"file_path":"b.bin"}"#, &f.ctx));
        prop_assert!(read.is_error, "{}", read.text());
        let refused = format!("\"{}\": invalid UTF-8 text", path.display());
        prop_assert!(read.text().contains(&format!("cannot read {refused}")), "{}", read.text());
        // Read refuses such a file, so it records no version of it; the session is given the
        // one a read would have recorded (a file changed after a read cannot keep its version:
        // the version includes the ctime), so that edit reaches its own check of the text.
        let meta = std::fs::metadata(&path).unwrap();
        f.ctx.session.observations.present(&path, dsh_tools::Version::of(&meta));
        let args = json!({"file_path": "b.bin", "old_string": "a", "new_string": "b"});
        let outcome = rt.block_on(f.registry.execute("edit", &args.to_string(), &f.ctx));
        prop_assert!(outcome.is_error, "{}", outcome.text());
        prop_assert!(
            outcome.text().contains(&format!("cannot edit {refused}")),
            "{}",
            outcome.text()
        );
        prop_assert_eq!(std::fs::read(&path).unwrap(), bytes);
        dsh_testkit::fault_matrix(
            "hostile input",
            "edit of a file that is not UTF-8 (edit's own check reached)",
            "refused as not UTF-8 text; the file unchanged",
        );
    }
}
