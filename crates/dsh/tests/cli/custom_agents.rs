//! Custom subagents (`.dsh/agents/NAME.md`, `$DSH_HOME/agents/`, `.claude/agents/`): the
//! `subagent` tool offers them by name with their descriptions, a child started as one works
//! from its instructions with its tools and model, and a bad file is reported with its path
//! and line while the others load.

use dsh_testkit::{TestEnv, Turn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::dsh;

/// The `subagent` tool's schema in a request, as the model was offered it.
fn subagent_schema(request: &dsh_testkit::Request) -> Value {
    let tools = request.body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    tools
        .into_iter()
        .find(|t| t["function"]["name"] == "subagent")
        .unwrap_or_else(|| panic!("no subagent tool in {}", request.body))
}

#[test]
fn a_custom_subagent_is_offered_by_name_and_works_from_its_own_file() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "review", "prompt": "Review src.", "agent": "reviewer"}),
        ),
        Turn::text("REVIEWED"),
        Turn::text("the reviewer said REVIEWED"),
    ]);
    env.write(
        ".dsh/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews a change for bugs before it lands\n\
         tools: Read, Grep\nmodel: deepseek-reviewer-1\npermission_mode: read-only\n---\n\
         You are REVIEWER_ROLE_MARKER: read the change and list its bugs.\n",
    );
    // A trusted workspace's agent may name its model (an untrusted one's is set aside).
    env.write(".dsh/config.toml", "");
    // Claude Code's file loads unchanged; a bad one of the user's is reported, not fatal.
    env.write(
        ".claude/agents/explainer.md",
        "---\nname: explainer\ndescription: Explains code\ntools: Read, Glob\ncolor: green\n\
         ---\nExplain.\n",
    );
    let agents = env.home.path().join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("broken.md"),
        "---\nname: broken\ndescription: d\nflavour: mint\n---\nBody\n",
    )
    .unwrap();

    let out = env.run(dsh(), &["--json", "review the change"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let broken = agents.join("broken.md").display().to_string();
    assert!(
        out.stderr.contains(&format!("{broken}:4")) && out.stderr.contains("flavour"),
        "{}",
        out.stderr
    );

    let requests = env.server.requests();
    // The parent was offered both good agents, by name, with their descriptions.
    let schema = subagent_schema(&requests[0]);
    let agent = &schema["function"]["parameters"]["properties"]["agent"];
    assert_eq!(agent["enum"], json!(["explainer", "reviewer"]), "{schema}");
    let said = agent["description"].as_str().unwrap();
    assert!(
        said.contains("reviewer: Reviews a change for bugs before it lands"),
        "{said}"
    );
    assert!(!said.contains("broken"));

    // The child ran from the file: its instructions, its tools, its model, read-only.
    let child = &requests[1];
    let mut tools = child.tool_names();
    tools.sort();
    assert_eq!(tools, ["grep", "read"]);
    assert_eq!(child.body["model"], "deepseek-reviewer-1");
    let system = child.messages()[0]["content"].as_str().unwrap();
    assert!(system.contains("REVIEWER_ROLE_MARKER"), "{system}");
    assert!(system.contains("read-only"), "{system}");
    let results: Vec<Value> = (out.events().into_iter())
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["result"], "REVIEWED");
}

#[test]
fn a_name_no_file_gives_is_refused_by_the_schema() {
    let env = TestEnv::new(vec![
        Turn::tool_call(
            "subagent",
            json!({"description": "x", "prompt": "p", "agent": "nobody"}),
        ),
        Turn::text("done"),
    ]);
    env.write(
        ".dsh/agents/helper.md",
        "---\nname: helper\ndescription: Helps\n---\nHelp.\n",
    );
    let out = env.run(dsh(), &["--json", "go"]);
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let result = (out.events().into_iter())
        .find(|e| e["type"] == "tool_result")
        .unwrap();
    assert_eq!(result["status"], "error");
    let text = result["result"].as_str().unwrap();
    assert!(text.contains("helper"), "{text}");
    // No child was started: the parent's two requests only.
    assert_eq!(env.server.requests().len(), 2);
}
