// The webhooks' matchConditions (CEL), evaluated as a 1.28+ apiserver does
// (kube_match.mjs, on @bufbuild/cel), for every webhook that the real
// deploy/ files write (webhooks.mjs), on the table of jobset_reviews.mjs.
// The local control plane is 1.20, which drops the field: this is where the
// expressions are evaluated at all. Run (after scripts/deps):
// node --test deploy/test/match_conditions_test.mjs; `make test` runs it
// (make cel-test).
import assert from "node:assert/strict";
import { test } from "node:test";

import { checkExpression, compileCondition, decide, mutateCondition, mutationSites } from "./kube_match.mjs";
import { REVIEWS, review } from "./jobset_reviews.mjs";
import { sources, webhooks } from "./webhooks.mjs";

const SOURCES = sources();
const HOOKS = SOURCES.flatMap(({ source, docs }) => webhooks(docs).filter((h) => h.conditions.length)
	.map((h) => ({ ...h, source, compiled: h.conditions.map(compileCondition) })));

// Mutants that no admission request can tell apart from the expression, and
// why. Keyed by the replaced text and the constant put in its place.
const EQUIVALENT = {
	"object != null => true": "the rules admit CREATE and UPDATE only, whose object is never null",
};

// The rows whose expected outcome `hook` (with `compiled` in place of its
// conditions) does not give: [{ row, got }].
function mismatches(hook, compiled) {
	const bad = [];
	for (const row of REVIEWS) {
		const got = decide(compiled, hook.failurePolicy, review(row));
		if (got.outcome !== row.expect) bad.push({ row, got });
	}
	return bad;
}

test("every source writes JobSet webhooks with matchConditions, and only JobSet ones", () => {
	for (const { source } of SOURCES) {
		const names = HOOKS.filter((h) => h.source === source).map((h) => h.name);
		assert.deepEqual(names.sort(), ["mutate.jobsets.muster.dev", "validate.jobsets.muster.dev"], source);
	}
	// The table is of JobSets: conditions on any other resource need rows of their own.
	for (const hook of HOOKS) {
		for (const rule of hook.rules) {
			assert.deepEqual([rule.apiGroups, rule.resources, rule.operations.every((o) => ["CREATE", "UPDATE"].includes(o))],
				[["jobset.x-k8s.io"], ["jobsets"], true], `${hook.source} ${hook.name}: add rows for ${rule.resources}`);
		}
	}
	// Without matchConditions nothing is left to evaluate.
	assert.ok(HOOKS.length >= 2 * SOURCES.length);
});

const EXPRESSIONS = [...new Set(HOOKS.flatMap((h) => h.conditions.map((c) => c.expression)))];

test("every expression uses only what Kubernetes' matchConditions offer", () => {
	for (const text of EXPRESSIONS) assert.deepEqual(checkExpression(text), [], text);
});

test("the environment check refuses what Kubernetes refuses", () => {
	// The check itself, on expressions Kubernetes would refuse or this harness cannot evaluate.
	const refused = {
		"request.userInfo.userName == 'x'": "AdmissionRequest has no such field",
		"authorizer.group('').resource('jobsets').check('create').allowed()": "authorizer",
		"namespaceObject.metadata.name == 'a'": "ValidatingAdmissionPolicy only",
		"object.metadata.name.lowerAscii() == 'a'": "lowerAscii(): not in CEL's standard library",
		"object.metadata.name": "not bool",
		"['a', 1].size() == 2": "mixes types",
		"obj != null": "obj: no such variable",
		"has(object.spec": "does not parse",
	};
	for (const [text, why] of Object.entries(refused)) {
		const problems = checkExpression(text);
		assert.ok(problems.some((p) => p.includes(why)), `${text}: ${JSON.stringify(problems)}`);
	}
	assert.deepEqual(checkExpression("request.operation == 'UPDATE' && request.userInfo.groups.exists(g, g == 'a')"), []);
});

for (const row of REVIEWS) {
	test(`${row.operation} ${row.name}: ${row.expect} (${row.why})`, () => {
		const bad = HOOKS.map((hook) => ({ hook, got: decide(hook.compiled, hook.failurePolicy, review(row)) }))
			.filter(({ got }) => got.outcome !== row.expect)
			.map(({ hook, got }) => `${hook.source}: ${hook.name}: ${got.outcome} (${got.detail})`);
		assert.deepEqual(bad, []);
	});
}

// Mutation: each expression replaced by true and by false, and each operand
// of its && (by true) and || (by false), must make some row fail; else the
// table cannot see that change.
const MUTATED = EXPRESSIONS.map((text) => {
	const hook = HOOKS.find((h) => h.conditions.some((c) => c.expression === text));
	const index = hook.conditions.findIndex((c) => c.expression === text);
	return { text, hook, index };
});

for (const [n, { text, hook, index }] of MUTATED.entries()) {
	test(`expression ${n + 1} (${hook.conditions[index].name}) replaced by true or by false fails the table`, () => {
		const condition = hook.compiled[index];
		assert.deepEqual(mismatches(hook, hook.compiled), [], "the expression itself must pass first");
		for (const value of [true, false]) {
			const mutant = mutateCondition(condition, condition.parsed.expr, value);
			const compiled = hook.compiled.map((c, i) => (i === index ? mutant : c));
			assert.ok(mismatches(hook, compiled).length > 0, `${hook.conditions[index].name} => ${value} passes the table`);
		}
	});

	test(`expression ${n + 1} (${hook.conditions[index].name}): every operand mutant fails the table`, (t) => {
		const condition = hook.compiled[index];
		assert.deepEqual(mismatches(hook, hook.compiled), [], "the expression itself must pass first");
		const survivors = [];
		let killed = 0;
		for (const site of mutationSites(condition)) {
			const mutant = mutateCondition(condition, site.node, site.value);
			const compiled = hook.compiled.map((c, i) => (i === index ? mutant : c));
			if (mismatches(hook, compiled).length) killed++;
			else survivors.push(`${mutant.replaced} => ${site.value}`);
		}
		t.diagnostic(`${killed} of ${killed + survivors.length} mutants fail the table; survivors: ${survivors.join(", ") || "none"}`);
		const unexplained = survivors.filter((s) => !(s in EQUIVALENT));
		assert.deepEqual(unexplained, [], "mutants the table does not catch (add a row, or drop the clause)");
	});
}

test("each declared equivalent mutant still exists", () => {
	const all = new Set();
	for (const { hook, index } of MUTATED) {
		const condition = hook.compiled[index];
		for (const site of mutationSites(condition)) all.add(`${mutateCondition(condition, site.node, site.value).replaced} => ${site.value}`);
	}
	for (const key of Object.keys(EQUIVALENT)) assert.ok(all.has(key), `${key}: no longer in any expression`);
});
