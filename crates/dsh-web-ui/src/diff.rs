//! An edit's or a write's change as diff lines for the page: `[sign, text]` pairs (`-`, `+`,
//! or a space for context), at most [`MAX_LINES`], then how many more there were.

use std::time::Duration;

use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

/// The most lines a diff shows.
const MAX_LINES: usize = 400;
/// The largest change diffed line by line; a bigger one is shown as its new text (the model
/// writes these arguments, and a diff of two large unrelated texts takes long).
const MAX_DIFFED_BYTES: usize = 256 * 1024;
/// How long one diff may take before it settles for a coarser answer.
const DIFF_TIME: Duration = Duration::from_millis(200);

/// The lines of the change from `old` (none: the text is only added) to `new`.
pub(crate) fn lines(old: Option<&str>, new: &str) -> Value {
    let old = old.filter(|old| old.len() + new.len() <= MAX_DIFFED_BYTES);
    let mut lines: Vec<(char, String)> = match old {
        Some(old) => TextDiff::configure()
            .timeout(DIFF_TIME)
            .diff_lines(old, new)
            .iter_all_changes()
            .map(|change| {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                (
                    sign,
                    change.value().trim_end_matches(['\n', '\r']).to_owned(),
                )
            })
            .collect(),
        None => new.lines().map(|line| ('+', line.to_owned())).collect(),
    };
    let more = lines.len().saturating_sub(MAX_LINES);
    lines.truncate(MAX_LINES);
    json!({
        "lines": lines.iter().map(|(sign, text)| json!([sign.to_string(), text])).collect::<Vec<_>>(),
        "more": more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_is_lines_with_their_signs() {
        assert_eq!(
            lines(Some("a\nb\n"), "a\nc\n"),
            json!({"lines": [[" ", "a"], ["-", "b"], ["+", "c"]], "more": 0})
        );
        assert_eq!(
            lines(None, "x\ny"),
            json!({"lines": [["+", "x"], ["+", "y"]], "more": 0})
        );
        let long = "l\n".repeat(500);
        assert_eq!(lines(None, &long)["more"], 100);
    }
}
