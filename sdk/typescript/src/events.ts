// The `--json` stream's events (docs/events.schema.json), as a union discriminated by `type`.
// Fields may be added within a schema version: read what you know, skip the rest.

export type Usage = {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  reasoningTokens: number;
  totalTokens: number;
  unreportedCalls?: number;
  costUsd?: number;
};

/** How a turn ended: `{kind: "completed"}`, `{kind: "aborted", reason: {kind: "user"}}`... */
export type TurnReason = { kind: string; [field: string]: unknown };

export type SessionEvent = { type: "session"; sessionId: string; cwd: string; schemaVersion: number };
export type StatusEvent = {
  type: "status";
  phase: "turn_start" | "step_start" | "step_end" | "turn_end" | string;
  turn?: number;
  step?: number;
  usage?: Usage;
  reason?: TurnReason;
};
export type ThinkingEvent = { type: "thinking"; text: string };
export type TextEvent = { type: "text"; text: string };
export type ToolCallEvent = { type: "tool_call"; callId: string; tool: string; input: unknown };
export type ToolResultEvent = {
  type: "tool_result";
  callId: string;
  status: "completed" | "error";
  result: string;
  error?: { name: string; code: string; reason?: string };
  command?: Record<string, unknown>;
};
export type TodoEvent = { type: "todo"; todos: { content: string; status: string }[] };
export type GoalEvent = { type: "goal"; operation: string; goal: Record<string, unknown> };
export type PresentEvent = { type: "present"; title: string; path?: string; summary?: string };
export type AgentEvent = { type: "agent"; agentId: string; event: DshEvent };
export type FinalEvent = {
  type: "final";
  sessionId: string;
  reason: TurnReason;
  text: string;
  usage: Usage;
  durationMs: number;
  steps: number;
  structuredOutput?: unknown;
};
export type ErrorEvent = { type: "error"; message: string; code?: string };

export type DshEvent =
  | SessionEvent
  | StatusEvent
  | ThinkingEvent
  | TextEvent
  | ToolCallEvent
  | ToolResultEvent
  | TodoEvent
  | GoalEvent
  | PresentEvent
  | AgentEvent
  | FinalEvent
  | ErrorEvent;

/** Every event type this version knows; the tests check it against the schema. */
export const EVENT_TYPES: readonly DshEvent["type"][] = [
  "session",
  "status",
  "thinking",
  "text",
  "tool_call",
  "tool_result",
  "todo",
  "goal",
  "present",
  "agent",
  "final",
  "error",
];
