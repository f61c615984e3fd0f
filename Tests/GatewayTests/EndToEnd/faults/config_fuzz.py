#!/usr/bin/env python3
"""Config fuzzer: mutated configuration files through `moya-gateway check`, the loader `serve` runs.

Seeds are the given YAML files. Most cases mutate the parsed tree (a value replaced by one of another type or an
out-of-range one, a key dropped, an unknown key added, a list item duplicated, a map turned into a list); the rest
mutate the text (tokens inserted, lines duplicated, dropped or re-indented). Every file must be accepted (exit 0) or
rejected with exit 1 and one `FILE:LINE: ...` line per problem; an exit by signal (a trap), any other status, or a
line without its place (an unlocated error, or a message broken over lines) is a defect.

Bounded: --cases files. Prints one JSON summary line: {"cases", "accepted", "rejected", "defects", "examples"}; the
files of defects are kept in --dir.
"""
import argparse, copy, json, os, random, re, subprocess, sys

import yaml

SCALARS = [-1, 0, 1, 2 ** 63, 10 ** 30, 1.5, float("inf"), True, None, "", "x", "-5s", "0ms", "1e309", "16EiB",
           "999999PiB", "${MOYA_FUZZ_UNSET}", "${", "/..", "%2e%2e", "http://", "https://[::1", "ftp://h", "{id}",
           "é", "\t", "a\nb", "\u2028", "a" * 300, [], {}, ["x"], {"unknown": 1}]
TOKENS = ["-1", "0", "1e309", "99999999999999999999", "1ms", "-5s", "1KiB", "16EiB", "${X}", "${", "{", "}", "[",
          "]", ":", "- ", "&a", "*a", "!!binary", "~", "null", "\t", "'", '"', "/..", "%2e%2e", "{id}", "nan", ".inf",
          '"a\\nb"', '"\\t"']


def nodes(tree, path=()):
    yield path, tree
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from nodes(value, path + (key,))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from nodes(value, path + (index,))


def parent_of(tree, path):
    for step in path[:-1]:
        tree = tree[step]
    return tree


def mutate_tree(rnd, tree):
    tree = copy.deepcopy(tree)
    for _ in range(rnd.randint(1, 3)):
        candidates = [(p, n) for p, n in nodes(tree) if p]
        if not candidates:
            break
        path, node = rnd.choice(candidates)
        parent, last = parent_of(tree, path), path[-1]
        op = rnd.randint(0, 4)
        if op == 0:
            parent[last] = copy.deepcopy(rnd.choice(SCALARS))
        elif op == 1:
            del parent[last]
        elif op == 2 and isinstance(node, dict):
            node[rnd.choice(["unknown", "Listen", "timeout", "coalesce", "stub", "tls"])] = rnd.choice(SCALARS[:12])
        elif op == 3 and isinstance(parent, list):
            parent.append(copy.deepcopy(node))
        elif op == 4 and isinstance(node, dict):
            parent[last] = [{key: value} for key, value in node.items()]
    return yaml.safe_dump(tree, sort_keys=False)


def mutate_text(rnd, text):
    lines = text.split("\n")
    for _ in range(rnd.randint(1, 4)):
        i = rnd.randrange(len(lines))
        op, line = rnd.randint(0, 4), lines[i]
        if op == 0 and ":" in line:
            lines[i] = line[:line.index(":") + 1] + " " + rnd.choice(TOKENS)
        elif op == 1:
            lines.insert(i, lines[rnd.randrange(len(lines))])
        elif op == 2:
            del lines[i]
        elif op == 3 and line:
            j = rnd.randrange(len(line))
            lines[i] = line[:j] + rnd.choice(TOKENS) + line[j:]
        else:
            lines[i] = " " * rnd.randint(0, 6) + line.lstrip()
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dir", required=True, help="where the mutated files are written (stub files resolve here)")
    parser.add_argument("seeds", nargs="+", help="YAML files to mutate")
    args = parser.parse_args()
    rnd = random.Random(args.seed)
    texts = [open(path).read() for path in args.seeds]
    trees = [yaml.safe_load(text) for text in texts]
    path = os.path.join(args.dir, "fuzzed.yaml")
    located = re.compile(re.escape(path) + r":\d+: ")
    accepted = rejected = 0
    defects, examples = [], []
    env = {key: value for key, value in os.environ.items() if not key.startswith("MOYA_FUZZ")}
    for case in range(args.cases):
        index = rnd.randrange(len(texts))
        text = mutate_tree(rnd, trees[index]) if rnd.random() < 0.7 else mutate_text(rnd, texts[index])
        with open(path, "w") as out:
            out.write(text)
        result = subprocess.run([args.gateway, "check", "--config", path], capture_output=True, text=True,
                                timeout=20, cwd=args.dir, env=env)
        lines = [line for line in result.stderr.split("\n") if line]
        first = lines[0] if lines else ""
        if result.returncode == 0:
            accepted += 1
        elif result.returncode == 1 and lines and all(located.match(line) for line in lines):
            rejected += 1
            if len(examples) < 5:
                examples.append(first[:200])
        else:
            kept = os.path.join(args.dir, f"defect-{case}.yaml")
            with open(kept, "w") as out:
                out.write(text)
            defects.append({"file": kept, "status": result.returncode, "stderr": result.stderr[-300:]})
    print(json.dumps({"cases": args.cases, "accepted": accepted, "rejected": rejected, "defects": defects,
                      "examples": examples}))
    return 0 if not defects else 1


if __name__ == "__main__":
    sys.exit(main())
