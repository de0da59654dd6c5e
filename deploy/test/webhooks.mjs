// webhooks: muster's webhook configurations as the cluster gets them, read
// from the real files: deploy/render-webhooks.sh's output (run here, with
// the options that change the configurations) and deploy/cert-manager's
// webhooks.yaml. Gives every webhook that carries matchConditions.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { YAML } from "./cel_env.mjs";

const deploy = join(dirname(fileURLToPath(import.meta.url)), "..");

// render-webhooks.sh's runs: its default (in-cluster Service), by URL,
// another namespace with failurePolicy Ignore, opt-in namespaces.
export const RENDERINGS = [
	[],
	["--url", "https://127.0.0.1:8443"],
	["--namespace", "team-x", "--failure-policy", "Ignore", "--timeout-seconds", "10"],
	["--namespace-label", "muster.dev/enabled=true"],
];

function documents(text) {
	return YAML.parseAllDocuments(text).map((d) => {
		if (d.errors.length) throw new Error(d.errors.map(String).join("; "));
		return d.toJS();
	});
}

// Runs render-webhooks.sh with `args`; returns its YAML documents. The CA
// only becomes caBundle, which no condition reads: a PEM-shaped stand-in.
export function render(args) {
	const dir = mkdtempSync(join(tmpdir(), "muster-cel-"));
	try {
		const ca = join(dir, "ca.crt");
		writeFileSync(ca, "-----BEGIN CERTIFICATE-----\nTUlVU1RFUg==\n-----END CERTIFICATE-----\n");
		return documents(execFileSync("bash", [join(deploy, "render-webhooks.sh"), "--ca-file", ca, ...args],
			{ encoding: "utf8" }));
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

// Every source: { source, docs }.
export function sources() {
	return [
		...RENDERINGS.map((args) => ({ source: `render-webhooks.sh ${args.join(" ")}`.trim(), docs: render(args) })),
		{ source: "cert-manager/webhooks.yaml",
			docs: documents(readFileSync(join(deploy, "cert-manager", "webhooks.yaml"), "utf8")) },
	];
}

// The webhooks of `docs`: { configuration, name, failurePolicy, rules,
// conditions: [{ name, expression }] }.
export function webhooks(docs) {
	return docs.flatMap((doc) => (doc.webhooks ?? []).map((hook) => ({
		configuration: `${doc.kind}/${doc.metadata.name}`,
		name: hook.name,
		failurePolicy: hook.failurePolicy ?? "Fail",
		rules: hook.rules ?? [],
		conditions: hook.matchConditions ?? [],
	})));
}
