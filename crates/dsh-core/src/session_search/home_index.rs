//! Every session's search index in one file, `$DSH_HOME/search-all.idx`, so a search of ten
//! thousand sessions reads one file instead of ten thousand, a session at a time.
//!
//! It is a copy of what is kept beside each log ([`crate::search_index`]), never the only one: a
//! session's part is used only while its log is still as long as the part covers (one `stat` a
//! session, which a search pays anyway to find the logs); any other session is read as before,
//! by its own index, and a search that found the file untrue of any session writes it again
//! (aside, then renamed), without the sessions that are gone. Two searches writing at once each
//! write a whole, true file; the last one stays.
//!
//! The file: a JSON line `{"version": 1}`, then for each session a JSON line (its folder under
//! `sessions/`, its log's name, the length of its entries in bytes, and its index's header),
//! then those bytes, the entries' lines as the index beside the log has them but lowercased
//! (ASCII letters), as a search compares them: it lowercases nothing but the words. The few
//! sessions a search shows take their best entry as written from the index beside their log.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::search_index::IndexHeader;

/// The file under `$DSH_HOME`.
pub(crate) const HOME_INDEX_FILE: &str = "search-all.idx";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct FileHeader {
    version: u32,
}

/// One session's part of the file, before its entries.
#[derive(Serialize, Deserialize)]
pub(crate) struct Part {
    /// Its folder, relative to `$DSH_HOME/sessions` (`<workspace>/<session>`).
    pub dir: String,
    /// Its log's file name.
    pub log: String,
    /// How many bytes of entries follow this line.
    bytes: usize,
    pub header: IndexHeader,
}

/// The file, read a part at a time: what a search holds is one session's entries.
pub(crate) struct Reader {
    file: BufReader<File>,
    line: String,
    entries: Vec<u8>,
}

impl Reader {
    /// The file under `home`; `None` when there is none, or one another version of dsh wrote.
    pub(crate) fn open(home: &Path) -> Option<Reader> {
        let file = File::open(home.join(HOME_INDEX_FILE)).ok()?;
        let mut reader = Reader {
            file: BufReader::with_capacity(1 << 16, file),
            line: String::new(),
            entries: Vec::new(),
        };
        let header = reader.next_line()?;
        serde_json::from_str::<FileHeader>(header)
            .ok()
            .filter(|header| header.version == VERSION)?;
        Some(reader)
    }

    fn next_line(&mut self) -> Option<&str> {
        self.line.clear();
        let read = self.file.read_line(&mut self.line).ok()?;
        (read > 0 && self.line.ends_with('\n')).then(|| self.line.trim_end_matches('\n'))
    }

    /// The next session's part and its entries' lines (lowercased); `None` at the end, or where
    /// the file was cut short or is not one (the parts before were whole).
    pub(crate) fn next_part(&mut self) -> Option<(Part, &str)> {
        let part: Part = serde_json::from_str(self.next_line()?).ok()?;
        self.entries.clear();
        let want = u64::try_from(part.bytes).ok()?;
        let read = (&mut self.file)
            .take(want)
            .read_to_end(&mut self.entries)
            .ok()?;
        if read != part.bytes {
            return None;
        }
        let entries = std::str::from_utf8(&self.entries).ok()?;
        Some((part, entries))
    }
}

/// `$DSH_HOME/sessions`, opened once: a log's length is looked up from it, three names down
/// rather than from the root, which ten thousand lookups feel.
pub(crate) struct SessionsDir(File);

impl SessionsDir {
    pub(crate) fn open(sessions: &Path) -> Option<SessionsDir> {
        File::open(sessions).ok().map(SessionsDir)
    }

    /// The length of the file `relative` (to this folder) names, if it is a plain file.
    pub(crate) fn file_len(&self, relative: &str) -> Option<u64> {
        use std::os::fd::AsRawFd;
        let name = std::ffi::CString::new(relative).ok()?;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstatat(2) reads the NUL-terminated `name` beneath an open folder's descriptor
        // and writes one `stat` into `stat`, which is read only when it says it succeeded.
        let done =
            unsafe { libc::fstatat(self.0.as_raw_fd(), name.as_ptr(), stat.as_mut_ptr(), 0) };
        if done != 0 {
            return None;
        }
        // SAFETY: fstatat succeeded, so it filled `stat`.
        let stat = unsafe { stat.assume_init() };
        let plain = stat.st_mode & libc::S_IFMT == libc::S_IFREG;
        plain.then(|| u64::try_from(stat.st_size).ok()).flatten()
    }
}

/// The file being written anew, aside until [`Writer::finish`] puts it in place.
pub(crate) struct Writer {
    staged: PathBuf,
    target: PathBuf,
    file: Option<BufWriter<File>>,
}

impl Writer {
    /// A new file for `home`, or `None` when none can be written there (a search goes on: the
    /// next one reads the indexes beside the logs, as without the file).
    pub(crate) fn create(home: &Path) -> Option<Writer> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let staged = home.join(format!(".{HOME_INDEX_FILE}.{}.{n}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&staged)
            .ok()?;
        let mut writer = Writer {
            staged,
            target: home.join(HOME_INDEX_FILE),
            file: Some(BufWriter::new(file)),
        };
        let mut first = serde_json::to_vec(&FileHeader { version: VERSION }).ok()?;
        first.push(b'\n');
        writer.write(&first);
        Some(writer)
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(file) = &mut self.file
            && file.write_all(bytes).is_err()
        {
            self.file = None;
        }
    }

    /// Adds a session's part: `entries` are its index's lines, lowercased.
    pub(crate) fn add(&mut self, dir: &str, log: &str, header: &IndexHeader, entries: &str) {
        let part = Part {
            dir: dir.to_owned(),
            log: log.to_owned(),
            bytes: entries.len(),
            header: header.clone(),
        };
        match serde_json::to_vec(&part) {
            Ok(mut line) => {
                line.push(b'\n');
                self.write(&line);
                self.write(entries.as_bytes());
            }
            Err(_) => self.file = None,
        }
    }

    /// Puts the file in place when every part was written, else leaves the old one.
    pub(crate) fn finish(mut self) {
        let written = (self.file.take()).is_some_and(|file| file.into_inner().is_ok());
        if written {
            let _ = std::fs::rename(&self.staged, &self.target);
        }
    }
}

impl Drop for Writer {
    /// What was not put in place is not left aside either.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.staged);
    }
}

#[cfg(test)]
mod tests {
    use dsh_protocol::{Message, Record, SessionHeader};

    use super::*;
    use crate::log::{LogOptions, SessionLog};
    use crate::search_sessions;

    fn session(home: &Path, id: &str, task: &str) -> SessionLog {
        let header = SessionHeader::new(id.into(), 5, "/w".into());
        let mut log = SessionLog::create(home, header, LogOptions::default())
            .at_each_turn_end(crate::search_index::keep_up);
        ask(&mut log, 1, task);
        log
    }

    fn ask(log: &mut SessionLog, turn: u32, task: &str) {
        log.append(Record::TurnStart { turn }).unwrap();
        let message = Message::user_text(task.to_owned());
        (log.append(Record::UserMessage {
            turn,
            message,
            instructions: None,
        }))
        .unwrap();
        let reason = dsh_protocol::TurnEndReason::Completed;
        log.append(Record::TurnEnd { turn, reason }).unwrap();
    }

    fn ids(home: &Path, query: &str) -> Vec<String> {
        let mut ids: Vec<String> = (search_sessions(home, query, 10).into_iter())
            .map(|hit| hit.id)
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn a_search_reads_the_one_file_while_it_is_true_of_every_log() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path();
        let _a = session(home, "session-a", "tune the parser");
        let _b = session(home, "session-b", "Fix the Lexer");
        assert_eq!(ids(home, "parser"), ["session-a"]);
        let file = home.join(HOME_INDEX_FILE);
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("tune the parser") && written.contains("fix the lexer"));
        // Kept lowercased, the words are compared as they are; what is shown is as written.
        let shown = search_sessions(home, "LEXER", 10);
        assert_eq!(shown[0].snippet, "Fix the Lexer");
        // The file is what the next search reads: a word changed in it (its length kept) is
        // found there, and not in the sessions' own indexes.
        std::fs::write(&file, written.replace("tune the parser", "tune the zapper")).unwrap();
        assert_eq!(ids(home, "zapper"), ["session-a"]);
        assert!(ids(home, "parser").is_empty());
    }

    #[test]
    fn a_longer_log_a_gone_session_or_a_broken_file_is_read_from_the_sessions_own() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path();
        let mut a = session(home, "session-a", "tune the parser");
        let b = session(home, "session-b", "fix the lexer");
        assert_eq!(ids(home, "the"), ["session-a", "session-b"]);
        let file = home.join(HOME_INDEX_FILE);
        // A turn more in one log: found, and the file written again with it.
        ask(&mut a, 2, "then the lexer too");
        assert_eq!(ids(home, "lexer"), ["session-a", "session-b"]);
        assert!(
            std::fs::read_to_string(&file)
                .unwrap()
                .contains("then the lexer too")
        );
        // A session removed is in no answer, and no longer in the file.
        std::fs::remove_dir_all(b.path().parent().unwrap()).unwrap();
        assert_eq!(ids(home, "lexer"), ["session-a"]);
        assert!(
            !std::fs::read_to_string(&file)
                .unwrap()
                .contains("fix the lexer")
        );
        // A file cut short, or not one at all, changes no answer.
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() - 5]).unwrap();
        assert_eq!(ids(home, "lexer"), ["session-a"]);
        std::fs::write(&file, "not an index\n{}\n").unwrap();
        assert_eq!(ids(home, "parser"), ["session-a"]);
        assert_eq!(std::fs::read(&file).unwrap(), whole, "written again whole");
    }
}
