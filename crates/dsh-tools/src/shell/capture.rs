//! One output stream of a command: the last 64,000 bytes in memory, and the whole stream in a
//! private file once it outgrows that (up to 64 MiB, after which the file is dropped). With a
//! [`Redactor`], secrets are taken out as the bytes come in, before either copy is written: a
//! key cut by the kept window, split between two reads, or sitting in the full copy (which
//! the model may read back) never shows.

use std::collections::VecDeque;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use crate::Redactor;

/// Bytes of each stream kept in memory.
pub const KEPT_BYTES: usize = 64_000;
/// The most bytes of a stream saved to its spill file.
pub const MAX_SPILL_BYTES: u64 = 64 * 1024 * 1024;

/// Where a stream's full copy goes, if it needs one.
#[derive(Debug, Clone)]
pub struct SpillTarget {
    pub dir: PathBuf,
    /// The file name, unique within `dir`.
    pub name: String,
}

#[derive(Debug)]
enum Spill {
    NotNeeded,
    Open(std::fs::File, PathBuf),
    /// Could not be created, or grew past [`MAX_SPILL_BYTES`].
    Unavailable,
}

/// A stream being captured.
#[derive(Debug)]
pub struct StreamCapture {
    kept: VecDeque<u8>,
    total: u64,
    spill: Spill,
    target: Option<SpillTarget>,
    redactor: Option<Redactor>,
    /// Read but not yet passed on: the end of what was read, which may be the start of a
    /// secret that the next read completes.
    unsettled: Vec<u8>,
}

impl StreamCapture {
    pub fn new(target: Option<SpillTarget>, redactor: Option<Redactor>) -> Self {
        StreamCapture {
            kept: VecDeque::new(),
            total: 0,
            spill: Spill::NotNeeded,
            target,
            redactor,
            unsettled: Vec::new(),
        }
    }

    /// Takes in bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        let Some(redactor) = &self.redactor else {
            return self.append(chunk);
        };
        self.unsettled.extend_from_slice(chunk);
        let settled = redactor.unsettled_tail(&self.unsettled);
        let redacted = redactor
            .redact_bytes(&self.unsettled[..settled])
            .into_owned();
        self.unsettled.drain(..settled);
        self.append(&redacted);
    }

    /// The stream has ended: what was held back as a possible secret's start is passed on.
    pub fn finish(&mut self) {
        let rest = std::mem::take(&mut self.unsettled);
        if let Some(redactor) = &self.redactor
            && !rest.is_empty()
        {
            let redacted = redactor.redact_bytes(&rest).into_owned();
            self.append(&redacted);
        }
    }

    fn append(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if matches!(self.spill, Spill::NotNeeded) && self.kept.len() + chunk.len() > KEPT_BYTES {
            self.spill = self.open_spill();
        }
        if let Spill::Open(file, path) = &mut self.spill
            && (self.total > MAX_SPILL_BYTES || file.write_all(chunk).is_err())
        {
            let _ = std::fs::remove_file(path);
            self.spill = Spill::Unavailable;
        }
        self.kept.extend(chunk);
        let excess = self.kept.len().saturating_sub(KEPT_BYTES);
        self.kept.drain(..excess);
    }

    /// The first overflow: a file that gets everything so far (nothing was dropped yet).
    fn open_spill(&self) -> Spill {
        let Some(target) = &self.target else {
            return Spill::Unavailable;
        };
        let open = || -> std::io::Result<(std::fs::File, PathBuf)> {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&target.dir)?;
            let path = target.dir.join(&target.name);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            let (a, b) = self.kept.as_slices();
            file.write_all(a)?;
            file.write_all(b)?;
            Ok((file, path))
        };
        match open() {
            Ok((file, path)) => Spill::Open(file, path),
            Err(_) => Spill::Unavailable,
        }
    }

    /// The bytes written since byte `cursor` that are still in memory (all of the kept tail
    /// when some of them are not).
    pub fn bytes_since(&self, cursor: u64) -> Vec<u8> {
        let first_kept = self.total - self.kept.len() as u64;
        let skip = cursor.saturating_sub(first_kept) as usize;
        self.kept.iter().skip(skip).copied().collect()
    }

    /// Bytes written to the stream so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether bytes were dropped from memory.
    pub fn truncated(&self) -> bool {
        self.total > self.kept.len() as u64
    }

    /// The full copy's path, when there is one.
    pub fn spill_file(&self) -> Option<String> {
        match &self.spill {
            Spill::Open(_, path) => Some(path.display().to_string()),
            _ => None,
        }
    }

    /// The full copy's path, or `(unavailable)`.
    pub fn spill_path(&self) -> String {
        self.spill_file()
            .unwrap_or_else(|| "(unavailable)".to_owned())
    }

    /// The kept tail as text. The window is cut byte-exactly, as the reference's is: a character
    /// cut in two at its start reads as one U+FFFD per byte left of it, so the model sees that
    /// something was cut there.
    pub fn text(&self) -> String {
        let (a, b) = self.kept.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).into_owned()
    }

    /// What was written since byte `cursor` of the stream; `lossy` when some of it is no longer
    /// in memory (the whole kept tail is returned then).
    pub fn since(&self, cursor: u64) -> (String, bool) {
        let first_kept = self.total - self.kept.len() as u64;
        if cursor < first_kept {
            return (self.text(), true);
        }
        let skip = (cursor - first_kept) as usize;
        let bytes: Vec<u8> = self.kept.iter().skip(skip).copied().collect();
        (String::from_utf8_lossy(&bytes).into_owned(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_bytes_and_spills_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut capture = StreamCapture::new(
            Some(SpillTarget {
                dir: dir.path().join("s"),
                name: "x-stdout.log".into(),
            }),
            None,
        );
        let text = "é".repeat(40_000); // 80,000 bytes
        for chunk in text.as_bytes().chunks(777) {
            capture.push(chunk);
        }
        assert!(capture.truncated());
        let kept = capture.text();
        assert_eq!(kept, "é".repeat(32_000));
        let path = capture.spill_path();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_character_cut_by_the_window_reads_as_replacement_characters() {
        for (text, kept) in [
            // 80,001 bytes: the window starts on the second byte of an é.
            (
                "é".repeat(40_000) + "\n",
                format!("\u{FFFD}{}\n", "é".repeat(31_999)),
            ),
            // 120,001 bytes of 3-byte characters: it starts on the second of three.
            (
                "中".repeat(40_000) + "a\n",
                format!("\u{FFFD}\u{FFFD}{}a\n", "中".repeat(21_332)),
            ),
        ] {
            let mut capture = StreamCapture::new(None, None);
            capture.push(text.as_bytes());
            assert_eq!(capture.text(), kept);
            assert_eq!(capture.since(0), (kept, true));
        }
    }

    #[test]
    fn output_at_the_cap_is_whole_and_reads_are_deltas() {
        let mut capture = StreamCapture::new(None, None);
        capture.push(&vec![b'a'; KEPT_BYTES]);
        assert!(!capture.truncated());
        assert_eq!(capture.spill_path(), "(unavailable)");
        assert_eq!(
            capture.since(KEPT_BYTES as u64 - 2),
            ("aa".to_owned(), false)
        );
        capture.push(b"bc");
        assert_eq!(capture.since(KEPT_BYTES as u64).0, "bc");
        let (all, lossy) = capture.since(0);
        assert!(lossy);
        assert_eq!(all.len(), KEPT_BYTES);
    }

    #[test]
    fn a_secret_is_caught_however_the_reads_cut_it() {
        let secret = "sk-live-0123456789abcdef";
        let redactor = Redactor::new([secret.to_owned()]).unwrap();
        // Past the kept window, so the spill file is written too; the secret sits across the
        // window's start, across reads, and at the very end.
        let text = format!(
            "{}{secret}{}{secret}\nlast {secret}",
            "a".repeat(KEPT_BYTES - 5),
            "b".repeat(KEPT_BYTES)
        );
        let expected = text.replace(secret, REDACTED_TEXT);
        for chunk_len in [1, 3, 7, 4096, 16 * 1024] {
            let dir = tempfile::tempdir().unwrap();
            let mut capture = StreamCapture::new(
                Some(SpillTarget {
                    dir: dir.path().to_path_buf(),
                    name: "s.log".into(),
                }),
                Some(redactor.clone()),
            );
            let mut cursor = 0;
            let mut deltas = String::new();
            for chunk in text.as_bytes().chunks(chunk_len) {
                capture.push(chunk);
                let (delta, lossy) = capture.since(cursor);
                assert!(!delta.contains("sk-live"), "a delta shows part of the key");
                if !lossy {
                    deltas.push_str(&delta);
                }
                cursor = capture.total();
            }
            capture.finish();
            deltas.push_str(&capture.since(cursor).0);
            assert!(deltas.ends_with(&format!("last {REDACTED_TEXT}")));
            assert!(!capture.text().contains("sk-live"), "chunks of {chunk_len}");
            assert!(expected.ends_with(&capture.text()));
            let spilled = std::fs::read_to_string(capture.spill_path()).unwrap();
            assert_eq!(spilled, expected, "chunks of {chunk_len}");
        }
    }

    const REDACTED_TEXT: &str = crate::REDACTED;
}
