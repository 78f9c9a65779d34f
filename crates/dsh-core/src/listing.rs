//! What a list shows of a session, kept beside its log (`listing.json`), so that listing a
//! thousand sessions reads a thousand small files instead of a thousand logs.
//!
//! The listing says how much of the log it covers (the bytes of whole records up to record
//! `seq`). The run that writes a log keeps its listing as it appends and writes it at each
//! turn's end. A list uses a listing that covers the whole log as it is; when the log has grown
//! since (a turn still running, a run that died), it reads only the records after it; a log
//! with no listing, or one that no longer continues it, is read whole once. Either way the list
//! writes back what it read, so the next one reads nothing but listings. A listing that cannot
//! be written (a read-only home) only costs the next list the same reading.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use dsh_protocol::{Block, Record, RecordEnvelope, SessionHeader, SessionSummary};
use serde::{Deserialize, Serialize};

use crate::log::After;

/// The file beside a session's log that holds its listing.
pub(crate) const LISTING_FILE: &str = "listing.json";

/// The version of the listing's format: another version is read as no listing.
const VERSION: u32 = 1;

/// A session as lists show it, and how much of its log that covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Listing {
    version: u32,
    /// The bytes of the log covered: whole lines, up to and with record `seq`.
    read: u64,
    seq: u64,
    pub id: String,
    pub created_at: u64,
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_task: Option<String>,
    turns: u32,
    total_tokens: u64,
    /// The title the model wrote (`session/title`); the user's own, a file beside the log,
    /// is read when a list shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_title: Option<String>,
}

impl crate::log::FromLog for Listing {
    fn begin(header: &SessionHeader, read: u64) -> Listing {
        Listing::new(header, read)
    }

    fn note(&mut self, envelope: &RecordEnvelope, end: u64) {
        Listing::note(self, envelope, end);
    }

    fn covers(&self) -> After {
        After {
            offset: self.read,
            seq: self.seq,
        }
    }
}

impl Listing {
    /// The listing of a log of `header` alone, whose line ends at byte `read`.
    pub(crate) fn new(header: &SessionHeader, read: u64) -> Listing {
        Listing {
            version: VERSION,
            read,
            seq: 0,
            id: header.id.clone(),
            created_at: header.created_at,
            cwd: header.cwd.clone(),
            parent_session: header.parent_session.clone(),
            first_task: None,
            turns: 0,
            total_tokens: 0,
            written_title: None,
        }
    }

    /// The bytes of the log it covers.
    pub(crate) fn read(&self) -> u64 {
        self.read
    }

    /// The last record it covers.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Takes in the next record, whose line ends at byte `end` of the log.
    pub(crate) fn note(&mut self, envelope: &RecordEnvelope, end: u64) {
        self.seq = envelope.seq;
        self.read = end;
        match &envelope.record {
            Record::TurnStart { .. } => self.turns += 1,
            Record::UserMessage { message, .. } if self.first_task.is_none() => {
                self.first_task = message.content.iter().find_map(|block| match block {
                    Block::Text { text } => Some(text.lines().next().unwrap_or("").to_owned()),
                    _ => None,
                });
            }
            Record::StepEnd { usage, .. } => self.total_tokens += usage.total_tokens,
            // Its request is outside any step: counted here, or no list would count it.
            Record::SessionTitle(titled) => {
                self.total_tokens += titled.usage.total_tokens;
                self.written_title = Some(titled.title.clone());
            }
            _ => {}
        }
    }

    /// The summary lists show, for the log at `path` with the title the user gave it,
    /// `title`, which wins over the one the model wrote.
    pub(crate) fn summary(&self, title: Option<String>, path: &Path) -> SessionSummary {
        SessionSummary {
            id: self.id.clone(),
            title: title.or_else(|| self.written_title.clone()),
            created_at: self.created_at,
            first_task: self.first_task.clone().unwrap_or_default(),
            turns: self.turns,
            total_tokens: self.total_tokens,
            parent_session: self.parent_session.clone(),
            path: path.to_string_lossy().into_owned(),
        }
    }

    /// Writes it beside the log in `dir` ([`replace_beside_log`]). Failing is left unsaid:
    /// the listing is a shortcut, and the log still says everything.
    pub(crate) fn store(&self, dir: &Path) {
        if let Ok(bytes) = serde_json::to_vec(self) {
            replace_beside_log(dir, LISTING_FILE, &bytes);
        }
    }
}

/// Writes `bytes` as the file `name` beside the log in `dir`, owner-only, replacing the one
/// there whole (written aside, then renamed), so a reader never sees half of one. What is kept
/// beside a log only shortens reading it, so a failure is left unsaid.
pub(crate) fn replace_beside_log(dir: &Path, name: &str, bytes: &[u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let staged = dir.join(format!(
        ".{name}.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&staged)
        .and_then(|mut file| file.write_all(bytes))
        .and_then(|()| std::fs::rename(&staged, dir.join(name)));
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
}

/// The listing kept beside the log in `dir`, if there is one this dsh reads.
fn kept(dir: &Path) -> Option<Listing> {
    let bytes = std::fs::read(dir.join(LISTING_FILE)).ok()?;
    serde_json::from_slice::<Listing>(&bytes)
        .ok()
        .filter(|listing| listing.version == VERSION)
}

/// The listing of the log at `path` as it is now: the one kept beside it when it covers the
/// whole log, else that one brought up to date from the records after it (or, when there is
/// none or the log does not continue it, from the whole log), and kept for the next list.
/// `None` for a log that cannot be read, as a list leaves out.
pub(crate) fn current(path: &Path) -> Option<Listing> {
    let dir = path.parent()?;
    let len = std::fs::metadata(path).ok()?.len();
    let kept = kept(dir);
    if let Some(listing) = kept.as_ref().filter(|l| l.read == len) {
        return Some(listing.clone());
    }
    let listing = crate::log::brought_up(path, len, kept.clone())?;
    if kept.as_ref() != Some(&listing) {
        listing.store(dir);
    }
    Some(listing)
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{Message, TurnEndReason, Usage};

    use super::*;

    /// The whole log at `path` read from its first line.
    fn whole(path: &Path) -> Option<Listing> {
        crate::log::brought_up(path, 0, None)
    }
    use crate::log::{LogOptions, SessionLog, read_log};

    fn header() -> SessionHeader {
        SessionHeader::new("session-l".into(), 5, "/w".into())
    }

    /// Turns `from..from + count` as a run writes them; `ended`: with their `turn/end`.
    fn write_turns(log: &mut SessionLog, from: u32, count: u32, ended: bool) {
        for turn in from..from + count {
            log.append(Record::TurnStart { turn }).unwrap();
            let message = Message::user_text(format!("task {turn}\nits details"));
            (log.append(Record::UserMessage {
                turn,
                message,
                instructions: None,
            }))
            .unwrap();
            let usage = Usage::new(7, 3, 0, 0, 0);
            (log.append(Record::StepEnd {
                turn,
                step: 1,
                usage,
            }))
            .unwrap();
            if ended {
                let reason = TurnEndReason::Completed;
                log.append(Record::TurnEnd { turn, reason }).unwrap();
            }
        }
    }

    #[test]
    fn a_run_keeps_its_listing_at_each_turn_end() {
        for zstd in [false, true] {
            let home = tempfile::tempdir().unwrap();
            let options = LogOptions { fsync: false, zstd };
            let mut log = SessionLog::create(home.path(), header(), options);
            write_turns(&mut log, 1, 2, true);
            let dir = log.path().parent().unwrap();
            let listing = kept(dir).expect("a listing beside the log");
            assert_eq!(listing.read, std::fs::metadata(log.path()).unwrap().len());
            assert_eq!(Some(&listing), whole(log.path()).as_ref(), "zstd: {zstd}");
            let summary = listing.summary(None, log.path());
            assert_eq!((summary.turns, summary.total_tokens), (2, 20));
            assert_eq!(summary.first_task, "task 1");
        }
    }

    /// A title the model wrote is listed, and its request's tokens counted; a title the user
    /// gave wins over it.
    #[test]
    fn a_written_title_is_listed_and_counted() {
        let home = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(home.path(), header(), LogOptions::default());
        write_turns(&mut log, 1, 1, true);
        let titled = dsh_protocol::SessionTitleRecord {
            turn: 1,
            title: "Read the task".into(),
            model: "m".into(),
            usage: Usage::new(40, 5, 0, 0, 0),
        };
        log.append(Record::SessionTitle(titled)).unwrap();
        let listing = current(log.path()).unwrap();
        let summary = listing.summary(None, log.path());
        assert_eq!(summary.title.as_deref(), Some("Read the task"));
        assert_eq!(summary.name(), "Read the task");
        assert_eq!(summary.total_tokens, 10 + 45);
        let given = listing.summary(Some("Mine".into()), log.path());
        assert_eq!(given.name(), "Mine");
    }

    /// The listing covers the first two turns; a third was written after it. A list reads
    /// that one alone: a line before it, damaged since, is never read (a whole read refuses
    /// the log).
    #[test]
    fn a_list_reads_only_the_records_its_listing_does_not_cover() {
        for zstd in [false, true] {
            let home = tempfile::tempdir().unwrap();
            let options = LogOptions { fsync: false, zstd };
            let mut log = SessionLog::create(home.path(), header(), options);
            write_turns(&mut log, 1, 2, true);
            write_turns(&mut log, 3, 1, false);
            let path = log.path().to_path_buf();
            drop(log);
            let mut bytes = std::fs::read(&path).unwrap();
            // The first record's `,"time"`, or its frame's magic number.
            let at = if zstd {
                let magic = [0x28, 0xb5, 0x2f, 0xfd];
                let mut frames = bytes.windows(4).enumerate().filter(|(_, w)| *w == magic);
                frames.nth(1).unwrap().0
            } else {
                bytes.iter().position(|b| *b == b'\n').unwrap() + 8
            };
            bytes[at..at + 4].copy_from_slice(b"XXXX");
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                read_log(&path).is_err(),
                "the log is damaged (zstd: {zstd})"
            );

            let listing = current(&path).expect("listed from its listing and the new turn");
            assert_eq!((listing.turns, listing.total_tokens), (3, 30));
            assert_eq!(listing.read, bytes.len() as u64);
            // What was read is kept: the next list reads nothing but the listing.
            assert_eq!(kept(path.parent().unwrap()), Some(listing));
        }
    }

    #[test]
    fn a_listing_the_log_does_not_continue_is_made_again_from_the_whole_log() {
        let home = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(home.path(), header(), LogOptions::default());
        write_turns(&mut log, 1, 3, true);
        let path = log.path().to_path_buf();
        let dir = path.parent().unwrap().to_path_buf();
        drop(log);
        let three = kept(&dir).unwrap();
        // Another log in its place: shorter, then (another session's) longer.
        std::fs::remove_file(&path).unwrap();
        let mut log = SessionLog::create(home.path(), header(), LogOptions::default());
        write_turns(&mut log, 1, 1, false);
        assert_eq!(current(&path).unwrap().turns, 1);
        three.store(&dir);
        write_turns(&mut log, 2, 4, false);
        assert!(std::fs::metadata(&path).unwrap().len() > three.read);
        assert_eq!(current(&path), whole(&path));
        assert_eq!(current(&path).unwrap().turns, 5);
        // A listing this dsh does not read is no listing.
        std::fs::write(dir.join(LISTING_FILE), r#"{"version":99}"#).unwrap();
        assert_eq!(current(&path).unwrap().turns, 5);
    }
}
