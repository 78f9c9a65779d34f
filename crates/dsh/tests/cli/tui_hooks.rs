//! The approval hooks through a front end that asks someone: the terminal UI in tmux, its
//! approval dialog put by a real escalation, with PermissionRequest and Notification hooks
//! from the workspace's `.dsh/hooks.json` run as real commands.

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

fn open(env: &TestEnv) -> Tmux {
    let bin = dsh().to_str().unwrap();
    Tmux::start(&[bin], env.ws.path(), &env.variables(), 80, 24)
}

fn command(script: &str) -> Value {
    json!({"type": "command", "command": script})
}

/// What a hook wrote to `file` in the workspace (its stdin: the payload).
fn payload(env: &TestEnv, file: &str) -> Value {
    let path = env.ws.path().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}: {text}"))
}

/// Waits until `needle` is shown and the turn has ended (no spinner line).
fn wait_turn_end(ui: &Tmux, needle: &str) -> String {
    ui.wait_until(&format!("{needle:?} and the end of the turn"), |s| {
        s.contains(needle) && !s.contains("Ctrl-C interrupts")
    })
}

#[test]
fn the_approval_dialog_fires_permission_request_then_notification_hooks() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::escalated("echo allowed-run"),
        Turn::text("ran it"),
    ]);
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {
            // Matched by the name Claude Code gives the tool, as a hooks file written for it
            // would say.
            "PermissionRequest": [{"matcher": "Bash", "hooks": [command("cat > permission.json")]}],
            "Notification": [{"hooks": [command("cat > notification.json")]}],
        }})
        .to_string(),
    );
    let ui = open(&env);
    ui.wait_for("Type a message");
    ui.type_text("do it");
    ui.press(&["Enter"]);
    ui.wait_for("Allow bash?");
    ui.press(&["1"]);
    ui.wait_for("› 1. Allow once");
    ui.press(&["Enter"]);
    wait_turn_end(&ui, "ran it");
    assert!(ui.everything().contains("allowed-run"));

    // Both ran before the answer took effect, each with its own payload.
    let permission = payload(&env, "permission.json");
    assert_eq!(permission["hook_event_name"], "PermissionRequest");
    assert_eq!(permission["tool_name"], "bash");
    assert!(
        permission["tool_use_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{permission}"
    );
    assert!(
        permission["reason"]
            .as_str()
            .is_some_and(|r| r.contains("danger-full-access")),
        "{permission}"
    );
    let notified = payload(&env, "notification.json");
    assert_eq!(notified["hook_event_name"], "Notification");
    assert_eq!(notified["notification_type"], "permission_prompt");
    assert!(
        notified["message"].as_str().is_some_and(
            |m| m.starts_with("dsh needs your approval: ") && m.contains("danger-full-access")
        ),
        "{notified}"
    );
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}

/// A PermissionRequest hook that exits 2 refuses the approval with nobody asked: no dialog
/// opens (the turn would wait on it), the model reads the hook's reason, and no Notification
/// is sent, since nobody is waited for.
#[test]
fn a_permission_request_hook_refuses_before_the_dialog_opens() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::escalated("echo refused-run"),
        Turn::text("understood"),
    ]);
    env.write(
        ".dsh/hooks.json",
        &json!({"hooks": {
            "PermissionRequest": [{"hooks": [command(
                "echo 'escalations are not allowed in this project' >&2; exit 2"
            )]}],
            "Notification": [{"hooks": [command("cat > notification.json")]}],
        }})
        .to_string(),
    );
    let ui = open(&env);
    ui.wait_for("Type a message");
    ui.type_text("do it");
    ui.press(&["Enter"]);
    let screen = wait_turn_end(&ui, "understood");
    assert!(!ui.everything().contains("Allow bash?"), "{screen}");
    let refused = env.server.requests()[1].tool_results();
    assert!(
        refused.last().unwrap().contains(
            "a PermissionRequest hook refused it: escalations are not allowed in this project"
        ),
        "{refused:?}"
    );
    assert!(
        !refused.last().unwrap().contains("refused-run\n"),
        "{refused:?}"
    );
    assert!(!env.ws.path().join("notification.json").exists());
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}
