// kube_match: what a kube-apiserver (1.28 and later) does with a webhook's
// matchConditions, on @bufbuild/cel. It is not muster's: it models
// Kubernetes, from its sources (k8s.io/apiserver/pkg/admission/plugin/cel
// compile.go and filter.go, .../webhook/matchconditions/matcher.go):
//
// - Variables: `object` and `oldObject` (dyn; the object as unstructured
//   JSON, null when absent: oldObject on CREATE), `request` (the
//   AdmissionRequest the apiserver builds, as unstructured JSON: fields with
//   omitempty are absent when empty), `authorizer` and
//   `authorizer.requestResource`. This harness binds the first three;
//   checkExpression() refuses the others, so that a new use is modelled
//   before it is trusted.
// - Library: CEL's standard macros and functions, plus Kubernetes' own
//   (lists, regex, URLs, authorizer, quantities) and cel-go's strings
//   extension. checkExpression() accepts the standard ones only: what every
//   release with matchConditions has, and what @bufbuild/cel evaluates.
// - The expression must have type bool (the configuration is refused
//   otherwise); list literals must be homogeneous.
// - Decision: any condition false: the webhook is skipped. Else any error:
//   failurePolicy Fail refuses the request, Ignore skips the webhook. Else the
//   webhook is called.
import { cel } from "./cel_env.mjs";

const { parse, plan, celEnv, unparse, isCelError } = cel;

// CEL's standard functions and operators (cel-spec's standard definitions,
// all in cel-go since before Kubernetes 1.28), by their names in the AST.
const STANDARD = new Set([
	"_?_:_", "_&&_", "_||_", "!_", "@not_strictly_false", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
	"_+_", "_-_", "_*_", "_/_", "_%_", "-_", "_[_]", "@in",
	"size", "contains", "endsWith", "startsWith", "matches",
	"int", "uint", "double", "string", "bytes", "bool", "type", "dyn", "duration", "timestamp",
	"getFullYear", "getMonth", "getDayOfYear", "getDate", "getDayOfMonth", "getDayOfWeek",
	"getHours", "getMinutes", "getSeconds", "getMilliseconds",
]);
const MACROS = new Set(["has", "all", "exists", "exists_one", "map", "filter"]);
// Calls whose result is a bool whatever their arguments.
const BOOLEAN = new Set(["_&&_", "_||_", "!_", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "@in",
	"contains", "endsWith", "startsWith", "matches"]);
const BOOLEAN_MACROS = new Set(["has", "all", "exists", "exists_one"]);

// The variables this harness binds, and the fields of `request`
// (compile.go's BuildRequestType): true is a leaf, "any" a dyn or map
// whose members are not declared.
const GVK = { group: true, version: true, kind: true };
const GVR = { group: true, version: true, resource: true };
const REQUEST = {
	kind: GVK, resource: GVR, subResource: true, requestKind: GVK, requestResource: GVR,
	requestSubResource: true, name: true, namespace: true, operation: true,
	userInfo: { username: true, uid: true, groups: true, extra: "any" }, dryRun: true, options: "any",
};
const VARIABLES = new Set(["object", "oldObject", "request"]);
const NOT_BOUND = {
	authorizer: "authorizer is Kubernetes' but this harness does not model it",
	namespaceObject: "namespaceObject is bound for ValidatingAdmissionPolicy only, not for webhooks",
	params: "params is bound for ValidatingAdmissionPolicy only, not for webhooks",
};

function kindOf(expr) {
	return expr.exprKind.case;
}

// The path of a select chain (["request", "userInfo", "username"]), or null
// when it does not start at an identifier.
function selectPath(expr) {
	const path = [];
	for (let e = expr; ; e = e.exprKind.value.operand) {
		if (kindOf(e) === "identExpr") return [e.exprKind.value.name, ...path];
		if (kindOf(e) !== "selectExpr") return null;
		path.unshift(e.exprKind.value.field);
	}
}

function checkRequestPath(path, problems) {
	let type = REQUEST;
	for (const field of path.slice(1)) {
		if (type === "any") return;
		if (type === true || !(field in type)) {
			problems.add(`request.${path.slice(1).join(".")}: AdmissionRequest has no such field in CEL`);
			return;
		}
		type = type[field];
	}
}

function walk(expr, scope, problems) {
	const v = expr.exprKind.value;
	switch (kindOf(expr)) {
	case "constExpr":
		return;
	case "identExpr":
		if (scope.has(v.name)) return;
		if (v.name in NOT_BOUND) problems.add(NOT_BOUND[v.name]);
		else if (!VARIABLES.has(v.name)) problems.add(`${v.name}: no such variable in matchConditions`);
		return;
	case "selectExpr": {
		const path = selectPath(expr);
		if (path && path[0] === "request" && !scope.has("request")) checkRequestPath(path, problems);
		walk(v.operand, scope, problems);
		return;
	}
	case "callExpr":
		if (!STANDARD.has(v.function)) problems.add(`${v.function}(): not in CEL's standard library`);
		if (v.target) walk(v.target, scope, problems);
		for (const a of v.args) walk(a, scope, problems);
		return;
	case "listExpr": {
		const kinds = new Set(v.elements.filter((e) => kindOf(e) === "constExpr")
			.map((e) => e.exprKind.value.constantKind.case));
		if (kinds.size > 1) problems.add("a list literal mixes types (Kubernetes wants homogeneous literals)");
		for (const e of v.elements) walk(e, scope, problems);
		return;
	}
	case "structExpr":
		if (v.messageName) problems.add(`${v.messageName}{}: no message types in matchConditions`);
		for (const entry of v.entries) {
			if (entry.keyKind.case === "mapKey") walk(entry.keyKind.value, scope, problems);
			walk(entry.value, scope, problems);
		}
		return;
	case "comprehensionExpr": {
		walk(v.iterRange, scope, problems);
		walk(v.accuInit, scope, problems);
		const inner = new Set([...scope, v.iterVar, v.accuVar]);
		if (v.iterVar2) inner.add(v.iterVar2);
		for (const e of [v.loopCondition, v.loopStep, v.result]) walk(e, inner, problems);
		return;
	}
	default:
		problems.add(`unsupported expression kind ${kindOf(expr)}`);
	}
}

function isBoolean(parsed) {
	const e = parsed.expr;
	const macro = parsed.sourceInfo.macroCalls[e.id.toString()];
	if (macro) return BOOLEAN_MACROS.has(macro.exprKind.value.function);
	if (kindOf(e) === "callExpr") return BOOLEAN.has(e.exprKind.value.function);
	if (kindOf(e) === "constExpr") return e.exprKind.value.constantKind.case === "boolValue";
	return false;
}

// The reasons Kubernetes would refuse `text`, or this harness could not
// evaluate it as Kubernetes does; [] when none.
export function checkExpression(text) {
	let parsed;
	try {
		parsed = parse(text);
	} catch (e) {
		return [`does not parse: ${e.message}`];
	}
	const problems = new Set();
	for (const call of Object.values(parsed.sourceInfo.macroCalls)) {
		const name = call.exprKind.value.function;
		if (!MACROS.has(name)) problems.add(`${name}(): not one of CEL's standard macros`);
	}
	walk(parsed.expr, new Set(), problems);
	if (!isBoolean(parsed)) problems.add("its type is not bool (matchConditions must evaluate to bool)");
	return [...problems];
}

const env = celEnv();

// A compiled condition: { name, text, parsed, run(activation) }.
export function compileCondition({ name, expression }) {
	const parsed = parse(expression);
	return { name, text: expression, parsed, run: plan(env, parsed) };
}

// `parsed` with one node's expression replaced by a constant (the mutation
// tests): a new runnable, and the replaced text. The tree is restored.
export function mutateCondition(condition, node, value) {
	const saved = node.exprKind;
	const replaced = unparse({ expr: node, sourceInfo: condition.parsed.sourceInfo });
	node.exprKind = parse(value ? "true" : "false").expr.exprKind;
	try {
		return { ...condition, run: plan(env, condition.parsed), replaced, value };
	} finally {
		node.exprKind = saved;
	}
}

// The operands that a mutation may replace: each operand of a && (by true)
// and of a || (by false) that was written in the expression (not the
// accumulator step of an exists() or all() macro, whose operand is
// `@result`), and the whole expression by both.
export function mutationSites(condition) {
	const sites = [{ node: condition.parsed.expr, value: true }, { node: condition.parsed.expr, value: false }];
	const visit = (expr) => {
		const v = expr.exprKind.value;
		switch (kindOf(expr)) {
		case "callExpr": {
			const logical = v.function === "_&&_" || v.function === "_||_";
			const accumulator = v.args.some((a) => kindOf(a) === "identExpr" && a.exprKind.value.name === "@result");
			if (logical && !accumulator) {
				for (const a of v.args) sites.push({ node: a, value: v.function === "_&&_" });
			}
			if (v.target) visit(v.target);
			for (const a of v.args) visit(a);
			return;
		}
		case "selectExpr":
			return visit(v.operand);
		case "listExpr":
			return v.elements.forEach(visit);
		case "comprehensionExpr":
			return [v.iterRange, v.accuInit, v.loopCondition, v.loopStep, v.result].forEach(visit);
		default:
			return;
		}
	};
	visit(condition.parsed.expr);
	return sites;
}

// A JSON value as Kubernetes hands unstructured objects to CEL: objects are
// maps, integers int64 (bigint here), other numbers doubles.
export function toCel(value) {
	if (Array.isArray(value)) return value.map(toCel);
	if (value !== null && typeof value === "object") {
		return new Map(Object.entries(value).map(([k, v]) => [k, toCel(v)]));
	}
	if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
	return value;
}

// The AdmissionRequest the apiserver builds for the conditions
// (filter.go's CreateAdmissionRequest), as the JSON its unstructured
// conversion gives: omitempty fields left out when empty.
export function admissionRequest({ operation, object, oldObject, user, groups, gvk, gvr }) {
	const meta = object ?? oldObject;
	const request = {
		uid: "",
		kind: gvk, resource: gvr, requestKind: gvk, requestResource: gvr,
		name: meta.metadata.name ?? "",
		namespace: meta.metadata.namespace,
		operation,
		userInfo: { username: user, uid: "", groups },
		dryRun: false,
		options: { kind: `${operation[0]}${operation.slice(1).toLowerCase()}Options`, apiVersion: "meta.k8s.io/v1" },
	};
	if (!request.name) delete request.name;
	if (!request.userInfo.uid) delete request.userInfo.uid;
	return request;
}

// What the apiserver does with a webhook of these compiled conditions for
// `review` ({ operation, object, oldObject, user, groups, gvk, gvr }):
// { outcome: "call" | "skip" | "reject", detail }.
export function decide(conditions, failurePolicy, review) {
	const activation = {
		object: toCel(review.object ?? null),
		oldObject: toCel(review.oldObject ?? null),
		request: toCel(admissionRequest(review)),
	};
	const errors = [];
	for (const c of conditions) {
		let result;
		try {
			result = c.run(activation);
		} catch (e) {
			result = e;
		}
		if (result === false) return { outcome: "skip", detail: `condition ${c.name} is false` };
		if (result !== true) {
			errors.push(`${c.name}: ${isCelError(result) || result instanceof Error ? result.message
				: `not a bool: ${String(result)}`}`);
		}
	}
	if (errors.length) {
		return failurePolicy === "Ignore" ? { outcome: "skip", detail: `errors ignored: ${errors.join("; ")}` }
			: { outcome: "reject", detail: `failurePolicy ${failurePolicy}: ${errors.join("; ")}` };
	}
	return { outcome: "call", detail: "every condition is true" };
}
