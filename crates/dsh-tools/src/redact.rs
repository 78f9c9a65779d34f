//! Secrets out of tool results: the values of the keys and tokens a run knows are replaced by
//! `[REDACTED]` in every result before anything else sees it, so the session log, the event
//! stream, a spilled result and the model's next request never hold them. A command that
//! prints its environment or a file that holds a key is the usual way one would get there.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use dsh_protocol::ToolOutputPart;

use crate::ToolOutcome;

/// What a secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are not treated as secrets: `true`, `1` or a port would be
/// replaced everywhere they occur, and no real key is this short.
pub const MIN_SECRET_CHARS: usize = 8;

/// Whether a variable's name says its value is a secret: the names commands never inherit
/// ([`crate::DEFAULT_SCRUB`]: `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, ...).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_uppercase();
    crate::DEFAULT_SCRUB.iter().any(|part| upper.contains(part))
}

/// A value of letters alone, shorter than 16 characters, is a word (`production`,
/// `Authorization`) that a secret-named setting happens to hold, not a key: replacing it would
/// blank the word wherever it occurs in the code the model reads.
fn is_a_word(value: &str) -> bool {
    value.chars().count() < 16 && value.chars().all(char::is_alphabetic)
}

/// Replaces known secret values in text.
#[derive(Clone)]
pub struct Redactor {
    secrets: AhoCorasick,
}

/// The values are secrets: only how many there are is shown.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets.patterns_len())
            .finish()
    }
}

impl Redactor {
    /// A redactor for these values (trimmed; short ones and repeats dropped); `None` when no
    /// value is left.
    pub fn new(values: impl IntoIterator<Item = String>) -> Option<Redactor> {
        let mut secrets: Vec<String> = values
            .into_iter()
            .map(|value| value.trim().to_owned())
            .filter(|value| value.chars().count() >= MIN_SECRET_CHARS && !is_a_word(value))
            .collect();
        secrets.sort();
        secrets.dedup();
        if secrets.is_empty() {
            return None;
        }
        // Leftmost-longest: a secret that contains another is replaced whole.
        let secrets = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&secrets)
            .ok()?;
        Some(Redactor { secrets })
    }

    /// The text with every secret replaced; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.secrets.is_match(text) {
            return Cow::Borrowed(text);
        }
        let replacements = vec![REDACTED; self.secrets.patterns_len()];
        Cow::Owned(self.secrets.replace_all(text, &replacements))
    }

    /// Redacts the text parts of a call's result.
    pub fn redact_outcome(&self, outcome: &mut ToolOutcome) {
        for part in &mut outcome.parts {
            if let ToolOutputPart::Text { text } = part
                && let Cow::Owned(redacted) = self.redact(text)
            {
                *text = redacted;
            }
        }
    }
}

/// Refuses new file content that holds [`REDACTED`] while secrets are being taken out: the
/// model saw a placeholder where a key was, and writing it back would destroy the key.
pub(crate) fn refuse_placeholder(
    session: &crate::ToolSession,
    content: &str,
) -> Result<(), crate::ToolError> {
    if session.redactor.is_some() && content.contains(REDACTED) {
        return Err(crate::ToolError::plain(format!(
            "the new content contains {REDACTED}, which stands for a secret dsh kept from you; \
             writing it would replace the secret in the file. Change only the parts around it \
             with edit, leaving the lines that hold {REDACTED} untouched"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_occurrence_of_every_secret_is_replaced() {
        let redactor = Redactor::new([
            "sk-live-0123456789".to_owned(),
            "ghp_abcdefghij".to_owned(),
            "short".to_owned(),
        ])
        .unwrap();
        assert_eq!(
            redactor.redact("a=sk-live-0123456789 b=ghp_abcdefghij a=sk-live-0123456789 short"),
            "a=[REDACTED] b=[REDACTED] a=[REDACTED] short"
        );
        assert!(matches!(redactor.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_secret_inside_a_longer_one_does_not_leave_a_piece_behind() {
        let redactor =
            Redactor::new(["abcdefgh".to_owned(), "abcdefgh-and-more".to_owned()]).unwrap();
        assert_eq!(redactor.redact("x abcdefgh-and-more y"), "x [REDACTED] y");
    }

    #[test]
    fn no_values_long_enough_make_no_redactor() {
        assert!(Redactor::new(["1".to_owned(), "  short ".to_owned()]).is_none());
    }

    #[test]
    fn plain_words_are_not_secrets() {
        assert!(Redactor::new(["Authorization".to_owned(), "production".to_owned()]).is_none());
        assert!(Redactor::new(["correcthorsebatterystaple".to_owned()]).is_some());
    }

    #[test]
    fn secret_names_are_the_scrubbed_ones() {
        assert!(is_secret_name("DEEPSEEK_API_KEY"));
        assert!(is_secret_name("github_token"));
        assert!(is_secret_name("DB_PASSWORD"));
        assert!(!is_secret_name("HOME"));
    }
}
