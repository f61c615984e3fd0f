#!/usr/bin/env python3
"""Checks that every public declaration of a module is documented in full, from the symbol graphs DocC was given.

Usage: check-doc-comments.py SYMBOL_GRAPH_DIR MODULE

A declaration of the module's own sources fails when it has no `///` comment; a function, initializer, subscript or
operator also fails when one of its parameters has no `- Parameter name:` (or `- name:` under `- Parameters:`) line,
when it returns a value and has no `- Returns:`, or when it throws and has no `- Throws:`. Members a type inherits
from the standard library or Foundation (no source location) are not the module's to document. Prints one line per
problem, `FILE:LINE: symbol: what is missing`, and exits 1 when there is any.
"""
import glob
import json
import os
import re
import sys

CALLABLE_KINDS = {"swift.func", "swift.func.op", "swift.method", "swift.type.method", "swift.init",
                  "swift.subscript", "swift.type.subscript"}


def documents_parameter(text, names):
    for name in names:
        if re.search(r"-\s*[Pp]arameter\s+" + re.escape(name) + r"\s*:", text):
            return True
        if re.search(r"^\s*-\s*" + re.escape(name) + r"\s*:", text, re.M):
            return True
    return False


def problems_in(graph_file, module):
    problems = []
    with open(graph_file) as f:
        graph = json.load(f)
    for symbol in graph["symbols"]:
        kind = symbol["kind"]["identifier"]
        location = symbol.get("location", {})
        uri = location.get("uri", "")
        if kind == "swift.extension" or "/Sources/%s/" % module not in uri:
            continue
        where = "%s:%d" % (uri.split("/Sources/", 1)[1], location.get("position", {}).get("line", -1) + 1)
        name = ".".join(symbol["pathComponents"])
        comment = symbol.get("docComment")
        text = "\n".join(line["text"] for line in (comment or {}).get("lines", []))
        if not text.strip() or (comment or {}).get("module", module) != module:
            problems.append("%s: %s: no documentation comment" % (where, name))
            continue
        if kind not in CALLABLE_KINDS:
            continue
        signature = symbol.get("functionSignature", {})
        for parameter in signature.get("parameters", []):
            names = {parameter["name"], parameter.get("internalName", parameter["name"])} - {"_"}
            if names and not documents_parameter(text, names):
                problems.append("%s: %s: parameter '%s' not documented" % (where, name, parameter["name"]))
        returns = "".join(fragment["spelling"] for fragment in signature.get("returns", [])).strip()
        if kind != "swift.init" and returns not in ("", "Void", "()") and not re.search(r"-\s*[Rr]eturns\s*:", text):
            problems.append("%s: %s: return value not documented" % (where, name))
        declaration = "".join(fragment["spelling"] for fragment in symbol.get("declarationFragments", []))
        if re.search(r"\b(throws|rethrows)\b", declaration) and not re.search(r"-\s*[Tt]hrows\s*:", text):
            problems.append("%s: %s: errors not documented (- Throws:)" % (where, name))
    return problems


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    directory, module = sys.argv[1], sys.argv[2]
    graphs = glob.glob(os.path.join(directory, "%s.symbols.json" % module))
    graphs += glob.glob(os.path.join(directory, "%s@*.symbols.json" % module))
    if not graphs:
        sys.exit("check-doc-comments: no symbol graph of %s in %s" % (module, directory))
    problems = sorted(set(p for graph in graphs for p in problems_in(graph, module)))
    for problem in problems:
        print(problem)
    if problems:
        print("check-doc-comments: %d public declarations of %s are not documented in full" % (len(problems), module))
        sys.exit(1)
    print("check-doc-comments: every public declaration of %s is documented in full" % module)


if __name__ == "__main__":
    main()
