//! Skills: folders of task-specific instructions (`<root>/<name>/SKILL.md`, or
//! `<root>/<name>.md`) with a front matter naming them and saying when they apply. The catalog
//! (names and descriptions) goes in the system prompt; the `skill` tool returns a skill's body
//! and the folder its relative paths resolve against.

use std::path::{Path, PathBuf};

use crate::schema::{Param, ParamType, Parameters};
use crate::{Arguments, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};

/// Descriptions in the catalog are cut to this many characters.
const DESCRIPTION_MAX: usize = 500;

/// One skill found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The folder the skill's relative paths resolve against.
    pub dir: PathBuf,
    /// The file holding it.
    pub file: PathBuf,
    /// Whether the model may load it (`disable-model-invocation: true` hides it).
    pub model_invocable: bool,
}

/// The skills under `roots`, in root order; the first skill of a name wins.
pub fn discover(roots: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut found: Vec<Skill> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let path = entry.path();
                if path.is_dir() {
                    load(&path.join("SKILL.md"), &path)
                } else if path.extension().is_some_and(|e| e == "md") {
                    load(&path, root)
                } else {
                    None
                }
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        for skill in found {
            if !skills.iter().any(|s| s.name == skill.name) {
                skills.push(skill);
            }
        }
    }
    skills
}

fn load(file: &Path, dir: &Path) -> Option<Skill> {
    let text = std::fs::read_to_string(file).ok()?;
    let (front, _) = split_front_matter(&text)?;
    let field = |key: &str| {
        front.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| unquote(v.trim()).to_owned())
        })
    };
    let name = field("name")?;
    let kebab = !name.is_empty()
        && name.split('-').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !kebab {
        return None;
    }
    let description = field("description").filter(|d| !d.trim().is_empty())?;
    let hidden = match field("disable-model-invocation").as_deref() {
        None => false,
        Some("true" | "yes" | "on" | "1") => true,
        Some("false" | "no" | "off" | "0") => false,
        // An unreadable switch drops the skill rather than guess.
        Some(_) => return None,
    };
    Some(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        file: file.to_path_buf(),
        model_invocable: !hidden,
    })
}

fn unquote(value: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = value.strip_prefix(q).and_then(|v| v.strip_suffix(q)) {
            return inner;
        }
    }
    value
}

/// `(front matter, body)` of a file that starts with a `---` block.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---")?;
    let rest = rest
        .strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))?;
    let end = rest.find("\n---")?;
    let front = &rest[..end];
    let body = rest[end + 4..].trim_start_matches(['-']);
    let body = body
        .strip_prefix("\r\n")
        .or_else(|| body.strip_prefix('\n'))
        .unwrap_or(body);
    Some((front, body))
}

/// The catalog for the system prompt, or `None` when no skill may be loaded by the model.
pub fn catalog(skills: &[Skill]) -> Option<String> {
    let listed: Vec<&Skill> = skills.iter().filter(|s| s.model_invocable).collect();
    if listed.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Skills: task-specific instructions you can load with the `skill` tool. Available:\n\
         <available_skills>\n",
    );
    for skill in listed {
        let collapsed = skill
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let short = if collapsed.chars().count() > DESCRIPTION_MAX {
            format!(
                "{}...",
                collapsed.chars().take(DESCRIPTION_MAX).collect::<String>()
            )
        } else {
            collapsed
        };
        let escaped = short
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        text.push_str(&format!("- `{}`: {escaped}\n", skill.name));
    }
    text.push_str(
        "</available_skills>\n\
         When the user names a skill, or the task plainly matches one's description, load it \
         with the `skill` tool before acting, then follow it. The list holds summaries only: do \
         not act on a skill you have not loaded.",
    );
    Some(text)
}

/// The `skill` tool.
pub struct SkillTool {
    skills: Vec<Skill>,
    parameters: Parameters,
}

impl SkillTool {
    pub fn new(skills: Vec<Skill>) -> Self {
        SkillTool {
            skills,
            parameters: Parameters::new(vec![Param::required(
                "name",
                ParamType::String,
                "The skill's name, exactly as the catalog lists it.",
            )]),
        }
    }
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        "skill"
    }

    fn description(&self) -> &str {
        "Load a skill from the catalog in the system prompt: its instructions, and the folder \
         its relative paths resolve against."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
    }

    /// It reads a skill.
    fn plan_safe(&self, _args: &Arguments) -> bool {
        true
    }

    fn call<'a>(&'a self, args: Arguments, _ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let name = args.str("name").unwrap_or_default().trim().to_owned();
            let Some(skill) = self
                .skills
                .iter()
                .find(|s| s.name == name && s.model_invocable)
            else {
                let known: Vec<&str> = self
                    .skills
                    .iter()
                    .filter(|s| s.model_invocable)
                    .map(|s| s.name.as_str())
                    .collect();
                return Err(ToolError::plain(format!(
                    "unknown skill \"{name}\": the skills are {}",
                    known.join(", ")
                )));
            };
            let text = std::fs::read_to_string(&skill.file).map_err(|e| {
                ToolError::plain(format!(
                    "skill \"{name}\" cannot be read from {}: {e}",
                    skill.file.display()
                ))
            })?;
            let body = split_front_matter(&text).map_or(text.as_str(), |(_, body)| body);
            Ok(ToolOutput::text(format!(
                "<skill_content name=\"{name}\">\n<skill_resources>\nBase directory for this \
                 skill: {}\nResolve relative paths mentioned by this skill against the base \
                 directory before using them. Load referenced resources only as needed.\n\
                 </skill_resources>\n\n<skill_instructions>\n{}\n</skill_instructions>\n\
                 </skill_content>",
                skill.dir.display(),
                body.trim()
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_named_and_the_first_root_wins() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(a.join("release")).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(
            a.join("release/SKILL.md"),
            "---\nname: release\ndescription: Cut a release <carefully>\n---\nSteps here.\n",
        )
        .unwrap();
        std::fs::write(
            b.join("release.md"),
            "---\nname: release\ndescription: other\n---\nx\n",
        )
        .unwrap();
        std::fs::write(
            b.join("lint.md"),
            "---\nname: lint\ndescription: \"Run linters\"\n---\nrun\n",
        )
        .unwrap();
        std::fs::write(
            b.join("Bad.md"),
            "---\nname: Bad_Name\ndescription: x\n---\n",
        )
        .unwrap();
        std::fs::write(
            b.join("hidden.md"),
            "---\nname: hidden\ndescription: x\ndisable-model-invocation: true\n---\n",
        )
        .unwrap();
        let skills = discover(&[a.clone(), b]);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["release", "hidden", "lint"]);
        assert_eq!(skills[0].dir, a.join("release"));
        let catalog = catalog(&skills).unwrap();
        assert!(catalog.contains("- `release`: Cut a release &lt;carefully&gt;\n"));
        assert!(catalog.contains("- `lint`: Run linters\n"));
        assert!(!catalog.contains("hidden"));
    }
}
