//! `dsh replay`: a two-turn session replayed on a second scripted route that answers
//! differently, in a scratch copy of the files the session began with; each turn side by
//! side, the final files compared, the original session and the user's workspace untouched,
//! the scratch folder removed (or kept with --keep); and the refusals.

use dsh_testkit::{RunOutput, ScriptedServer, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn write(path: &str, content: &str) -> Turn {
    Turn::tool_call("write", json!({"file_path": path, "content": content}))
}

/// A route `other/m2` to `server`, in the home's config.
fn other_route(env: &TestEnv, server: &ScriptedServer) {
    let path = env.home.path().join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(
        &path,
        format!(
            "{text}\n[providers.other]\nkind = \"openai-completions\"\nbase_url = \"{}/v1\"\n",
            server.base_url()
        ),
    )
    .unwrap();
}

fn report(out: &RunOutput) -> Value {
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    serde_json::from_str(out.stdout.trim()).unwrap()
}

#[test]
fn a_session_is_replayed_on_another_route_beside_the_original() {
    let env = TestEnv::new(vec![
        write("a.txt", "one\n"),
        Turn::text("made a.txt"),
        // A resumed session reads a file again before it changes it.
        Turn::tool_calls(&[
            ("read", json!({"file_path": "a.txt"})),
            (
                "edit",
                json!({"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}),
            ),
        ]),
        Turn::text("made it loud"),
    ]);
    // The other route: the same first turn, a different second one; then the same first turn
    // again, for the replay up to turn 1.
    let other = ScriptedServer::start(vec![
        write("a.txt", "one\n"),
        Turn::text("made a.txt too"),
        write("a.txt", "One\nand more\n"),
        Turn::text("did it my way"),
        write("a.txt", "one\n"),
        Turn::text("made a.txt again"),
    ]);
    other_route(&env, &other);
    env.write("base.txt", "there before\n");
    let first = env.run(dsh(), &["--json", "make a.txt"]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    let id = first.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let second = env.run(dsh(), &["--session-id", &id, "make it loud"]);
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    // The user goes on by hand: the replay must start from the files the session began with.
    env.write("a.txt", "by hand\n");
    let log = std::fs::read_dir(env.home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|project| project.path().join(&id).join("session.jsonl"))
        .find(|path| path.is_file())
        .unwrap();
    let log_before = std::fs::read(&log).unwrap();

    let out = env.run(dsh(), &["replay", &id, "--model", "other/m2", "--json"]);
    let replayed = report(&out);
    assert_eq!(replayed["original"], id.as_str());
    assert_ne!(replayed["replay"], id.as_str());
    assert_eq!(replayed["model"], "other/m2");
    let turns = replayed["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["message"], "make a.txt");
    assert_eq!(turns[1]["message"], "make it loud");
    assert_eq!(turns[1]["original"]["model"], "deepseek-v4-flash");
    assert_eq!(turns[1]["replay"]["model"], "m2");
    assert_eq!(turns[1]["original"]["calls"], 2);
    assert_eq!(
        turns[0]["replay"]["files"],
        json!([{"path": "a.txt", "kind": "added"}])
    );
    assert_eq!(
        turns[1]["original"]["files"],
        json!([{"path": "a.txt", "kind": "modified"}])
    );
    assert!(turns[1]["replay"]["usage"]["totalTokens"].as_u64() > Some(0));
    assert_eq!(replayed["totals"]["original"]["calls"], 3);
    assert_eq!(replayed["totals"]["replay"]["calls"], 2);
    assert_eq!(replayed["finalTreeMatches"], false);
    assert_eq!(
        replayed["finalTreeDiffers"],
        json!([{"path": "a.txt", "kind": "modified"}])
    );
    // The scratch folder is gone, the user's files and the original log are as they were.
    assert_eq!(replayed["kept"], false);
    let scratch = std::path::PathBuf::from(replayed["scratch"].as_str().unwrap());
    assert!(!scratch.exists(), "{}", scratch.display());
    assert!(!scratch.starts_with(env.ws_path()));
    let read = |name: &str| std::fs::read_to_string(env.ws_path().join(name)).unwrap();
    assert_eq!(read("a.txt"), "by hand\n");
    assert_eq!(read("base.txt"), "there before\n");
    assert_eq!(std::fs::read(&log).unwrap(), log_before);
    // The replay is a session of its own, recorded in the scratch folder; the other route was
    // sent the original's messages.
    let diff = env.run(
        dsh(),
        &[
            "sessions",
            "diff",
            &id,
            replayed["replay"].as_str().unwrap(),
            "--json",
        ],
    );
    let diff = report(&diff);
    assert_eq!(diff["b"]["cwd"], scratch.to_str().unwrap());
    assert_eq!(diff["divergence"]["call"], 2);
    let sent: Vec<String> = (other.requests().iter())
        .map(|r| serde_json::to_string(r.messages()).unwrap())
        .collect();
    assert!(sent[0].contains("make a.txt") && sent[2].contains("make it loud"));

    // Up to turn 1, kept: the same files as the original's after its first turn, and the
    // scratch folder holds what the session began with and what the replay wrote.
    let out = env.run(
        dsh(),
        &["replay", &id, "--model", "other/m2", "--to", "1", "--keep"],
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("final files: the same as the original's"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("  original  turn 1 · deepseek-v4-flash · ")
    );
    assert!(out.stdout.contains("  replay    turn 1 · m2 · "));
    let kept = (out.stdout.lines())
        .find_map(|line| line.strip_prefix("scratch folder (a copy): kept at "))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    let kept = std::path::Path::new(kept);
    assert_eq!(
        std::fs::read_to_string(kept.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(
        std::fs::read_to_string(kept.join("base.txt")).unwrap(),
        "there before\n"
    );
    std::fs::remove_dir_all(kept).unwrap();

    // Asked wrongly: what was wrong, and what to do.
    let unknown = env.run(dsh(), &["replay", "session-nope", "--model", "other/m2"]);
    assert_eq!(unknown.code(), Some(1));
    assert!(unknown.stderr.contains("hint: "), "{}", unknown.stderr);
    let past = env.run(dsh(), &["replay", &id, "--model", "other/m2", "--to", "7"]);
    assert!(
        past.stderr.contains("has no turn 7: its turns are 1 to 2"),
        "{}",
        past.stderr
    );
    let no_model = env.run(dsh(), &["replay", &id]);
    assert!(
        no_model.stderr.contains("needs --model"),
        "{}",
        no_model.stderr
    );
    let bad_route = env.run(dsh(), &["replay", &id, "--model", "nowhere/x"]);
    assert_eq!(bad_route.code(), Some(1), "{}", bad_route.stderr);
    assert_eq!(other.requests().len(), 6, "a refused replay sends nothing");
}

/// In a Git workspace the scratch folder is a clone sharing the repository's objects, with
/// the files the session began with (an uncommitted change included, shown as uncommitted);
/// nothing is written into the user's repository.
#[test]
fn a_git_workspace_is_replayed_in_a_clone_of_its_repository() {
    if !dsh_testkit::git_available() {
        return;
    }
    let env = TestEnv::new(vec![write("new.txt", "new\n"), Turn::text("done")]);
    let other = ScriptedServer::start(vec![write("new.txt", "new\n"), Turn::text("same")]);
    other_route(&env, &other);
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .current_dir(env.ws_path())
            .env("HOME", env.user_home.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    git(&["init", "-q"]);
    env.write("tracked.txt", "committed\n");
    git(&["add", "tracked.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    env.write("tracked.txt", "changed, not committed\n");
    let first = env.run(dsh(), &["--json", "add new.txt"]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    let id = first.events()[0]["sessionId"].as_str().unwrap().to_owned();
    let refs_before = git(&["for-each-ref"]);

    let out = env.run(
        dsh(),
        &["replay", &id, "--model", "other/m2", "--keep", "--json"],
    );
    let replayed = report(&out);
    assert_eq!(replayed["git"], true);
    assert_eq!(replayed["finalTreeMatches"], true);
    let scratch = std::path::PathBuf::from(replayed["scratch"].as_str().unwrap());
    let status = std::process::Command::new("git")
        .current_dir(&scratch)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    let status = String::from_utf8(status.stdout).unwrap();
    assert!(status.contains(" M tracked.txt"), "{status}");
    assert!(status.contains("?? new.txt"), "{status}");
    assert_eq!(
        std::fs::read_to_string(scratch.join("tracked.txt")).unwrap(),
        "changed, not committed\n"
    );
    // The user's repository: no new ref, no worktree, the same files.
    assert_eq!(git(&["for-each-ref"]), refs_before);
    assert!(!env.ws_path().join(".git/worktrees").exists());
    assert_eq!(
        git(&["status", "--porcelain"]),
        " M tracked.txt\n?? new.txt\n"
    );
    std::fs::remove_dir_all(scratch).unwrap();
}
