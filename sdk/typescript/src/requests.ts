// What a run asks the host, what a turn ends with, and the errors the SDK throws.

import type { FinalEvent, TurnReason } from "./events.js";

/** A refusal or failure with dsh's code: the protocol's (BAD_INPUT, BAD_REQUEST, NO_SESSION,
 * BUSY, UNKNOWN_REQUEST), a session's (SESSION_NOT_FOUND, CONFIG, AUTH...), or the SDK's own
 * (BINARY_NOT_FOUND, PROCESS_EXITED). */
export class DshError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly hint?: string,
  ) {
    super(`${code}: ${message}${hint ? ` (hint: ${hint})` : ""}`);
    this.name = "DshError";
  }
}

/** A turn that ended in a failure (`reason.kind` is `error`), with its result. */
export class TurnError extends DshError {
  constructor(
    code: string,
    message: string,
    readonly result: TurnResult,
  ) {
    super(code, message);
    this.name = "TurnError";
  }
}

export type TurnResult = { reason: TurnReason; text: string; final?: FinalEvent };

export type Choice = "once" | "session" | "deny";

/** A call that needs the host's approval. Answer with one of `choices`. */
export type ApprovalRequest = {
  id: string;
  kind: "approval";
  callId: string;
  tool: string;
  reason: string;
  grant: string | null;
  choices: Choice[];
};

export type Question = {
  id: string;
  question: string;
  header: string | null;
  options: { label: string; description: string | null }[];
  multiSelect: boolean;
};

/** The model's questions (`ask_user_question`). */
export type QuestionsRequest = { id: string; kind: "questions"; callId: string; questions: Question[] };

/** An MCP server's form. */
export type FormRequest = {
  id: string;
  kind: "form";
  server: string;
  message: string;
  schema: Record<string, unknown>;
};

type Maybe<T> = T | Promise<T>;

/** "once", "session", "deny", or a denial with the reason the model is told. */
export type ApprovalHandler = (request: ApprovalRequest) => Maybe<Choice | { choice: Choice; reason?: string }>;
/** Question id to a label, a list of labels, or `{custom}`; `null` skips them all. */
export type QuestionsHandler = (
  request: QuestionsRequest,
) => Maybe<Record<string, string | string[] | { selected?: string[]; custom?: string }> | null>;
/** A function the model is offered as a tool: dsh runs each call through its pipeline (hooks,
 * Auto review, the arguments checked against `inputSchema`), then asks the client to run it.
 * What `run` returns is the result the model reads (JSON unless a string); a throw, the call's
 * error. */
export type HostTool = {
  name: string;
  description: string;
  /** A JSON Schema of an object: the arguments. */
  inputSchema: Record<string, unknown>;
  run: (input: Record<string, unknown>) => unknown;
};

/** The form's content, or `null` to decline. */
export type FormHandler = (request: FormRequest) => Maybe<Record<string, unknown> | null>;

/** A file changed outside dsh since the checkpoint; a rewind over one needs `force`. */
export type RewindChange = { path: string; kind: "added" | "modified" | "deleted" };

/** A rewind's report (`rewindReport` in docs/events.schema.json): the files it restores and
 * removes, those changed outside dsh, the paths no checkpoint covers, what was done (`null`
 * for a preview) and the paths that could not be put back, each with why. */
export type RewindReport = {
  plan: { restore: string[]; remove: string[] };
  changedOutside: RewindChange[];
  uncovered: string[];
  applied: {
    toTurn?: number;
    beforeCall?: string;
    undo?: true;
    files: boolean;
    conversation: boolean;
    backup?: string;
    restored?: string;
    written: number;
    removed: number;
  } | null;
  failed: [string, string][];
};

/** What `rewind` takes back: `turn` (none: undo the last rewind), the files and the
 * conversation (both by default); `force` goes over files changed outside dsh; `apply: false`
 * only says what it would do. */
export type RewindOptions = {
  turn?: number;
  files?: boolean;
  conversation?: boolean;
  force?: boolean;
  apply?: boolean;
};
