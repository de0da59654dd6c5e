#!/usr/bin/python3
"""Make a CustomResourceDefinition written for current Kubernetes load into 1.20.

The local test control plane is Kubernetes 1.20, whose apiserver rejects the
upstream JobSet CRD (v0.12.0) as it is. Three changes make it load, with the
same meaning for everything 1.20 can check:

  1. drop every `x-kubernetes-validations` key (CEL rules came in 1.23);
  2. drop every `default: ""` (1.20 refuses an empty-string default that does
     not satisfy the field's own schema, e.g. a minLength or an enum);
  3. for every schema with `x-kubernetes-list-map-keys`, add each key that has
     no default (any more) to `items.required`, because 1.20 demands that a
     list-map key be either required or defaulted.

Usage: crd_for_1_20.py INPUT.yaml [OUTPUT.json]   ("-" or nothing = stdin/stdout)

Reads one or more YAML documents and writes JSON: the object itself for one
document, a `v1 List` for several. It needs PyYAML, which Debian's python3-yaml
provides to /usr/bin/python3. It does not touch anything but schemas' keys.
"""

import json
import sys

import yaml

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def strip_unsupported(node):
    """Remove CEL rules and empty-string defaults everywhere below node."""
    if isinstance(node, dict):
        node.pop("x-kubernetes-validations", None)
        if node.get("default") == "":
            del node["default"]
        for value in node.values():
            strip_unsupported(value)
    elif isinstance(node, list):
        for value in node:
            strip_unsupported(value)


def require_undefaulted_list_map_keys(node):
    """Make every list-map key that has no default required in its items."""
    if isinstance(node, dict):
        keys = node.get("x-kubernetes-list-map-keys")
        items = node.get("items")
        if keys and isinstance(items, dict):
            properties = items.get("properties", {})
            required = items.setdefault("required", [])
            for key in keys:
                if "default" not in properties.get(key, {}) and key not in required:
                    required.append(key)
        for value in node.values():
            require_undefaulted_list_map_keys(value)
    elif isinstance(node, list):
        for value in node:
            require_undefaulted_list_map_keys(value)


def transform(document):
    strip_unsupported(document)
    require_undefaulted_list_map_keys(document)
    return document


def main(argv):
    if len(argv) not in (2, 3) or argv[1] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 2
    source = sys.stdin if argv[1] == "-" else open(argv[1], encoding="utf-8")
    with source:
        documents = [d for d in yaml.load_all(source, Loader=Loader) if d is not None]
    if not documents:
        sys.stderr.write("crd_for_1_20.py: no YAML document in %s\n" % argv[1])
        return 1
    documents = [transform(d) for d in documents]
    if len(documents) == 1:
        result = documents[0]
    else:
        result = {"apiVersion": "v1", "kind": "List", "items": documents}
    output_path = argv[2] if len(argv) == 3 else "-"
    sink = sys.stdout if output_path == "-" else open(output_path, "w", encoding="utf-8")
    with sink:
        json.dump(result, sink, separators=(",", ":"))
        sink.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
