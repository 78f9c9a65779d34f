//! `dsh sessions diff A B`: two sessions of the same task, in two folders, that made the same
//! first call and then different ones; where they diverged, the files each changed and what
//! each billed, as text and as JSON; and the refusals.

use dsh_testkit::{RunOutput, ScriptedServer, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn session_and_tokens(out: &RunOutput) -> (String, u64) {
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let last = events.last().unwrap();
    (
        events[0]["sessionId"].as_str().unwrap().to_owned(),
        last["usage"]["totalTokens"].as_u64().unwrap(),
    )
}

#[test]
fn diff_shows_where_two_sessions_diverged() {
    let write_a = || Turn::tool_call("write", json!({"file_path": "a.txt", "content": "one\n"}));
    let server = ScriptedServer::start(vec![
        // A: writes a.txt, then edits it.
        write_a(),
        Turn::tool_call(
            "edit",
            json!({"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}),
        ),
        Turn::text("done"),
        // B, in another folder: writes a.txt the same way, then b.txt.
        write_a(),
        Turn::tool_call("write", json!({"file_path": "b.txt", "content": "two\n"})),
        Turn::text("done too"),
    ])
    .with_titles(vec![Turn::text("Loud a.txt")]);
    let env = TestEnv::with_server(server);
    // A asks for a title: its request is billed as the session's, in no step.
    let (a, a_tokens) =
        session_and_tokens(&env.run(dsh(), &["--json", "--title", "make a.txt loud"]));
    assert_eq!(env.server.title_requests().len(), 1);
    let other = tempfile::tempdir().unwrap();
    let (b, b_tokens) = session_and_tokens(&RunOutput::of(
        env.command(dsh())
            .current_dir(other.path())
            .args(["--json", "make a.txt loud"]),
    ));

    // From a third folder: both are found.
    let away = tempfile::tempdir().unwrap();
    let diff = |args: &[&str]| {
        RunOutput::of(
            env.command(dsh())
                .current_dir(away.path())
                .args([&["sessions", "diff"][..], args].concat()),
        )
    };
    let out = diff(&[&a, &b, "--json"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let report: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(report["a"]["id"], a.as_str());
    assert_eq!(report["b"]["id"], b.as_str());
    assert_eq!(report["sameWorkspace"], false);
    assert_eq!(report["sameTask"], true);
    assert_eq!(report["commonCalls"], 1);
    let divergence = &report["divergence"];
    assert_eq!(divergence["call"], 2);
    assert_eq!(divergence["a"]["tool"], "edit");
    assert_eq!(divergence["a"]["turn"], 1);
    assert_eq!(divergence["a"]["arguments"]["new_string"], "ONE");
    assert_eq!(divergence["a"]["message"], "make a.txt loud");
    assert_eq!(divergence["b"]["tool"], "write");
    assert_eq!(divergence["b"]["arguments"]["file_path"], "b.txt");
    assert_eq!(
        report["a"]["files"],
        json!([{"path": "a.txt", "kind": "added"}])
    );
    assert_eq!(
        report["b"]["files"],
        json!([{"path": "a.txt", "kind": "added"}, {"path": "b.txt", "kind": "added"}])
    );
    assert_eq!(report["a"]["calls"], 2);
    assert_eq!(report["a"]["turns"], 1);
    assert_eq!(report["a"]["usage"]["totalTokens"], a_tokens);
    assert_eq!(report["b"]["usage"]["totalTokens"], b_tokens);
    assert!(report["a"]["usage"]["costUsd"].is_number(), "{report}");

    // The text form.
    let shown = diff(&[&a, &b]);
    assert_eq!(shown.code(), Some(0), "{}", shown.stderr);
    for expected in [
        format!("A  {a} · "),
        "the same first 1 call, then they diverged at call 2:".to_owned(),
        "  A  turn 1 \"make a.txt loud\": edit {".to_owned(),
        "  B  turn 1 \"make a.txt loud\": write {".to_owned(),
        "note: recorded in different folders".to_owned(),
        "files A changed: A a.txt\n".to_owned(),
        "files B changed: A a.txt, A b.txt\n".to_owned(),
    ] {
        assert!(
            shown.stdout.contains(&expected),
            "{expected:?} in\n{}",
            shown.stdout
        );
    }
    // A session against itself: no divergence.
    let same = diff(&[&a, &a]);
    assert!(
        same.stdout
            .contains("no divergence: both made the same 2 calls"),
        "{}",
        same.stdout
    );

    // An unknown id: what was wrong, and how to find the right one.
    let unknown = diff(&[&a, "session-nope"]);
    assert_eq!(unknown.code(), Some(1));
    assert!(
        unknown
            .stderr
            .contains("no session \"session-nope\" under "),
        "{}",
        unknown.stderr
    );
    assert!(
        unknown.stderr.contains("hint: `dsh sessions list`"),
        "{}",
        unknown.stderr
    );
    let one = diff(&[&a]);
    assert!(
        one.stderr.contains("needs two session ids"),
        "{}",
        one.stderr
    );
}
