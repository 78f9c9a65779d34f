//! What `dsh sessions search` looks through, kept beside each log (`search.idx`), so a search of
//! ten thousand sessions reads ten thousand small files of text instead of their logs.
//!
//! The index is kept as the listing is ([`crate::listing`]): it says how much of the log it
//! covers, the run that writes the log brings it up to date at each turn's end, and a search
//! that finds the log longer reads only the records after it (or, with no index, or one the
//! log does not continue, the whole log) and keeps what it read. The index is never needed:
//! without one, a search reads the log.
//!
//! The file is text, a line each: a JSON header (what it covers, and the session's id, folder
//! and creation time), then one line an entry, `<turn>\t<kind>\t<text>`, the text with `\`,
//! tabs, line ends and carriage returns escaped as `\\`, `\t`, `\n`, `\r`. Entries are the
//! user's messages, the model's answers, its calls (the tool's name and arguments) and the
//! files they name, each cut at [`ENTRY_CHARS`].

use std::path::Path;

use dsh_protocol::{Block, Record, RecordEnvelope, SessionHeader};
use serde::{Deserialize, Serialize};

use crate::log::After;

/// The file beside a session's log that holds its search index.
pub(crate) const INDEX_FILE: &str = "search.idx";

/// The version of the index's format: another version is read as no index.
const VERSION: u32 = 1;

/// The most of one message, answer or call an entry keeps, in characters.
pub const ENTRY_CHARS: usize = 4000;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A message the user wrote.
    User,
    /// An answer of the model.
    Answer,
    /// A call: the tool's name and its arguments.
    Call,
    /// A file a call named.
    File,
}

impl EntryKind {
    pub fn name(self) -> &'static str {
        match self {
            EntryKind::User => "user",
            EntryKind::Answer => "answer",
            EntryKind::Call => "call",
            EntryKind::File => "file",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<EntryKind> {
        [
            EntryKind::User,
            EntryKind::Answer,
            EntryKind::Call,
            EntryKind::File,
        ]
        .into_iter()
        .find(|kind| kind.name() == name)
    }
}

/// The first line of an index: what it covers and whose it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IndexHeader {
    version: u32,
    /// The bytes of the log covered: whole lines, up to and with record `seq`.
    read: u64,
    seq: u64,
    pub id: String,
    pub cwd: String,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

impl IndexHeader {
    /// How many bytes of the log it covers.
    pub(crate) fn covers_bytes(&self) -> u64 {
        self.read
    }
}

/// A session's index as read: its header, and its entries' lines (the text after the header).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Index {
    pub header: IndexHeader,
    pub entries: String,
}

/// One entry of an index, its text unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub turn: u32,
    pub kind: EntryKind,
    pub text: String,
}

impl crate::log::FromLog for Index {
    fn begin(header: &SessionHeader, read: u64) -> Index {
        Index::new(header, read)
    }

    fn note(&mut self, envelope: &RecordEnvelope, end: u64) {
        Index::note(self, envelope, end);
    }

    fn covers(&self) -> After {
        After {
            offset: self.header.read,
            seq: self.header.seq,
        }
    }
}

impl Index {
    fn new(header: &SessionHeader, read: u64) -> Index {
        Index {
            header: IndexHeader {
                version: VERSION,
                read,
                seq: 0,
                id: header.id.clone(),
                cwd: header.cwd.clone(),
                created_at: header.created_at,
                parent_session: header.parent_session.clone(),
            },
            entries: String::new(),
        }
    }

    /// Takes in the next record, whose line ends at byte `end` of the log.
    fn note(&mut self, envelope: &RecordEnvelope, end: u64) {
        self.header.seq = envelope.seq;
        self.header.read = end;
        let mut add = |turn: u32, kind: EntryKind, text: &str| {
            if text.trim().is_empty() {
                return;
            }
            let cut: String = text.chars().take(ENTRY_CHARS).collect();
            self.entries
                .push_str(&format!("{turn}\t{}\t{}\n", kind.name(), escape(&cut)));
        };
        match &envelope.record {
            // Workspace instructions are dsh's message, not the user's.
            Record::UserMessage {
                turn,
                message,
                instructions: None,
            } => add(*turn, EntryKind::User, &texts(&message.content)),
            Record::AssistantMessage(answer) => {
                add(
                    answer.turn,
                    EntryKind::Answer,
                    &texts(&answer.message.content),
                );
            }
            Record::ToolCall(call) => {
                add(
                    call.turn,
                    EntryKind::Call,
                    &format!("{} {}", call.name, call.arguments),
                );
                for path in named_files(&call.arguments) {
                    add(call.turn, EntryKind::File, &path);
                }
            }
            _ => {}
        }
    }

    /// Each entry, unescaped.
    #[cfg(test)]
    fn each(&self) -> impl Iterator<Item = Entry> + '_ {
        self.entries.lines().filter_map(parse_entry)
    }

    /// Writes it beside the log in `dir` ([`crate::listing::replace_beside_log`]).
    fn store(&self, dir: &Path) {
        let Ok(mut bytes) = serde_json::to_vec(&self.header) else {
            return;
        };
        bytes.push(b'\n');
        bytes.extend_from_slice(self.entries.as_bytes());
        crate::listing::replace_beside_log(dir, INDEX_FILE, &bytes);
    }
}

/// The text blocks of a message, one after another.
fn texts(blocks: &[Block]) -> String {
    let parts: Vec<&str> = blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    parts.join("\n")
}

/// The files a call's arguments name: the values of the keys the tools name files by.
fn named_files(arguments: &str) -> Vec<String> {
    let Ok(serde_json::Value::Object(args)) = serde_json::from_str(arguments) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for key in ["path", "file_path", "filePath", "paths", "files"] {
        match args.get(key) {
            Some(serde_json::Value::String(path)) => files.push(path.clone()),
            Some(serde_json::Value::Array(paths)) => {
                files.extend((paths.iter()).filter_map(|p| p.as_str()).map(str::to_owned));
            }
            _ => {}
        }
    }
    files
}

/// `text` on one line of the index.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out
}

/// The text [`escape`] made `line` of.
pub(crate) fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// One entry's line, read back; `None` for a line that is not one.
pub(crate) fn parse_entry(line: &str) -> Option<Entry> {
    let mut fields = line.splitn(3, '\t');
    let turn = fields.next()?.parse().ok()?;
    let kind = EntryKind::from_name(fields.next()?)?;
    Some(Entry {
        turn,
        kind,
        text: unescape(fields.next()?),
    })
}

/// The entry's line that starts at byte `start` of the entries of the index kept beside the
/// log in `dir`.
pub(crate) fn entry_line(dir: &Path, start: usize) -> Option<String> {
    line_at(&kept(dir)?.entries, start).map(str::to_owned)
}

/// The line of `entries` that starts at byte `start`.
pub(crate) fn line_at(entries: &str, start: usize) -> Option<&str> {
    let starts_a_line = start == 0 || entries.as_bytes().get(start - 1) == Some(&b'\n');
    entries
        .get(start..)
        .filter(|_| starts_a_line)?
        .lines()
        .next()
}

/// The index kept beside the log in `dir`, if there is one this dsh reads.
fn kept(dir: &Path) -> Option<Index> {
    let mut text = std::fs::read_to_string(dir.join(INDEX_FILE)).ok()?;
    let end = text.find('\n')?;
    let entries = text.split_off(end + 1);
    let header = serde_json::from_str::<IndexHeader>(&text)
        .ok()
        .filter(|header| header.version == VERSION)?;
    Some(Index { header, entries })
}

/// The index of the log at `path` as it is now: the one kept beside it when it covers the
/// whole log, else that one brought up to date from the records after it (or, when there is
/// none or the log does not continue it, from the whole log), and kept for the next search.
/// `None` for a log that cannot be read.
pub(crate) fn current(path: &Path) -> Option<Index> {
    current_at(path, std::fs::metadata(path).ok()?.len())
}

/// The log in the session folder `dir` and its length: one look at the folder, which a search
/// of every session pays.
pub(crate) fn log_in(dir: &Path) -> Option<(std::path::PathBuf, u64)> {
    [crate::log::LOG_FILE, crate::log::LOG_FILE_ZSTD]
        .into_iter()
        .map(|name| dir.join(name))
        .find_map(|path| {
            let meta = (std::fs::metadata(&path).ok()).filter(std::fs::Metadata::is_file)?;
            Some((path, meta.len()))
        })
}

/// [`current`] of the log at `path`, `len` bytes long.
pub(crate) fn current_at(path: &Path, len: u64) -> Option<Index> {
    let dir = path.parent()?;
    let kept = kept(dir);
    if kept.as_ref().is_some_and(|i| i.header.read == len) {
        return kept;
    }
    let index = crate::log::brought_up(path, len, kept)?;
    index.store(dir);
    Some(index)
}

/// Brings the index beside the log at `path` up to date for the run that writes the log, at a
/// turn's end: from the records after it, or from the whole log when there is none and the log
/// is small (a new session's). A long log without one (written by an older dsh) is left to the
/// next search, so no turn's end waits for a long read.
pub(crate) fn keep_up(path: &Path) {
    const WHOLE_READ_MAX: u64 = 8 << 20;
    let Some(dir) = path.parent() else {
        return;
    };
    let continues = kept(dir)
        .is_some_and(|index| std::fs::metadata(path).is_ok_and(|m| index.header.read <= m.len()));
    if continues || std::fs::metadata(path).is_ok_and(|m| m.len() <= WHOLE_READ_MAX) {
        let _ = current(path);
    }
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{Message, ToolCallRecord, TurnEndReason};

    use super::*;

    /// The whole log at `path` read from its first line.
    fn whole(path: &Path) -> Option<Index> {
        crate::log::brought_up(path, 0, None)
    }
    use crate::log::{LogOptions, SessionLog};

    fn header() -> SessionHeader {
        SessionHeader::new("session-s".into(), 5, "/w".into())
    }

    fn write_turn(log: &mut SessionLog, turn: u32, task: &str, path: &str) {
        log.append(Record::TurnStart { turn }).unwrap();
        let message = Message::user_text(task.to_owned());
        (log.append(Record::UserMessage {
            turn,
            message,
            instructions: None,
        }))
        .unwrap();
        let call = ToolCallRecord {
            turn,
            step: 1,
            call_id: format!("call_{turn}"),
            name: "write".into(),
            arguments: serde_json::json!({"file_path": path, "content": "x\ty"}).to_string(),
        };
        log.append(Record::ToolCall(call)).unwrap();
        let reason = TurnEndReason::Completed;
        log.append(Record::TurnEnd { turn, reason }).unwrap();
    }

    #[test]
    fn a_run_keeps_the_index_at_each_turn_end_and_a_search_reads_only_what_is_new() {
        for zstd in [false, true] {
            let home = tempfile::tempdir().unwrap();
            let options = LogOptions { fsync: false, zstd };
            let mut log =
                SessionLog::create(home.path(), header(), options).at_each_turn_end(keep_up);
            write_turn(&mut log, 1, "fix the parser\nplease", "src/parse.rs");
            let path = log.path().to_path_buf();
            let dir = path.parent().unwrap().to_path_buf();
            let index = kept(&dir).expect("an index beside the log");
            assert_eq!(index.header.read, std::fs::metadata(&path).unwrap().len());
            let entries: Vec<Entry> = index.each().collect();
            assert_eq!(entries[0].text, "fix the parser\nplease", "zstd: {zstd}");
            assert_eq!(entries[0].kind, EntryKind::User);
            assert!(entries[1].text.starts_with("write {"), "{entries:?}");
            assert_eq!(entries[2].kind, EntryKind::File);
            assert_eq!(entries[2].text, "src/parse.rs");
            // A turn still running is read from the log, after the index.
            log.append(Record::TurnStart { turn: 2 }).unwrap();
            let message = Message::user_text("then the lexer".to_owned());
            (log.append(Record::UserMessage {
                turn: 2,
                message,
                instructions: None,
            }))
            .unwrap();
            let now = current(&path).unwrap();
            assert_eq!(now.each().last().unwrap().text, "then the lexer");
            assert_eq!(kept(&dir), Some(now.clone()), "what was read is kept");
            assert_eq!(Some(now), whole(&path));
        }
    }

    #[test]
    fn a_missing_or_foreign_index_is_made_again_from_the_log() {
        let home = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(home.path(), header(), LogOptions::default())
            .at_each_turn_end(keep_up);
        write_turn(&mut log, 1, "one", "a.rs");
        let path = log.path().to_path_buf();
        let dir = path.parent().unwrap().to_path_buf();
        std::fs::remove_file(dir.join(INDEX_FILE)).unwrap();
        assert_eq!(current(&path), whole(&path));
        assert!(kept(&dir).is_some(), "kept again");
        std::fs::write(dir.join(INDEX_FILE), "{\"version\":99}\n1\tuser\tstale\n").unwrap();
        let index = current(&path).unwrap();
        assert_eq!(index.each().next().unwrap().text, "one");
    }

    #[test]
    fn escaping_round_trips() {
        let text = "a\\b\tc\nd\re\\n";
        assert!(!escape(text).contains(['\n', '\t', '\r']));
        assert_eq!(unescape(&escape(text)), text);
    }
}
