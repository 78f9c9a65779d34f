// The workflow API, installed before the script runs. Every check and error text here is the
// reference's; the host gives only `__hostAgent` (start a child, a promise of its answer).
// What a call carries out (the prompt's length, the label, the phase) is bounded by the host,
// which a script cannot reach: these checks and texts come first, for the reference's order.
(function (global, hostAgent, hostLog, agentCap, itemCap, MAX_PROMPT) {
  "use strict";
  const fatal = new WeakSet();
  const fail = (code, message) => {
    const error = new Error(message);
    error.name = "WorkflowError";
    error.code = code;
    error.fatal = true;
    fatal.add(error);
    throw error;
  };
  let currentPhase = undefined;
  const ALLOWED = ["label", "phase", "schema", "provider", "model"];
  const DEFERRED = ["effort", "isolation", "agentType"];
  const supported = "(supported: " + ALLOWED.join(", ") + ")";
  const isPlainObject = (v) =>
    v !== null && typeof v === "object" && !Array.isArray(v) &&
    (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);

  // `value` as strict JSON data, or the path and reason it is not.
  const plainProblem = (value, path, seen) => {
    switch (typeof value) {
      case "string": case "boolean": return null;
      case "number": return Number.isFinite(value) ? null : path + ": a non-finite number is not JSON data";
      case "undefined": return path + ": undefined is not JSON data";
      case "function": return path + ": a function is not JSON data";
      case "symbol": return path + ": a symbol is not JSON data";
      case "bigint": return path + ": a bigint is not JSON data";
    }
    if (value === null) return null;
    if (seen.has(value)) return path + ": a cycle is not JSON data";
    seen.add(value);
    try {
      if (Array.isArray(value)) {
        const keys = Object.keys(value);
        if (keys.length !== value.length) return path + ": a sparse array or one with extra properties is not JSON data";
        for (let i = 0; i < value.length; i++) {
          const problem = plainProblem(value[i], path + "[" + i + "]", seen);
          if (problem) return problem;
        }
        return null;
      }
      if (!isPlainObject(value)) return path + ": an object that is not a plain object is not JSON data";
      if (Object.getOwnPropertySymbols(value).length > 0) return path + ": symbol keys are not JSON data";
      for (const key of Object.keys(value)) {
        const problem = plainProblem(value[key], path + "." + key, seen);
        if (problem) return problem;
      }
      return null;
    } finally {
      seen.delete(value);
    }
  };

  const labelOf = (prompt) => {
    const first = prompt.split("\n")[0];
    return first.length <= 48 ? first : first.slice(0, 47) + "\u2026";
  };

  const agent = function agent(prompt, opts) {
    if (typeof prompt !== "string" || prompt.length === 0) {
      fail("INVALID_ARGUMENT", "agent() requires a non-empty prompt string");
    }
    if (prompt.length > MAX_PROMPT) {
      fail("INVALID_ARGUMENT", "agent() prompt has " + prompt.length + " characters, over the " + MAX_PROMPT + " a prompt may have: put the bulk in a file the agent reads");
    }
    let options = {};
    if (opts !== undefined) {
      const problem = plainProblem(opts, "options", new Set());
      if (problem) fail("INVALID_ARGUMENT", "agent() options must be plain JSON data \u2014 " + problem);
      if (!isPlainObject(opts)) fail("INVALID_ARGUMENT", "agent() options must be an object");
      options = JSON.parse(JSON.stringify(opts));
    }
    for (const key of Object.keys(options)) {
      if (DEFERRED.includes(key)) {
        fail("UNSUPPORTED_OPTION", 'agent() option "' + key + '" is deferred and not supported by this engine ' + supported);
      }
      if (!ALLOWED.includes(key)) {
        fail("UNSUPPORTED_OPTION", 'agent() option "' + key + '" is not recognized ' + supported);
      }
    }
    for (const key of ["label", "phase", "provider", "model"]) {
      if (key in options && typeof options[key] !== "string") {
        fail("INVALID_ARGUMENT", 'agent() option "' + key + '" must be a string');
      }
    }
    if ("schema" in options && !isPlainObject(options.schema)) {
      fail("UNSUPPORTED_SCHEMA", 'agent() schema is outside the supported subset \u2014 unsupported JSON schema: schema must be an object');
    }
    if ("schema" in options && options.schema.type !== "object") {
      fail("UNSUPPORTED_SCHEMA", 'agent() schema is outside the supported subset \u2014 unsupported JSON schema: schema.type must be "object" (structured output is object-rooted)');
    }
    const label = "label" in options ? options.label : labelOf(prompt);
    const phase = "phase" in options ? options.phase : currentPhase;
    const schema = "schema" in options ? JSON.stringify(options.schema) : undefined;
    const started = hostAgent(prompt, label, phase, schema);
    if (started === null) {
      fail("AGENT_CAP", "this run reached its total agent cap (" + agentCap + ") \u2014 a runaway-loop backstop; raise the applicable maxTotalAgents limit if the scale is intentional");
    }
    if (Array.isArray(started)) fail(started[0], started[1]);
    return started;
  };

  const checkItems = (hook, items) => {
    if (items.length > itemCap) {
      fail("ITEM_CAP", hook + " received " + items.length + " items \u2014 over the per-call cap (" + itemCap + "); split the work or raise maxItemsPerCall in the engine config");
    }
  };

  const settle = async (run) => {
    try {
      return await run();
    } catch (error) {
      if (fatal.has(error)) throw error;
      return null;
    }
  };

  const parallel = async function parallel(thunks) {
    if (!Array.isArray(thunks)) fail("INVALID_ARGUMENT", "parallel() requires an array of zero-argument functions");
    checkItems("parallel()", thunks);
    thunks.forEach((thunk, i) => {
      if (typeof thunk !== "function") fail("INVALID_ARGUMENT", "parallel() item " + i + " is not a function");
    });
    return Promise.all(thunks.map((thunk) => settle(() => thunk())));
  };

  const pipeline = async function pipeline(items, ...stages) {
    if (!Array.isArray(items)) fail("INVALID_ARGUMENT", "pipeline() requires an items array");
    checkItems("pipeline()", items);
    if (stages.length === 0) fail("INVALID_ARGUMENT", "pipeline() requires at least one stage function");
    stages.forEach((stage, i) => {
      if (typeof stage !== "function") fail("INVALID_ARGUMENT", "pipeline() stage " + i + " is not a function");
    });
    return Promise.all(items.map((item, index) => settle(async () => {
      let value = item;
      for (const stage of stages) value = await stage(value, item, index);
      return value;
    })));
  };

  const phase = function phase(title) {
    if (typeof title !== "string" || title.length === 0) fail("INVALID_ARGUMENT", "phase() requires a non-empty title string");
    currentPhase = title;
    return undefined;
  };

  const log = function log(message) {
    if (typeof message !== "string") fail("INVALID_ARGUMENT", "log() requires a message string");
    hostLog(message.slice(0, 4096));
    return undefined;
  };

  for (const [name, fn] of Object.entries({ agent, parallel, pipeline, phase, log })) {
    Object.defineProperty(global, name, { value: Object.freeze(fn), writable: true, configurable: true });
  }

  // For the host, fixed before the script runs so it cannot replace them: the result as
  // two-space JSON (or why it is not JSON data), and a thrown value as a failure's text.
  const result = (value) => {
    if (value === undefined) return "null";
    const problem = plainProblem(value, "workflow result", new Set());
    if (problem) {
      fail("RESULT_UNSERIALIZABLE", "the workflow's return value is not plain JSON data \u2014 " + problem + ". Return only JSON-serializable objects/arrays/scalars.");
    }
    return JSON.stringify(value, null, 2);
  };
  const render = (thrown) => {
    if (thrown !== null && typeof thrown === "object") {
      const head = (thrown.name || "Error") + ": " + (thrown.message || "");
      const stack = typeof thrown.stack === "string" ? thrown.stack.trimEnd() : "";
      return stack ? head + "\n" + stack : head;
    }
    try { return String(thrown); } catch (_) { return "[unrenderable thrown value]"; }
  };
  for (const [name, fn] of Object.entries({ __result: result, __render: render })) {
    Object.defineProperty(global, name, { value: fn, writable: false, configurable: false });
  }
})(globalThis, globalThis.__hostAgent, globalThis.__hostLog, globalThis.__agentCap, globalThis.__itemCap, globalThis.__maxPrompt);
delete globalThis.__hostAgent;
delete globalThis.__hostLog;
delete globalThis.__agentCap;
delete globalThis.__itemCap;
delete globalThis.__maxPrompt;
