//! The terminal UI's habits users bring from other coding agents (issue 52), as a person uses
//! them: the real binary in tmux (80x24) against the scripted model server, keys typed with
//! `send-keys`, the screen read with `capture-pane`.

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{TestEnv, Turn};
use serde_json::Value;

use crate::dsh;

/// `dsh args...` in the workspace of `env`, on an 80x24 terminal.
fn open(env: &TestEnv, args: &[&str]) -> Tmux {
    let bin = dsh().to_str().unwrap();
    let mut argv = vec![bin];
    argv.extend_from_slice(args);
    Tmux::start(&argv, env.ws.path(), &env.variables(), 80, 24)
}

/// Waits until `needle` is shown and the turn that showed it has ended (no spinner line).
fn wait_turn_end(ui: &Tmux, needle: &str) -> String {
    ui.wait_until(&format!("{needle:?} and the end of the turn"), |s| {
        s.contains(needle) && !s.contains("Ctrl-C interrupts")
    })
}

/// The user messages of a request, as the model was sent them.
fn user_texts(request: &dsh_testkit::Request) -> Vec<String> {
    (request.messages().iter())
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn log_records(env: &TestEnv) -> Vec<Value> {
    (env.session_logs().lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[test]
fn a_bang_command_runs_in_the_sandbox_and_the_model_reads_it_next_turn() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![Turn::text("I see the shell said 42.")]);
    let ui = open(&env, &[]);
    ui.wait_for("Type a message");
    // Under workspace-write the sandbox refuses a write outside the workspace: the command
    // runs where the model's calls run, not in dsh's own process.
    ui.type_text("!echo shell-said-$((6*7)); touch /usr/dsh-shell-probe; false");
    ui.press(&["Enter"]);
    let screen = wait_turn_end(&ui, "└ exit 1");
    assert!(
        screen.contains("! echo shell-said-$((6*7)); touch /usr/dsh-shell-probe; false"),
        "{screen}"
    );
    assert!(screen.contains("│ shell-said-42"), "{screen}");
    assert!(!std::path::Path::new("/usr/dsh-shell-probe").exists());
    assert!(
        env.server.requests().is_empty(),
        "a ! command asks the model nothing"
    );
    ui.type_text("what did it say?");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "I see the shell said 42.");
    let requests = env.server.requests();
    assert_eq!(requests.len(), 1);
    let sent = user_texts(&requests[0]);
    let shell = (sent.iter())
        .find(|t| t.contains("The user ran this shell command themselves"))
        .unwrap_or_else(|| panic!("the command is in the next request: {sent:?}"));
    assert!(shell.contains("$ echo shell-said-$((6*7))"), "{shell}");
    assert!(shell.contains("shell-said-42"), "{shell}");
    assert!(shell.contains("[exit code: 1]"), "{shell}");
    assert!(
        sent.last().unwrap().contains("what did it say?"),
        "{sent:?}"
    );
    // The command is a turn of the session, which ended as completed.
    let ends = (log_records(&env).iter())
        .filter(|r| r["type"] == "turn/end" && r["data"]["reason"]["kind"] == "completed")
        .count();
    assert_eq!(ends, 2);
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}
