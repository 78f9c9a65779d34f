//! Reading a session log back: whole ([`read_log`]), its header alone, or a line at a time from
//! where an earlier read stopped ([`read_each`], [`brought_up`]), plain or compressed.

use std::path::Path;

use dsh_protocol::{Record, RecordEnvelope, SessionHeader};

use crate::CoreError;

/// The file a session is written to.
pub const LOG_FILE: &str = "session.jsonl";

/// The file of a log written compressed: one Zstandard frame per line.
pub const LOG_FILE_ZSTD: &str = "session.jsonl.zst";

/// Whether the log at `path` is the compressed kind.
pub(crate) fn is_zstd(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == LOG_FILE_ZSTD)
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
