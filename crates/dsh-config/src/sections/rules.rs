//! `[rules]`: allow, ask and deny rules for tool calls (`bash(cargo test)`, `edit(src/**)`,
//! `web_fetch`). Every layer's lists add up, each rule kept with its file, and a deny wins over
//! an ask and an ask over an allow whatever file each came from, so a workspace's rules can
//! narrow yours but never lift a deny of yours; an untrusted workspace's allow rules are set
//! aside ([`crate::trust_rules`]). Each rule is read when its file is, so one that cannot be
//! read names the file and the line.

use std::sync::Arc;

use dsh_sandbox::rules::{CommandRules, FILES_GROUP, Rule, RuleKind, SourcedRule};
use serde::{Deserialize, Deserializer};

use crate::resolver::Resolver;
use crate::shown::Shown;
use crate::sourced::Source;

/// The tools with a file or folder argument, which a rule may give a path pattern.
pub const PATH_TOOLS: &[&str] = &[
    "edit",
    "glob",
    "grep",
    "read",
    "read_image",
    "str_replace_editor",
    "write",
];

/// What a file can say in `[rules]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RulesConfig {
    /// Calls that run without Auto review (still in the sandbox).
    #[serde(deserialize_with = "rule_list")]
    pub allow: Option<Vec<String>>,
    /// Calls the user is asked about first; refused when nobody can be asked.
    #[serde(deserialize_with = "rule_list")]
    pub ask: Option<Vec<String>>,
    /// Calls that never run; the model reads which rule refused them.
    #[serde(deserialize_with = "rule_list")]
    pub deny: Option<Vec<String>>,
}

/// A list of rules, each checked as it is read.
fn rule_list<'de, D>(deserializer: D) -> Result<Option<Vec<String>>, D::Error>
where
    D: Deserializer<'de>,
{
    let list = Vec::<String>::deserialize(deserializer)?;
    for text in &list {
        checked(text).map_err(serde::de::Error::custom)?;
    }
    Ok(Some(list))
}

/// A rule read and its tool checked against the tools dsh has.
fn checked(text: &str) -> Result<Rule, String> {
    let rule: Rule = text.parse().map_err(|e| format!("{e}"))?;
    let tool = rule.tool();
    let known =
        tool == FILES_GROUP || crate::BUILTIN_TOOLS.contains(&tool) || tool.starts_with("mcp__");
    if !known {
        return Err(format!(
            "rule \"{text}\" names \"{tool}\", which is no tool dsh has: use bash, files, a \
             built-in tool's name or mcp__<server>__<tool>"
        ));
    }
    if rule.has_pattern() && tool != "bash" && tool != FILES_GROUP && !PATH_TOOLS.contains(&tool) {
        return Err(format!(
            "rule \"{text}\": {tool} takes no pattern (only bash takes a command, and {} a \
             path); write \"{tool}\" alone to cover every call of it",
            PATH_TOOLS.join(", ")
        ));
    }
    Ok(rule)
}

/// The run's rules: every layer's lists, each rule with its file.
pub(crate) fn resolve(r: &mut Resolver<'_>) -> Arc<CommandRules> {
    let mut rules = Vec::new();
    for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
        let key = format!("rules.{}", kind.as_str());
        let found = r.layers().every_layer_list(&["rules", kind.as_str()]);
        let mut texts: Vec<String> = Vec::new();
        let mut sources: Vec<String> = Vec::new();
        for (text, path) in found {
            // Each was read when its file was; a rule that fails here was never in a file.
            if let Ok(rule) = checked(&text) {
                let shown = path.display().to_string();
                if !sources.contains(&shown) {
                    sources.push(shown);
                }
                texts.push(text);
                rules.push(SourcedRule {
                    kind,
                    rule,
                    source: path,
                });
            }
        }
        let source = if sources.is_empty() {
            Source::Default.to_string()
        } else {
            sources.join(", ")
        };
        r.record_text(&key, texts.shown(), source);
    }
    Arc::new(CommandRules::new(rules))
}

#[cfg(test)]
mod tests {
    use crate::{ConfigFiles, Environment};

    fn load(mine: &str, project: &str) -> Result<ConfigFiles, crate::ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let (home, ws) = (dir.path().join("home"), dir.path().join("ws"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(ws.join(".dsh")).unwrap();
        std::fs::write(home.join("config.toml"), mine).unwrap();
        std::fs::write(ws.join(".dsh/config.toml"), project).unwrap();
        ConfigFiles::load(&home, &ws, &Environment::default(), &[], false)
    }

    #[test]
    fn an_untrusted_workspace_may_narrow_but_not_allow() {
        let files = load(
            "[rules]\nallow = [\"bash(git status)\"]\n",
            "[rules]\nallow = [\"bash(curl)\"]\ndeny = [\"bash(git push)\"]\nask = [\"read\"]\n",
        )
        .unwrap();
        let aside: Vec<&str> = files.set_aside().iter().map(|s| s.key.as_str()).collect();
        assert_eq!(aside, ["rules.allow"]);
        let rules = &files.config().rules;
        assert_eq!(
            rules.deny.as_deref(),
            Some(&["bash(git push)".to_owned()][..])
        );
        assert_eq!(rules.ask.as_deref(), Some(&["read".to_owned()][..]));
        // The same allow rules as yours are no widening.
        let same = load(
            "[rules]\nallow = [\"bash(git status)\"]\n",
            "[rules]\nallow = [\"bash(git status)\"]\n",
        )
        .unwrap();
        assert!(same.set_aside().is_empty());
    }

    #[test]
    fn a_rule_that_cannot_be_read_names_the_file_and_the_line() {
        for (text, says) in [
            (
                "[rules]\ndeny = [\n  \"bash(git push)\",\n  \"bash(git push; rm)\",\n]\n",
                "holds 2 commands",
            ),
            (
                "[rules]\n\nallow = [\"bsh(cargo test)\"]\n",
                "no tool dsh has",
            ),
            (
                "[rules]\n\nask = [\"web_fetch(example.com)\"]\n",
                "takes no pattern",
            ),
            (
                "[rules]\n\ndeny = [\"write(src/[)\"]\n",
                "path rule is a glob",
            ),
            ("[rules]\n\nallowed = [\"bash\"]\n", "unknown field"),
        ] {
            let error = load(text, "").unwrap_err();
            let message = error.to_string();
            assert!(message.contains("config.toml"), "{message}");
            assert!(message.contains(says), "{text}: {message}");
            if says != "holds 2 commands" {
                assert!(message.contains("line 3"), "{message}");
            } else {
                assert!(
                    message.contains("line 2") || message.contains("line 4"),
                    "{message}"
                );
            }
        }
    }
}
