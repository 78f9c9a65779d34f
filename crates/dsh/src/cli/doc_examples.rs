//! Every `dsh` command line the README and `docs/*.md` show must get past the command line's
//! parser: a reader copies them as they are, and an option the parser refuses (a value it
//! does not take, a flag that went away) means the documented set-up does not start.
//!
//! Found: lines of shell code blocks whose command is `dsh` (or `cargo run -p dsh -- ...`),
//! inline code that starts with `dsh ` or with one of dsh's options, and the `args` arrays
//! of client configurations that start dsh (`"command": "dsh"`, or an inline `"args"` array
//! that starts with `acp` or `mcp-server`). Syntax placeholders are read as a reader would
//! fill them in: `[optional parts]` are left out, `<placeholder>` values get a sample, and an
//! example cut short with `...` is skipped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::run_flags::takes_value;
use super::{Terminals, parse};

/// One command line a document shows.
#[derive(Debug)]
struct Example {
    file: String,
    line: usize,
    args: Vec<String>,
}

/// What a reader puts for `<placeholder>` after these options (the others take any text).
const SAMPLES: &[(&str, &str)] = &[
    ("--max-steps", "3"),
    ("--max-turns", "3"),
    ("--max-budget-usd", "0.50"),
    ("--timeout", "90s"),
    ("--effort", "high"),
    ("--preset", "minimal"),
    ("--permission-mode", "read-only"),
    ("--approval-policy", "ask"),
    ("--input-format", "text"),
    ("--profile", "headless"),
    ("--to", "2"),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn documents() -> Vec<(String, String)> {
    let root = repo_root();
    let mut names = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root.join(&name)).unwrap();
            (name, text)
        })
        .collect()
}

/// Shell words, with quotes and backslashes undone; `|`, `;`, `&`, `{` and `}` outside
/// quotes are words of their own, and a `#` that starts a word ends the line.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            '|' | ';' | '&' | '{' | '}' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                words.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The arguments of each `dsh` command in a line of shell.
fn dsh_commands(line: &str) -> Vec<Vec<String>> {
    let words = shell_words(line);
    words
        .split(|w| ["|", ";", "&", "{", "}"].contains(&w.as_str()))
        .filter_map(|command| {
            let command: Vec<&String> = command
                .iter()
                .skip_while(|w| w.split_once('=').is_some_and(|(name, _)| is_var(name)))
                .collect();
            let args = match command.split_first() {
                Some((program, args)) if program.as_str() == "dsh" => args.to_vec(),
                Some((program, args)) if program.as_str() == "cargo" => {
                    let runs_dsh = args.windows(2).any(|w| w[0] == "-p" && w[1] == "dsh");
                    let dashes = args.iter().position(|w| *w == "--")?;
                    if !runs_dsh || args.first().is_none_or(|w| *w != "run") {
                        return None;
                    }
                    args[dashes + 1..].to_vec()
                }
                _ => return None,
            };
            let args: Vec<String> = args
                .into_iter()
                .take_while(|w| is_placeholder(w) || !is_redirection(w))
                .cloned()
                .collect();
            filled_in(args)
        })
        .collect()
}

fn is_redirection(word: &str) -> bool {
    word.starts_with(['<', '>']) || word.starts_with("2>")
}

/// `<id>`, `<provider>/<model>`: a value to fill in, not a redirection.
fn is_placeholder(word: &str) -> bool {
    word.len() > 2 && word.starts_with('<') && word.ends_with('>')
}

fn is_var(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

/// Arguments as a reader would type them: `[optional parts]` left out, `<placeholder>`
/// values given a sample; `None` for an example cut short with `...`.
fn filled_in(args: Vec<String>) -> Option<Vec<String>> {
    let mut filled: Vec<String> = Vec::new();
    let mut optional = false;
    for arg in args {
        if arg.starts_with('[') || optional {
            optional = !arg.contains(']');
            continue;
        }
        if arg == "..." {
            return None;
        }
        let sample = filled
            .last()
            .and_then(|option| SAMPLES.iter().find(|(name, _)| name == option));
        match sample {
            Some((_, sample)) if is_placeholder(&arg) => filled.push((*sample).to_owned()),
            _ => filled.push(arg),
        }
    }
    Some(filled)
}

/// The strings of the first `args` array in `text` (JSON `"args": [...]` or TOML
/// `args = [...]`).
fn args_array(text: &str) -> Option<Vec<String>> {
    let at = text.find("\"args\"").or_else(|| text.find("args ="))?;
    let rest = &text[at..];
    let open = rest.find('[')?;
    let close = rest.find(']')?;
    serde_json::from_str(&rest[open..=close]).ok()
}

/// Markdown's inline code: a run of backticks up to the next run of as many; each span's
/// offset and text.
fn code_spans(text: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find('`').map(|i| at + i) {
        let ticks = text[open..].len() - text[open..].trim_start_matches('`').len();
        let body = open + ticks;
        let mut search = body;
        let close = loop {
            let Some(next) = text[search..].find('`').map(|i| search + i) else {
                break None;
            };
            let run = text[next..].len() - text[next..].trim_start_matches('`').len();
            if run == ticks {
                break Some(next);
            }
            search = next + run;
        };
        let Some(close) = close else {
            at = body;
            continue;
        };
        spans.push((body, &text[body..close]));
        at = close + ticks;
    }
    spans
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].matches('\n').count() + 1
}

/// Every `dsh` command line a document shows.
fn examples_in(file: &str, text: &str) -> Vec<Example> {
    let mut found = Vec::new();
    let mut push = |line: usize, args: Vec<String>| {
        found.push(Example {
            file: file.to_owned(),
            line,
            args,
        });
    };
    // Prose with the code blocks blanked out (newlines kept, so offsets give line numbers).
    let mut prose = String::with_capacity(text.len());
    // An open code block: its fence, language, fence line and where its body starts.
    let mut fence: Option<(String, String, usize, usize)> = None;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let trimmed = line.trim_start();
        let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
        match &mut fence {
            None if ticks >= 3 => {
                let lang = trimmed[ticks..].trim().to_owned();
                fence = Some(("`".repeat(ticks), lang, number, offset + line.len()));
                prose.push('\n');
            }
            None => prose.push_str(line),
            Some((marker, lang, start, body_start)) => {
                prose.push('\n');
                if trimmed.trim_end() == marker.as_str() {
                    block_examples(lang, &text[*body_start..offset], *start, &mut push);
                    fence = None;
                }
            }
        }
        offset += line.len();
    }
    // Inline code: `dsh ...`, `--option value`, and inline `"args": [...]` arrays.
    for (start, span) in code_spans(&prose) {
        let span = span.replace('\n', " ");
        let line = line_of(&prose, start);
        if span.starts_with("dsh ") {
            // `dsh --session-id` in prose names the option, not a command line.
            for args in dsh_commands(&span) {
                if !args.last().is_some_and(|a| takes_value(a)) {
                    push(line, args);
                }
            }
        } else if span.contains("\"args\"") {
            if let Some(args) = args_array(&span)
                && args
                    .first()
                    .is_some_and(|a| a == "acp" || a == "mcp-server")
            {
                push(line, args);
            }
        } else if span.starts_with('-') {
            let words = shell_words(&span);
            let option = words.first().map(String::as_str).unwrap_or_default();
            let name = option.split_once('=').map_or(option, |(name, _)| name);
            let known = super::flag::find(super::run_flags::RUN_FLAGS, name).is_some();
            // `--dump-config` prints text, and refuses `--json`.
            let json = (name != "--dump-config").then(|| "--json".to_owned());
            let lacks_value = takes_value(option) && words.len() < 2;
            // The option alone, in a run that reads its task from stdin, so that what it
            // asks of other options (stream-json of --json) is met.
            if known
                && !lacks_value
                && let Some(args) = filled_in(words)
            {
                push(line, json.into_iter().chain(args).collect());
            }
        }
    }
    found
}

fn block_examples(
    lang: &str,
    body: &str,
    fence_line: usize,
    push: &mut impl FnMut(usize, Vec<String>),
) {
    if ["", "sh", "bash", "shell", "console"].contains(&lang) {
        // Lines continued with a backslash are one command.
        let mut logical = String::new();
        let mut first = 0;
        for (index, line) in body.lines().enumerate() {
            if logical.is_empty() {
                first = fence_line + 1 + index;
            }
            match line.strip_suffix('\\') {
                Some(head) => logical.push_str(head),
                None => {
                    logical.push_str(line);
                    for args in dsh_commands(&logical) {
                        push(first, args);
                    }
                    logical.clear();
                }
            }
        }
    }
    let starts_dsh = body.contains("\"command\": \"dsh\"") || body.contains("command = \"dsh\"");
    if starts_dsh && let Some(args) = args_array(body) {
        push(fence_line, args);
    }
}

fn all_examples() -> Vec<Example> {
    documents()
        .iter()
        .flat_map(|(file, text)| examples_in(file, text))
        .collect()
}

#[test]
fn every_documented_command_line_is_accepted() {
    let examples = all_examples();
    let refused: Vec<String> = examples
        .iter()
        .filter_map(|example| {
            let args = example.args.iter().map(OsString::from).collect();
            let error = parse(args, Terminals::default()).err()?;
            Some(format!(
                "{}:{}: dsh {}: {}",
                example.file,
                example.line,
                example.args.join(" "),
                error.message
            ))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "documented command lines the parser refuses:\n{}",
        refused.join("\n")
    );
    // The extraction finds what it is for: the editors' set-ups, the client configurations,
    // the shell examples and the options named in prose.
    let shown = |file: &str, word: &str| {
        examples
            .iter()
            .any(|e| e.file == file && e.args.iter().any(|a| a == word))
    };
    assert!(shown("docs/acp.md", "acp"), "{examples:#?}");
    assert!(shown("docs/mcp-server.md", "mcp-server"), "{examples:#?}");
    assert!(shown("docs/sessions.md", "--session-id"), "{examples:#?}");
    assert!(shown("README.md", "explain what this repository does"));
    assert!(shown("docs/cli.md", "--approval-policy"), "{examples:#?}");
    assert!(
        examples.len() > 50,
        "only {} examples found",
        examples.len()
    );
}

#[test]
fn the_extraction_reads_what_a_reader_would_type() {
    let doc = "\
Options after `acp`: `\"args\": [\"acp\", \"--approval-policy\",
\"on-request\"]`, or `--max-turns <n>`; `dsh sessions ...` and `--tools`.

```sh
DEEPSEEK_API_KEY=sk-... dsh --json \\
  --timeout 10m \"a task\" > run.jsonl   # a comment
{ echo hi; } | dsh --dump-config [--patch FILE]...
```

```json
{ \"command\": \"dsh\", \"args\": [\"mcp-server\"] }
```
";
    let found: Vec<(usize, Vec<String>)> = examples_in("doc.md", doc)
        .into_iter()
        .map(|e| (e.line, e.args))
        .collect();
    let strings = |args: &[&str]| args.iter().map(|&a| a.to_owned()).collect::<Vec<_>>();
    assert_eq!(
        found,
        vec![
            (5, strings(&["--json", "--timeout", "10m", "a task"])),
            (7, strings(&["--dump-config"])),
            (10, strings(&["mcp-server"])),
            (1, strings(&["acp", "--approval-policy", "on-request"])),
            (2, strings(&["--json", "--max-turns", "3"])),
        ]
    );
    let refused = found
        .iter()
        .filter(|(_, args)| {
            let args = args.iter().map(OsString::from).collect();
            parse(args, Terminals::default()).is_err()
        })
        .count();
    assert_eq!(refused, 1, "on-request is refused");
}

#[test]
fn the_tool_lists_section_names_every_built_in_tool() {
    let config = std::fs::read_to_string(repo_root().join("docs/config.md")).unwrap();
    let (_, section) = config.split_once("## Tool lists").unwrap();
    let section = section.split("\n## ").next().unwrap_or_default();
    let missing: Vec<&&str> = dsh_core::config::BUILTIN_TOOLS
        .iter()
        .filter(|name| !section.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/config.md#tool-lists does not name {missing:?}"
    );
}
