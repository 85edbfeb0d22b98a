// `fs`, and `globSync` from npm's `glob` (see globsync.mjs).
import fs from "node:fs";

export * from "node:fs";
export { globSync } from "glob";
export default fs;
