//! `dsh sessions search TEXT`: every session of every workspace, looked through by the index
//! kept beside each log ([`crate::search_index`]), ranked.
//!
//! An entry matches when it holds every word of the query, case aside (ASCII letters). A
//! session's score is what its matching entries weigh: a message of the user's most, then a
//! file a call named, then a call, then an answer; an entry holding the words as one phrase
//! counts double. Sessions are ranked by score, the newest first among equals, each with its
//! best entry (the latest turn among equals) and a snippet around the first word found.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use memchr::memmem;
use serde::Serialize;

use crate::search_index::{Entry, EntryKind, IndexHeader};

mod home_index;

use home_index::{Reader, SessionsDir, Writer};

/// The most a search returns unless told otherwise.
pub const SEARCH_LIMIT: usize = 20;
/// Characters of a snippet before the first word found, and in all.
const SNIPPET_BEFORE: usize = 40;
const SNIPPET_CHARS: usize = 160;

/// A session a search found: where, its best entry, and how well it matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The folder it was recorded in.
    pub cwd: String,
    pub created_at: u64,
    /// The turn of its best entry.
    pub turn: u32,
    /// What its best entry is: `user`, `answer`, `call` or `file`.
    pub kind: &'static str,
    /// The best entry's text around the first word found, on one line.
    pub snippet: String,
    /// How many of its entries matched.
    pub hits: u32,
    pub score: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Its log file.
    pub path: String,
}

/// The sessions under `home` that `query` finds, best first, at most `limit`. Empty for a
/// query of no words. A log that cannot be read is passed over.
///
/// The indexes are read from the one file that holds them all ([`home_index`]) where it is
/// still true of a session's log, else from the session's own; the file is written again when
/// it was not true of every session.
pub fn search_sessions(home: &Path, query: &str, limit: usize) -> Vec<SearchHit> {
    let words: Vec<String> = (query.split_whitespace())
        .map(|word| crate::search_index::escape(&word.to_ascii_lowercase()))
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let query = Query::new(&words);
    let look =
        |header: &IndexHeader, lower: &str, path: &Path| look_through(header, lower, &query, path);
    let sessions = home.join("sessions");
    let Ok(folders) = std::fs::read_dir(&sessions) else {
        return Vec::new();
    };
    let mut found_in = Vec::new();
    // The file's parts that are still true of their logs.
    let mut kept = HashSet::new();
    let mut stale = true;
    if let Some((mut file, dir)) = Reader::open(home).zip(SessionsDir::open(&sessions)) {
        stale = false;
        while let Some((part, lower)) = file.next_part() {
            let log = format!("{}/{}", part.dir, part.log);
            if dir.file_len(&log) == Some(part.header.covers_bytes()) {
                found_in.extend(look(&part.header, lower, &sessions.join(log)));
                kept.insert(part.dir);
            } else {
                stale = true;
            }
        }
    }
    // Every other session, by its own index, written into the file's next version at once.
    let mut next: Option<Option<Writer>> = None;
    for folder in folders.filter_map(Result::ok) {
        let Ok(entries) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        let workspace = folder.file_name().to_string_lossy().into_owned();
        for entry in entries.filter_map(Result::ok) {
            let dir = format!("{workspace}/{}", entry.file_name().to_string_lossy());
            if kept.contains(&dir) {
                continue;
            }
            let Some((path, len)) = crate::search_index::log_in(&entry.path()) else {
                continue;
            };
            let Some(index) = crate::search_index::current_at(&path, len) else {
                continue;
            };
            let lower = index.entries.to_ascii_lowercase();
            found_in.extend(look(&index.header, &lower, &path));
            let log = (path.file_name()).map_or_else(String::new, |n| n.to_string_lossy().into());
            if let Some(next) = next.get_or_insert_with(|| Writer::create(home)) {
                next.add(&dir, &log, &index.header, &lower);
            }
        }
    }
    if stale || next.is_some() {
        rewrite(home, next.flatten(), &kept);
    }
    found_in.sort_by(|a, b| {
        (b.score.cmp(&a.score))
            .then(b.header.created_at.cmp(&a.header.created_at))
            .then(a.header.id.cmp(&b.header.id))
    });
    found_in.truncate(limit);
    // Only the sessions shown have their best entry read whole, a snippet and a title.
    (found_in.into_iter())
        .filter_map(|found| found.hit(&words[0]))
        .collect()
}

/// Finishes the file's next version: the sessions `next` has, and the parts of the file as it
/// is that were found true (`kept`), copied over.
fn rewrite(home: &Path, next: Option<Writer>, kept: &HashSet<String>) {
    let Some(mut next) = next.or_else(|| Writer::create(home)) else {
        return;
    };
    if let Some(mut file) = Reader::open(home) {
        while let Some((part, lower)) = file.next_part() {
            if kept.contains(&part.dir) {
                next.add(&part.dir, &part.log, &part.header, lower);
            }
        }
    }
    next.finish();
}

/// A session that matched, before it is shown: its index's header, what matched, and where
/// its best entry's line starts in its index's entries (in bytes: lowercasing ASCII letters
/// moves none).
struct Found {
    header: IndexHeader,
    score: u32,
    hits: u32,
    best: usize,
    path: PathBuf,
}

impl Found {
    /// The hit as shown: the best entry as it was written, from the index beside the log (the
    /// same line: an index only grows).
    fn hit(self, word: &str) -> Option<SearchHit> {
        let line = (self.path.parent())
            .and_then(|dir| crate::search_index::entry_line(dir, self.best))
            .or_else(|| {
                let index = crate::search_index::current(&self.path)?;
                crate::search_index::line_at(&index.entries, self.best).map(str::to_owned)
            })?;
        let Entry { turn, kind, text } = crate::search_index::parse_entry(&line)?;
        Some(SearchHit {
            title: self.path.parent().and_then(crate::session_list::read_title),
            id: self.header.id,
            cwd: self.header.cwd,
            created_at: self.header.created_at,
            turn,
            kind: kind.name(),
            snippet: snippet(&text, word),
            hits: self.hits,
            score: self.score,
            parent_session: self.header.parent_session,
            path: self.path.to_string_lossy().into_owned(),
        })
    }
}

/// The words searched for (escaped and lowercased as the index's lines are), each with its
/// finder, and the phrase they make when there are several.
struct Query<'a> {
    words: Vec<memmem::Finder<'a>>,
    phrase: Option<memmem::Finder<'static>>,
}

impl<'a> Query<'a> {
    fn new(words: &'a [String]) -> Query<'a> {
        Query {
            words: (words.iter())
                .map(|w| memmem::Finder::new(w.as_bytes()))
                .collect(),
            phrase: (words.len() > 1)
                .then(|| memmem::Finder::new(words.join(" ").as_bytes()).into_owned()),
        }
    }

    fn all_in(&self, text: &[u8]) -> bool {
        self.words.iter().all(|word| word.find(text).is_some())
    }
}

/// What the lowercased lines of the index of the log at `path` hold of `query`, if any.
fn look_through(
    header: &IndexHeader,
    lower: &str,
    query: &Query<'_>,
    path: &Path,
) -> Option<Found> {
    let bytes = lower.as_bytes();
    // Most sessions hold none of the words: one look at the whole text passes them over.
    if !query.all_in(bytes) {
        return None;
    }
    let mut best: Option<(u32, usize)> = None;
    let (mut hits, mut score) = (0u32, 0u32);
    // Only the lines that hold the first word are read: from one of its places to the next.
    let mut from = 0;
    while let Some(at) = query.words[0].find(&bytes[from..]).map(|at| from + at) {
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |n| n + 1);
        let end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
        from = end;
        let mut fields = lower[start..end].splitn(3, '\t');
        let (Some(_), Some(kind), Some(text)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some(kind) = EntryKind::from_name(kind).filter(|_| query.all_in(text.as_bytes()))
        else {
            continue;
        };
        let mut weight = weight(kind);
        if (query.phrase.as_ref()).is_some_and(|phrase| phrase.find(text.as_bytes()).is_some()) {
            weight *= 2;
        }
        hits += 1;
        score = score.saturating_add(weight);
        if best.is_none_or(|(w, _)| weight >= w) {
            best = Some((weight, start));
        }
    }
    let (_, best) = best?;
    Some(Found {
        header: header.clone(),
        score,
        hits,
        best,
        path: path.to_path_buf(),
    })
}

fn weight(kind: EntryKind) -> u32 {
    match kind {
        EntryKind::User => 4,
        EntryKind::File => 3,
        EntryKind::Call => 2,
        EntryKind::Answer => 1,
    }
}

/// `text` around the first place `word` (lowercased, escaped) is found, on one line, with `…`
/// where it was cut.
fn snippet(text: &str, word: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let word = crate::search_index::unescape(word);
    let at = flat.to_ascii_lowercase().find(&word).unwrap_or(0);
    let start_char = flat[..at].chars().count().saturating_sub(SNIPPET_BEFORE);
    let total = flat.chars().count();
    let shown: String = flat.chars().skip(start_char).take(SNIPPET_CHARS).collect();
    let mut out = String::new();
    if start_char > 0 {
        out.push('…');
    }
    out.push_str(&shown);
    if start_char + SNIPPET_CHARS < total {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snippet_is_cut_around_the_word() {
        let text = format!("{} needle {}", "a ".repeat(100), "b ".repeat(100));
        let shown = snippet(&text, "needle");
        assert!(shown.starts_with('…') && shown.ends_with('…'), "{shown}");
        assert!(shown.contains("needle"));
        assert_eq!(snippet("Find the\nNeedle", "needle"), "Find the Needle");
    }
}
