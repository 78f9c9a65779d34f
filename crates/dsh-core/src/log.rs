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
use crate::lock::SessionLock;

/// The file a session is written to.
pub const LOG_FILE: &str = "session.jsonl";

/// How records are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// fsync after every record (`sessions.fsync`), not only a write the kernel holds.
    pub fsync: bool,
}

pub struct SessionLog {
    path: PathBuf,
    header: SessionHeader,
    file: Option<File>,
    seq: u64,
    options: LogOptions,
    lock: Option<SessionLock>,
}

impl SessionLog {
    /// A log for a new session under `<home>/sessions/<cwd-slug>/<id>/`.
    pub fn create(home: &Path, header: SessionHeader, options: LogOptions) -> Self {
        let path = session_dir(home, &header.cwd, &header.id).join(LOG_FILE);
        SessionLog {
            path,
            header,
            file: None,
            seq: 0,
            options,
            lock: None,
        }
    }

    /// A log that goes on after `seq` in an existing file, already locked and cut back to its
    /// last whole record.
    pub(crate) fn resume(
        path: PathBuf,
        header: SessionHeader,
        seq: u64,
        file: File,
        lock: SessionLock,
        options: LogOptions,
    ) -> Self {
        SessionLog {
            path,
            header,
            file: Some(file),
            seq,
            options,
            lock: Some(lock),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        if self.file.is_none() {
            let file = self.open()?;
            self.file = Some(file);
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
        Ok(envelope)
    }

    fn open(&mut self) -> Result<File, CoreError> {
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
        file.write_all(&header)
            .and_then(|()| {
                if self.options.fsync {
                    file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|source| self.error(source))?;
        Ok(file)
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

/// A log read back: the header, every whole record, and where the whole records end.
#[derive(Debug)]
pub struct LoadedLog {
    pub header: SessionHeader,
    pub records: Vec<RecordEnvelope>,
    /// Bytes of whole lines; anything after is a torn last line.
    pub whole_len: u64,
    /// Whether a torn last line was dropped.
    pub torn: bool,
}

/// Reads a log. A last line cut short (no newline, or not valid JSON) is a write the process
/// died in and is dropped; a damaged line before it is an error, since what follows it cannot
/// be trusted to continue it.
pub fn read_log(path: &Path) -> Result<LoadedLog, CoreError> {
    let damaged = |message: String| CoreError::Damaged {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|source| CoreError::Log {
        path: path.to_path_buf(),
        source,
    })?;
    let mut lines: Vec<(usize, &[u8])> = Vec::new();
    let mut start = 0;
    for (i, byte) in bytes.iter().enumerate() {
        if *byte == b'\n' {
            lines.push((start, &bytes[start..i]));
            start = i + 1;
        }
    }
    let mut torn = start < bytes.len();
    let mut whole_len = start as u64;
    let Some(((_, first), rest)) = lines.split_first() else {
        return Err(damaged("it has no header line".into()));
    };
    let header: SessionHeader = serde_json::from_slice(first)
        .map_err(|e| damaged(format!("line 1 is not a session header: {e}")))?;
    if header.version != dsh_protocol::SESSION_FORMAT_VERSION {
        return Err(damaged(format!(
            "it is format version {}, which this dsh ({}) does not read",
            header.version,
            env!("CARGO_PKG_VERSION")
        )));
    }
    let mut records = Vec::with_capacity(rest.len());
    for (index, (offset, line)) in rest.iter().enumerate() {
        match serde_json::from_slice::<RecordEnvelope>(line) {
            Ok(record) => {
                if record.seq != records.len() as u64 + 1 {
                    return Err(damaged(format!(
                        "line {} has seq {}, expected {}",
                        index + 2,
                        record.seq,
                        records.len() + 1
                    )));
                }
                records.push(record);
            }
            Err(_) if index + 1 == rest.len() => {
                // A whole line that does not parse can only be the last write, cut and then
                // followed by nothing: treat it as torn.
                torn = true;
                whole_len = *offset as u64;
            }
            Err(e) => {
                return Err(damaged(format!(
                    "line {} is not a valid record ({e}), and records follow it",
                    index + 2
                )));
            }
        }
    }
    Ok(LoadedLog {
        header,
        records,
        whole_len,
        torn,
    })
}

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
}
