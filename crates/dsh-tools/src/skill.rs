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

/// What [`discover`] found: the skills, and for each file that is meant as a skill but cannot
/// be loaded, a line saying which and what is wrong (for the user, as a notice).
#[derive(Debug, Default)]
pub struct Discovered {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

/// The skills under `roots`, in root order; the first skill of a name wins.
pub fn discover(roots: &[PathBuf]) -> Discovered {
    let mut discovered = Discovered::default();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut found: Vec<Skill> = Vec::new();
        let mut problems: Vec<String> = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let loaded = if path.is_dir() {
                load(&path.join("SKILL.md"), &path, true)
            } else if path.extension().is_some_and(|e| e == "md") {
                load(&path, root, false)
            } else {
                continue;
            };
            match loaded {
                Ok(skill) => found.push(skill),
                Err(Some(problem)) => problems.push(problem),
                Err(None) => {}
            }
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        problems.sort();
        discovered.problems.append(&mut problems);
        for skill in found {
            if !discovered.skills.iter().any(|s| s.name == skill.name) {
                discovered.skills.push(skill);
            }
        }
    }
    discovered
}

/// The skill in `file`; `Err(None)` for a file that is not meant as one (a folder without
/// `SKILL.md`, a `<name>.md` without a front matter), `Err(Some(..))` for one that is and
/// cannot be loaded, naming the file and what is wrong.
fn load(file: &Path, dir: &Path, named_skill: bool) -> Result<Skill, Option<String>> {
    let problem = |what: String| {
        Some(format!(
            "skill {} is not loaded: {what} (see the front matter in docs/config.md#skills)",
            file.display()
        ))
    };
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(problem(format!("it cannot be read: {e}"))),
    };
    let Some((front, _)) = split_front_matter(&text) else {
        return Err(if named_skill {
            problem("it does not start with a front matter between --- lines".into())
        } else {
            None
        });
    };
    let field = |key: &str| {
        front.lines().find_map(|line| {
            let line = line.trim_start();
            if line.starts_with('#') {
                return None;
            }
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| value(v))
        })
    };
    let Some(name) = field("name").filter(|n| !n.is_empty()) else {
        return Err(problem("its front matter has no name".into()));
    };
    let kebab = name.split('-').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    if !kebab {
        return Err(problem(format!(
            "its name \"{name}\" is not lower-case words joined by -"
        )));
    }
    let Some(description) = field("description").filter(|d| !d.trim().is_empty()) else {
        return Err(problem("its front matter has no description".into()));
    };
    let hidden = match field("disable-model-invocation").as_deref() {
        None | Some("") => false,
        Some("true" | "yes" | "on" | "1") => true,
        Some("false" | "no" | "off" | "0") => false,
        // An unreadable switch drops the skill rather than guess.
        Some(other) => {
            return Err(problem(format!(
                "disable-model-invocation is \"{other}\": use true or false"
            )));
        }
    };
    Ok(Skill {
        name,
        description,
        dir: dir.to_path_buf(),
        file: file.to_path_buf(),
        model_invocable: !hidden,
    })
}

/// A front-matter value as YAML reads a plain line: quotes taken off, and a `#` comment (a
/// `#` at the start or after white space, outside quotes) left out.
fn value(raw: &str) -> String {
    let raw = raw.trim();
    for q in ['"', '\''] {
        if let Some(end) = raw.strip_prefix(q).and_then(|rest| rest.find(q)) {
            return raw[1..=end].to_owned();
        }
    }
    let comment = raw
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || raw[..i].ends_with([' ', '\t'])))
        .map_or(raw.len(), |(i, _)| i);
    raw[..comment].trim_end().to_owned()
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

    fn facts(&self) -> crate::ToolFacts {
        crate::ToolFacts::new(crate::ToolKind::Read, "Use the skill")
            .subject("name")
            .read_only()
    }

    fn description(&self) -> &str {
        "Load a skill from the catalog in the system prompt: its instructions, and the folder \
         its relative paths resolve against."
    }

    fn parameters(&self) -> &Parameters {
        &self.parameters
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
                // The reference's words, then what there is to call instead.
                let mut message = format!("skill \"{name}\" is unknown or no longer available");
                if !known.is_empty() {
                    message.push_str(&format!("; the skills are {}", known.join(", ")));
                }
                return Err(ToolError::plain(message));
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
        let Discovered { skills, problems } = discover(&[a.clone(), b.clone()]);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            problems,
            vec![format!(
                "skill {} is not loaded: its name \"Bad_Name\" is not lower-case words joined \
                 by - (see the front matter in docs/config.md#skills)",
                b.join("Bad.md").display()
            )]
        );
        assert_eq!(names, vec!["release", "hidden", "lint"]);
        assert_eq!(skills[0].dir, a.join("release"));
        let catalog = catalog(&skills).unwrap();
        assert!(catalog.contains("- `release`: Cut a release &lt;carefully&gt;\n"));
        assert!(catalog.contains("- `lint`: Run linters\n"));
        assert!(!catalog.contains("hidden"));
    }

    #[test]
    fn front_matter_comments_are_not_part_of_values() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("release")).unwrap();
        // As docs/config.md shows a skill.
        std::fs::write(
            root.join("release/SKILL.md"),
            "---\n# a release skill\nname: release                      # lower-case words \
             joined by -\ndescription: Cut a release of the project\n\
             disable-model-invocation: false    # true keeps it out of the model's catalog\n\
             ---\nThe instructions...\n",
        )
        .unwrap();
        std::fs::write(
            root.join("tag.md"),
            "---\nname: 'tag' # quoted\ndescription: \"Tag it #now\"\n---\nx\n",
        )
        .unwrap();
        let Discovered { skills, problems } = discover(&[root]);
        assert_eq!(problems, Vec::<String>::new());
        let found: Vec<(&str, &str, bool)> = (skills.iter())
            .map(|s| (s.name.as_str(), s.description.as_str(), s.model_invocable))
            .collect();
        assert_eq!(
            found,
            vec![
                ("release", "Cut a release of the project", true),
                ("tag", "Tag it #now", true)
            ]
        );
    }

    #[test]
    fn a_skill_that_cannot_be_loaded_is_named_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        for (folder, text) in [
            ("plain", "Just text, no front matter.\n"),
            ("nameless", "---\ndescription: x\n---\n"),
            ("undescribed", "---\nname: undescribed\n---\n"),
            (
                "switch",
                "---\nname: switch\ndescription: x\ndisable-model-invocation: maybe\n---\n",
            ),
        ] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
            std::fs::write(root.join(folder).join("SKILL.md"), text).unwrap();
        }
        // Not meant as skills: a folder without SKILL.md, a markdown file without a front
        // matter.
        std::fs::create_dir_all(root.join("assets")).unwrap();
        std::fs::write(root.join("README.md"), "About these skills.\n").unwrap();
        let Discovered { skills, problems } = discover(std::slice::from_ref(&root));
        assert!(skills.is_empty(), "{skills:?}");
        let file = |folder: &str| root.join(folder).join("SKILL.md").display().to_string();
        let expected: Vec<String> = [
            ("nameless", "its front matter has no name"),
            (
                "plain",
                "it does not start with a front matter between --- lines",
            ),
            (
                "switch",
                "disable-model-invocation is \"maybe\": use true or false",
            ),
            ("undescribed", "its front matter has no description"),
        ]
        .iter()
        .map(|(folder, what)| {
            format!(
                "skill {} is not loaded: {what} (see the front matter in \
                 docs/config.md#skills)",
                file(folder)
            )
        })
        .collect();
        assert_eq!(problems, expected);
    }
}
