//! `dsh sessions search`: sessions of two workspaces found by what their users asked, what the
//! model answered, its calls and the files they named; ranked, and the same with the index
//! beside a log taken away (it is made again from the log).

use dsh_testkit::{RunOutput, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn hits(out: &RunOutput) -> Vec<Value> {
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    (out.stdout.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[test]
fn search_finds_sessions_of_every_workspace_ranked() {
    let env = TestEnv::new(vec![
        // Session A, in the workspace: the user asks about the parser's timeout.
        Turn::tool_call(
            "write",
            json!({"file_path": "src/lexer.rs", "content": "x\n"}),
        ),
        Turn::text("wrote the lexer"),
        // Session B, elsewhere: only the answer speaks of the parser's timeout.
        Turn::text("The Parser Timeout comes from the retry loop"),
    ]);
    let a = env.run(dsh(), &["--json", "why does the parser timeout happen?"]);
    assert_eq!(a.code(), Some(0), "{}", a.stderr);
    let other = tempfile::tempdir().unwrap();
    let b = RunOutput::of(
        env.command(dsh())
            .current_dir(other.path())
            .args(["--json", "look at the retries"]),
    );
    assert_eq!(b.code(), Some(0), "{}", b.stderr);
    let id_of = |out: &RunOutput| {
        let first: Value = serde_json::from_str(out.stdout.lines().next().unwrap()).unwrap();
        first["sessionId"].as_str().unwrap().to_owned()
    };
    let (a_id, b_id) = (id_of(&a), id_of(&b));

    // From a third folder: both, the user's own words first.
    let away = tempfile::tempdir().unwrap();
    let search = |args: &[&str]| {
        RunOutput::of(
            env.command(dsh())
                .current_dir(away.path())
                .args([&["sessions", "search"][..], args].concat()),
        )
    };
    let found = hits(&search(&["parser", "TIMEOUT", "--json"]));
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0]["id"], a_id.as_str());
    assert_eq!(found[0]["kind"], "user");
    assert_eq!(found[0]["turn"], 1);
    assert_eq!(found[0]["cwd"], env.ws_path().to_str().unwrap());
    assert_eq!(found[1]["id"], b_id.as_str());
    assert_eq!(found[1]["kind"], "answer");
    assert_eq!(
        found[1]["snippet"],
        "The Parser Timeout comes from the retry loop"
    );
    let other_cwd = std::fs::canonicalize(other.path()).unwrap();
    assert_eq!(found[1]["cwd"], other_cwd.to_str().unwrap());
    assert!(found[0]["score"].as_u64() > found[1]["score"].as_u64());

    // A file a call named, and the call itself.
    let file = hits(&search(&["src/lexer.rs", "--json"]));
    assert_eq!(file.len(), 1);
    assert_eq!(
        (file[0]["id"].as_str(), file[0]["kind"].as_str()),
        (Some(a_id.as_str()), Some("file"))
    );
    // Every word must be there; --limit keeps the best.
    assert!(hits(&search(&["parser", "nowhere", "--json"])).is_empty());
    let one = hits(&search(&["timeout", "--limit", "1", "--json"]));
    assert_eq!(one.len(), 1);

    // The text form: the session, its turn and the snippet.
    let text = search(&["retry", "loop"]);
    assert!(
        text.stdout.contains(&format!("{b_id}  turn 1 · answer")),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("    The Parser Timeout comes from the retry loop")
    );
    let none = search(&["zebra"]);
    assert!(
        none.stdout.starts_with("no session under "),
        "{}",
        none.stdout
    );

    // Without the index beside a log, the search reads the log and keeps the index again.
    let index = std::path::Path::new(found[0]["path"].as_str().unwrap())
        .parent()
        .unwrap()
        .join("search.idx");
    assert!(index.is_file(), "the run kept an index");
    std::fs::remove_file(&index).unwrap();
    assert_eq!(hits(&search(&["parser", "timeout", "--json"])), found);
    assert!(index.is_file(), "made again");

    // Asked wrongly, the refusal says what to give.
    let bare = search(&[]);
    assert_eq!(bare.code(), Some(1), "{}", bare.stderr);
    assert!(
        bare.stderr.contains("needs the text to look for"),
        "{}",
        bare.stderr
    );
    let limit = search(&["x", "--limit", "none"]);
    assert!(
        limit.stderr.contains("--limit takes a number"),
        "{}",
        limit.stderr
    );
}
