//! Every `docs/<file>.md#<anchor>` that dsh's messages name, and every link between the docs,
//! leads to a heading that is there: an error that points a person at a section must not point
//! at nothing.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A heading's anchor as GitHub makes it: lower case, spaces to hyphens, other punctuation
/// dropped.
fn slug(heading: &str) -> String {
    (heading.trim().to_lowercase().chars())
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(doc: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join(doc)).unwrap_or_default();
    (text.lines())
        .filter(|line| line.starts_with('#'))
        .map(|line| slug(line.trim_start_matches('#')))
        .collect()
}

/// `(file, anchor)` for each `docs/<file>.md#<anchor>` in `text`.
fn named_sections(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("docs/") {
        let rest = &text[at + 5..];
        let Some((file, after)) = rest.split_once(".md#") else {
            continue;
        };
        if !file
            .chars()
            .all(|c| c.is_ascii_lowercase() || c == '-' || c == '_')
        {
            continue;
        }
        let anchor: String = (after.chars())
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        found.push((format!("docs/{file}.md"), anchor));
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_section_a_message_or_a_document_names_is_there() {
    let mut broken = Vec::new();
    let mut sources = Vec::new();
    rust_files(&repo().join("crates"), &mut sources);
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap();
        for (doc, anchor) in named_sections(&text) {
            if !anchors(&doc).contains(&anchor) {
                broken.push(format!("{}: {doc}#{anchor}", path.display()));
            }
        }
    }
    let mut docs: Vec<String> = (std::fs::read_dir(repo().join("docs")).unwrap().flatten())
        .map(|e| format!("docs/{}", e.file_name().to_string_lossy()))
        .filter(|name| name.ends_with(".md"))
        .collect();
    docs.push("README.md".into());
    for doc in &docs {
        let text = std::fs::read_to_string(repo().join(doc)).unwrap();
        for (at, _) in text.match_indices("](") {
            let target = &text[at + 2..];
            let Some(end) = target.find(')') else {
                continue;
            };
            let Some((file, anchor)) = target[..end].split_once('#') else {
                continue;
            };
            if file.contains("://") || !(file.is_empty() || file.ends_with(".md")) {
                continue;
            }
            let file = match file {
                "" => doc.clone(),
                file if doc.starts_with("docs/") => {
                    format!("docs/{}", file.trim_start_matches("docs/"))
                }
                file => file.to_owned(),
            };
            if !anchors(&file).contains(&anchor.to_owned()) {
                broken.push(format!("{doc}: {file}#{anchor}"));
            }
        }
    }
    assert!(sources.len() > 100, "the sources were not found");
    assert!(broken.is_empty(), "links to no heading: {broken:#?}");
}

/// The names product code joins onto the home: `home.join("sessions")`,
/// `settings.home().value.join("attachments")` (the expression before `.join` names it).
fn home_entries(source: &str) -> Vec<String> {
    let product = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut names = Vec::new();
    // The user's own home (`user_home`, whose `.dsh` is the default) is not dsh's.
    let lines =
        (product.lines()).filter(|l| !l.trim_start().starts_with("//") && !l.contains("user_home"));
    for line in lines {
        for (at, _) in line.match_indices(".join(\"") {
            let before = &line[..at];
            let expression = before
                .rsplit(|c: char| c.is_whitespace() || c == '(' || c == ',' || c == '&')
                .next()
                .unwrap_or_default();
            if expression.contains("home") && !expression.contains("user_home") {
                let rest = &line[at + 7..];
                if let Some((name, _)) = rest.split_once('"') {
                    names.push(name.to_owned());
                }
            }
        }
    }
    names
}

/// `$DSH_HOME` is described as everything it holds: each name dsh puts in it is in the table
/// of docs/config.md's section on it.
#[test]
fn the_home_is_described_as_everything_it_holds() {
    let config = std::fs::read_to_string(repo().join("docs/config.md")).unwrap();
    let (_, section) = config.split_once("## The home: `$DSH_HOME`").unwrap();
    let (section, _) = section.split_once("\n## ").unwrap();
    let mut sources = Vec::new();
    for krate in std::fs::read_dir(repo().join("crates")).unwrap().flatten() {
        if krate.path().join("src").is_dir() {
            rust_files(&krate.path().join("src"), &mut sources);
        }
    }
    let mut names: Vec<String> = (sources.iter())
        .flat_map(|path| home_entries(&std::fs::read_to_string(path).unwrap()))
        .collect();
    names.sort();
    names.dedup();
    for expected in [
        "sessions",
        "credentials",
        "mcp-auth",
        "checkpoints",
        "attachments",
    ] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    let missing: Vec<&String> = (names.iter())
        .filter(|name| {
            !section.contains(&format!("`{name}`")) && !section.contains(&format!("`{name}/"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "$DSH_HOME holds {missing:?}, which docs/config.md does not say"
    );
}
