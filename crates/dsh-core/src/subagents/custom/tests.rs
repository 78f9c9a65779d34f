use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn dsh_and_claude_code_files_load_and_later_folders_win_a_name() {
    let root = tempfile::tempdir().unwrap();
    let (home, ws) = (root.path().join("home"), root.path().join("ws"));
    write(
        &home.join("agents"),
        "reviewer.md",
        "---\nname: reviewer\ndescription: Mine\n---\nHome's.\n",
    );
    write(
        &ws.join(".claude/agents"),
        "code-reviewer.md",
        "---\nname: code-reviewer\ndescription: Reviews code for quality\ntools: Read, Grep, \
         Glob, Bash, NotebookEdit\nmodel: sonnet\ncolor: blue\n---\n\nYou are a senior \
         reviewer.\n",
    );
    write(
        &ws.join(".dsh/agents"),
        "reviewer.md",
        "---\nname: reviewer\ndescription: The project's\ntools: [read, grep]\nmodel: \
         deepseek-chat\npermission_mode: read-only\n---\nProject's.\n",
    );
    let found = load(&folders(&home, &ws, true));
    let names: Vec<&str> = found.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["code-reviewer", "reviewer"]);
    let claude = found.get("code-reviewer").unwrap();
    assert_eq!(
        claude.tools.as_deref().unwrap(),
        ["read", "grep", "glob", "bash"].map(str::to_owned)
    );
    assert_eq!(claude.model, None);
    assert_eq!(claude.prompt, "You are a senior reviewer.");
    let reviewer = found.get("reviewer").unwrap();
    assert_eq!(reviewer.description, "The project's");
    assert!(reviewer.read_only);
    assert_eq!(reviewer.model.as_deref(), Some("deepseek-chat"));
    // What of Claude Code's file is not followed is said.
    assert_eq!(found.problems.len(), 2, "{:#?}", found.problems);
    assert!(found.problems.iter().any(|p| p.contains("NotebookEdit")));
    assert!(found.problems.iter().any(|p| p.contains("\"sonnet\"")));
}

#[test]
fn a_bad_file_is_reported_with_its_path_and_line_and_the_others_load() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("agents");
    write(
        &dir,
        "good.md",
        "---\nname: good\ndescription: Fine\n---\nBody.\n",
    );
    for (file, text, line, says) in [
        (
            "unknown.md",
            "---\nname: x\ndescription: d\nflavour: mint\n---\n",
            4,
            "unknown field `flavour`",
        ),
        (
            "tools.md",
            "---\nname: t\ndescription: d\ntools: Read, Teleport\n---\n",
            4,
            "\"Teleport\", which is no tool dsh has",
        ),
        (
            "nodesc.md",
            "---\nname: n\n---\nBody\n",
            1,
            "no description",
        ),
        (
            "mode.md",
            "---\nname: m\ndescription: d\npermission_mode: root\n---\n",
            4,
            "permission mode \"root\"",
        ),
        (
            "model.md",
            "---\nname: p\ndescription: d\nmodel: other/m\n---\n",
            4,
            "names a provider",
        ),
        (
            "front.md",
            "no front matter\n",
            1,
            "does not start with a front matter",
        ),
        (
            "yaml.md",
            "---\nname: y\ndescription: [unclosed\n---\n",
            3,
            "not loaded",
        ),
    ] {
        let path = write(&dir, file, text);
        let found = load(&[(dir.clone(), true)]);
        let problem = (found.problems.iter())
            .find(|p| p.contains(&path.display().to_string()))
            .unwrap_or_else(|| panic!("{file}: {:#?}", found.problems));
        assert!(
            problem.contains(&format!("{}:{line}", path.display())) || says == "not loaded",
            "{problem}"
        );
        assert!(problem.contains(says), "{problem}");
        assert!(found.get("good").is_some(), "{file} stopped the others");
        std::fs::remove_file(path).unwrap();
    }
}

#[test]
fn an_untrusted_workspaces_agent_runs_on_the_sessions_model() {
    let root = tempfile::tempdir().unwrap();
    let (home, ws) = (root.path().join("home"), root.path().join("ws"));
    write(
        &ws.join(".dsh/agents"),
        "costly.md",
        "---\nname: costly\ndescription: d\nmodel: deepseek-most-expensive\n---\nB\n",
    );
    let found = load(&folders(&home, &ws, false));
    assert_eq!(found.get("costly").unwrap().model, None);
    assert!(
        found.problems[0].contains("not trusted"),
        "{:?}",
        found.problems
    );
}
