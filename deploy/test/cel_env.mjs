// cel_env: the npm packages deploy/test/ runs on, loaded from where
// scripts/deps installs them: $MUSTER_CACHE/npm/<the first 16 hex digits of
// the sha256 of package-lock.json> (MUSTER_CACHE defaults to ~/.cache/muster).
// Exports @bufbuild/cel (a CEL evaluator) and yaml. Nothing else here.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const lock = readFileSync(join(here, "package-lock.json"));
const cache = process.env.MUSTER_CACHE || join(homedir(), ".cache", "muster");
export const modulesDir = join(cache, "npm", createHash("sha256").update(lock).digest("hex").slice(0, 16));

if (!existsSync(join(modulesDir, "node_modules", ".package-lock.json"))) {
	throw new Error(`deploy/test: the npm packages of package-lock.json are not in ${modulesDir}; run scripts/deps`);
}
const require = createRequire(join(modulesDir, "package.json"));

export const cel = require("@bufbuild/cel");
export const YAML = require("yaml");
