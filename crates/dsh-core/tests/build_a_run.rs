//! The example of docs/architecture.md's "Building a run", run against the scripted model. The
//! document's block is this test's marked lines word for word (the second test compares them),
//! so the one example a newcomer reads of the core's API compiles, runs a task and is true.

use dsh_core::{AgentBuilder, AgentEvent, Environment, Flags, McpServers, Settings, SetupError};
use dsh_core::{Stop, TurnSummary};
use dsh_testkit::{TestEnv, Turn};

/// Where a front end reads its task from (stdin, a composer, an editor's prompt).
fn read_task() -> Result<String, SetupError> {
    Ok("say hello".to_owned())
}

/// Runs the document's lines; what they rendered and how the task ended.
async fn the_documents_lines(
    test: &TestEnv,
) -> Result<(Vec<AgentEvent>, TurnSummary), Box<dyn std::error::Error>> {
    let cwd = test.ws_path();
    let env = Environment::from_pairs(
        (test.variables().into_iter()).map(|(name, value)| (name.to_owned(), value)),
    );
    let (flags, mcp, stop) = (Flags::default(), McpServers::default(), Stop::new());
    let (notices, _unread) = tokio::sync::mpsc::unbounded_channel();
    let mut rendered = Vec::new();
    let mut render = |event: &AgentEvent| rendered.push(event.clone());
    // docs/architecture.md: start
    // env: Environment::from_process() in a front end; flags: its command line.
    let settings = Settings::load(cwd, &env, &flags)?;
    let started = AgentBuilder::new(settings).start(&mcp, notices)?; // key, session, MCP servers
    let task = read_task()?; // stdin, a composer, ACP...
    let mut run = started.finish().await?; // tools, instructions, agent
    let mut running = run.start_task(task, &stop); // Agent::run, driven below
    while let Some(event) = running.next_event().await {
        render(&event); // until it ends, all told
    }
    let summary = running.outcome().await?; // reason, text, usage, steps
    run.close().await; // drops the agent, stops processes
    // docs/architecture.md: end
    Ok((rendered, summary))
}

#[tokio::test]
async fn the_architecture_documents_example_runs_a_task() {
    let test = TestEnv::new(vec![Turn::text("hello there")]);
    let (rendered, summary) = the_documents_lines(&test).await.unwrap();
    assert_eq!(summary.text, "hello there");
    assert!(!rendered.is_empty(), "nothing was rendered");
    // The session it opened is on disk, as any front end's is.
    assert!(test.session_log().contains("say hello"));
}

#[test]
fn the_document_shows_the_lines_this_test_runs() {
    let source = include_str!("build_a_run.rs");
    let marked: Vec<&str> = (source.lines())
        .skip_while(|l| !l.ends_with("docs/architecture.md: start"))
        .skip(1)
        .take_while(|l| !l.ends_with("docs/architecture.md: end"))
        .map(|l| l.strip_prefix("    ").unwrap_or(l))
        .collect();
    assert!(marked.len() > 5, "the marked lines were not found");
    let document = include_str!("../../../docs/architecture.md");
    let block: Vec<&str> = (document.split("## Building a run").nth(1))
        .and_then(|section| section.split("```rust\n").nth(1))
        .and_then(|code| code.split("\n```").next())
        .map(|code| code.lines().collect())
        .unwrap_or_default();
    assert_eq!(
        block, marked,
        "docs/architecture.md's example is not the code this test runs: copy the lines between \
         the markers into its block"
    );
}
