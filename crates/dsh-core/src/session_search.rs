//! `dsh sessions search TEXT`: every session of every workspace, looked through by the index
//! kept beside each log ([`crate::search_index`]), ranked.
//!
//! An entry matches when it holds every word of the query, case aside (ASCII letters). A
//! session's score is what its matching entries weigh: a message of the user's most, then a
//! file a call named, then a call, then an answer; an entry holding the words as one phrase
//! counts double. Sessions are ranked by score, the newest first among equals, each with its
//! best entry (the latest turn among equals) and a snippet around the first word found.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::search_index::{Entry, EntryKind, Index, IndexHeader};

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
pub fn search_sessions(home: &Path, query: &str, limit: usize) -> Vec<SearchHit> {
    let words: Vec<String> = (query.split_whitespace())
        .map(|word| crate::search_index::escape(&word.to_ascii_lowercase()))
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let phrase = (words.len() > 1).then(|| words.join(" "));
    let Ok(folders) = std::fs::read_dir(home.join("sessions")) else {
        return Vec::new();
    };
    let mut found_in = Vec::new();
    for folder in folders.filter_map(Result::ok) {
        let Ok(entries) = std::fs::read_dir(folder.path()) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let Some((index, path)) = crate::search_index::current_in(&entry.path()) else {
                continue;
            };
            if let Some(found) = look_through(index, &words, phrase.as_deref(), path) {
                found_in.push(found);
            }
        }
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

/// A session that matched, before it is shown: its index's header, what matched, and its
/// best entry's line.
struct Found {
    header: IndexHeader,
    score: u32,
    hits: u32,
    best: String,
    path: PathBuf,
}

impl Found {
    fn hit(self, word: &str) -> Option<SearchHit> {
        let Entry { turn, kind, text } = crate::search_index::parse_entry(&self.best)?;
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

/// What `index` holds of `words` (escaped and lowercased as the index's lines are), if any.
fn look_through(
    index: Index,
    words: &[String],
    phrase: Option<&str>,
    path: PathBuf,
) -> Option<Found> {
    let lower = index.entries.to_ascii_lowercase();
    // Most sessions hold none of the words: one look at the whole text passes them over.
    if !words.iter().all(|word| lower.contains(word.as_str())) {
        return None;
    }
    let mut best: Option<(u32, &str)> = None;
    let (mut hits, mut score) = (0u32, 0u32);
    for (line, original) in lower.lines().zip(index.entries.lines()) {
        let mut fields = line.splitn(3, '\t');
        let (Some(_), Some(kind), Some(text)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if !words.iter().all(|word| text.contains(word.as_str())) {
            continue;
        }
        let Some(kind) = EntryKind::from_name(kind) else {
            continue;
        };
        let mut weight = weight(kind);
        if phrase.is_some_and(|phrase| text.contains(phrase)) {
            weight *= 2;
        }
        hits += 1;
        score = score.saturating_add(weight);
        if best.is_none_or(|(w, _)| weight >= w) {
            best = Some((weight, original));
        }
    }
    let best = best?.1.to_owned();
    Some(Found {
        header: index.header,
        score,
        hits,
        best,
        path,
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
