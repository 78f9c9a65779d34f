//! Command rules (`[rules]`): a deny is the call's error and it never runs, an ask with nobody
//! to ask is refused, an allow takes a call past Auto review, a workspace cannot lift a deny of
//! yours, and a rule that cannot be read stops the run naming its file and line. Each against
//! the scripted model, headless.

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

fn results(events: &[Value]) -> Vec<Value> {
    (events.iter())
        .filter(|e| e["type"] == "tool_result")
        .cloned()
        .collect()
}

fn bash(command: &str) -> (&'static str, Value) {
    ("bash", json!({"command": command, "description": "d"}))
}

fn home_config(env: &TestEnv, text: &str) {
    std::fs::write(env.home.path().join("config.toml"), text).unwrap();
}

#[test]
fn headless_a_deny_is_the_calls_error_and_an_ask_is_refused() {
    let env = TestEnv::new(vec![
        Turn::tool_calls(&[
            bash("echo ok > first.txt; git push"),
            bash("rm -rf keep"),
            bash("echo fine > second.txt"),
            ("write", json!({"file_path": ".env", "content": "X=1"})),
        ]),
        Turn::text("done"),
    ]);
    home_config(
        &env,
        "[rules]\nallow = [\"bash(echo)\"]\ndeny = [\"bash(git push)\", \"files(.env)\"]\n\
         ask = [\"bash(rm -rf)\"]\n",
    );
    env.write("keep/file.txt", "kept\n");
    let out = env.run(dsh(), &["--json", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = results(&out.events());
    assert_eq!(results.len(), 4, "{results:#?}");

    // The whole line is refused: its first command did not run either.
    assert_eq!(results[0]["error"]["code"], "RULE_DENIED", "{}", results[0]);
    assert_eq!(results[0]["error"]["name"], "RuleDeniedError");
    let text = results[0]["result"].as_str().unwrap();
    assert!(text.contains("deny rule \"bash(git push)\""), "{text}");
    assert!(text.contains("config.toml"), "{text}");
    assert!(!env.ws.path().join("first.txt").exists());

    assert_eq!(
        results[1]["error"]["code"], "RULE_ASK_UNAVAILABLE",
        "{}",
        results[1]
    );
    let text = results[1]["result"].as_str().unwrap();
    assert!(text.contains("nobody can be asked"), "{text}");
    assert!(text.contains("ask rule \"bash(rm -rf)\""), "{text}");
    assert!(env.ws.path().join("keep/file.txt").exists());

    assert_eq!(results[2]["status"], "completed", "{}", results[2]);
    assert!(env.ws.path().join("second.txt").exists());

    assert_eq!(results[3]["error"]["code"], "RULE_DENIED", "{}", results[3]);
    assert!(!env.ws.path().join(".env").exists());

    // The model read the refusals in its next request.
    let last = env.server.requests().pop().unwrap();
    assert!(last.tool_results()[0].contains("did not run: the deny rule"));
}

/// A command the rules cannot read with certainty is asked about, and so refused headless:
/// the ways around a deny of `git push` an outsider would try.
#[test]
fn the_ways_around_a_deny_are_refused_too() {
    let attacks = [
        "env X=1 git push",
        "command git push",
        "bash -c 'git push'",
        "echo $(git push)",
        "echo `git push`",
        "'g'it push",
        "true\ngit push",
        "$(printf git) push",
        "git -C . push",
        // Found by the attack pass of 2026-12-07; each ran git push before.
        "bash -c -- 'git push'",
        "function f { git push; }; f",
        "shopt -s expand_aliases\nalias p='git push'\np",
        "trap 'git push' EXIT",
        "watch -n 1 'git push'",
        "su root -c 'git push'",
        "timeout -- 5 git push",
        "strace -f git push",
        "echo 'git push' | sh",
        "bash <<EOF\ngit push\nEOF",
    ];
    let turns = attacks
        .iter()
        .map(|line| Turn::tool_call("bash", json!({"command": line, "description": "d"})))
        .chain([Turn::text("done")])
        .collect();
    let env = TestEnv::new(turns);
    home_config(&env, "[rules]\ndeny = [\"bash(git push)\"]\n");
    let out = env.run(dsh(), &["--json", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let results = results(&out.events());
    assert_eq!(results.len(), attacks.len());
    for (line, result) in attacks.iter().zip(&results) {
        let code = result["error"]["code"].as_str().unwrap_or("none");
        assert!(
            code == "RULE_DENIED" || code == "RULE_ASK_UNAVAILABLE",
            "{line:?} was not refused: {result}"
        );
    }
    dsh_testkit::fault_matrix(
        "attack",
        "a bash(git push) deny, gone around: quotes, $(...), backquotes, env, command, sh -c, a newline, git -C",
        "each denied or asked about (refused headless)",
    );
    dsh_testkit::fault_matrix(
        "attack",
        "a bash(git push) deny, gone around: bash -c --, a function keyword, an alias, trap, watch, su -c, timeout --, strace, a shell reading a pipe or a here-document",
        "each denied or asked about (refused headless); before the fix each ran",
    );
}

#[test]
fn an_allowed_call_skips_auto_review_and_the_rest_is_reviewed() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "bash",
            json!({"command": "echo a > a.txt", "description": "d"}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": "echo b > b.txt; touch c.txt", "description": "d"}),
        ),
        Turn::text(r#"{"decision": "allow", "reason": "fine"}"#),
        Turn::text("done"),
    ]);
    home_config(&env, "[rules]\nallow = [\"bash(echo)\"]\n");
    let out = env.run(dsh(), &["--json", "--permission-mode", "auto", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    for file in ["a.txt", "b.txt", "c.txt"] {
        assert!(env.ws.path().join(file).exists(), "{file}");
    }
    // Only the second call, which `touch` keeps from being allowed, went to the reviewer.
    let reviewed: Vec<String> = (env.server.requests().iter())
        .filter(|r| r.tool_names().is_empty())
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(reviewed.len(), 1, "{reviewed:#?}");
    assert!(reviewed[0].contains("touch c.txt"));
}

#[test]
fn a_workspace_cannot_lift_your_deny_nor_allow_untrusted() {
    let touch = || {
        Turn::tool_call(
            "bash",
            json!({"command": "touch x.txt", "description": "d"}),
        )
    };
    let env = TestEnv::new(vec![
        touch(),
        Turn::text("done"),
        touch(),
        Turn::text("done"),
    ]);
    home_config(&env, "[rules]\ndeny = [\"bash(touch)\"]\n");
    env.write(".dsh/config.toml", "[rules]\nallow = [\"bash(touch)\"]\n");
    let out = env.run(dsh(), &["--json", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(results(&out.events())[0]["error"]["code"], "RULE_DENIED");
    assert!(!env.ws.path().join("x.txt").exists());

    // `--dump-config` shows each list with the files it came from.
    let dump = env.run(dsh(), &["--dump-config"]);
    assert_eq!(dump.code(), Some(0), "stderr: {}", dump.stderr);
    let home = env.home.path().join("config.toml").display().to_string();
    let deny_row = (dump.stdout.lines())
        .find(|l| l.starts_with("rules.deny"))
        .unwrap_or_else(|| panic!("{}", dump.stdout));
    assert!(
        deny_row.contains("bash(touch)") && deny_row.contains(&home),
        "{deny_row}"
    );
    let allow_row = (dump.stdout.lines())
        .find(|l| l.starts_with("rules.allow"))
        .unwrap();
    assert!(allow_row.contains(".dsh/config.toml"), "{allow_row}");

    // Untrusted, the workspace's allow is set aside, and its deny still applies.
    env.distrust();
    home_config(&env, "");
    env.write(
        ".dsh/config.toml",
        "[rules]\nallow = [\"bash(curl)\"]\ndeny = [\"bash(touch)\"]\n",
    );
    let out = env.run(dsh(), &["--json", "work"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stderr.contains("this folder is not trusted") && out.stderr.contains("rules.allow"),
        "{}",
        out.stderr
    );
    assert_eq!(results(&out.events())[0]["error"]["code"], "RULE_DENIED");
    let dump = env.run(dsh(), &["--dump-config"]);
    let allow_row = (dump.stdout.lines())
        .find(|l| l.starts_with("rules.allow"))
        .unwrap();
    assert!(!allow_row.contains("curl"), "{allow_row}");
    let deny_row = (dump.stdout.lines())
        .find(|l| l.starts_with("rules.deny"))
        .unwrap();
    assert!(deny_row.contains("bash(touch)"), "{deny_row}");
    dsh_testkit::fault_matrix(
        "attack",
        "a workspace's rules.allow names the command the user's rules.deny names (trusted and untrusted)",
        "denied: a deny from any file wins; untrusted, the workspace's allow is set aside",
    );
}

#[test]
fn a_rule_that_cannot_be_read_stops_the_run_naming_the_file_and_line() {
    let env = TestEnv::new(vec![Turn::text("never")]);
    home_config(
        &env,
        "model = \"deepseek-chat\"\n\n[rules]\ndeny = [\"bash(git push; rm x)\"]\n",
    );
    let out = env.run(dsh(), &["work"]);
    assert_ne!(out.code(), Some(0));
    let home = env.home.path().join("config.toml").display().to_string();
    assert!(out.stderr.contains(&home), "{}", out.stderr);
    assert!(out.stderr.contains("line 4"), "{}", out.stderr);
    assert!(out.stderr.contains("holds 2 commands"), "{}", out.stderr);
    assert!(out.stderr.contains("bash(git push)"), "{}", out.stderr);
    assert!(env.server.requests().is_empty());
}
