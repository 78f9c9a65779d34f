//! The session archive in the terminal UI (real binary in tmux, 80x24, scripted model): the
//! `/resume` picker filtered by a search as it is typed, and `/blame FILE:LINE` in the
//! transcript.

use dsh_testkit::tmux::Tmux;
use dsh_testkit::{TestEnv, Turn};
use serde_json::json;

use crate::dsh;

#[test]
fn the_picker_filters_by_a_search_and_blame_shows_who_wrote_a_line() {
    if !Tmux::available() {
        return;
    }
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": "a.txt", "content": "one\ntwo\n"}),
        ),
        Turn::text("wrote it"),
        Turn::text("the docs are fine"),
    ]);
    for task in ["fix the parser in a.txt", "look at the docs"] {
        let out = env.run(dsh(), &["--json", task]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
    }
    let bin = dsh().to_str().unwrap();
    let ui = Tmux::start(&[bin, "resume"], env.ws.path(), &env.variables(), 80, 24);
    let screen = ui.wait_for("Resume a session");
    assert!(screen.contains("look at the docs"), "{screen}");
    assert!(screen.contains("fix the parser in a.txt"), "{screen}");
    ui.type_text("parser");
    let screen = ui.wait_for("search: parser");
    assert!(screen.contains("› "), "{screen}");
    assert!(screen.contains("fix the parser in a.txt"), "{screen}");
    assert!(!screen.contains("look at the docs"), "{screen}");
    ui.press(&["Enter"]);
    ui.wait_for("resumed session");

    ui.type_text("/blame a.txt:2");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("Blame a.txt:2");
    assert!(screen.contains("turn 1 · write call_"), "{screen}");
    assert!(screen.contains("\"fix the parser in a.txt\""), "{screen}");
    assert!(screen.contains("        two"), "{screen}");
    ui.type_text("/blame nope.txt");
    ui.press(&["Enter"]);
    let screen = ui.wait_for("cannot read nope.txt");
    assert!(screen.contains("✗ "), "{screen}");
    ui.press(&["C-d"]);
    assert_eq!(ui.wait_exit(), 0);
}
