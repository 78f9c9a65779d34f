//! Checkpoints and `dsh rewind`: three turns change files through the file tools and bash
//! (`sed -i`, `rm`, `chmod`, a link repointed, folders made), then the session goes back to
//! the start of each turn, and the tree is compared byte for byte, modes and links too.

use std::collections::BTreeMap;
use std::path::Path;

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

/// Every path under `root` (`.dsh` aside: dsh's own, made by the sandbox), byte for byte.
fn tree(root: &Path) -> BTreeMap<String, String> {
    dsh_testkit::tree(root, &[".dsh"])
}

fn bash(command: &str) -> Turn {
    Turn::tool_call("bash", json!({"command": command, "description": "d"}))
}

/// A session of three turns; the trees before each and after the last.
fn three_turns(env: &TestEnv) -> (String, Vec<BTreeMap<String, String>>) {
    let ws = env.ws.path();
    env.write("a.txt", "orig\n");
    env.write("keep.txt", "keep\n");
    env.write("run.sh", "echo run\n");
    std::os::unix::fs::symlink("a.txt", ws.join("link")).unwrap();
    // Every byte value: turn 3 changes one byte that is not UTF-8 into another, which only a
    // comparison of raw bytes tells apart.
    std::fs::write(ws.join("bytes.bin"), (0..=255u8).collect::<Vec<u8>>()).unwrap();
    let mut trees = vec![tree(ws)];
    let out = env.run(dsh(), &["--json", "turn one"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    trees.push(tree(ws));
    for task in ["turn two", "turn three"] {
        let out = env.run(dsh(), &["--session-id", &id, task]);
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
        trees.push(tree(ws));
    }
    (id, trees)
}

fn script() -> Vec<Turn> {
    vec![
        // Turn 1: the file tools.
        Turn::tool_calls(&[
            ("read", json!({"file_path": "a.txt"})),
            ("write", json!({"file_path": "b.txt", "content": "bee\n"})),
        ]),
        Turn::tool_call(
            "edit",
            json!({"file_path": "a.txt", "old_string": "orig", "new_string": "one"}),
        ),
        Turn::text("turn one done"),
        // Turn 2: commands.
        bash("sed -i s/one/two/ a.txt && rm keep.txt && chmod 755 run.sh && ln -sfn b.txt link"),
        Turn::text("turn two done"),
        // Turn 3: folders made, a file removed.
        bash(
            "mkdir -p d/e && echo deep > d/e/f.txt && rm b.txt && \
             printf '\\201' | dd of=bytes.bin bs=1 seek=128 conv=notrunc 2>/dev/null",
        ),
        Turn::text("turn three done"),
    ]
}

fn rewind(env: &TestEnv, args: &[&str]) -> dsh_testkit::RunOutput {
    let mut all = vec!["rewind"];
    all.extend_from_slice(args);
    env.run(dsh(), &all)
}

#[test]
fn each_turn_can_be_rewound_to_byte_for_byte_and_each_rewind_undone() {
    let env = TestEnv::new(script());
    let (id, trees) = three_turns(&env);
    let ws = env.ws.path();
    assert_ne!(trees[0], trees[1]);
    assert_ne!(trees[1], trees[2]);
    assert_ne!(trees[2], trees[3]);

    let listed = rewind(&env, &[&id]);
    assert_eq!(listed.code(), Some(0), "stderr: {}", listed.stderr);
    assert!(
        listed.stdout.contains("turn 1   turn one"),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("2 changed: M a.txt, A b.txt"),
        "{}",
        listed.stdout
    );
    assert!(
        listed
            .stdout
            .contains("4 changed: M a.txt, D keep.txt, M link, M run.sh"),
        "{}",
        listed.stdout
    );

    // For programs: the same as JSON, and an error as the stream's error event.
    let listed = rewind(&env, &[&id, "--json"]);
    let turns: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(turns[0]["turn"], 1);
    assert_eq!(turns[0]["restorable"], true);
    assert_eq!(
        turns[0]["changes"],
        json!([{"path": "a.txt", "kind": "modified"}, {"path": "b.txt", "kind": "added"}])
    );
    let planned = rewind(&env, &[&id, "--to", "3", "--json"]);
    let report: Value = serde_json::from_str(&planned.stdout).unwrap();
    assert_eq!(
        report["plan"]["remove"],
        json!(["d", "d/e", "d/e/f.txt"]),
        "{report}"
    );
    assert_eq!(
        report["plan"]["restore"],
        json!(["b.txt", "bytes.bin"]),
        "{report}"
    );
    assert_eq!(report["applied"], Value::Null);
    let refused = rewind(&env, &[&id, "--to", "9", "--json"]);
    assert_eq!(refused.code(), Some(1));
    let error: Value = serde_json::from_str(refused.stdout.trim()).unwrap();
    assert_eq!(error["type"], "error");
    assert!(
        error["message"].as_str().unwrap().contains("no turn 9"),
        "{error}"
    );

    // Without --yes nothing changes: the plan is shown.
    let shown = rewind(&env, &[&id, "--to", "1"]);
    assert_eq!(shown.code(), Some(0), "stderr: {}", shown.stderr);
    assert!(
        shown.stdout.contains("remove      d/e/f.txt"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("nothing was changed"),
        "{}",
        shown.stdout
    );
    assert_eq!(tree(ws), trees[3]);

    for turn in [3, 2, 1] {
        let out = rewind(&env, &[&id, "--to", &turn.to_string(), "--yes"]);
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
        assert_eq!(
            tree(ws),
            trees[turn - 1],
            "back to the start of turn {turn}"
        );
        // Undone, and done again.
        let out = rewind(&env, &[&id, "--undo", "--yes"]);
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
        assert_eq!(tree(ws), trees[3], "the rewind to turn {turn} undone");
    }
    let out = rewind(&env, &[&id, "--to", "2", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(tree(ws), trees[1]);
}

#[test]
fn the_conversation_goes_back_too_and_the_log_keeps_everything() {
    let mut turns = script();
    turns.push(Turn::text("after the rewind"));
    let env = TestEnv::new(turns);
    let (id, _) = three_turns(&env);
    let out = rewind(&env, &[&id, "--to", "2", "--conversation", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The files were left as they are.
    assert!(env.ws.path().join("d/e/f.txt").exists());
    let out = env.run(dsh(), &["--session-id", &id, "turn four"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let sent = env.server.requests().pop().unwrap().body.to_string();
    assert!(
        sent.contains("turn one") && sent.contains("turn four"),
        "{sent}"
    );
    assert!(
        !sent.contains("turn two") && !sent.contains("turn three"),
        "{sent}"
    );
    let log = env.session_log();
    assert!(log.contains("turn three done"));
    let rewinds: Vec<Value> = (log.lines())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["type"] == "rewind")
        .collect();
    assert_eq!(
        rewinds[0]["data"],
        json!({"toTurn": 2, "files": false, "conversation": true, "written": 0, "removed": 0})
    );
}

#[test]
fn a_rewind_is_refused_when_files_changed_outside_dsh_and_forced_it_can_be_undone() {
    let env = TestEnv::new(script());
    let (id, trees) = three_turns(&env);
    env.write("a.txt", "edited by hand\n");
    env.write("notes.txt", "mine\n");
    let out = rewind(&env, &[&id, "--to", "3", "--yes"]);
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr
            .contains("files changed outside dsh since its last checkpoint: M a.txt, A notes.txt"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("a.txt")).unwrap(),
        "edited by hand\n"
    );
    let shown = rewind(&env, &[&id, "--to", "3"]);
    assert!(
        shown.stdout.contains("remove      notes.txt"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("--yes and --force"),
        "{}",
        shown.stdout
    );
    let out = rewind(&env, &[&id, "--to", "3", "--yes", "--force"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(tree(env.ws.path()), trees[2]);
    let out = rewind(&env, &[&id, "--undo", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("notes.txt")).unwrap(),
        "mine\n"
    );
    // Nothing left to undo, and no such turn.
    let out = rewind(&env, &[&id, "--undo", "--yes"]);
    assert!(
        out.stderr.contains("there is no rewind to undo"),
        "{}",
        out.stderr
    );
    let out = rewind(&env, &[&id, "--to", "9"]);
    assert!(
        out.stderr.contains("the session has no turn 9"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_files_can_go_back_to_just_before_an_escalated_call() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": "kept.txt", "content": "kept\n"}),
        ),
        // A call that asks to leave the sandbox: the workspace is checkpointed first (here
        // nobody can approve it, and it is refused; the checkpoint is taken all the same).
        Turn::tool_call(
            "bash",
            json!({
                "command": "echo wide > wide.txt",
                "description": "d",
                "sandbox_permissions": "danger-full-access",
                "justification": "needs the machine",
            }),
        ),
        Turn::tool_call(
            "write",
            json!({"file_path": "later.txt", "content": "later\n"}),
        ),
        Turn::text("done"),
    ]);
    let out = env.run(dsh(), &["--json", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let id = events[0]["sessionId"].as_str().unwrap().to_owned();
    let call = (events.iter())
        .find(|e| e["type"] == "tool_call" && e["tool"] == "bash")
        .unwrap()["callId"]
        .as_str()
        .unwrap()
        .to_owned();
    let listed = rewind(&env, &[&id]);
    assert!(
        listed.stdout.contains(&format!(
            "before the escalated call {call}: --before-call {call}"
        )),
        "{}",
        listed.stdout
    );
    let out = rewind(&env, &[&id, "--before-call", &call, "--conversation"]);
    assert!(out.stderr.contains("files back only"), "{}", out.stderr);
    let out = rewind(&env, &[&id, "--before-call", &call, "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stdout.contains(&format!(
            "done: rewound files to before the escalated call {call}"
        )),
        "{}",
        out.stdout
    );
    assert!(env.ws.path().join("kept.txt").exists());
    assert!(!env.ws.path().join("later.txt").exists());
    let out = rewind(&env, &[&id, "--before-call", "call-nope"]);
    assert!(
        out.stderr
            .contains("no checkpoint was taken before a call call-nope"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_edit_made_between_turns_counts_as_made_outside_dsh() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": "a.txt", "content": "by turn one\n"}),
        ),
        Turn::text("one"),
        Turn::tool_call(
            "write",
            json!({"file_path": "b.txt", "content": "by turn two\n"}),
        ),
        Turn::text("two"),
    ]);
    let out = env.run(dsh(), &["--json", "turn one"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    // Between the turns, by hand: in neither turn's changes.
    env.write("mine.txt", "typed between the turns\n");
    let out = env.run(dsh(), &["--session-id", &id, "turn two"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let out = rewind(&env, &[&id, "--to", "1", "--yes"]);
    assert_eq!(out.code(), Some(1));
    assert!(out.stderr.contains("A mine.txt"), "{}", out.stderr);
    assert!(env.ws.path().join("mine.txt").exists());
    assert!(env.ws.path().join("b.txt").exists());
}

#[test]
fn what_an_earlier_rewind_restored_does_not_count_as_made_outside_dsh() {
    let mut turns = script();
    turns.push(Turn::text("turn four done"));
    let env = TestEnv::new(turns);
    let (id, trees) = three_turns(&env);
    let out = rewind(&env, &[&id, "--to", "2", "--files", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let out = env.run(dsh(), &["--session-id", &id, "turn four"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    // The restore between turn 3's end and turn 4's start was dsh's own.
    let out = rewind(&env, &[&id, "--to", "1", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(tree(env.ws.path()), trees[0]);
}

/// Every file and folder under `dir`, with its permission bits.
fn modes(dir: &Path) -> Vec<(std::path::PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            found.push((entry.path(), meta.permissions().mode() & 0o777));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn the_checkpoint_store_is_private_and_never_holds_a_secrets_file() {
    use std::os::unix::fs::PermissionsExt;
    let secret = "sk-live-0123456789abcdefSECRET";
    let env = TestEnv::new(vec![
        // A secrets file below the top folder, which commands may write.
        bash("echo two > a.txt && echo 'OTHER_TOKEN=changed' > app/.env.local"),
        Turn::text("done"),
    ]);
    let ws = env.ws.path();
    // A home another user can enter, as one dsh did not make itself often is.
    std::fs::set_permissions(env.home.path(), PermissionsExt::from_mode(0o755)).unwrap();
    env.write("a.txt", "one\n");
    env.write(".env", &format!("SERVICE_TOKEN={secret}\n"));
    env.write("app/.env.local", &format!("OTHER_TOKEN={secret}x\n"));
    env.write(".env.example", "SERVICE_TOKEN=\n");
    // The project's config file holds a key too (a header), under a name like no secret's.
    let header = "hdr-0123456789abcdefHEADERKEY";
    let config = format!("[providers.deepseek]\nheaders = {{ X-Org = \"{header}\" }}\n");
    env.write(".dsh/config.toml", &config);
    let out = env.run(dsh(), &["--json", "change things"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();

    let store = env.home.path().join("checkpoints");
    let kept = modes(&store);
    assert!(kept.len() > 3, "{kept:?}");
    for (path, mode) in &kept {
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", path.display());
        if path.is_file() {
            let bytes = std::fs::read(path).unwrap();
            let text = String::from_utf8_lossy(&bytes);
            assert!(
                !text.contains(secret) && !text.contains(header),
                "{} holds a secret",
                path.display()
            );
        }
    }
    // The rewind leaves the secrets files as they are, and puts the rest back.
    let out = rewind(&env, &[&id, "--to", "1", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(std::fs::read_to_string(ws.join("a.txt")).unwrap(), "one\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("app/.env.local")).unwrap(),
        "OTHER_TOKEN=changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".env")).unwrap(),
        format!("SERVICE_TOKEN={secret}\n")
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".dsh/config.toml")).unwrap(),
        config
    );
    dsh_testkit::fault_matrix(
        "attack",
        "another local user reads the checkpoint store of a home open to them, for a key in .env or .dsh/config.toml",
        "store files 0600 and folders 0700; no .env or config file copied; a rewind leaves them be",
    );
}

/// The checkpoint records of the session log, as `(turn, at)`.
fn checkpoints(env: &TestEnv) -> Vec<(u64, String)> {
    env.session_logs()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "checkpoint")
        .map(|r| {
            (
                r["data"]["turn"].as_u64().unwrap(),
                r["data"]["at"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A turn whose calls cannot change a file (none, or only reads) takes no checkpoint: in a
/// large repository that is the walk it does not pay. Its files are those of the next
/// checkpoint, so a rewind to it still puts back what later turns changed.
#[test]
fn a_turn_that_changes_no_file_takes_no_checkpoint_and_can_still_be_rewound_to() {
    let env = TestEnv::new(vec![
        Turn::text("just talking"),
        Turn::tool_call("read", json!({"file_path": "a.txt"})),
        Turn::text("read it"),
        Turn::tool_call("write", json!({"file_path": "b.txt", "content": "new\n"})),
        Turn::text("wrote it"),
    ]);
    env.write("a.txt", "one\n");
    let out = env.run(dsh(), &["--json", "talk"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(checkpoints(&env), Vec::<(u64, String)>::new());
    for task in ["read a.txt", "write b.txt"] {
        let out = env.run(dsh(), &["--session-id", &id, task]);
        assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    }
    assert_eq!(
        checkpoints(&env),
        [(3, "start".to_owned()), (3, "end".to_owned())]
    );
    let listed = rewind(&env, &[&id, "--json"]);
    let turns: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(turns[0]["restorable"], true, "{turns}");
    assert_eq!(turns[0]["changes"], json!([]));
    assert_eq!(
        turns[2]["changes"],
        json!([{"path": "b.txt", "kind": "added"}])
    );
    let out = rewind(&env, &[&id, "--to", "1", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(!env.ws.path().join("b.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("a.txt")).unwrap(),
        "one\n"
    );
}

/// The store of the workspace's checkpoints (the one folder under `checkpoints/`).
fn store_of(env: &TestEnv) -> std::path::PathBuf {
    let stores: Vec<_> = std::fs::read_dir(env.home.path().join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    stores[0].clone()
}

/// Writes `path` with `content`, last changed two hours ago (past the hour a prune leaves
/// anything new alone).
fn old_file(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(then)
        .unwrap();
}

/// The day's prune runs beside a run, not before its first request, and is done when dsh
/// exits: a snapshot no session names and a content nothing names go, what the session's
/// checkpoints name stays (a rewind still works), and a store pruned within the day is left
/// alone.
#[test]
fn checkpoints_nothing_names_are_pruned_beside_a_run_once_a_day() {
    let env = TestEnv::new(vec![
        bash("echo two > a.txt"),
        Turn::text("done"),
        bash("echo three > a.txt"),
        Turn::text("done"),
        bash("echo four > a.txt"),
        Turn::text("done"),
    ]);
    env.write("a.txt", "one\n");
    let out = env.run(dsh(), &["--json", "first"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let id = out.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let store = store_of(&env);
    let plant = |name: &str| {
        let (snapshot, object) = (
            store.join("snapshots").join(format!("{name}0")),
            store.join("objects/ab").join(format!("{name}1")),
        );
        old_file(&snapshot, "a snapshot no session names");
        old_file(&object, "a content nothing names");
        (snapshot, object)
    };
    let (snapshot, object) = plant("aaaa");
    // The first run found no store to prune; this one does.
    assert!(!store.join("last-prune").exists());
    let out = env.run(dsh(), &["--session-id", &id, "second"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(!snapshot.exists(), "kept {}", snapshot.display());
    assert!(!object.exists(), "kept {}", object.display());
    assert!(store.join("last-prune").exists());
    // Pruned within the day: the next run leaves the store as it is.
    let (snapshot, object) = plant("bbbb");
    let out = env.run(dsh(), &["--session-id", &id, "third"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(snapshot.exists() && object.exists());
    // Everything the session's checkpoints name is still there.
    let out = rewind(&env, &[&id, "--to", "1", "--yes"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(env.ws.path().join("a.txt")).unwrap(),
        "one\n"
    );
}
