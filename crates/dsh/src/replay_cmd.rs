//! `dsh replay SESSION --model ROUTE [--to TURN] [--keep] [--json]`: the session's user turns
//! run again on another route, in a scratch copy of the files it began with, as a new session
//! ([`dsh_core::replay`]); then both side by side. The run is built as a headless run is
//! ([`dsh_core::AgentBuilder`]), one task per turn; the scratch folder is removed at the end
//! unless `--keep`.

use std::fmt::Write as _;
use std::io::Write as _;

use dsh_core::replay::{ReplayReport, TurnSide};
use dsh_core::{AgentBuilder, Environment, Flags, Settings, SetupError, Stop, TurnFacts};
use dsh_protocol::AbortReason;

use crate::surface::Surface;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayArgs {
    pub id: String,
    pub model: String,
    pub to: Option<u32>,
    pub keep: bool,
    pub json: bool,
}

pub fn run(args: &ReplayArgs) -> u8 {
    match replay(args) {
        Ok((report, completed)) => {
            let out = if args.json {
                format!("{}\n", serde_json::to_string(&report).unwrap_or_default())
            } else {
                text(&report)
            };
            let _ = std::io::stdout().write_all(out.as_bytes());
            u8::from(!completed)
        }
        Err(error) => {
            Surface::new(args.json).failed(&error);
            1
        }
    }
}

/// Plans, prepares the scratch folder, runs the turns and compares; the report, and whether
/// every turn was replayed and completed.
fn replay(args: &ReplayArgs) -> Result<(ReplayReport, bool), SetupError> {
    let (home, cwd) = crate::place::home_and_cwd()?;
    let failed = |e: dsh_core::replay::ReplayError| SetupError::new(e.code(), e.to_string());
    let plan = dsh_core::replay::plan_replay(&home, &args.id, args.to).map_err(|e| match e {
        dsh_core::replay::ReplayError::Session(error) => crate::diff_cmd::not_found(error, &home),
        other => failed(other),
    })?;
    let flags = Flags {
        model: Some(args.model.clone()),
        ..Flags::default()
    };
    let env = Environment::from_process();
    // The route is checked before anything is copied: a wrong name costs nothing.
    Settings::load(cwd, &env, &flags)?;
    let scratch = plan.make_scratch(&std::env::temp_dir()).map_err(failed)?;
    let outcome = (|| {
        let mut settings = Settings::load(scratch.workspace.clone(), &env, &flags)?;
        if let Some((mode, approval)) = plan.permissions() {
            settings.keep_session_permissions(&mode, &approval);
        }
        let runtime =
            dsh_core::runtime().map_err(|message| SetupError::new("INTERNAL", message))?;
        let ran = runtime.block_on(run_turns(settings.clone(), plan.turns(), args.json));
        runtime.shutdown_background();
        let (id, completed) = ran?;
        let report = plan
            .report(&home, &id, &args.model, &scratch, args.keep, &settings)
            .map_err(failed)?;
        Ok((report, completed))
    })();
    if !args.keep {
        let _ = scratch.remove();
    } else if outcome.is_err() {
        crate::surface::notice(&format!(
            "the scratch folder is kept: {}",
            scratch.workspace.display()
        ));
    }
    outcome
}

/// Runs each turn's message in a new session; its id, and whether every turn completed.
async fn run_turns(
    settings: Settings,
    turns: &[TurnFacts],
    json: bool,
) -> Result<(String, bool), SetupError> {
    let mcp = dsh_core::McpServers::default();
    let (notices, mut lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let printer = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            crate::surface::notice(&line);
        }
    });
    let stop = Stop::new();
    let watcher = {
        let stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                stop.request(AbortReason::Signal {
                    signal: "SIGINT".into(),
                });
            }
        })
    };
    let mut run = AgentBuilder::new(settings).open(&mcp, notices).await?;
    let id = run.agent.session().id().to_owned();
    let mut completed = true;
    for (i, turn) in turns.iter().enumerate() {
        if stop.is_requested() {
            completed = false;
            break;
        }
        if !json {
            let first = turn.message.lines().next().unwrap_or_default();
            crate::surface::notice(&format!(
                "replaying turn {} of {} (turn {} of the session): {first}",
                i + 1,
                turns.len(),
                turn.turn
            ));
        }
        let mut running = run.start_task(turn.message.clone(), &stop);
        while running.next_event().await.is_some() {}
        match running.outcome().await {
            Ok(summary) => completed &= summary.reason.is_answer(),
            Err(error) => {
                run.close().await;
                mcp.shutdown().await;
                watcher.abort();
                return Err(SetupError::new(error.code(), error.to_string()));
            }
        }
    }
    run.close().await;
    mcp.shutdown().await;
    watcher.abort();
    let _ = printer.await;
    Ok((id, completed))
}

fn text(report: &ReplayReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "replayed {} on {} as {}",
        report.original, report.model, report.replay
    );
    for turn in &report.turns {
        let first: String = (turn.message.lines().next().unwrap_or_default().chars())
            .take(70)
            .collect();
        let _ = writeln!(out, "\n\"{first}\"");
        let _ = writeln!(out, "  original  {}", side(&turn.original));
        let replayed = turn
            .replay
            .as_ref()
            .map_or_else(|| "(not reached)".to_owned(), side);
        let _ = writeln!(out, "  replay    {replayed}");
    }
    let _ = writeln!(out, "\ntotal");
    for (name, totals) in [
        ("original", &report.totals.original),
        ("replay  ", &report.totals.replay),
    ] {
        let _ = writeln!(
            out,
            "  {name}  {} · {} calls · files: {}",
            crate::diff_cmd::billed(&totals.usage),
            totals.calls,
            files(&totals.files)
        );
    }
    let verdict = match report.final_tree_matches {
        Some(true) => "the same as the original's".to_owned(),
        Some(false) => format!(
            "different from the original's: {}",
            files(&report.final_tree_differs)
        ),
        None => "not compared: no checkpoint records the original's".to_owned(),
    };
    let _ = writeln!(out, "final files: {verdict}");
    if !report.not_restored.is_empty() {
        let _ = writeln!(
            out,
            "not restored (left out of the checkpoint): {}",
            report.not_restored.join(", ")
        );
    }
    let kind = if report.git {
        "a clone of the repository"
    } else {
        "a copy"
    };
    let place = if report.kept {
        format!("kept at {}", report.scratch)
    } else {
        format!("{} (removed; --keep keeps it)", report.scratch)
    };
    let _ = writeln!(out, "scratch folder ({kind}): {place}");
    out
}

fn side(turn: &TurnSide) -> String {
    let model = turn.model.as_deref().unwrap_or("no answer");
    let ended = turn.ended.as_deref().unwrap_or("cut off");
    format!(
        "turn {} · {model} · {} · {} calls · files: {} · {ended}",
        turn.turn,
        crate::diff_cmd::billed(&turn.usage),
        turn.calls,
        files(&turn.files)
    )
}

fn files(changes: &[dsh_core::checkpoints::Change]) -> String {
    if changes.is_empty() {
        return "none".to_owned();
    }
    (changes.iter())
        .map(|c| format!("{} {}", c.kind.letter(), c.path))
        .collect::<Vec<_>>()
        .join(", ")
}
