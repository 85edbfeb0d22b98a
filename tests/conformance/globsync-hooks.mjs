// Module hooks (registered by globsync.mjs): `fs` as the harness imports it, with `globSync`.
const WITH_GLOB = new URL("./fs-with-glob.mjs", import.meta.url).href;

export async function resolve(specifier, context, next) {
  const harness = context.parentURL?.includes("/@modelcontextprotocol/conformance/");
  if (harness && (specifier === "fs" || specifier === "node:fs")) {
    return { url: WITH_GLOB, shortCircuit: true };
  }
  return next(specifier, context);
}
