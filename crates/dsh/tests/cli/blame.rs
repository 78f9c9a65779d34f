//! `dsh blame`: a file written by the file tools and a command over three turns, changed by
//! hand, a turn rewound away, and the session resumed; each line is blamed on the session, turn
//! and call that last wrote it, or said to be no session's.

use dsh_testkit::{RunOutput, TestEnv, Turn};
use serde_json::{Value, json};

use crate::dsh;

/// A read of a.txt (a resumed session reads a file again before it changes it), then an edit.
fn edit(old: &str, new: &str) -> Turn {
    Turn::tool_calls(&[
        ("read", json!({"file_path": "a.txt"})),
        (
            "edit",
            json!({"file_path": "a.txt", "old_string": old, "new_string": new}),
        ),
    ])
}

fn lines(out: &RunOutput) -> Vec<Value> {
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    (out.stdout.lines())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Line `n`'s origin: (turn, tool, message), or `None` for no session's.
fn origin(lines: &[Value], n: usize) -> Option<(u64, String, String)> {
    let origin = &lines[n - 1]["origin"];
    (!origin.is_null()).then(|| {
        (
            origin["turn"].as_u64().unwrap(),
            origin["tool"].as_str().unwrap_or("").to_owned(),
            origin["message"].as_str().unwrap().to_owned(),
        )
    })
}

#[test]
fn blame_follows_edits_commands_a_rewind_and_a_resume() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "write",
            json!({"file_path": "a.txt", "content": "one\ntwo\nthree\n"}),
        ),
        Turn::text("wrote it"),
        edit("two", "TWO"),
        Turn::text("edited"),
        Turn::tool_call(
            "bash",
            json!({"command": "sed -i s/three/THREE/ a.txt", "description": "d"}),
        ),
        Turn::text("sed ran"),
        edit("one", "ONE"),
        Turn::text("to be rewound"),
        edit("by hand", "by dsh"),
        Turn::text("after the resume"),
    ]);
    env.write("old.txt", "before dsh\n");
    let first = env.run(dsh(), &["--json", "write a.txt"]);
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    let id = first.events()[0]["sessionId"].as_str().unwrap().to_owned();
    for task in ["make two loud", "make three loud with sed"] {
        let out = env.run(dsh(), &["--session-id", &id, task]);
        assert_eq!(out.code(), Some(0), "{}", out.stderr);
    }
    // By hand, between turns: a line no session wrote.
    let text = std::fs::read_to_string(env.ws.path().join("a.txt")).unwrap();
    assert_eq!(text, "one\nTWO\nTHREE\n");
    env.write("a.txt", "one\nTWO\nTHREE\nby hand\n");
    let out = env.run(dsh(), &["--session-id", &id, "make one loud"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let rewound = env.run(dsh(), &["rewind", &id, "--to", "4", "--yes"]);
    assert_eq!(rewound.code(), Some(0), "{}", rewound.stderr);
    let out = env.run(dsh(), &["--session-id", &id, "say it was dsh"]);
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(env.ws.path().join("a.txt")).unwrap();
    assert_eq!(text, "one\nTWO\nTHREE\nby dsh\n");
    // And one more line by hand at the end.
    env.write("a.txt", "one\nTWO\nTHREE\nby dsh\ntail\n");

    let blamed = lines(&env.run(dsh(), &["blame", "a.txt", "--json"]));
    assert_eq!(blamed.len(), 5);
    let expect =
        |turn: u64, tool: &str, message: &str| Some((turn, tool.to_owned(), message.to_owned()));
    // Turn 4 wrote "ONE", but it was rewound away: the line is turn 1's again.
    assert_eq!(origin(&blamed, 1), expect(1, "write", "write a.txt"));
    assert_eq!(origin(&blamed, 2), expect(2, "edit", "make two loud"));
    assert_eq!(
        origin(&blamed, 3),
        expect(3, "bash", "make three loud with sed")
    );
    assert_eq!(origin(&blamed, 4), expect(5, "edit", "say it was dsh"));
    assert_eq!(origin(&blamed, 5), None);
    assert_eq!(blamed[0]["origin"]["session"], id.as_str());
    assert!(blamed[0]["origin"]["callId"].is_string());
    assert_eq!(blamed[4]["text"], "tail");

    // One line; a file dsh never wrote; the text form.
    let one = lines(&env.run(dsh(), &["blame", "a.txt:3", "--json"]));
    assert_eq!((one.len(), one[0]["line"].as_u64()), (1, Some(3)));
    assert_eq!(origin(&one, 1), origin(&blamed, 3));
    let old = lines(&env.run(dsh(), &["blame", "old.txt", "--json"]));
    assert!(old[0]["origin"].is_null());
    let shown = env.run(dsh(), &["blame", "a.txt"]);
    assert!(
        shown.stdout.contains(&format!("{id} turn 3 bash ")),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("(not written by dsh)  tail"),
        "{}",
        shown.stdout
    );

    // Asked wrongly: what was wrong, and what to do.
    let missing = env.run(dsh(), &["blame", "nope.txt"]);
    assert_eq!(missing.code(), Some(1));
    assert!(
        missing.stderr.contains("cannot read nope.txt"),
        "{}",
        missing.stderr
    );
    assert!(missing.stderr.contains("hint: "), "{}", missing.stderr);
    // A pipe a command left where a file was is refused, not waited on; so is a file too
    // large to hold.
    let fifo = std::ffi::CString::new(env.ws_path().join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path; nothing else is touched.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let piped = env.run(dsh(), &["blame", "pipe:1", "--json"]);
    assert_eq!(piped.code(), Some(1), "{}", piped.stdout);
    assert!(piped.stdout.contains("\"BLAME_FILE\""), "{}", piped.stdout);
    assert!(
        piped.stdout.contains("not a plain file"),
        "{}",
        piped.stdout
    );
    let big = std::fs::File::create(env.ws_path().join("big.bin")).unwrap();
    big.set_len(33 << 20).unwrap();
    let large = env.run(dsh(), &["blame", "big.bin"]);
    assert!(
        large.stderr.contains("blame reads files of up to"),
        "{}",
        large.stderr
    );
    let past = env.run(dsh(), &["blame", "a.txt:9"]);
    assert!(
        past.stderr
            .contains("a.txt has 5 lines; there is no line 9"),
        "{}",
        past.stderr
    );
}
