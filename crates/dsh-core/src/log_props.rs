//! Properties of the session log loader, checked on generated logs: a log cut anywhere (a
//! process killed mid-write) loads its whole lines and nothing else, and a log damaged
//! anywhere loads a prefix of what was written or fails with an error that names the line;
//! never a panic. Plain and zstd logs alike. Cases: proptest's default (256), or
//! `PROPTEST_CASES` (`scripts/fuzz` runs many more).

use std::path::Path;

use dsh_protocol::{Block, Message, Record, Role, ToolCallRecord, TurnEndReason, Usage};
use proptest::prelude::*;

use crate::log::{LogOptions, read_log};
use crate::session::Session;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,]{0,24}",
        Just("line\nbreak\r\n\"quoted\" \\ é€🦀".to_owned()),
        Just(String::new()),
    ]
}

/// One turn's records: the message, a tool call and its result, the answer.
fn turn() -> impl Strategy<Value = Vec<Record>> {
    (text(), text(), text()).prop_map(|(task, arguments, answer)| {
        vec![
            Record::TurnStart { turn: 0 },
            Record::UserMessage {
                turn: 0,
                message: Message::user_text(task),
                instructions: None,
            },
            Record::StepStart { turn: 0, step: 1 },
            Record::ToolCall(ToolCallRecord {
                turn: 0,
                step: 1,
                call_id: "call-1".into(),
                name: "read".into(),
                arguments,
            }),
            Record::StepEnd {
                turn: 0,
                step: 1,
                usage: Usage::new(10, 2, 0, 0, 0),
            },
            Record::AssistantMessage(dsh_protocol::AssistantMessageRecord {
                turn: 0,
                step: 2,
                message: Message {
                    role: Role::Assistant,
                    content: vec![Block::Text { text: answer }],
                },
                finish: dsh_protocol::FinishReason::Stop,
                provider: "deepseek".into(),
                model: "m".into(),
                usage: Usage::default(),
            }),
            Record::TurnEnd {
                turn: 0,
                reason: TurnEndReason::Completed,
            },
        ]
    })
}

/// A log of `turns`, its bytes and the records as written.
fn written(turns: Vec<Vec<Record>>, zstd: bool) -> (tempfile::TempDir, Vec<u8>, Vec<Record>) {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let options = LogOptions { fsync: false, zstd };
    let mut session = Session::create(home.path(), home.path().to_path_buf(), options);
    let path = session.log_path().to_path_buf();
    for record in turns.into_iter().flatten() {
        session
            .commit(record)
            .unwrap_or_else(|e| panic!("commit: {e}"));
    }
    drop(session);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read back: {e}"));
    let records = read_log(&path)
        .unwrap_or_else(|e| panic!("the written log loads: {e}"))
        .records
        .into_iter()
        .map(|envelope| envelope.record)
        .collect();
    (home, bytes, records)
}

/// Loads `bytes` as a log file named like the original.
fn load(dir: &Path, zstd: bool, bytes: &[u8]) -> Result<Vec<Record>, crate::CoreError> {
    let name = if zstd { "cut.jsonl.zst" } else { "cut.jsonl" };
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write: {e}"));
    read_log(&path).map(|log| log.records.into_iter().map(|e| e.record).collect())
}

proptest! {
    #[test]
    fn a_log_cut_anywhere_loads_its_whole_records_and_nothing_else(
        turns in proptest::collection::vec(turn(), 1..4),
        zstd in any::<bool>(),
        cut in any::<proptest::sample::Index>(),
    ) {
        let (home, bytes, records) = written(turns, zstd);
        let at = cut.index(bytes.len() + 1);
        match load(home.path(), zstd, &bytes[..at]) {
            Ok(loaded) => {
                prop_assert!(loaded.len() <= records.len());
                prop_assert_eq!(&loaded[..], &records[..loaded.len()]);
                // Every record whose line the cut left whole is loaded, none is lost: a plain
                // log's whole lines before the cut, less the header. (A zstd log's frames are
                // not lines; its prefix is checked above.)
                if !zstd {
                    let whole = bytes[..at].iter().filter(|&&b| b == b'\n').count();
                    prop_assert_eq!(loaded.len(), whole.saturating_sub(1));
                }
                if at == bytes.len() {
                    prop_assert_eq!(loaded.len(), records.len());
                }
            }
            // Only a cut inside the header leaves nothing to load.
            Err(error) => {
                let shown = error.to_string();
                prop_assert!(
                    shown.contains("no header") || shown.contains("line 1"),
                    "cut at {} of {}: {}", at, bytes.len(), shown
                );
            }
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a session log cut at any byte (plain and zstd)",
            "a prefix loaded; for plain logs exactly the whole lines before the cut",
        );
    }

    #[test]
    fn a_damaged_log_loads_a_prefix_or_names_the_line(
        turns in proptest::collection::vec(turn(), 1..3),
        zstd in any::<bool>(),
        at in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
        insert in any::<bool>(),
    ) {
        let (home, mut bytes, records) = written(turns, zstd);
        let at = at.index(bytes.len());
        if insert {
            bytes.insert(at, byte);
        } else {
            bytes[at] = byte;
        }
        match load(home.path(), zstd, &bytes) {
            // A change that still parses can alter a record (there are no checksums), but
            // nothing is added and the order holds: what loads is at most what was written.
            Ok(loaded) => prop_assert!(loaded.len() <= records.len()),
            Err(error) => {
                let shown = error.to_string();
                prop_assert!(
                    shown.contains("line ") || shown.contains("header")
                        || shown.contains("format version") || shown.contains("frame"),
                    "{}", shown
                );
            }
        }
        dsh_testkit::fault_matrix(
            "hostile input",
            "a session log with a byte changed or inserted",
            "a prefix loaded, or refused naming the line; no panic",
        );
    }
}
