//! The session log: `session.jsonl`, a header line and then one record per line.
//!
//! Nothing is written until the first record, so a run that fails before its first turn leaves
//! no empty session behind. Each record is written with one `write` on a file opened for
//! appending, so a crash leaves at most a torn last line, which [`read_log`] drops; with
//! `sessions.fsync` every record is also flushed to the disk before the run goes on. The
//! session's folder holds a lock while a process writes it (see [`crate::lock`]).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_protocol::{Record, RecordEnvelope, SessionHeader};

use crate::CoreError;
use crate::listing::Listing;
use crate::lock::SessionLock;

mod read;

pub(crate) use read::{
    After, FromLog, Item, LogEnd, brought_up, is_zstd, may_rewind, read_each, read_header,
};
pub use read::{LOG_FILE, LOG_FILE_ZSTD, LoadedLog, logged_records, read_log};

/// How records are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// fsync after every record (`sessions.fsync`), not only a write the kernel holds.
    pub fsync: bool,
    /// Each line as its own Zstandard frame in `session.jsonl.zst` (`sessions.compression =
    /// "zstd"`), so a torn last frame costs one record, as a torn line does.
    pub zstd: bool,
}

impl LogOptions {
    /// How a run with `settings` writes its logs (`[sessions]`).
    pub(crate) fn of(settings: &dsh_config::Settings) -> Self {
        LogOptions {
            fsync: settings.fsync().value,
            zstd: settings.compression().value == dsh_config::Compression::Zstd,
        }
    }
}

/// How one line is stored.
fn encode(path: &Path, line: Vec<u8>) -> Vec<u8> {
    if is_zstd(path) {
        ruzstd::encoding::compress_to_vec(
            line.as_slice(),
            ruzstd::encoding::CompressionLevel::Fastest,
        )
    } else {
        line
    }
}

pub struct SessionLog {
    path: PathBuf,
    header: SessionHeader,
    file: Option<File>,
    seq: u64,
    options: LogOptions,
    lock: Option<SessionLock>,
    /// What lists show of the session, as far as it is written; kept beside the log at each
    /// turn's end ([`crate::listing`]). `None` for a log that is never written.
    listing: Option<Listing>,
    /// What else is kept beside the log at each turn's end (the search index), given by the
    /// session that writes it, so the log's module names none of what is kept from it.
    turn_ended: Option<fn(&Path)>,
}

impl SessionLog {
    /// A log for a new session under `<home>/sessions/<cwd-slug>/<id>/`.
    pub fn create(home: &Path, header: SessionHeader, options: LogOptions) -> Self {
        let file = if options.zstd {
            LOG_FILE_ZSTD
        } else {
            LOG_FILE
        };
        let path = session_dir(home, &header.cwd, &header.id).join(file);
        SessionLog {
            path,
            header,
            file: None,
            seq: 0,
            options,
            lock: None,
            listing: None,
            turn_ended: None,
        }
    }

    /// The log at `path`, to be read and never written: a replay's (a rewind's history is
    /// rebuilt from the log it reads).
    pub(crate) fn read_only(path: PathBuf, header: SessionHeader) -> Self {
        SessionLog {
            path,
            header,
            file: None,
            seq: 0,
            options: LogOptions::default(),
            lock: None,
            listing: None,
            turn_ended: None,
        }
    }

    /// A log that goes on after `seq` in an existing file, already locked and cut back to its
    /// last whole record; `listing` is what lists show of it as read.
    pub(crate) fn resume(
        path: PathBuf,
        header: SessionHeader,
        file: File,
        lock: SessionLock,
        options: LogOptions,
        listing: Listing,
    ) -> Self {
        SessionLog {
            path,
            header,
            file: Some(file),
            seq: listing.seq(),
            options,
            lock: Some(lock),
            listing: Some(listing),
            turn_ended: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Has `keep` called with the log's path at each turn's end, once the listing is kept.
    pub(crate) fn at_each_turn_end(mut self, keep: fn(&Path)) -> Self {
        self.turn_ended = Some(keep);
        self
    }

    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// Appends a record and returns it with its place in the log.
    pub fn append(&mut self, record: Record) -> Result<RecordEnvelope, CoreError> {
        let envelope = RecordEnvelope {
            seq: self.seq + 1,
            time: now_ms(),
            record,
        };
        let mut line = serde_json::to_vec(&envelope).unwrap_or_default();
        line.push(b'\n');
        let line = encode(&self.path, line);
        if self.file.is_none() {
            let (file, header_len) = self.open()?;
            self.file = Some(file);
            self.listing = Some(Listing::new(&self.header, header_len));
        }
        let Some(file) = self.file.as_mut() else {
            return Err(self.error(std::io::Error::other("the log is not open")));
        };
        let written = file.write_all(&line).and_then(|()| {
            if self.options.fsync {
                file.sync_data()
            } else {
                Ok(())
            }
        });
        written.map_err(|source| self.error(source))?;
        self.seq += 1;
        if let Some(listing) = self.listing.as_mut() {
            listing.note(&envelope, listing.read() + line.len() as u64);
            // A turn's end is when a list would first want to show what the turn did.
            if matches!(envelope.record, Record::TurnEnd { .. })
                && let Some(dir) = self.path.parent()
            {
                listing.store(dir);
                if let Some(turn_ended) = self.turn_ended {
                    turn_ended(&self.path);
                }
            }
        }
        die_after_record(self.seq);
        Ok(envelope)
    }

    /// Makes the file and writes the header; the file, and the header's length in it.
    fn open(&mut self) -> Result<(File, u64), CoreError> {
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|source| self.error(source))?;
        self.lock = Some(SessionLock::acquire(&dir, &self.header.id)?);
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(|source| self.error(source))?;
        let mut header = serde_json::to_vec(&self.header).unwrap_or_default();
        header.push(b'\n');
        let header = encode(&self.path, header);
        file.write_all(&header)
            .and_then(|()| {
                if self.options.fsync {
                    file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|source| self.error(source))?;
        Ok((file, header.len() as u64))
    }

    fn error(&self, source: std::io::Error) -> CoreError {
        CoreError::Log {
            path: self.path.clone(),
            source,
        }
    }
}

/// `<home>/sessions/<cwd-slug>/<id>`.
pub(crate) fn session_dir(home: &Path, cwd: &str, id: &str) -> PathBuf {
    home.join("sessions").join(cwd_slug(cwd)).join(id)
}

/// For the kill matrix (`crates/dsh/tests/cli/kill_matrix.rs`), in debug builds only: with
/// `DSH_TEST_DIE_AFTER_RECORDS=N`, the process is killed (SIGKILL, by itself) the moment the
/// Nth record of a log is written, a kill point exactly on a record boundary. Release builds
/// have no such switch.
#[cfg(debug_assertions)]
fn die_after_record(seq: u64) {
    static DIE_AFTER: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    let limit = DIE_AFTER.get_or_init(|| {
        std::env::var("DSH_TEST_DIE_AFTER_RECORDS")
            .ok()
            .and_then(|n| n.parse().ok())
    });
    if *limit == Some(seq) {
        // SAFETY: kill(2) on this process with SIGKILL; nothing is read or written.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

#[cfg(not(debug_assertions))]
fn die_after_record(_seq: u64) {}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A readable, collision-free folder name for a working directory: the path's characters that
/// are safe in a file name, then a hash of the whole path (two directories that read alike,
/// `/a-b` and `/a/b`, still get different folders).
pub(crate) fn cwd_slug(cwd: &str) -> String {
    let mut readable = String::new();
    for c in cwd.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_') {
            readable.push(c);
        } else if !readable.ends_with('-') {
            readable.push('-');
        }
    }
    let readable = readable.trim_matches('-');
    // Keep the end: the last components say the most about a directory.
    let start = readable.len().saturating_sub(80);
    let readable = &readable[start..];
    format!(
        "{}-{:016x}",
        if readable.is_empty() {
            "root"
        } else {
            readable
        },
        fnv1a(cwd)
    )
}

fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_readable_and_distinct() {
        assert!(cwd_slug("/work/main").starts_with("work-main-"));
        assert_ne!(cwd_slug("/a-b"), cwd_slug("/a/b"));
        assert!(cwd_slug("/").starts_with("root-"));
    }

    #[test]
    fn writes_a_header_then_one_record_per_line() {
        let home = tempfile::tempdir().unwrap();
        let header = SessionHeader::new("session-1".into(), 5, "/w".into());
        let mut log = SessionLog::create(home.path(), header, LogOptions::default());
        assert!(!log.path().exists());
        log.append(Record::TurnStart { turn: 1 }).unwrap();
        let second = log.append(Record::StepStart { turn: 1, step: 1 }).unwrap();
        assert_eq!(second.seq, 2);
        let text = std::fs::read_to_string(log.path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with(r#"{"type":"session","version":1,"id":"session-1""#));
        assert!(lines[1].contains(r#""type":"turn/start","data":{"turn":1}"#));
    }

    fn write_three(zstd: bool) -> (tempfile::TempDir, PathBuf) {
        let home = tempfile::tempdir().unwrap();
        let header = SessionHeader::new("session-z".into(), 5, "/w".into());
        let options = LogOptions { fsync: true, zstd };
        let mut log = SessionLog::create(home.path(), header, options);
        for turn in 1..=3 {
            log.append(Record::TurnStart { turn }).unwrap();
        }
        let path = log.path().to_path_buf();
        (home, path)
    }

    #[test]
    fn plain_and_zstd_logs_read_back_the_same() {
        for zstd in [false, true] {
            let (_home, path) = write_three(zstd);
            assert_eq!(is_zstd(&path), zstd);
            let log = read_log(&path).unwrap();
            assert_eq!(log.header.id, "session-z");
            assert_eq!(log.records.len(), 3);
            assert!(!log.torn);
            assert_eq!(log.whole_len, std::fs::metadata(&path).unwrap().len());
        }
    }

    #[test]
    fn the_header_is_read_alone_in_either_encoding() {
        for zstd in [false, true] {
            let (_home, path) = write_three(zstd);
            assert_eq!(read_header(&path).unwrap().id, "session-z");
            // Whatever follows the header is not read.
            let mut bytes = std::fs::read(&path).unwrap();
            bytes.truncate(bytes.len() - 3);
            bytes.extend_from_slice(b"\x00garbage");
            std::fs::write(&path, &bytes).unwrap();
            assert_eq!(read_header(&path).unwrap().id, "session-z", "zstd: {zstd}");
            std::fs::write(&path, b"").unwrap();
            let empty = read_header(&path).unwrap_err().to_string();
            assert!(empty.contains("it has no header line"), "{empty}");
        }
    }

    #[test]
    fn a_torn_tail_is_dropped_in_either_encoding() {
        for zstd in [false, true] {
            let (_home, path) = write_three(zstd);
            let bytes = std::fs::read(&path).unwrap();
            let whole = bytes.len() as u64;
            let mut torn = bytes.clone();
            // Cut the last record in half.
            let before_last = read_log(&path).unwrap();
            torn.truncate(bytes.len() - 7);
            std::fs::write(&path, &torn).unwrap();
            let log = read_log(&path).unwrap();
            assert!(log.torn, "zstd: {zstd}");
            assert_eq!(log.records.len(), 2, "zstd: {zstd}");
            assert!(log.whole_len < whole);
            assert_eq!(log.records[..], before_last.records[..2]);
        }
    }
}
