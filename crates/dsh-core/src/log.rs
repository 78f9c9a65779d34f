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

/// The file of a log written compressed: one Zstandard frame per line.
pub const LOG_FILE_ZSTD: &str = "session.jsonl.zst";

/// How records are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// fsync after every record (`sessions.fsync`), not only a write the kernel holds.
    pub fsync: bool,
    /// Each line as its own Zstandard frame in `session.jsonl.zst` (`sessions.compression =
    /// "zstd"`), so a torn last frame costs one record, as a torn line does.
    pub zstd: bool,
}

/// Whether the log at `path` is the compressed kind.
pub(crate) fn is_zstd(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == LOG_FILE_ZSTD)
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
        let line = encode(&self.path, line);
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
        die_after_record(self.seq);
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
        file.write_all(&encode(&self.path, header))
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

/// Lines with the offset each starts at; whether a torn tail follows; where whole lines end.
type Lines = (Vec<(u64, Vec<u8>)>, bool, u64);

/// The lines of a compressed log, a frame each. A frame cut short at the end of the file is
/// torn; one that fails with bytes after it is damage.
fn frames(bytes: &[u8]) -> Result<Lines, String> {
    use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
    let mut decoder = FrameDecoder::new();
    let mut lines = Vec::new();
    let mut input = bytes;
    let mut offset = 0u64;
    while !input.is_empty() {
        let mut cursor = input;
        let decoded = decoder
            .reset(&mut cursor)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                while !decoder.is_finished() {
                    decoder
                        .decode_blocks(&mut cursor, BlockDecodingStrategy::All)
                        .map_err(|e| e.to_string())?;
                }
                decoder
                    .collect()
                    .ok_or_else(|| "a frame decoded to nothing".to_owned())
            });
        match decoded {
            Ok(line) => {
                lines.push((offset, line));
                offset += (input.len() - cursor.len()) as u64;
                input = cursor;
            }
            Err(_) if cursor.is_empty() => return Ok((lines, true, offset)),
            Err(e) => {
                return Err(format!(
                    "the compressed frame at byte {offset} cannot be read ({e}), and data \
                     follows it"
                ));
            }
        }
    }
    Ok((lines, false, offset))
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

/// Every record of the log at `path`, in order: what a front end replays to show a session as
/// it was. A session's log was read whole when it opened; one that cannot be read again now
/// shows nothing rather than failing the session.
pub fn logged_records(path: &Path) -> Vec<Record> {
    read_log(path)
        .map(|log| log.records.into_iter().map(|e| e.record).collect())
        .unwrap_or_default()
}

/// Reads a log. A last line cut short (no newline, or not valid JSON) is a write the process
/// died in and is dropped; a damaged line before it is an error, since what follows it cannot
/// be trusted to continue it.
pub fn read_log(path: &Path) -> Result<LoadedLog, CoreError> {
    let damaged = |message: String| CoreError::Damaged {
        path: path.to_path_buf(),
        message,
    };
    let io = |source| CoreError::Log {
        path: path.to_path_buf(),
        source,
    };
    let mut parser = Parser::default();
    let (torn, whole_len) = if is_zstd(path) {
        let bytes = std::fs::read(path).map_err(io)?;
        let (lines, torn, whole) = frames(&bytes).map_err(damaged)?;
        for (offset, line) in lines {
            parser.line(offset, &line).map_err(damaged)?;
        }
        (torn, whole)
    } else {
        // Line by line, so that a long log is never held twice (as bytes and as records).
        use std::io::BufRead as _;
        let file = std::fs::File::open(path).map_err(io)?;
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut offset = 0u64;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(io)?;
            if n == 0 {
                break (false, offset);
            }
            if line.last() != Some(&b'\n') {
                break (true, offset);
            }
            parser.line(offset, &line).map_err(damaged)?;
            offset += n as u64;
        }
    };
    parser.finish(torn, whole_len).map_err(damaged)
}

/// Reads lines into a header and records; a line that does not parse is an error only once
/// another line follows it (the last one may be a torn write).
#[derive(Default)]
struct Parser {
    header: Option<SessionHeader>,
    records: Vec<RecordEnvelope>,
    lines: usize,
    /// The last line failed to parse: where it started, and why.
    failed: Option<(u64, String)>,
}

impl Parser {
    fn line(&mut self, offset: u64, line: &[u8]) -> Result<(), String> {
        self.lines += 1;
        if let Some((_, e)) = self.failed.take() {
            return Err(format!(
                "line {} is not a valid record ({e}), and records follow it",
                self.lines - 1
            ));
        }
        let line = line.trim_ascii_end();
        let Some(_) = &self.header else {
            let header: SessionHeader = serde_json::from_slice(line)
                .map_err(|e| format!("line 1 is not a session header: {e}"))?;
            if header.version != dsh_protocol::SESSION_FORMAT_VERSION {
                return Err(format!(
                    "it is format version {}, which this dsh ({}) does not read",
                    header.version,
                    env!("CARGO_PKG_VERSION")
                ));
            }
            self.header = Some(header);
            return Ok(());
        };
        match serde_json::from_slice::<RecordEnvelope>(line) {
            Ok(record) if record.seq == self.records.len() as u64 + 1 => {
                self.records.push(record);
                Ok(())
            }
            Ok(record) => Err(format!(
                "line {} has seq {}, expected {}",
                self.lines,
                record.seq,
                self.records.len() + 1
            )),
            Err(e) => {
                self.failed = Some((offset, e.to_string()));
                Ok(())
            }
        }
    }

    fn finish(self, torn: bool, whole_len: u64) -> Result<LoadedLog, String> {
        let header = self.header.ok_or("it has no header line")?;
        // A line that ends with its newline was written whole: one that does not parse is
        // damage (or a newer dsh's record), not a torn write, and is never cut.
        if let Some((_, e)) = self.failed {
            return Err(format!("line {} is not a valid record ({e})", self.lines));
        }
        Ok(LoadedLog {
            header,
            records: self.records,
            whole_len,
            torn,
        })
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
