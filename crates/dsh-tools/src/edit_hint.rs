//! Where the text an `edit` looked for nearly is.
//!
//! A failed match is the most common edit failure of a model: usually indentation, letter case
//! or one changed line. The hint names the closest place and the first line that differs, so
//! the model can fix its `old_string` instead of re-reading the whole file.

/// Quoted lines are cut to this many characters.
const MAX_QUOTE_CHARS: usize = 120;

/// A one-sentence description of the closest candidate for `old` in `text` (both with LF
/// line ends).
pub(crate) fn closest(text: &str, old: &str) -> String {
    let file: Vec<&str> = text.split('\n').collect();
    let wanted: Vec<&str> = old.split('\n').collect();

    if let Some(line) = find_line(text, old, str::to_lowercase) {
        return format!(
            "line {line} matches it except for letter case: {}",
            quote(file.get(line - 1).copied().unwrap_or_default())
        );
    }
    if let Some(start) = find_lines(&file, &wanted, |s| {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }) {
        let differing = (0..wanted.len())
            .find(|&k| {
                !line_matches(file[start + k], wanted[k], k, wanted.len(), |s| {
                    s.to_owned()
                })
            })
            .unwrap_or(0);
        return format!(
            "line {} matches it except for whitespace (indentation or spacing); the file has {}, old_string has {}",
            start + 1,
            quote(file[start + differing]),
            quote(wanted[differing])
        );
    }
    if let Some((start, matched)) = longest_prefix(&file, &wanted) {
        let at = start + matched;
        let theirs = file
            .get(at)
            .map_or_else(|| "the end of the file".to_owned(), |l| quote(l));
        return format!(
            "its first {matched} line{} match line {} on, but line {} of the file is {theirs} where old_string has {}",
            if matched == 1 { "" } else { "s" },
            start + 1,
            at + 1,
            quote(wanted[matched])
        );
    }
    let first = wanted
        .iter()
        .find(|l| !l.trim().is_empty())
        .copied()
        .unwrap_or(wanted[0]);
    match most_similar(&file, first) {
        Some(line) => format!(
            "no line contains its first line {}; the most similar is line {}: {}",
            quote(first),
            line + 1,
            quote(file[line])
        ),
        None => format!(
            "no line of the file resembles its first line {}",
            quote(first)
        ),
    }
}

/// The 1-based line where `needle` starts in `text` once both are mapped by `fold`
/// (which must keep line breaks).
fn find_line(text: &str, needle: &str, fold: impl Fn(&str) -> String) -> Option<usize> {
    let (text, needle) = (fold(text), fold(needle));
    let at = text.find(&needle)?;
    Some(text[..at].matches('\n').count() + 1)
}

/// Where the lines of `wanted` occur in `file`, each compared after `fold`; the first and last
/// wanted lines may be the end and the start of a file line.
fn find_lines(file: &[&str], wanted: &[&str], fold: impl Fn(&str) -> String) -> Option<usize> {
    (0..file.len()).find(|&start| {
        start + wanted.len() <= file.len()
            && wanted
                .iter()
                .enumerate()
                .all(|(k, w)| line_matches(file[start + k], w, k, wanted.len(), &fold))
    })
}

fn line_matches(
    theirs: &str,
    wanted: &str,
    k: usize,
    count: usize,
    fold: impl Fn(&str) -> String,
) -> bool {
    let (theirs, wanted) = (fold(theirs), fold(wanted));
    match (k == 0, k + 1 == count) {
        (true, true) => theirs.contains(&wanted),
        (true, false) => theirs.ends_with(&wanted),
        (false, true) => theirs.starts_with(&wanted),
        (false, false) => theirs == wanted,
    }
}

/// The start (0-based) and length of the longest run of `wanted`'s first lines found exactly,
/// when `wanted` has more than one line.
fn longest_prefix(file: &[&str], wanted: &[&str]) -> Option<(usize, usize)> {
    if wanted.len() < 2 || wanted[0].trim().is_empty() {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    for start in 0..file.len() {
        let matched = (0..wanted.len() - 1)
            .take_while(|&k| {
                start + k < file.len()
                    && line_matches(file[start + k], wanted[k], k, wanted.len(), |s| {
                        s.to_owned()
                    })
            })
            .count();
        if matched > 0 && best.is_none_or(|(_, m)| matched > m) {
            best = Some((start, matched));
        }
    }
    best
}

/// The line sharing the most words with `line`, if it shares at least half of them.
fn most_similar(file: &[&str], line: &str) -> Option<usize> {
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let wanted = words(line);
    if wanted.is_empty() {
        return None;
    }
    let mut best: Option<(usize, usize)> = None;
    for (n, candidate) in file.iter().enumerate() {
        let theirs = words(candidate);
        let shared = wanted.iter().filter(|w| theirs.contains(w)).count();
        if shared * 2 >= wanted.len() && best.is_none_or(|(_, s)| shared > s) {
            best = Some((n, shared));
        }
    }
    best.map(|(n, _)| n)
}

fn quote(line: &str) -> String {
    let mut cut: String = line.chars().take(MAX_QUOTE_CHARS).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_case_difference() {
        assert_eq!(
            closest("alpha beta\ngamma\n", "Alpha"),
            "line 1 matches it except for letter case: \"alpha beta\""
        );
    }

    #[test]
    fn names_a_whitespace_difference_and_shows_both_lines() {
        let text = "fn main() {\n    let x = 1;\n    run(x);\n}\n";
        assert_eq!(
            closest(text, "fn main() {\n  let x = 1;"),
            "line 1 matches it except for whitespace (indentation or spacing); the file has \"    let x = 1;\", old_string has \"  let x = 1;\""
        );
        assert_eq!(
            closest("alpha beta\n", "alpha  beta"),
            "line 1 matches it except for whitespace (indentation or spacing); the file has \"alpha beta\", old_string has \"alpha  beta\""
        );
    }

    #[test]
    fn names_the_first_differing_line_of_a_block() {
        let text = "a\nfn f() {\n    one();\n    two();\n}\n";
        assert_eq!(
            closest(text, "fn f() {\n    one();\n    three();\n}"),
            "its first 2 lines match line 2 on, but line 4 of the file is \"    two();\" where old_string has \"    three();\""
        );
    }

    #[test]
    fn falls_back_to_the_most_similar_line_or_says_there_is_none() {
        assert_eq!(
            closest("let total = price * count;\n", "let total = price + tax;"),
            "no line contains its first line \"let total = price + tax;\"; the most similar is line 1: \"let total = price * count;\""
        );
        assert_eq!(
            closest("alpha beta\ngamma\n", "delta"),
            "no line of the file resembles its first line \"delta\""
        );
    }
}
