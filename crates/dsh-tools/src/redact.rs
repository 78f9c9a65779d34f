//! Secrets out of tool results: the values of the keys and tokens a run knows are replaced by
//! `[REDACTED]` in every result before anything else sees it, so the session log, the event
//! stream, a spilled result and the model's next request never hold them. A command that
//! prints its environment or a file that holds a key is the usual way one would get there.

use std::borrow::Cow;
use std::sync::Arc;

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

/// Replaces known secret values in text. Clones share their secrets: one that learns a new
/// secret ([`Redactor::learn`], a token renewed during the run) teaches every clone.
#[derive(Clone)]
pub struct Redactor {
    shared: Arc<std::sync::RwLock<Secrets>>,
}

#[derive(Clone)]
struct Secrets {
    automaton: AhoCorasick,
    /// The same values, for [`Redactor::unsettled_tail`] and [`Redactor::learn`].
    values: Arc<[Box<[u8]>]>,
}

/// The values are secrets: only how many there are is shown.
impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets().values.len())
            .finish()
    }
}

/// The fewest characters of a secret taken for a piece of it when a text quotes them in a row.
const SECRET_PIECE: usize = 8;

/// `message` with `secret` taken out: every run of at least eight characters (or the whole
/// secret, when it is shorter) that is part of it becomes `[REDACTED]`, so a provider quoting
/// a key whole, cut short or between its own stars shows none of it.
pub fn without_pieces(message: &str, secret: &str) -> String {
    let secret: Vec<char> = secret.chars().collect();
    let least = SECRET_PIECE.min(secret.len()).max(1);
    let text: Vec<char> = message.chars().collect();
    let mut out = String::new();
    let mut at = 0;
    while at < text.len() {
        // The longest piece of the secret that starts here.
        let longest = (0..secret.len())
            .map(|start| {
                (text[at..].iter().zip(&secret[start..]))
                    .take_while(|(a, b)| a == b)
                    .count()
            })
            .max()
            .unwrap_or(0);
        if longest >= least {
            out.push_str("[REDACTED]");
            at += longest;
        } else {
            out.push(text[at]);
            at += 1;
        }
    }
    out
}

/// The spellings of `values` worth replacing (trimmed; short ones and words dropped).
fn secret_spellings(values: impl IntoIterator<Item = String>) -> Vec<String> {
    let long = |value: &str| value.chars().count() >= MIN_SECRET_CHARS;
    values
        .into_iter()
        .filter(|value| long(value.trim()) && !is_a_word(value.trim()))
        .flat_map(|value| spellings(value.trim()))
        .filter(|value| long(value) && !is_a_word(value))
        .collect()
}

impl Secrets {
    fn build(mut secrets: Vec<String>) -> Option<Secrets> {
        secrets.sort();
        secrets.dedup();
        if secrets.is_empty() {
            return None;
        }
        // Leftmost-longest: a secret that contains another is replaced whole.
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&secrets)
            .ok()?;
        Some(Secrets {
            automaton,
            values: secrets
                .into_iter()
                .map(|value| value.into_bytes().into_boxed_slice())
                .collect(),
        })
    }
}

impl Redactor {
    /// A redactor for these values (trimmed; short ones and repeats dropped); `None` when no
    /// value is left.
    pub fn new(values: impl IntoIterator<Item = String>) -> Option<Redactor> {
        let secrets = Secrets::build(secret_spellings(values))?;
        Some(Redactor {
            shared: Arc::new(std::sync::RwLock::new(secrets)),
        })
    }

    /// A redactor that knows no secret yet, for a run that may learn some (an MCP server's
    /// token renewed during the run).
    pub fn learning() -> Option<Redactor> {
        let automaton = AhoCorasick::new(Vec::<String>::new()).ok()?;
        Some(Redactor {
            shared: Arc::new(std::sync::RwLock::new(Secrets {
                automaton,
                values: Arc::from(Vec::new()),
            })),
        })
    }

    /// Adds secrets the run learned after it started (an MCP server's renewed token), for this
    /// redactor and every clone of it.
    pub fn learn(&self, values: impl IntoIterator<Item = String>) {
        let fresh = secret_spellings(values);
        let is_known =
            |known: &Secrets, value: &String| known.values.iter().any(|k| **k == *value.as_bytes());
        if fresh.iter().all(|v| is_known(&self.secrets(), v)) {
            return;
        }
        // Checked again and rebuilt under the write lock, so two learners lose nothing.
        let mut shared = self
            .shared
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut all: Vec<String> = (shared.values.iter())
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .collect();
        all.extend(fresh.into_iter().filter(|v| !is_known(&shared, v)));
        if let Some(secrets) = Secrets::build(all) {
            *shared = secrets;
        }
    }

    /// The secrets as they are now (cheap: the automaton is shared).
    fn secrets(&self) -> Secrets {
        self.shared
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// A provider's message (or another that may quote a secret it was sent, in part) with
    /// every secret taken out whole, then every run of eight or more characters of one.
    pub fn redact_pieces(&self, text: &str) -> String {
        let secrets = self.secrets();
        let mut out = self.redact(text).into_owned();
        for value in secrets.values.iter() {
            if let Ok(value) = std::str::from_utf8(value) {
                out = without_pieces(&out, value);
            }
        }
        out
    }

    /// The text with every secret replaced; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let secrets = self.secrets();
        if !secrets.automaton.is_match(text) {
            return Cow::Borrowed(text);
        }
        let replacements = vec![REDACTED; secrets.automaton.patterns_len()];
        Cow::Owned(secrets.automaton.replace_all(text, &replacements))
    }

    /// The bytes with every secret replaced; borrowed when there was none.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let secrets = self.secrets();
        if !secrets.automaton.is_match(bytes) {
            return Cow::Borrowed(bytes);
        }
        let replacements = vec![REDACTED.as_bytes(); secrets.automaton.patterns_len()];
        Cow::Owned(secrets.automaton.replace_all_bytes(bytes, &replacements))
    }

    /// Where the end of a stream read so far stops being safe to pass on: the start of the
    /// longest tail of `bytes` that begins some secret (which the next bytes may complete),
    /// or `bytes.len()`. Output read in pieces is redacted up to there and the rest carried
    /// over, so a secret cut between two reads is still caught whole; and since no secret
    /// can start before that point and end after it, leftmost-longest matching of the part
    /// before it is the same as of the whole stream.
    pub fn unsettled_tail(&self, bytes: &[u8]) -> usize {
        let mut start = bytes.len();
        for value in self.secrets().values.iter() {
            // Longest first: the first hit is this secret's earliest possible start.
            let longest = (value.len() - 1).min(bytes.len());
            if let Some(len) = (1..=longest)
                .rev()
                .find(|&len| bytes.ends_with(&value[..len]))
            {
                start = start.min(bytes.len() - len);
            }
        }
        start
    }

    /// Text about to be cut after `kept` (a long line, a capped view), without the start of a
    /// secret the cut would leave showing; the part of it before the cut is redacted with the
    /// rest of the result.
    pub fn before_cut<'a>(&self, kept: &'a str) -> &'a str {
        // A secret's first byte starts a character, so the tail found starts one too.
        &kept[..self.unsettled_tail(kept.as_bytes())]
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

/// The ways a value is printed: as it is, escaped inside a JSON string (`"` and `\\` in a
/// password, a command that prints its config as JSON), percent-encoded (in a URL), and, when
/// the value itself is percent-encoded (a URL's password), decoded.
fn spellings(value: &str) -> Vec<String> {
    let mut spellings = vec![value.to_owned()];
    if let Ok(json) = serde_json::to_string(value) {
        spellings.push(json[1..json.len() - 1].to_owned());
    }
    let mut encoded = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    spellings.push(encoded);
    if let Some(decoded) = percent_decoded(value) {
        spellings.push(decoded);
    }
    // Base64, as `| base64` or an HTTP Basic header writes it, wherever the value falls in
    // what was encoded: at each of the three alignments, the characters that only its own
    // bytes decide, in both alphabets.
    for shift in 0..3 {
        let inner = base64_inner(value.as_bytes(), shift);
        spellings.push(inner.replace('+', "-").replace('/', "_"));
        spellings.push(inner);
    }
    spellings
}

/// The characters of the base64 of `value` preceded by `shift` other bytes that depend on
/// `value`'s bits alone (so they appear in any encoding holding `value` at that alignment).
fn base64_inner(value: &[u8], shift: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bits: Vec<bool> = std::iter::repeat_n(0u8, shift)
        .chain(value.iter().copied())
        .flat_map(|byte| (0..8).rev().map(move |bit| (byte >> bit) & 1 == 1))
        .collect();
    let (first, end) = ((8 * shift).div_ceil(6), bits.len() / 6);
    (first..end)
        .map(|i| {
            let sextet = bits[6 * i..6 * i + 6]
                .iter()
                .fold(0usize, |n, &bit| (n << 1) | usize::from(bit));
            char::from(ALPHABET[sextet])
        })
        .collect()
}

/// The value with its `%XX` escapes decoded, when it has any and they make UTF-8.
fn percent_decoded(value: &str) -> Option<String> {
    if !value.contains('%') {
        return None;
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(out).ok()
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

/// `text` with the secrets of `redactor` taken out, where the run redacts (`None`: it does
/// not); the text itself when nothing matched.
pub fn redacted(redactor: Option<&Redactor>, text: String) -> String {
    if let Some(Cow::Owned(clean)) = redactor.map(|redactor| redactor.redact(&text)) {
        return clean;
    }
    text
}

/// Refuses a command that holds [`REDACTED`] while secrets are being taken out: it would
/// write the placeholder where a key was (`sed -i`, `echo ... > .env`) or send it where the
/// key was meant (`curl -H "Authorization: Bearer [REDACTED]"`), and either way the model
/// means the secret, which its variable still holds.
pub(crate) fn refuse_placeholder_command(
    session: &crate::ToolSession,
    command: &str,
) -> Result<(), crate::ToolError> {
    if session.redactor.is_some() && command.contains(REDACTED) {
        return Err(crate::ToolError::plain(format!(
            "the command contains {REDACTED}, which stands for a secret dsh kept from you: run \
             as it is, it would write or send the placeholder instead of the secret. Refer to \
             the secret through the variable that holds it (\"$NAME\"), and leave the lines \
             of files that hold {REDACTED} untouched"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_message_quoting_the_key_shows_none_of_it() {
        let key = "sk-proj-4f9Qa7Lm2Xc8Vb1Nz6Ty";
        for (message, shown) in [
            (
                format!("Incorrect API key provided: Bearer {key}."),
                "Incorrect API key provided: Bearer [REDACTED].",
            ),
            (
                format!("key {}... is invalid", &key[..14]),
                "key [REDACTED]... is invalid",
            ),
            (
                format!("sk-proj-****{}", &key[key.len() - 10..]),
                "[REDACTED]****[REDACTED]",
            ),
            (
                "Authentication Fails, Your api key is invalid".to_owned(),
                "Authentication Fails, Your api key is invalid",
            ),
        ] {
            assert_eq!(without_pieces(&message, key), shown, "{message}");
        }
        assert_eq!(without_pieces("bad: abc", "abc"), "bad: [REDACTED]");
    }
    /// The red team's finding: a provider's error quoting part of the key it was sent showed
    /// that part (only `dsh login` took pieces out).
    #[test]
    fn a_message_quoting_part_of_a_secret_shows_none_of_it() {
        let redactor = Redactor::new(["zp-live-4f9Qk2LmX8vR".to_owned()]).unwrap();
        let said = "Incorrect API key provided: zp-live-4f9Q********X8vR. See your account.";
        let shown = redactor.redact_pieces(said);
        assert!(!shown.contains("4f9Q"), "{shown}");
        assert!(
            shown.starts_with("Incorrect API key provided: [REDACTED]"),
            "{shown}"
        );
        assert!(shown.ends_with("See your account."), "{shown}");
        // Text that shares fewer than eight characters in a row with it stays.
        assert_eq!(
            redactor.redact_pieces("zp-live is the prefix"),
            "zp-live is the prefix"
        );
    }

    /// The red team's finding: a command that encodes what it read (`| base64`, an HTTP Basic
    /// header an error echoes) got secrets past the redactor.
    #[test]
    fn a_secret_is_redacted_in_base64_wherever_it_falls_in_what_was_encoded() {
        fn encode(bytes: &[u8]) -> String {
            const ABC: &[u8; 64] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut out = String::new();
            for chunk in bytes.chunks(3) {
                let mut block = [0u8; 3];
                block[..chunk.len()].copy_from_slice(chunk);
                let n = u32::from(block[0]) << 16 | u32::from(block[1]) << 8 | u32::from(block[2]);
                for i in 0..4 {
                    if i <= chunk.len() {
                        out.push(char::from(ABC[(n >> (18 - 6 * i) & 63) as usize]));
                    } else {
                        out.push('=');
                    }
                }
            }
            out
        }
        assert_eq!(encode(b"any carnal pleas"), "YW55IGNhcm5hbCBwbGVhcw==");
        let key = "zp-live-4f9Qk2LmX8vR".to_owned();
        let redactor = Redactor::new([key.clone(), "alice:s3cret-Pa55w0rd".to_owned()]).unwrap();
        for prefix in ["", "a", "ab", "Authorization: Bearer "] {
            for text in [format!("{prefix}{key}\n"), format!("{prefix}{key}")] {
                let encoded = encode(text.as_bytes());
                let shown = redactor.redact(&encoded);
                assert!(
                    shown.contains("[REDACTED]"),
                    "{prefix:?}: {encoded} -> {shown}"
                );
                let url_safe = encoded.replace('+', "-").replace('/', "_");
                assert!(
                    redactor.redact(&url_safe).contains("[REDACTED]"),
                    "{url_safe}"
                );
            }
        }
        let basic = format!("Basic {}", encode(b"alice:s3cret-Pa55w0rd"));
        assert!(!redactor.redact(&basic).contains(&basic[6..]), "{basic}");
    }
    use super::*;

    #[test]
    fn redacted_takes_secrets_out_only_where_the_run_redacts() {
        let redactor = Redactor::new(["sk-live-0123456789".to_owned()]).unwrap();
        let text = || "key sk-live-0123456789 here".to_owned();
        assert_eq!(redacted(Some(&redactor), text()), "key [REDACTED] here");
        assert_eq!(redacted(None, text()), text());
        assert_eq!(redacted(Some(&redactor), "plain".to_owned()), "plain");
    }

    #[test]
    fn a_redactor_that_knows_nothing_yet_can_learn() {
        let redactor = Redactor::learning().unwrap();
        assert_eq!(redactor.redact("token-0123456789"), "token-0123456789");
        redactor.learn(["token-0123456789".to_owned()]);
        assert_eq!(redactor.redact("token-0123456789"), "[REDACTED]");
    }

    #[test]
    fn a_secret_learned_later_is_redacted_by_every_clone() {
        let redactor = Redactor::new(["sk-live-0123456789".to_owned()]).unwrap();
        let clone = redactor.clone();
        redactor.learn(["renewed-token-ABCDEF".to_owned(), "short".to_owned()]);
        assert_eq!(
            clone.redact("old sk-live-0123456789 new renewed-token-ABCDEF short"),
            "old [REDACTED] new [REDACTED] short"
        );
        assert_eq!(clone.unsettled_tail(b"x renewed-tok"), 2);
    }

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
    fn the_unsettled_tail_is_where_a_secret_may_begin() {
        let redactor =
            Redactor::new(["sk-live-0123456789".to_owned(), "abc12345".to_owned()]).unwrap();
        assert_eq!(redactor.unsettled_tail(b"key sk-live-01"), 4);
        assert_eq!(redactor.unsettled_tail(b"key abc"), 4);
        assert_eq!(redactor.unsettled_tail(b"key s"), 4);
        assert_eq!(redactor.unsettled_tail(b"nothing"), 7);
        // A whole secret is settled: it is replaced where it is.
        assert_eq!(redactor.unsettled_tail(b"abc12345"), 8);
        assert_eq!(redactor.before_cut("cut at sk-li"), "cut at ");
        assert_eq!(redactor.unsettled_tail(b""), 0);
        assert_eq!(
            redactor.redact_bytes(b"x sk-live-0123456789 y").as_ref(),
            b"x [REDACTED] y"
        );
    }

    #[test]
    fn a_secret_is_caught_as_json_and_urls_spell_it() {
        let redactor =
            Redactor::new(["pa\"ss/wo rd\\1".to_owned(), "p%40ssw0rd%21".to_owned()]).unwrap();
        for (printed, shown) in [
            (
                r#"{"password":"pa\"ss/wo rd\\1"}"#,
                r#"{"password":"[REDACTED]"}"#,
            ),
            ("x=pa%22ss%2Fwo%20rd%5C1;", "x=[REDACTED];"),
            ("x=pa\"ss/wo rd\\1;", "x=[REDACTED];"),
            ("x=p@ssw0rd!;", "x=[REDACTED];"),
            ("x=p%40ssw0rd%21;", "x=[REDACTED];"),
        ] {
            assert_eq!(redactor.redact(printed), shown);
        }
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
