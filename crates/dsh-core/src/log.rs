//! The session log: `session.jsonl`, a header line and then one record per line.
//!
//! Nothing is written until the first record, so a run that fails before its first turn leaves
//! no empty session behind. Each record is written with one `write` on a file opened for
//! appending, so a crash leaves at most a torn last line, which a reader drops.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use dsh_protocol::{Record, RecordEnvelope, SessionHeader};

use crate::CoreError;

/// The file a session is written to.
pub const LOG_FILE: &str = "session.jsonl";

pub struct SessionLog {
    path: PathBuf,
    header: SessionHeader,
    file: Option<File>,
    seq: u64,
}

impl SessionLog {
    /// A log for a new session under `<home>/sessions/<cwd-slug>/<id>/`.
    pub fn create(home: &Path, header: SessionHeader) -> Self {
        let path = home
            .join("sessions")
            .join(cwd_slug(&header.cwd))
            .join(&header.id)
            .join(LOG_FILE);
        SessionLog {
            path,
            header,
            file: None,
            seq: 0,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
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
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(self.open()?),
        };
        file.write_all(&line).map_err(|source| self.error(source))?;
        self.seq += 1;
        Ok(envelope)
    }

    fn open(&self) -> Result<File, CoreError> {
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|source| self.error(source))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .map_err(|source| self.error(source))?;
        let mut header = serde_json::to_vec(&self.header).unwrap_or_default();
        header.push(b'\n');
        file.write_all(&header)
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
        let mut log = SessionLog::create(home.path(), header);
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
