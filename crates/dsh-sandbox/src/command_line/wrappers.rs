//! Looking through what runs the rest of a command's words as another command: keywords
//! (`if`, `then`, `!`), assignments (`X=1`), wrappers (`env`, `command`, `nohup`, `timeout 5`,
//! `xargs`, `sudo`...), a shell's `-c` script, `eval`'s words and `find -exec`.

use super::words::{MAX_DEPTH, ParseError, SimpleCommand, Word};

/// How a script (`bash -c`, `eval`) is read: the line reader, handed in so that this module
/// and the reader do not depend on each other.
pub(super) type Parse = fn(&str, usize) -> Result<Vec<SimpleCommand>, ParseError>;

/// Reserved words that may stand before a command and are no command themselves.
const KEYWORDS: &[&str] = &[
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac",
    "coproc",
];

/// Words that start something that is no command (a loop's head, a `case`, a function's name):
/// the commands inside are read where they stand.
const NOT_COMMANDS: &[&str] = &["for", "select", "case", "function", "in"];

/// Wrappers that run their remaining words as a command, with their options that take a
/// value as the next word, and how many plain words of their own they take first.
struct Wrapper {
    name: &'static str,
    valued: &'static [&'static str],
    positional: usize,
    privileged: bool,
}

const WRAPPERS: &[Wrapper] = &[
    wrapper("command", &[], 0),
    wrapper("builtin", &[], 0),
    wrapper("exec", &["-a"], 0),
    wrapper("nohup", &[], 0),
    wrapper("setsid", &[], 0),
    wrapper("time", &[], 0),
    wrapper("nice", &["-n", "--adjustment"], 0),
    wrapper("timeout", &["-s", "--signal", "-k", "--kill-after"], 1),
    wrapper("stdbuf", &["-i", "-o", "-e"], 0),
    wrapper(
        "xargs",
        &[
            "-a",
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "--arg-file",
            "--delimiter",
        ],
        0,
    ),
    wrapper("env", &["-u", "--unset", "-C", "--chdir"], 0),
    // `busybox sh -c ...` runs its applet with the rest.
    wrapper("busybox", &[], 0),
    wrapper(
        "flock",
        &["-w", "--wait", "--timeout", "-E", "--conflict-exit-code"],
        1,
    ),
    wrapper("chroot", &[], 1),
    wrapper("unshare", &[], 0),
    wrapper(
        "nsenter",
        &["-t", "--target", "-S", "--setuid", "-G", "--setgid"],
        0,
    ),
    wrapper("ionice", &["-c", "--class", "-n", "--classdata"], 0),
    wrapper("chrt", &[], 1),
    wrapper("taskset", &[], 1),
    wrapper(
        "strace",
        &["-e", "-o", "-s", "-u", "-E", "-a", "-b", "-O", "-P", "-X"],
        0,
    ),
    wrapper(
        "ltrace",
        &["-e", "-o", "-s", "-u", "-a", "-n", "-D", "-F", "-x"],
        0,
    ),
    Wrapper {
        name: "sudo",
        valued: &["-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D", "-R"],
        positional: 0,
        privileged: true,
    },
    Wrapper {
        name: "doas",
        valued: &["-u", "-C"],
        positional: 0,
        privileged: true,
    },
];

const fn wrapper(
    name: &'static str,
    valued: &'static [&'static str],
    positional: usize,
) -> Wrapper {
    Wrapper {
        name,
        valued,
        positional,
        privileged: false,
    }
}

/// Shells whose `-c` takes a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// Files that are the shell's own input, for `source` and `.`.
const STDIN_FILES: &[&str] = &["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// Programs whose `-c` (or `--command`) word is a script a shell runs: `su -c 'git push'`.
const COMMAND_OPTION: &[&str] = &["su", "runuser", "script", "sg"];

/// The last part of a program's path: `/usr/bin/git` runs `git`.
pub(crate) fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Adds to `out` the command (or commands) that `words` runs.
pub(super) fn resolve(
    words: Vec<Word>,
    depth: usize,
    out: &mut Vec<SimpleCommand>,
    parse: Parse,
) -> Result<(), ParseError> {
    let mut found = SimpleCommand::default();
    let mut rest: &[Word] = &words;
    loop {
        while let Some(first) = rest.first()
            && !first.dynamic
            && (KEYWORDS.contains(&first.text.as_str()) || is_assignment(first))
        {
            rest = &rest[1..];
        }
        let Some(first) = rest.first() else {
            return Ok(());
        };
        if first.dynamic {
            break;
        }
        let program = base_name(&first.text);
        if first.text == "function" {
            // `function f { git push; }`: the body's commands follow the name.
            rest = rest.get(2..).unwrap_or_default();
            continue;
        }
        if NOT_COMMANDS.contains(&first.text.as_str()) {
            return Ok(());
        }
        if let Some(wrapper) = WRAPPERS.iter().find(|w| w.name == program) {
            if program == "command"
                && rest
                    .iter()
                    .skip(1)
                    .any(|w| w.text == "-v" || w.text == "-V")
            {
                // `command -v git` looks a program up and runs nothing.
                break;
            }
            if program == "env"
                && rest
                    .iter()
                    .any(|w| w.text.starts_with("-S") || w.text.starts_with("--split-string"))
            {
                return Err(ParseError::Unsupported("env -S"));
            }
            found.wrappers.push(rest.to_vec());
            found.privileged |= wrapper.privileged;
            rest = skip_options(&rest[1..], wrapper);
            continue;
        }
        if SHELLS.contains(&program) {
            if let Some(script) = shell_script(&rest[1..]) {
                return script_commands(script, depth, found, out, parse);
            }
            // `bash <<EOF`, `echo 'git push' | sh`: the script is the shell's input.
            found.reads_input = reads_input(&rest[1..]);
        } else if program == "eval" || program == "watch" {
            // `watch` joins its words and runs them with `sh -c`, as `eval` does.
            let words = if program == "watch" {
                skip_options(&rest[1..], &WATCH)
            } else {
                &rest[1..]
            };
            return joined_script(words, depth, found, out, parse);
        } else if program == "source" || program == "." {
            found.reads_input =
                (rest.get(1)).is_some_and(|w| STDIN_FILES.contains(&w.text.as_str()));
        } else if program == "find" {
            find_exec(rest, depth, &found, out, parse)?;
        } else if let Some(scripts) = later_scripts(program, &rest[1..]) {
            // `trap 'git push' EXIT`, `alias p='git push'`, `su -c 'git push'`: each is a
            // script that runs later or elsewhere; the command itself is judged too.
            for script in scripts {
                script_commands(&script, depth, found.clone(), out, parse)?;
            }
        }
        break;
    }
    found.words = rest.to_vec();
    out.push(found);
    Ok(())
}

/// `watch`'s options that take a value.
const WATCH: Wrapper = wrapper("watch", &["-n", "--interval", "-q", "--equexit"], 0);

/// The script `eval` or `watch` runs: its words joined.
fn joined_script(
    words: &[Word],
    depth: usize,
    found: SimpleCommand,
    out: &mut Vec<SimpleCommand>,
    parse: Parse,
) -> Result<(), ParseError> {
    if words.iter().any(|w| w.dynamic) {
        return Err(ParseError::Unsupported(
            "an eval of words only known when it runs",
        ));
    }
    let script: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    script_commands(&Word::plain(&script.join(" ")), depth, found, out, parse)
}

/// The scripts a command hands on to run later or elsewhere: `trap`'s action, each `alias`'s
/// value (run where the alias is used), the `-c` script of `su`, `runuser`, `script`, `sg`.
fn later_scripts(program: &str, args: &[Word]) -> Option<Vec<Word>> {
    let first = args.first()?;
    if program == "trap" && !first.text.starts_with('-') {
        return Some(vec![first.clone()]);
    }
    if program == "alias" {
        let values = (args.iter())
            .filter_map(|w| {
                let (_, value) = w.text.split_once('=')?;
                Some(Word {
                    text: value.to_owned(),
                    dynamic: w.dynamic,
                })
            })
            .collect();
        return Some(values);
    }
    if COMMAND_OPTION.contains(&program) {
        let mut scripts = Vec::new();
        for (at, word) in args.iter().enumerate() {
            if let Some(value) = word.text.strip_prefix("--command=") {
                scripts.push(Word {
                    text: value.to_owned(),
                    dynamic: word.dynamic,
                });
            } else if is_command_option(&word.text)
                && let Some(script) = args.get(at + 1)
            {
                scripts.push(script.clone());
            }
        }
        return Some(scripts);
    }
    None
}

/// `-c`, `--command`, or short options ending in it (`script -qc`, `su -lc`).
fn is_command_option(text: &str) -> bool {
    text == "--command" || (text.starts_with('-') && !text.starts_with("--") && text.ends_with('c'))
}

/// Whether a shell started with `args` (no `-c`) reads its commands from its input: no
/// script file named, or `-s`; `--version` and `--help` run nothing.
fn reads_input(args: &[Word]) -> bool {
    let texts = || args.iter().map(|w| w.text.as_str());
    if texts().any(|t| t == "--version" || t == "--help") {
        return false;
    }
    texts().any(|t| t == "-s") || texts().all(|t| t.starts_with('-') || t.starts_with('+'))
}

/// The words after a wrapper's options and its own plain words.
fn skip_options<'a>(mut rest: &'a [Word], wrapper: &Wrapper) -> &'a [Word] {
    let mut positional = wrapper.positional;
    while let Some(word) = rest.first() {
        let text = word.text.as_str();
        if text == "--" {
            // `timeout -- 5 git push`: the wrapper's own plain words still come first.
            rest = &rest[1..];
            rest = &rest[positional.min(rest.len())..];
            break;
        }
        if text.starts_with('-') && text.len() > 1 {
            let takes_value = wrapper.valued.contains(&text);
            rest = &rest[1..];
            if takes_value && !rest.is_empty() {
                rest = &rest[1..];
            }
            continue;
        }
        if wrapper.name == "env" && is_assignment(word) {
            rest = &rest[1..];
            continue;
        }
        if positional > 0 {
            positional -= 1;
            rest = &rest[1..];
            continue;
        }
        break;
    }
    rest
}

/// The script of a shell started with `-c` (`bash -c`, `sh -ec`, `bash -lc`), if it is.
fn shell_script(args: &[Word]) -> Option<&Word> {
    let mut args = args.iter();
    let mut has_c = false;
    for arg in args.by_ref() {
        let text = arg.text.as_str();
        if text.starts_with('-') && !text.starts_with("--") && text.len() > 1 {
            has_c |= text.contains('c');
            if has_c {
                break;
            }
            continue;
        }
        if text.starts_with("--") {
            continue;
        }
        return None;
    }
    if !has_c {
        return None;
    }
    // `bash -c -- 'git push'`: the script follows the end of the options.
    match args.next() {
        Some(end) if end.text == "--" => args.next(),
        script => script,
    }
}

/// The commands of a script a shell or `eval` runs, each inside the wrappers found so far.
fn script_commands(
    script: &Word,
    depth: usize,
    found: SimpleCommand,
    out: &mut Vec<SimpleCommand>,
    parse: Parse,
) -> Result<(), ParseError> {
    if script.dynamic {
        return Err(ParseError::Unsupported(
            "a script for a shell or eval that is only known when it runs",
        ));
    }
    if depth + 1 > MAX_DEPTH {
        return Err(ParseError::TooDeep);
    }
    for mut inner in parse(&script.text, depth + 1)? {
        let mut wrappers = found.wrappers.clone();
        wrappers.append(&mut inner.wrappers);
        inner.wrappers = wrappers;
        inner.privileged |= found.privileged;
        out.push(inner);
    }
    Ok(())
}

/// The commands `find -exec`, `-execdir`, `-ok` and `-okdir` run, up to their `;` or `+`.
fn find_exec(
    words: &[Word],
    depth: usize,
    found: &SimpleCommand,
    out: &mut Vec<SimpleCommand>,
    parse: Parse,
) -> Result<(), ParseError> {
    let mut rest = words;
    while let Some(at) = rest
        .iter()
        .position(|w| matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
    {
        let after = &rest[at + 1..];
        let end = after
            .iter()
            .position(|w| w.text == ";" || w.text == "+")
            .unwrap_or(after.len());
        let mut inner = Vec::new();
        resolve(after[..end].to_vec(), depth, &mut inner, parse)?;
        for mut command in inner {
            let mut wrappers = found.wrappers.clone();
            wrappers.push(words.to_vec());
            wrappers.append(&mut command.wrappers);
            command.wrappers = wrappers;
            command.privileged |= found.privileged;
            out.push(command);
        }
        rest = &after[end.min(after.len())..];
        if rest.is_empty() {
            break;
        }
        rest = &rest[1..];
    }
    Ok(())
}
