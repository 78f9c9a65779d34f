//! The `read` tool: a window of a UTF-8 text file with numbered lines.
//!
//! The file is streamed once, whatever its size: lines are counted to the end so the total is
//! exact, while only the selected window is kept. Limits: 2,000 lines a call (also the largest
//! `limit`), 2,000 characters a line (counted in UTF-16 units as the reference does, but never
//! cutting a character in two), and 51,200 bytes of selected text.

use std::fs::File;
use std::io;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::schema::{Param, ParamType, Parameters};
use crate::{
    Arguments, ObservationMap, Tool, ToolContext, ToolError, ToolFuture, ToolOutput, Version,
    fs_code, resolve,
};

/// The most lines one call returns, and the largest `limit` accepted.
pub const READ_LIMIT: u64 = 2000;
/// The longest line shown, in UTF-16 code units.
pub const MAX_LINE_UNITS: usize = 2000;
/// The most bytes of selected line text one call returns.
pub const MAX_BYTES: usize = 51_200;
/// A NUL byte this early in the file marks it as binary.
const BINARY_SNIFF_BYTES: u64 = 8192;
const CHUNK_BYTES: usize = 64 * 1024;
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The `read` tool.
pub struct Read {
    parameters: Parameters,
}

impl Default for Read {
    fn default() -> Self {
        Read {
            parameters: Parameters::new(vec![
                Param::required(
                    "file_path",
                    ParamType::String,
                    "File to read: absolute, or relative to the workspace.",
                ),
                Param::optional(
                    "offset",
                    ParamType::Number,
                    "Line number to start from (1-based). Defaults to 1.",
                ),
                Param::optional(
                    "limit",
                    ParamType::Number,
                    format!(
                        "How many lines to return, at most {READ_LIMIT}. Defaults to {READ_LIMIT}."
                    ),
                ),
            ]),
        }
    }
}

impl Tool for Read {
    fn name(&self) -> &str {
        "read"
    }

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Read, "Read")
            .file("file_path")
            .line("offset")
            .hook_names(&["Read"])
            .read_only()
    }

    fn description(&self) -> &str {
        "Show a UTF-8 text file with line numbers, a window of lines at a time."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// Pages by line window and caps bytes itself, with notes that say how to read on.
    fn bounds_own_output(&self) -> bool {
        true
    }

    fn guidance(&self) -> Option<&str> {
        Some(
            "Look at files with `read` instead of `cat`, `head` or `sed` in a shell. Lines come \
             back numbered; for a long file, continue from the offset the footer gives.",
        )
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let raw = args.str("file_path").unwrap_or_default().to_owned();
            if raw.trim().is_empty() {
                return Err(ToolError::plain("file_path must be a non-empty string"));
            }
            let offset = args.positive_integer("offset")?.unwrap_or(1);
            let limit = args.positive_integer("limit")?.unwrap_or(READ_LIMIT);
            if limit > READ_LIMIT {
                return Err(ToolError::plain(format!(
                    "limit must be less than or equal to {READ_LIMIT}"
                )));
            }
            let cwd = ctx.cwd.clone();
            let cancel = ctx.cancel.clone();
            let session = ctx.session.clone();
            let buffer = match resolve(&cwd, &raw) {
                Ok(target) => editor_text(&session, &target).await,
                Err(_) => None,
            };
            crate::registry::blocking("read", move || {
                let source = Source {
                    cwd: &cwd,
                    raw: &raw,
                    buffer,
                };
                let scanner = WindowScanner::new(offset, limit, session.redactor.clone());
                read_window(source, scanner, &cancel, &session.observations).map(ToolOutput::text)
            })
            .await
        })
    }
}

/// The file a call reads: its path as given, and the editor's text of it when an editor
/// holds it.
struct Source<'a> {
    cwd: &'a Path,
    raw: &'a str,
    buffer: Option<EditorText>,
}

/// An open file's text as the editor has it, unsaved changes included, and the file's
/// metadata on disk from before the text was asked for: the version a later change is
/// checked against.
pub(crate) struct EditorText {
    pub text: String,
    pub before: std::fs::Metadata,
}

/// The editor's text of the file when the session has an editor that takes reads and the
/// file is on disk; `None` reads the disk (an editor that cannot give the file is not an
/// error: the disk has it). The editor is asked for the path as the session spells it (under
/// its folder, symlinks and all), which is how the editor knows its open files.
pub(crate) async fn editor_text(
    session: &crate::ToolSession,
    target: &crate::Target,
) -> Option<EditorText> {
    let editor = session.reading_editor()?;
    let before = std::fs::metadata(&target.key)
        .ok()
        .filter(std::fs::Metadata::is_file)?;
    let text = editor.read_text(&target.display).await.ok()?;
    Some(EditorText { text, before })
}

fn read_window(
    source: Source<'_>,
    mut scanner: WindowScanner,
    cancel: &CancellationToken,
    observations: &ObservationMap,
) -> Result<String, ToolError> {
    let target = resolve(source.cwd, source.raw)?;
    let shown = target.shown().to_string();
    let metadata = match source.buffer {
        Some(EditorText { text, before }) => {
            scan(
                io::Cursor::new(text.into_bytes()),
                &mut scanner,
                &shown,
                cancel,
            )?;
            before
        }
        None => {
            let metadata = stat_readable(&target, &shown, observations)?;
            let file = File::open(&target.key).map_err(|e| read_error(&shown, &e))?;
            scan(file, &mut scanner, &shown, cancel)?;
            metadata
        }
    };
    let window = scanner.finish(&shown)?;
    // The version from before the content was read: a change while reading makes the next
    // mutation fail as stale rather than silently overwrite it.
    observations.present(&target.key, Version::of(&metadata));
    Ok(window.render(&shown))
}

/// The metadata of a file about to be read: a missing one is recorded as absent (so a later
/// `write` may create it), anything but a regular file is refused.
pub(crate) fn stat_readable(
    target: &crate::Target,
    shown: &str,
    observations: &ObservationMap,
) -> Result<std::fs::Metadata, ToolError> {
    let metadata = std::fs::metadata(&target.key).map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            observations.absent(&target.key);
        }
        read_error(shown, &e)
    })?;
    if !metadata.is_file() {
        return Err(ToolError::fs(
            fs_code::NOT_REGULAR_FILE,
            format!("cannot read \"{shown}\": not a regular file"),
        ));
    }
    Ok(metadata)
}

pub(crate) fn read_error(shown: &str, error: &io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::NotFound => ToolError::fs(
            fs_code::NOT_FOUND,
            format!("cannot read \"{shown}\": not found"),
        ),
        io::ErrorKind::PermissionDenied => ToolError::fs(
            fs_code::PERMISSION_DENIED,
            format!("cannot read \"{shown}\": permission denied"),
        ),
        _ => ToolError::fs(
            fs_code::IO_ERROR,
            format!("cannot read \"{shown}\": {}", crate::path::io_reason(error)),
        ),
    }
}

/// Streams the file through the scanner: binary sniffing on the first bytes, a leading BOM
/// dropped, strict UTF-8 across chunk boundaries.
fn scan(
    mut file: impl io::Read,
    scanner: &mut WindowScanner,
    shown: &str,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let mut buf = vec![0u8; CHUNK_BYTES + 4];
    // Bytes of an incomplete UTF-8 sequence (or of a possible BOM) carried to the next read.
    let mut carried = 0;
    let mut raw_offset: u64 = 0;
    let mut at_start = true;
    loop {
        if cancel.is_cancelled() {
            return Err(ToolError::fs(fs_code::ABORTED, "read aborted"));
        }
        let n = match file.read(&mut buf[carried..carried + CHUNK_BYTES]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(shown, &e)),
        };
        let fresh = &buf[carried..carried + n];
        if raw_offset < BINARY_SNIFF_BYTES {
            let sniff = (BINARY_SNIFF_BYTES - raw_offset).min(n as u64) as usize;
            if fresh[..sniff].contains(&0) {
                return Err(ToolError::fs(
                    fs_code::NOT_TEXT,
                    format!("cannot read \"{shown}\": binary file"),
                ));
            }
        }
        raw_offset += n as u64;
        let end = carried + n;
        let mut start = 0;
        if at_start {
            if end < BOM.len() && n > 0 && BOM.starts_with(&buf[..end]) {
                carried = end;
                continue;
            }
            at_start = false;
            if buf[..end].starts_with(BOM) {
                start = BOM.len();
            }
        }
        if n == 0 {
            if end > start {
                return Err(invalid_utf8(shown));
            }
            return Ok(());
        }
        let bytes = &buf[start..end];
        let valid = match std::str::from_utf8(bytes) {
            Ok(text) => {
                scanner.push_str(text);
                bytes.len()
            }
            Err(e) if e.error_len().is_some() => return Err(invalid_utf8(shown)),
            Err(e) => {
                let valid = e.valid_up_to();
                // Checked just above: the prefix is valid UTF-8.
                scanner.push_str(std::str::from_utf8(&bytes[..valid]).unwrap_or_default());
                valid
            }
        };
        let rest = start + valid;
        buf.copy_within(rest..end, 0);
        carried = end - rest;
    }
}

fn invalid_utf8(shown: &str) -> ToolError {
    ToolError::fs(
        fs_code::NOT_TEXT,
        format!("cannot read \"{shown}\": invalid UTF-8 text"),
    )
}

/// The selected lines of a file and what was left out.
#[derive(Debug, PartialEq, Eq)]
struct Window {
    offset: u64,
    lines: Vec<(u64, String)>,
    total: u64,
    capped_by_bytes: bool,
}

impl Window {
    fn render(&self, shown: &str) -> String {
        let end = self
            .lines
            .last()
            .map_or(self.offset.saturating_sub(1), |(n, _)| *n);
        let footer = if self.capped_by_bytes {
            format!(
                "(Output capped. Showing lines {}-{end}. Use offset={} to continue.)",
                self.offset,
                end + 1
            )
        } else if end < self.total {
            format!(
                "(Showing lines {}-{end} of {}. Use offset={} to continue.)",
                self.offset,
                self.total,
                end + 1
            )
        } else {
            format!("(End of file - total {} lines)", self.total)
        };
        let mut out = format!("<path>{shown}</path>\n<type>file</type>\n<content>\n");
        for (n, text) in &self.lines {
            out.push_str(&n.to_string());
            out.push_str(": ");
            out.push_str(text);
            out.push('\n');
        }
        if !self.lines.is_empty() {
            out.push('\n');
        }
        out.push_str(&footer);
        out.push_str("\n</content>");
        out
    }
}

/// Splits decoded text into lines and keeps the requested window. Lines end at `\n`; one `\r`
/// before it is dropped; a final line without a newline counts.
struct WindowScanner {
    offset: u64,
    limit: u64,
    total: u64,
    lines: Vec<(u64, String)>,
    used_bytes: usize,
    capped_by_bytes: bool,
    /// Whether the next character starts a line (the keep/skip decision is taken there).
    at_line_start: bool,
    /// The current line is inside the window and is being kept.
    keeping: bool,
    /// The current line has any character.
    line_has_text: bool,
    kept: String,
    kept_units: usize,
    /// Characters of the current line past the cut (2 means "two or more").
    overflow: u8,
    first_overflow: char,
    /// A line cut in the middle of a secret must not show its start.
    redactor: Option<crate::Redactor>,
}

impl WindowScanner {
    fn new(offset: u64, limit: u64, redactor: Option<crate::Redactor>) -> Self {
        WindowScanner {
            offset,
            limit,
            total: 0,
            lines: Vec::new(),
            used_bytes: 0,
            capped_by_bytes: false,
            at_line_start: true,
            keeping: false,
            line_has_text: false,
            kept: String::new(),
            kept_units: 0,
            overflow: 0,
            first_overflow: '\0',
            redactor,
        }
    }

    fn push_str(&mut self, mut text: &str) {
        while !text.is_empty() {
            if self.at_line_start {
                self.at_line_start = false;
                let number = self.total + 1;
                self.keeping = !self.capped_by_bytes
                    && number >= self.offset
                    && (self.lines.len() as u64) < self.limit;
            }
            let (segment, newline) = match text.find('\n') {
                Some(at) => (&text[..at], Some(at)),
                None => (text, None),
            };
            if !segment.is_empty() {
                self.line_has_text = true;
                if self.keeping {
                    self.keep(segment);
                }
            }
            match newline {
                Some(at) => {
                    self.end_line();
                    text = &text[at + 1..];
                }
                None => break,
            }
        }
    }

    fn keep(&mut self, segment: &str) {
        if self.overflow >= 2 {
            return;
        }
        for c in segment.chars() {
            if self.overflow > 0 {
                self.overflow = 2;
                return;
            }
            let units = c.len_utf16();
            if self.kept_units + units <= MAX_LINE_UNITS {
                self.kept.push(c);
                self.kept_units += units;
            } else {
                self.overflow = 1;
                self.first_overflow = c;
            }
        }
    }

    fn end_line(&mut self) {
        self.total += 1;
        if self.keeping {
            let mut text = std::mem::take(&mut self.kept);
            match self.overflow {
                0 => {
                    if text.ends_with('\r') {
                        text.pop();
                    }
                }
                // The one character past the cut is the line's `\r`: nothing was lost.
                1 if self.first_overflow == '\r' => {}
                _ => {
                    if let Some(redactor) = &self.redactor {
                        let kept = redactor.before_cut(&text).len();
                        text.truncate(kept);
                    }
                    text.push_str("... (line truncated to ");
                    text.push_str(&MAX_LINE_UNITS.to_string());
                    text.push_str(" chars)");
                }
            }
            let bytes = text.len() + usize::from(!self.lines.is_empty());
            if self.used_bytes + bytes > MAX_BYTES {
                self.capped_by_bytes = true;
            } else {
                self.used_bytes += bytes;
                self.lines.push((self.total, text));
            }
        }
        self.at_line_start = true;
        self.keeping = false;
        self.line_has_text = false;
        self.kept.clear();
        self.kept_units = 0;
        self.overflow = 0;
    }

    fn finish(mut self, shown: &str) -> Result<Window, ToolError> {
        if self.line_has_text {
            self.end_line();
        }
        if !self.capped_by_bytes
            && self.offset > self.total
            && !(self.total == 0 && self.offset == 1)
        {
            return Err(ToolError::fs(
                fs_code::NOT_FOUND,
                format!(
                    "offset {} is out of range for \"{shown}\" ({} lines)",
                    self.offset, self.total
                ),
            ));
        }
        Ok(Window {
            offset: self.offset,
            lines: self.lines,
            total: self.total,
            capped_by_bytes: self.capped_by_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn window(text: &str, offset: u64, limit: u64) -> Result<String, ToolError> {
        let mut scanner = WindowScanner::new(offset, limit, None);
        // Feed in small pieces: chunk boundaries must not matter.
        let mut rest = text;
        while !rest.is_empty() {
            let mut cut = rest.len().min(7);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            scanner.push_str(&rest[..cut]);
            rest = &rest[cut..];
        }
        Ok(scanner.finish("/w/a.txt")?.render("/w/a.txt"))
    }

    #[test]
    fn renders_the_envelope() {
        insta::assert_snapshot!(window("hello\nworld", 1, 2000).unwrap(), @r"
        <path>/w/a.txt</path>
        <type>file</type>
        <content>
        1: hello
        2: world

        (End of file - total 2 lines)
        </content>
        ");
    }

    #[test]
    fn an_empty_file_has_only_the_footer() {
        insta::assert_snapshot!(window("", 1, 2000).unwrap(), @r"
        <path>/w/a.txt</path>
        <type>file</type>
        <content>
        (End of file - total 0 lines)
        </content>
        ");
    }

    #[test]
    fn windows_say_how_to_continue() {
        let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let out = window(&text, 3, 4).unwrap();
        assert!(out.contains("3: line 3\n4: line 4\n5: line 5\n6: line 6\n\n(Showing lines 3-6 of 10. Use offset=7 to continue.)"));
        assert!(
            window(&text, 8, 5)
                .unwrap()
                .contains("(End of file - total 10 lines)")
        );
    }

    #[test]
    fn strips_one_carriage_return_per_line_only() {
        let out = window("a\r\nb\rc\nd\n", 1, 2000).unwrap();
        assert!(out.contains("1: a\n2: b\rc\n3: d\n"));
        assert!(
            window("x\ry\rz\r", 1, 2000)
                .unwrap()
                .contains("1: x\ry\rz\n\n(End of file - total 1 lines)")
        );
    }

    #[test]
    fn cuts_long_lines_without_splitting_characters() {
        let line = format!("x{}", "\u{1F600}".repeat(1200));
        let out = window(&line, 1, 2000).unwrap();
        let expected = format!(
            "1: x{}... (line truncated to 2000 chars)\n",
            "\u{1F600}".repeat(999)
        );
        assert!(out.contains(&expected));
        let exact = "b".repeat(2000);
        assert!(
            window(&format!("{exact}\r\n"), 1, 2000)
                .unwrap()
                .contains(&format!("1: {exact}\n"))
        );
    }

    #[test]
    fn a_secret_cut_with_its_line_shows_no_part() {
        let secret = "sk-live-0123456789abcdef";
        let line = format!("{}{secret}\n", "x".repeat(MAX_LINE_UNITS - 6));
        let redactor = crate::Redactor::new([secret.to_owned()]);
        let mut scanner = WindowScanner::new(1, 2000, redactor);
        scanner.push_str(&line);
        let out = scanner.finish("f").unwrap().render("f");
        assert!(!out.contains("sk-"), "{out}");
        assert!(out.contains(&format!(
            "{}... (line truncated",
            "x".repeat(MAX_LINE_UNITS - 6)
        )));
    }

    #[test]
    fn stops_at_the_byte_cap() {
        let text: String = (1..=1000)
            .map(|i| format!("{i:04}{}\n", "w".repeat(95)))
            .collect();
        let out = window(&text, 1, 2000).unwrap();
        assert!(out.ends_with(
            "(Output capped. Showing lines 1-512. Use offset=513 to continue.)\n</content>"
        ));
    }

    #[test]
    fn an_offset_past_the_end_is_an_error() {
        assert_eq!(
            window("a\nb\n", 3, 2000).unwrap_err().message,
            "offset 3 is out of range for \"/w/a.txt\" (2 lines)"
        );
        assert!(window("", 1, 2000).is_ok());
        assert!(window("", 2, 2000).is_err());
    }

    fn on_disk<'a>(cwd: &'a Path, raw: &'a str) -> Source<'a> {
        Source {
            cwd,
            raw,
            buffer: None,
        }
    }

    fn read_file(bytes: &[u8]) -> Result<String, ToolError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), bytes).unwrap();
        read_window(
            on_disk(dir.path(), "f"),
            WindowScanner::new(1, 2000, None),
            &CancellationToken::new(),
            &ObservationMap::new(),
        )
        .map(|out| out.replace(&dir.path().display().to_string(), "/w"))
        .map_err(|mut e| {
            e.message = e.message.replace(&dir.path().display().to_string(), "/w");
            e
        })
    }

    #[test]
    fn binary_files_are_refused_only_for_an_early_nul() {
        assert_eq!(
            read_file(b"ab\0cd\n").unwrap_err().message,
            "cannot read \"/w/f\": binary file"
        );
        let mut late = vec![b'x'; 9000];
        late.extend_from_slice(b"\n\0\n");
        assert!(read_file(&late).is_ok());
    }

    #[test]
    fn invalid_utf8_is_refused_and_a_bom_dropped() {
        assert_eq!(
            read_file(b"ok\n\xff\n").unwrap_err().message,
            "cannot read \"/w/f\": invalid UTF-8 text"
        );
        assert_eq!(
            read_file(b"ok\n\xe2\x82").unwrap_err().info.unwrap().code,
            "FS_NOT_TEXT"
        );
        assert!(read_file(b"\xEF\xBB\xBFhi\n").unwrap().contains("1: hi\n"));
    }

    #[test]
    fn utf8_split_across_reads_is_reassembled() {
        let mut text = "a".repeat(CHUNK_BYTES - 1);
        text.push('\u{e9}');
        text.push('\n');
        assert!(read_file(text.as_bytes()).is_ok());
    }

    #[test]
    fn missing_files_and_directories_have_their_codes() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let missing = read_window(
            on_disk(dir.path(), "nope"),
            WindowScanner::new(1, 2000, None),
            &cancel,
            &ObservationMap::new(),
        )
        .unwrap_err();
        assert_eq!(missing.info.unwrap().code, "FS_NOT_FOUND");
        let folder = read_window(
            on_disk(dir.path(), "."),
            WindowScanner::new(1, 2000, None),
            &cancel,
            &ObservationMap::new(),
        )
        .unwrap_err();
        assert_eq!(
            folder.message,
            format!(
                "cannot read \"{}\": not a regular file",
                dir.path().display()
            )
        );
    }
}
