// Drive dsh, the command-line coding agent, from Node over `dsh app-server` (docs/sdk.md).

export { Dsh, findBinary, type DshOptions, type Mode } from "./client.js";
export * from "./events.js";
export * from "./requests.js";
