// Preloaded into the harness (NODE_OPTIONS=--import): harness 0.1.16 imports `globSync` from
// `fs`, which Node 22 has and Node 20 lacks. On a Node without it, the harness's imports of
// `fs` are sent to a module that is `fs` plus the `globSync` of npm's `glob`.
import fs from "node:fs";
import { register } from "node:module";

if (typeof fs.globSync !== "function") {
  register("./globsync-hooks.mjs", import.meta.url);
}
