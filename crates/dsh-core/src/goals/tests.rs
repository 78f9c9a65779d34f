use serde_json::json;

use super::*;

const RULES: GoalRules = GoalRules {
    default_max_rounds: 256,
    blocked_after_rounds: 3,
};

fn board() -> GoalBoard {
    let board = GoalBoard::new(None, RULES);
    board.set_authority(Authority::Human);
    board
}

fn create(board: &GoalBoard, objective: &str, max: Option<Value>) -> Result<Goal, ToolError> {
    board
        .create(objective, max.as_ref())
        .map(|(_, change)| change.goal)
}

fn update(board: &GoalBoard, goal: &Goal, action: &str) -> Result<Goal, ToolError> {
    let revision = json!(goal.revision);
    let update = Update {
        goal_id: &goal.id,
        revision: Some(&revision),
        action,
        blocked_reason: (action == "blocked").then_some("the CI runner is down"),
        ..Update::default()
    };
    board.update(&update).map(|(_, change)| change.goal)
}

fn code(error: ToolError) -> (String, String) {
    let info = error.info.expect("a coded error");
    (info.name, info.code)
}

#[test]
fn the_reference_lifecycle_answers_alike() {
    let board = board();
    assert_eq!(board.read(), r#"{"goal":null}"#);
    let (answer, change) = board
        .create("  Make every parser test pass ", Some(&json!(3)))
        .unwrap();
    let id = &change.goal.id;
    assert!(id.starts_with("goal-") && id.len() == 41, "{id}");
    assert_eq!(
        answer,
        format!(
            r#"{{"goal":{{"id":"{id}","revision":1,"objective":"Make every parser test pass","phase":"active","roundsStarted":0,"maxGoalRounds":3}},"activation":"armed"}}"#
        )
    );
    assert_eq!(board.read(), answer);
    let stale = Update {
        goal_id: "goal-unknown",
        revision: Some(&json!(1)),
        action: "complete",
        ..Update::default()
    };
    let error = board.update(&stale).unwrap_err();
    assert_eq!(
        error.message,
        format!(r#"stale goal ref "goal-unknown" revision 1; current is "{id}" revision 1"#)
    );
    assert_eq!(
        code(error),
        ("GoalError".into(), "GOAL_STALE_REVISION".into())
    );
    let error = create(&board, "A second goal", None).unwrap_err();
    assert_eq!(
        error.message,
        format!(r#"goal "{id}" already exists with phase "active""#)
    );
    assert_eq!(
        code(error),
        ("GoalError".into(), "GOAL_ALREADY_EXISTS".into())
    );
}

#[test]
fn arguments_are_checked_in_the_reference_order() {
    let board = board();
    let error = create(&board, "   ", Some(json!(0))).unwrap_err();
    assert_eq!(code(error).1, "GOAL_INVALID_OBJECTIVE");
    let error = create(&board, "x", Some(json!(0))).unwrap_err();
    assert_eq!(
        error.message,
        "maxGoalRounds must be a positive safe integer"
    );
    assert!(create(&board, "x", Some(json!(2.5))).is_err());
    let goal = create(&board, "x", None).unwrap();
    assert_eq!(goal.max_goal_rounds, 256);

    let unauthorised = create(&GoalBoard::new(None, RULES), "y", None);
    assert!(unauthorised.is_err(), "a board starts with no authority");

    let bad = Update {
        goal_id: " goal-1",
        revision: Some(&json!(1)),
        action: "pause",
        ..Update::default()
    };
    let error = board.update(&bad).unwrap_err();
    assert_eq!(code(error).1, "GOAL_TOOL_INVALID_UPDATE");
    // "" and 0 are the reference's placeholders for "not given".
    let revision = json!(goal.revision);
    let zero = json!(0);
    let edit = Update {
        goal_id: &goal.id,
        revision: Some(&revision),
        action: "edit",
        objective: Some(""),
        max_goal_rounds: Some(&zero),
        ..Update::default()
    };
    let error = board.update(&edit).unwrap_err();
    assert_eq!(
        error.message,
        "goal edit requires objective and/or maxGoalRounds"
    );
}

#[test]
fn rounds_start_until_the_limit_then_the_goal_is_blocked() {
    let board = board();
    let goal = create(&board, "Ship it", Some(json!(2))).unwrap();
    for round in 1..=2 {
        let NextRound::Start { change, prompt } = board.next_round(round as u32 + 1) else {
            panic!("round {round} should start");
        };
        assert_eq!(change.operation, GoalOperation::Round);
        assert_eq!(change.goal.rounds_started, round);
        assert_eq!(
            change.goal.revision, goal.revision,
            "a round is not a change"
        );
        assert!(
            prompt.starts_with(&format!(
                "<goal_round>\nObjective: \"Ship it\"\nRound: {round}/2\n\n"
            )),
            "{prompt}"
        );
        assert!(prompt.ends_with("\n</goal_round>"));
    }
    let NextRound::Exhausted(change) = board.next_round(4) else {
        panic!("the limit should block the goal");
    };
    assert_eq!(change.goal.phase, GoalPhase::Blocked);
    assert_eq!(change.goal.revision, 2);
    let reason = change.goal.blocked_reason.unwrap();
    assert_eq!(reason.code, "round-limit");
    assert_eq!(
        reason.message,
        "Goal reached its configured limit of 2 rounds."
    );
    assert!(matches!(board.next_round(5), NextRound::None));
}

#[test]
fn a_round_may_only_complete_or_block_the_goal_it_works_on() {
    let board = board();
    let goal = create(&board, "Ship it", None).unwrap();
    let NextRound::Start { change, .. } = board.next_round(2) else {
        panic!("a round should start");
    };
    board.set_authority(Authority::Round(change.goal.rounds_started));
    let error = update(&board, &goal, "pause").unwrap_err();
    assert_eq!(
        code(error),
        ("HarnessError".into(), "GOAL_TOOL_AUTHORITY_REQUIRED".into())
    );
    let error = update(&board, &goal, "blocked").unwrap_err();
    assert_eq!(
        error.message,
        "blocked requires at least 3 consecutive goal rounds; current round is 1"
    );
    assert_eq!(code(error).1, "GOAL_TOOL_BLOCK_THRESHOLD");
    assert!(board.take_wrap_up().is_none());
    let done = update(&board, &goal, "complete").unwrap();
    assert_eq!(done.phase, GoalPhase::Complete);
    assert_eq!(done.revision, 2);
    let wrap_up = board.take_wrap_up().unwrap();
    assert!(
        wrap_up.starts_with("<goal_complete>\nObjective: \"Ship it\"\n"),
        "{wrap_up}"
    );
    assert!(board.take_wrap_up().is_none(), "told once");
    assert!(board.read().ends_with(r#""activation":"disarmed"}"#));
    assert!(matches!(board.next_round(3), NextRound::None));

    // Anyone else (a turn background work woke, a subagent) may only read it.
    board.set_authority(Authority::Neither);
    let error = update(&board, &done, "complete").unwrap_err();
    assert_eq!(
        error.message,
        "complete and blocked require a direct human turn or the current goal round"
    );
}

#[test]
fn the_human_pauses_resumes_and_blocks_at_once() {
    let board = board();
    let goal = create(&board, "Ship it", Some(json!(1))).unwrap();
    let error = update(&board, &goal, "resume").unwrap_err();
    assert_eq!(
        error.message,
        format!(r#"goal "{}" is already active and armed"#, goal.id)
    );
    let paused = update(&board, &goal, "pause").unwrap();
    assert_eq!((paused.phase, paused.revision), (GoalPhase::Paused, 2));
    assert!(matches!(board.next_round(2), NextRound::None), "paused");
    let error = update(&board, &paused, "pause").unwrap_err();
    assert_eq!(
        error.message,
        format!(
            r#"cannot pause goal "{}" from phase "paused"; expected active"#,
            goal.id
        )
    );
    let resumed = update(&board, &paused, "resume").unwrap();
    assert!(matches!(board.next_round(2), NextRound::Start { .. }));
    let blocked = update(&board, &resumed, "blocked").unwrap();
    assert_eq!(
        blocked.blocked_reason.as_ref().map(|r| r.code.as_str()),
        Some("model-reported")
    );
    assert!(board.take_wrap_up().is_none(), "the human needs no wrap-up");
    let error = update(&board, &blocked, "resume").unwrap_err();
    assert_eq!(
        error.message,
        format!(
            "goal \"{}\" exhausted 1 goal rounds; increase maxGoalRounds before resuming",
            goal.id
        )
    );
}
