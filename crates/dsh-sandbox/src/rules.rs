//! Command rules: allow, ask and deny, for `bash` by the first words of each command a line
//! runs ([`crate::command_line`]), for the file tools by a path pattern, and for any tool by
//! its name alone. A deny anywhere wins over an ask, and an ask over an allow, whichever file
//! each came from, so a layer that adds rules can narrow what another allows but never widen
//! what it denies. A line is allowed only when every command in it is; one that cannot be read
//! is asked about when a deny or ask rule could have named it.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::command_line::{self, SimpleCommand, Word};

/// What a rule says of the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleKind {
    Allow,
    Ask,
    Deny,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Allow => "allow",
            RuleKind::Ask => "ask",
            RuleKind::Deny => "deny",
        }
    }
}

/// The tool name a path rule may give to cover every tool that works on a file or folder.
pub const FILES_GROUP: &str = "files";

/// One rule as written: `bash(cargo test)`, `write(src/**)`, `web_fetch`.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pattern: Pattern,
}

#[derive(Debug, Clone)]
enum Pattern {
    /// Every call of the tool.
    Any,
    /// A command's first words (bash).
    Command(Vec<String>),
    /// A path glob, absolute or relative to the workspace, and whether it is absolute.
    Path(GlobMatcher, bool),
}

/// A rule that cannot be read; the message says what is wrong with it and how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("rule \"{0}\" is empty: write a tool's name, then what it covers in parentheses")]
    Empty(String),
    #[error(
        "rule \"{0}\" does not parse: write TOOL or TOOL(WHAT), e.g. bash(cargo test) or \
         write(src/**)"
    )]
    Shape(String),
    #[error(
        "rule \"{rule}\": {why}; a bash rule is the first words of one command, e.g. bash(git push)"
    )]
    Command { rule: String, why: String },
    #[error("rule \"{rule}\": {why}; a path rule is a glob, e.g. edit(src/**) or read(/etc/**)")]
    Path { rule: String, why: String },
}

impl std::str::FromStr for Rule {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Rule, RuleError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(RuleError::Empty(text.to_owned()));
        }
        let (tool, spec) = match trimmed.split_once('(') {
            None => (trimmed, None),
            Some((tool, rest)) => match rest.strip_suffix(')') {
                Some(spec) => (tool.trim(), Some(spec.trim())),
                None => return Err(RuleError::Shape(text.to_owned())),
            },
        };
        let named = !tool.is_empty()
            && tool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '*' || c == '-');
        if !named {
            return Err(RuleError::Shape(text.to_owned()));
        }
        let pattern = match spec {
            None => Pattern::Any,
            Some("") => return Err(RuleError::Shape(text.to_owned())),
            Some(spec) if tool == "bash" => command_pattern(text, spec)?,
            Some(spec) => path_pattern(text, spec)?,
        };
        Ok(Rule {
            text: trimmed.to_owned(),
            tool: tool.to_owned(),
            pattern,
        })
    }
}

fn command_pattern(rule: &str, spec: &str) -> Result<Pattern, RuleError> {
    let fail = |why: String| RuleError::Command {
        rule: rule.to_owned(),
        why,
    };
    // `npm run test:*` and `cargo test *`: a rule covers what follows its words anyway.
    let spec = spec
        .strip_suffix(":*")
        .or_else(|| spec.strip_suffix(" *"))
        .unwrap_or(spec)
        .trim();
    let commands = command_line::commands(spec).map_err(|e| fail(e.to_string()))?;
    let [command] = commands.as_slice() else {
        return Err(fail(format!(
            "it holds {} commands",
            if commands.is_empty() {
                "no".to_owned()
            } else {
                commands.len().to_string()
            }
        )));
    };
    if !command.wrappers.is_empty() || command.words.is_empty() {
        return Err(fail(
            "it starts with a wrapper (env, sudo, a shell's -c...), which rules look through"
                .into(),
        ));
    }
    if let Some(word) = command.words.iter().find(|w| w.dynamic) {
        return Err(fail(format!(
            "\"{}\" is an expansion or a pattern, and a rule's words are matched as written",
            word.text
        )));
    }
    Ok(Pattern::Command(
        command.words.iter().map(|w| w.text.clone()).collect(),
    ))
}

fn path_pattern(rule: &str, spec: &str) -> Result<Pattern, RuleError> {
    let fail = |why: String| RuleError::Path {
        rule: rule.to_owned(),
        why,
    };
    if spec.starts_with('~') {
        return Err(fail("`~` is not expanded: write the absolute path".into()));
    }
    let absolute = spec.starts_with('/');
    let spec = spec.strip_prefix("./").unwrap_or(spec);
    let spec = spec.trim_end_matches('/');
    // A name without a folder matches at any depth, as in a .gitignore.
    let glob = if absolute || spec.contains('/') {
        spec.to_owned()
    } else {
        format!("**/{spec}")
    };
    let matcher = GlobBuilder::new(&glob)
        .literal_separator(true)
        .build()
        .map_err(|e| fail(e.kind().to_string()))?
        .compile_matcher();
    Ok(Pattern::Path(matcher, absolute))
}

impl Rule {
    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The tool it names (`files` for every tool with a file or folder argument).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Whether it says what it covers in parentheses (a command or a path).
    pub fn has_pattern(&self) -> bool {
        !matches!(self.pattern, Pattern::Any)
    }
}

/// A rule with what it says and the file it came from.
#[derive(Debug, Clone)]
pub struct SourcedRule {
    pub kind: RuleKind,
    pub rule: Rule,
    pub source: PathBuf,
}

impl std::fmt::Display for SourcedRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rule \"{}\" (from {})",
            self.kind.as_str(),
            self.rule.text,
            self.source.display()
        )
    }
}

/// What a call gives the rules to look at.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// The command line of a tool that runs one.
    Command(&'a str),
    /// The file or folder a tool works on.
    Path(&'a str),
    /// Nothing: only the rules that name the tool alone apply.
    Nothing,
}

/// What the rules decide of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// It runs without Auto review (the sandbox still confines it): the rule as said.
    Allow(String),
    /// The user is asked first; the words say why.
    Ask(String),
    /// It does not run: the rule as said.
    Deny(String),
    /// No rule decides: Auto review, or the run's usual way, does.
    Undecided,
}

/// Every rule of a run, from every file.
#[derive(Debug, Clone, Default)]
pub struct CommandRules {
    rules: Vec<SourcedRule>,
}

/// How a command-rule matched a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fit {
    No,
    /// Its words are the command's first words.
    Exact,
    /// The command may be it: its program, with the rule's words among its own, or words
    /// only known when it runs.
    Maybe,
}

impl CommandRules {
    pub fn new(rules: Vec<SourcedRule>) -> Self {
        CommandRules { rules }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[SourcedRule] {
        &self.rules
    }

    /// What the rules say of a call of `tool` on `target`, in `cwd` of `workspace`.
    pub fn decide(&self, tool: &str, target: Target<'_>, cwd: &Path, workspace: &Path) -> Decision {
        let applies: Vec<&SourcedRule> = (self.rules.iter())
            .filter(|r| {
                r.rule.tool == tool
                    || (r.rule.tool == FILES_GROUP && matches!(target, Target::Path(_)))
            })
            .collect();
        if applies.is_empty() {
            return Decision::Undecided;
        }
        let mut verdicts: Vec<(RuleKind, String)> = Vec::new();
        for rule in applies
            .iter()
            .filter(|r| matches!(r.rule.pattern, Pattern::Any))
        {
            verdicts.push((rule.kind, rule.to_string()));
        }
        match target {
            Target::Command(line) => command_verdicts(&applies, line, &mut verdicts),
            Target::Path(path) => path_verdicts(&applies, path, cwd, workspace, &mut verdicts),
            Target::Nothing => {}
        }
        let strongest = verdicts.iter().map(|(kind, _)| *kind).max();
        let said = |kind: RuleKind| {
            (verdicts.iter())
                .find(|(k, _)| *k == kind)
                .map(|(_, why)| why.clone())
                .unwrap_or_default()
        };
        match strongest {
            Some(RuleKind::Deny) => Decision::Deny(said(RuleKind::Deny)),
            Some(RuleKind::Ask) => Decision::Ask(said(RuleKind::Ask)),
            Some(RuleKind::Allow) => Decision::Allow(said(RuleKind::Allow)),
            None => Decision::Undecided,
        }
    }
}

/// The verdicts of the command rules on each command of `line`. Allowed only when every
/// command is, by a rule whose words are its first words as written.
fn command_verdicts(rules: &[&SourcedRule], line: &str, verdicts: &mut Vec<(RuleKind, String)>) {
    let with_words = |kind: RuleKind| {
        (rules.iter())
            .filter(move |r| r.kind == kind)
            .filter_map(|r| match &r.rule.pattern {
                Pattern::Command(words) => Some((*r, words.as_slice())),
                _ => None,
            })
    };
    let guarded =
        with_words(RuleKind::Deny).next().is_some() || with_words(RuleKind::Ask).next().is_some();
    let commands = match command_line::commands(line) {
        Ok(commands) => commands,
        Err(error) => {
            if guarded {
                verdicts.push((
                    RuleKind::Ask,
                    format!("the command rules cannot read this command line ({error})"),
                ));
            }
            return;
        }
    };
    let mut allowed_by: Vec<String> = Vec::new();
    let mut every_one_allowed = !commands.is_empty();
    for command in &commands {
        if guarded && command.words.first().is_some_and(|w| w.dynamic) {
            verdicts.push((
                RuleKind::Ask,
                format!(
                    "the program \"{}\" is only known when the line runs, so the command rules \
                     cannot tell what it is",
                    command.words[0].text
                ),
            ));
        }
        if guarded && command.reads_input {
            verdicts.push((
                RuleKind::Ask,
                format!(
                    "\"{}\" runs the commands of its input, which the command rules cannot see",
                    command.words.first().map_or("", |w| w.text.as_str())
                ),
            ));
        }
        for kind in [RuleKind::Deny, RuleKind::Ask] {
            for (rule, words) in with_words(kind) {
                match guard_fit(words, command) {
                    Fit::Exact => verdicts.push((kind, rule.to_string())),
                    Fit::Maybe => {
                        verdicts.push((RuleKind::Ask, format!("it may be what the {rule} names")));
                    }
                    Fit::No => {}
                }
            }
        }
        // Every command is still looked at: a later one may be denied.
        match with_words(RuleKind::Allow).find(|(_, words)| allows(words, command)) {
            Some((rule, _)) => {
                let said = rule.to_string();
                if !allowed_by.contains(&said) {
                    allowed_by.push(said);
                }
            }
            None => every_one_allowed = false,
        }
    }
    if every_one_allowed {
        verdicts.push((RuleKind::Allow, allowed_by.join(", ")));
    }
}

/// Whether an allow rule's words are the command's first words, exactly as written (no
/// expansion among them, the program named as the rule names it), and no `sudo` around it
/// unless the rule is for that very wrapper.
fn allows(words: &[String], command: &SimpleCommand) -> bool {
    let exact = |candidate: &[Word]| {
        candidate.len() >= words.len()
            && (candidate.iter().zip(words)).all(|(have, want)| !have.dynamic && have.text == *want)
    };
    if command.privileged {
        return command.wrappers.first().is_some_and(|outer| exact(outer));
    }
    exact(&command.words)
}

/// How a deny or ask rule fits a command, or any wrapper's words around it.
fn guard_fit(words: &[String], command: &SimpleCommand) -> Fit {
    std::iter::once(&command.words)
        .chain(&command.wrappers)
        .map(|candidate| fit(words, candidate))
        .max_by_key(|fit| match fit {
            Fit::No => 0,
            Fit::Maybe => 1,
            Fit::Exact => 2,
        })
        .unwrap_or(Fit::No)
}

fn fit(words: &[String], candidate: &[Word]) -> Fit {
    let (Some(program), Some((want, rest))) = (candidate.first(), words.split_first()) else {
        return Fit::No;
    };
    if program.dynamic {
        return Fit::No; // asked about on its own
    }
    let name = if want.contains('/') {
        program.text.as_str()
    } else {
        command_line::base_name(&program.text)
    };
    if name != want {
        return Fit::No;
    }
    let args = &candidate[1..];
    let in_order = (args.iter())
        .zip(rest)
        .all(|(have, want)| !have.dynamic && have.text == *want);
    if in_order && args.len() >= rest.len() {
        return Fit::Exact;
    }
    // `git -C dir push` and `git $(echo push)` may be `git push`.
    if args.iter().any(|w| w.dynamic) {
        return Fit::Maybe;
    }
    let mut wanted = rest.iter().peekable();
    for arg in args {
        if wanted.peek().is_some_and(|w| **w == arg.text) {
            wanted.next();
        }
    }
    if wanted.peek().is_none() {
        Fit::Maybe
    } else {
        Fit::No
    }
}

/// The verdicts of the path rules on `raw`: a deny or ask matches the path as written or as
/// it resolves through links; an allow must match both.
fn path_verdicts(
    rules: &[&SourcedRule],
    raw: &str,
    cwd: &Path,
    workspace: &Path,
    verdicts: &mut Vec<(RuleKind, String)>,
) {
    let lexical = crate::classify::normalise(&cwd.join(raw));
    let real = crate::classify::real_path(&lexical);
    let workspace_real = crate::classify::real_path(workspace);
    for rule in rules {
        let Pattern::Path(glob, absolute) = &rule.rule.pattern else {
            continue;
        };
        let matches = |path: &Path, root: &Path| path_matches(glob, *absolute, path, root);
        let as_written = matches(&lexical, workspace);
        let resolved = matches(&real, &workspace_real);
        let hit = match rule.kind {
            RuleKind::Allow => as_written && resolved,
            _ => as_written || resolved,
        };
        if hit {
            verdicts.push((rule.kind, rule.to_string()));
        }
    }
}

/// Whether the glob matches `path` or a folder it is in: absolute globs the whole path,
/// relative ones the path inside `workspace`.
fn path_matches(glob: &GlobMatcher, absolute: bool, path: &Path, workspace: &Path) -> bool {
    let subject = if absolute {
        path
    } else {
        match path.strip_prefix(workspace) {
            Ok(inside) => inside,
            Err(_) => return false,
        }
    };
    subject
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .any(|p| glob.is_match(p))
}

#[cfg(test)]
mod tests;
