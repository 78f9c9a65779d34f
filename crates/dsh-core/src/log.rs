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

impl LogOptions {
    /// How a run with `settings` writes its logs (`[sessions]`).
    pub(crate) fn of(settings: &dsh_config::Settings) -> Self {
        LogOptions {
            fsync: settings.fsync().value,
            zstd: settings.compression().value == dsh_config::Compression::Zstd,
        }
    }
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
    let mut header = None;
    let mut records = Vec::new();
    let end = read_each(path, None, |item, _| match item {
        Item::Header(read) => header = Some(read),
        Item::Record(envelope) => records.push(envelope),
    })?;
    let header = header.ok_or_else(|| CoreError::Damaged {
        path: path.to_path_buf(),
        message: "it has no header line".into(),
    })?;
    Ok(LoadedLog {
        header,
        records,
        whole_len: end.whole_len,
        torn: end.torn,
    })
}

/// The header of the log at `path`: its first line (or frame) alone.
pub(crate) fn read_header(path: &Path) -> Result<SessionHeader, CoreError> {
    let damaged = |message: String| CoreError::Damaged {
        path: path.to_path_buf(),
        message,
    };
    let io = |source| CoreError::Log {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if file.metadata().map_err(io)?.len() == 0 {
        return Err(damaged("it has no header line".into()));
    }
    let mut reader = std::io::BufReader::with_capacity(1 << 12, file);
    let mut line = Vec::new();
    if is_zstd(path) {
        use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
        let mut decoder = FrameDecoder::new();
        decoder
            .reset(&mut reader)
            .and_then(|()| {
                while !decoder.is_finished() {
                    decoder.decode_blocks(&mut reader, BlockDecodingStrategy::All)?;
                }
                Ok(())
            })
            .map_err(|e| damaged(format!("line 1 is not a session header: {e}")))?;
        line = decoder.collect().unwrap_or_default();
    } else {
        use std::io::BufRead as _;
        reader.read_until(b'\n', &mut line).map_err(io)?;
    }
    parse_header(&line).map_err(damaged)
}

/// Whether the log at `path` may hold a `rewind` record: a plain log whose bytes never name
/// the record's type holds none (the writer puts every record's type in the same compact
/// form). A compressed log is not looked into, and may. A rewind this misses (a log written
/// some other way) is still taken back right: from a replay of the log, only slower.
pub(crate) fn may_rewind(path: &Path) -> bool {
    use std::io::Read as _;
    const NAMED: &str = r#""type":"rewind""#;
    if is_zstd(path) {
        return true;
    }
    let (Ok(mut file), Ok(named)) = (
        std::fs::File::open(path),
        regex::bytes::Regex::new(&regex::escape(NAMED)),
    ) else {
        return true;
    };
    // A chunk at a time; each keeps the end of the one before, where a name may begin.
    let mut chunk = vec![0u8; 1 << 20];
    let mut kept = 0;
    loop {
        let n = match file.read(&mut chunk[kept..]) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(_) => return true,
        };
        let filled = kept + n;
        if named.is_match(&chunk[..filled]) {
            return true;
        }
        let from = filled.saturating_sub(NAMED.len() - 1);
        chunk.copy_within(from..filled, 0);
        kept = filled - from;
    }
}

fn parse_header(line: &[u8]) -> Result<SessionHeader, String> {
    let header: SessionHeader = serde_json::from_slice(line.trim_ascii_end())
        .map_err(|e| format!("line 1 is not a session header: {e}"))?;
    if header.version != dsh_protocol::SESSION_FORMAT_VERSION {
        return Err(format!(
            "it is format version {}, which this dsh ({}) does not read",
            header.version,
            env!("CARGO_PKG_VERSION")
        ));
    }
    Ok(header)
}

/// One line of a log, as [`read_each`] hands it over.
pub(crate) enum Item {
    Header(SessionHeader),
    Record(RecordEnvelope),
}

/// Where [`read_each`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogEnd {
    /// Bytes of whole lines; anything after is a torn last line.
    pub whole_len: u64,
    /// Whether a torn last line was passed over.
    pub torn: bool,
}

/// A read that goes on after record `seq`, whose line ends at byte `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct After {
    pub offset: u64,
    pub seq: u64,
}

/// What a session keeps beside its log, worked out from the log's records (the listing lists
/// show, the search index): brought up to date from where it stopped ([`brought_up`]), never
/// read again whole when the log only grew.
pub(crate) trait FromLog: Sized {
    /// One that covers the log up to byte `read`, its header alone.
    fn begin(header: &SessionHeader, read: u64) -> Self;
    /// Takes in the next record, whose line ends at byte `end`.
    fn note(&mut self, envelope: &RecordEnvelope, end: u64);
    /// Where it stopped: the last record it covers and where its line ends.
    fn covers(&self) -> After;
}

/// `kept` brought up to the log at `path`, `len` bytes long: the records after what it covers
/// folded in, or, when there is none or the log does not continue it, the whole log read.
/// `None` for a log that cannot be read.
pub(crate) fn brought_up<S: FromLog>(path: &Path, len: u64, kept: Option<S>) -> Option<S> {
    let continued = (kept.filter(|k| k.covers().offset < len)).and_then(|mut kept| {
        let after = kept.covers();
        let read = read_each(path, Some(after), |item, end| {
            if let Item::Record(envelope) = item {
                kept.note(&envelope, end);
            }
        });
        read.ok().map(|_| kept)
    });
    if continued.is_some() {
        return continued;
    }
    let mut whole: Option<S> = None;
    read_each(path, None, |item, end| match item {
        Item::Header(header) => whole = Some(S::begin(&header, end)),
        Item::Record(envelope) => {
            if let Some(whole) = whole.as_mut() {
                whole.note(&envelope, end);
            }
        }
    })
    .ok()?;
    whole
}

/// Reads the log at `path` a line at a time and hands over each line as it is read, with the
/// byte its line ends at: the header, then every whole record in order (`after`: only the
/// records after one read before, the header passed over). Nothing is held but the line being
/// read, so a long log costs the reader's own use of it and no more. The rules of
/// [`read_log`] hold: a torn last line is passed over, a damaged line before another, a
/// record out of sequence or a missing header fails the read (after the lines before it were
/// handed over).
pub(crate) fn read_each(
    path: &Path,
    after: Option<After>,
    visit: impl FnMut(Item, u64),
) -> Result<LogEnd, CoreError> {
    let damaged = |message: String| CoreError::Damaged {
        path: path.to_path_buf(),
        message,
    };
    let io = |source| CoreError::Log {
        path: path.to_path_buf(),
        source,
    };
    let start = after.map_or(0, |a| a.offset);
    let mut parser = Parser {
        header_read: after.is_some(),
        next_seq: after.map_or(1, |a| a.seq + 1),
        lines: 0,
        failed: None,
        visit,
    };
    let end = if is_zstd(path) {
        use std::io::{Read as _, Seek as _};
        let mut file = std::fs::File::open(path).map_err(io)?;
        file.seek(std::io::SeekFrom::Start(start)).map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let (lines, torn, whole) = frames(&bytes).map_err(damaged)?;
        let ends = (lines.iter().skip(1).map(|(offset, _)| *offset)).chain([whole]);
        for ((_, line), end) in lines.iter().zip(ends) {
            parser.line(start + end, line).map_err(damaged)?;
        }
        LogEnd {
            whole_len: start + whole,
            torn,
        }
    } else {
        use std::io::{BufRead as _, Seek as _};
        let mut file = std::fs::File::open(path).map_err(io)?;
        file.seek(std::io::SeekFrom::Start(start)).map_err(io)?;
        let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        let mut offset = start;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(io)?;
            if n == 0 {
                break LogEnd {
                    whole_len: offset,
                    torn: false,
                };
            }
            if line.last() != Some(&b'\n') {
                break LogEnd {
                    whole_len: offset,
                    torn: true,
                };
            }
            offset += n as u64;
            parser.line(offset, &line).map_err(damaged)?;
        }
    };
    parser.finish().map_err(damaged)?;
    Ok(end)
}

/// Reads lines into a header and records, handing each over as it is read; a line that does
/// not parse is an error only once another line follows it (the last one may be a torn
/// write).
struct Parser<F> {
    header_read: bool,
    next_seq: u64,
    lines: usize,
    /// The last line failed to parse, and why.
    failed: Option<String>,
    visit: F,
}

impl<F: FnMut(Item, u64)> Parser<F> {
    fn line(&mut self, end: u64, line: &[u8]) -> Result<(), String> {
        self.lines += 1;
        if let Some(e) = self.failed.take() {
            return Err(format!(
                "line {} is not a valid record ({e}), and records follow it",
                self.lines - 1
            ));
        }
        if !self.header_read {
            let header = parse_header(line)?;
            self.header_read = true;
            (self.visit)(Item::Header(header), end);
            return Ok(());
        }
        match serde_json::from_slice::<RecordEnvelope>(line.trim_ascii_end()) {
            Ok(record) if record.seq == self.next_seq => {
                self.next_seq += 1;
                (self.visit)(Item::Record(record), end);
                Ok(())
            }
            Ok(record) => Err(format!(
                "line {} has seq {}, expected {}",
                self.lines, record.seq, self.next_seq
            )),
            Err(e) => {
                self.failed = Some(e.to_string());
                Ok(())
            }
        }
    }

    fn finish(self) -> Result<(), String> {
        if !self.header_read {
            return Err("it has no header line".into());
        }
        // A line that ends with its newline was written whole: one that does not parse is
        // damage (or a newer dsh's record), not a torn write, and is never cut.
        if let Some(e) = self.failed {
            return Err(format!("line {} is not a valid record ({e})", self.lines));
        }
        Ok(())
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
