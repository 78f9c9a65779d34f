//! `dsh completions bash|zsh|fish`: completion scripts drawn from the description of the
//! command line: the first words, a run's options and each command's own, and the values of
//! the options whose values are a few words, files or folders.

use std::fmt::Write as _;

use super::commands::{COMMAND_WORDS, COMMANDS, RunOptions};
use super::flag::{Complete, Flag};
use super::run_flags::RUN_FLAGS;

/// A shell `dsh completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl Shell {
    pub fn parse(name: &str) -> Option<Shell> {
        match name {
            "bash" => Some(Shell::Bash),
            "zsh" => Some(Shell::Zsh),
            "fish" => Some(Shell::Fish),
            _ => None,
        }
    }
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    match shell {
        Shell::Bash => bash(),
        Shell::Zsh => zsh(),
        Shell::Fish => fish(),
    }
}

/// The commands with options of their own, each with what it offers after its word: its
/// own options, and a run's when it takes them.
fn command_options() -> Vec<(&'static str, Vec<&'static Flag>)> {
    let mut found: Vec<(&'static str, Vec<&'static Flag>)> = Vec::new();
    for cmd in COMMANDS.iter().filter(|c| !c.word.is_empty()) {
        let at = match found.iter().position(|(word, _)| *word == cmd.word) {
            Some(at) => at,
            None => {
                found.push((cmd.word, Vec::new()));
                found.len() - 1
            }
        };
        let options = &mut found[at].1;
        let run: &'static [Flag] = if cmd.run_options == RunOptions::None {
            &[]
        } else {
            RUN_FLAGS
        };
        for opt in cmd.flags.iter().chain(run) {
            if !options.iter().any(|o| o.long == opt.long) {
                options.push(opt);
            }
        }
    }
    found.retain(|(_, options)| !options.is_empty());
    found
}

/// Every option the scripts know, each long name once: a run's, then the commands' own.
fn every_option() -> Vec<&'static Flag> {
    let mut all: Vec<&'static Flag> = RUN_FLAGS.iter().collect();
    for opt in COMMANDS.iter().flat_map(|cmd| cmd.flags) {
        if !all.iter().any(|o| o.long == opt.long) {
            all.push(opt);
        }
    }
    all
}

fn names(options: &[&Flag]) -> String {
    let mut names: Vec<String> = Vec::new();
    for opt in options {
        names.extend(opt.short.map(|s| format!("-{s}")));
        names.push(opt.long.to_owned());
    }
    names.join(" ")
}

fn bash() -> String {
    let mut cases = String::new();
    for opt in every_option() {
        let pattern = match opt.short {
            Some(s) => format!("-{s}|{}", opt.long),
            None => opt.long.to_owned(),
        };
        let action = match opt.complete {
            Complete::Nothing if opt.value.is_some() => "return 0".to_owned(),
            Complete::Nothing => continue,
            // One name a line, kept whole (spaces and all), and marked as file names.
            Complete::File | Complete::Dir => format!(
                "compopt -o filenames 2>/dev/null; \
                 mapfile -t COMPREPLY < <(compgen {} -- \"$cur\"); return 0",
                if opt.complete == Complete::Dir {
                    "-d"
                } else {
                    "-f"
                }
            ),
            Complete::Words(words) => format!(
                "COMPREPLY=($(compgen -W '{}' -- \"$cur\")); return 0",
                words.join(" ")
            ),
        };
        let _ = writeln!(cases, "        {pattern}) {action} ;;");
    }
    let mut commands = String::new();
    for (word, options) in command_options() {
        let _ = writeln!(
            commands,
            "            {word}) options='{}' ;;",
            names(&options)
        );
    }
    let run: Vec<&Flag> = RUN_FLAGS.iter().collect();
    format!(
        "# bash completion for dsh (dsh completions bash)\n\
         _dsh() {{\n\
         \x20   local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n\
         \x20   case \"$prev\" in\n\
         {cases}\
         \x20   esac\n\
         \x20   if [[ \"$cur\" == -* ]]; then\n\
         \x20       local options='{run}'\n\
         \x20       if [[ $COMP_CWORD -gt 1 ]]; then\n\
         \x20           case \"${{COMP_WORDS[1]}}\" in\n\
         {commands}\
         \x20           esac\n\
         \x20       fi\n\
         \x20       COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n\
         \x20   elif [[ $COMP_CWORD -eq 1 ]]; then\n\
         \x20       COMPREPLY=($(compgen -W '{words}' -- \"$cur\"))\n\
         \x20   fi\n\
         }}\n\
         complete -o default -F _dsh dsh\n",
        run = names(&run),
        words = COMMAND_WORDS.join(" "),
    )
}

/// Text inside a single-quoted zsh word.
fn zsh_quote(text: &str) -> String {
    text.replace('\'', "'\\''")
        .replace('[', "\\[")
        .replace(']', "\\]")
}

/// The `_arguments` specs of `options`, a line each.
fn zsh_specs(options: &[&Flag], indent: &str) -> String {
    let mut specs = String::new();
    for opt in options {
        let about = zsh_quote(&short_about(opt.about));
        let value = match (opt.value, opt.complete) {
            (None, _) => String::new(),
            (Some(v), Complete::File) => format!(":{}:_files", zsh_quote(v)),
            (Some(v), Complete::Dir) => format!(":{}:_files -/", zsh_quote(v)),
            (Some(v), Complete::Words(words)) => {
                format!(":{}:({})", zsh_quote(v), words.join(" "))
            }
            (Some(v), Complete::Nothing) => format!(":{}: ", zsh_quote(v)),
        };
        let names = match opt.short {
            Some(s) => format!("'(-{s} {long})'{{-{s},{long}}}", long = opt.long),
            None => opt.long.to_owned(),
        };
        let _ = writeln!(specs, "{indent}{names}'[{about}]{value}' \\");
    }
    specs
}

fn zsh() -> String {
    let mut commands = String::new();
    for (word, options) in command_options() {
        let _ = write!(
            commands,
            "      ({word})\n\
             \x20       shift words; (( CURRENT-- ))\n\
             \x20       _arguments -s \\\n\
             {}\
             \x20         '*:argument:_default'\n\
             \x20       return ;;\n",
            zsh_specs(&options, "          ")
        );
    }
    let run: Vec<&Flag> = RUN_FLAGS.iter().collect();
    format!(
        "#compdef dsh\n# zsh completion for dsh (dsh completions zsh)\n\n\
         _dsh() {{\n\
         \x20 if (( CURRENT > 2 )); then\n\
         \x20   case $words[2] in\n\
         {commands}\
         \x20   esac\n\
         \x20 fi\n\
         \x20 _arguments -s \\\n\
         {specs}\
         \x20   '1:command or task:({words})' \\\n\
         \x20   '*:task:_default'\n\
         }}\n\n\
         _dsh \"$@\"\n",
        specs = zsh_specs(&run, "    "),
        words = COMMAND_WORDS.join(" "),
    )
}

/// A `complete` line for `opt`, offered where `condition` holds.
fn fish_line(opt: &Flag, condition: Option<&str>) -> String {
    let quote = |text: &str| text.replace('\\', "\\\\").replace('\'', "\\'");
    let mut line = String::from("complete -c dsh");
    if let Some(condition) = condition {
        let _ = write!(line, " -n '{condition}'");
    }
    let _ = write!(line, " -l {}", &opt.long[2..]);
    if let Some(s) = opt.short {
        let _ = write!(line, " -s {s}");
    }
    match (opt.value, opt.complete) {
        (None, _) => {}
        (Some(_), Complete::Words(words)) => {
            let _ = write!(line, " -x -a '{}'", words.join(" "));
        }
        (Some(_), Complete::Dir) => line.push_str(" -x -a '(__fish_complete_directories)'"),
        (Some(_), Complete::File) => line.push_str(" -r -F"),
        (Some(_), Complete::Nothing) => line.push_str(" -x"),
    }
    let _ = write!(line, " -d '{}'", quote(&short_about(opt.about)));
    line
}

fn fish() -> String {
    let mut out = String::from("# fish completion for dsh (dsh completions fish)\n");
    let _ = writeln!(
        out,
        "complete -c dsh -n '__fish_use_subcommand' -f -a '{}'",
        COMMAND_WORDS.join(" ")
    );
    for opt in RUN_FLAGS {
        let _ = writeln!(out, "{}", fish_line(opt, None));
    }
    for (word, options) in command_options() {
        let condition = format!("__fish_seen_subcommand_from {word}");
        for opt in options
            .iter()
            .filter(|o| !RUN_FLAGS.iter().any(|r| r.long == o.long))
        {
            let _ = writeln!(out, "{}", fish_line(opt, Some(&condition)));
        }
    }
    out
}

/// An option's description as a completion menu shows it: up to its first clause, with any
/// parenthesis it opened closed.
fn short_about(about: &str) -> String {
    let cut = about
        .find("; ")
        .or_else(|| about.find(": "))
        .unwrap_or(about.len());
    let mut short = about[..cut].to_owned();
    if short.matches('(').count() > short.matches(')').count() {
        short.push(')');
    }
    short
}
