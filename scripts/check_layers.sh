#!/usr/bin/env bash
# check_layers.sh: checks that src/ is layered and that the command line uses
# only the public header (docs/design.md, "Layers"). Fails, naming file, line
# and include or call, when
#   - a file in src/ includes a header of a layer above its own, or of another
#     folder of the same layer (the leaves prep and stats);
#   - a file in src/ calls a library function (ax_*) defined in a layer above
#     its own or beside it, but for the calls CALL_EXCEPTIONS lists;
#   - files of src/ call each other in a loop (A calls B and B calls A, or
#     longer), or the headers of src/ include each other in a cycle;
#   - a file of tools/axon includes anything but axon.h and its own folder's
#     headers;
#   - a quoted include names no file of the project (a typo or a stale path).
# The first stage of scripts/test.sh; plain python3, well under a second.
set -euo pipefail
cd "$(dirname "$0")/.."

exec python3 - "$@" <<'EOF'
import os
import re
import sys

# The layers of src/, lowest first: a file may include headers of its own
# folder and of the layers below it, never above. The order is the one the
# includes had when the check came (base below everything, the network in
# core on the backend, the optimizers and the data, parallel on the network).
LAYERS = [
    ["base"],     # errors, memory, random numbers, the clock, atomic writes
    ["io"],       # file formats: json, safetensors, npy
    ["data"],     # the dataset and its loaders
    ["backend"],  # the table of operations; cpu/ and cuda/ fill it
    ["optim"],    # optimizers over flat arrays, through the backend
    ["perf"],     # timers of operations, the machine's peak
    ["core"],     # the network, its passes, files, checkpoints, the training loop
    ["parallel"], # replicas and communicators over ranks and threads
    ["prep", "stats"],  # leaves: nothing in src/ includes them, nor they each other
]

# Includes left as they are, each with its reason. An entry that no longer
# matches an include fails the check, so the list cannot go stale.
# None today: the training loop reaches the replicas through core/reducer.h,
# which parallel/replicas_reducer.c implements. An entry is a pair such as
# ("src/core/file.c", "parallel/header.h") under a comment saying why.
EXCEPTIONS = set()

RANK = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}
SOURCE_EXTENSIONS = (".c", ".h", ".inc", ".cu", ".cuh")
HEADER_EXTENSIONS = (".h", ".inc", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')
PUBLIC = "axon.h"

problems = []
used_exceptions = set()


def files_under(root, extensions):
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders.sort()
        found += [os.path.join(folder, n) for n in sorted(names) if n.endswith(extensions)]
    return found


def includes(path):
    with open(path, encoding="utf-8", errors="replace") as text:
        for number, line in enumerate(text, 1):
            match = INCLUDE.match(line)
            if match:
                yield number, match.group(1), match.group(2)


def resolve(path, kind, target):
    """The project file an include names (a path from the root), or None."""
    here = os.path.normpath(os.path.join(os.path.dirname(path), target))
    if kind == '"' and os.path.isfile(here):
        return here
    in_src = os.path.normpath(os.path.join("src", target))
    if os.path.isfile(in_src) and not in_src.startswith(".."):
        return in_src
    return None


def folder_of(path):
    """src/core/net.h -> core"""
    return path.split("/")[1]


sources = files_under("src", SOURCE_EXTENSIONS)
graph = {}
for path in sources:
    folder = folder_of(path)
    if folder not in RANK:
        problems.append(f"{path}: the folder src/{folder} has no layer in scripts/check_layers.sh")
        continue
    for number, kind, target in includes(path):
        if target == PUBLIC:
            continue
        resolved = resolve(path, kind, target)
        if resolved is None:
            if kind == '"':
                problems.append(f'{path}:{number}: #include "{target}" names no file in src/')
            continue  # a system header
        if path.endswith(HEADER_EXTENSIONS):
            graph.setdefault(path, []).append((resolved, number))
        other = folder_of(resolved)
        if other == folder:
            continue
        if RANK[other] < RANK[folder]:
            continue
        if (path, target) in EXCEPTIONS:
            used_exceptions.add((path, target))
            continue
        where = "above" if RANK[other] > RANK[folder] else "beside"
        problems.append(f'{path}:{number}: #include "{target}": src/{other} is a layer {where} '
                        f"src/{folder}")

for path, target in sorted(EXCEPTIONS - used_exceptions):
    problems.append(f'{path}: the exception for #include "{target}" in scripts/check_layers.sh '
                    "matches no include any more: remove it")

# Cycles among the headers: a depth-first search, reporting each cycle once.
state = {}
stack = []


def visit(node):
    state[node] = "open"
    stack.append(node)
    for target, number in graph.get(node, []):
        if state.get(target) == "open":
            cycle = stack[stack.index(target):] + [target]
            problems.append(f"{node}:{number}: an include cycle among headers: "
                            + " -> ".join(cycle))
        elif target not in state:
            visit(target)
    stack.pop()
    state[node] = "done"


sys.setrecursionlimit(10000)
for header in sorted(graph):
    if header not in state:
        visit(header)

# The command line is a program like any other: axon.h and its own headers.
for path in files_under("tools", (".c", ".h")):
    folder = os.path.dirname(path)
    for number, kind, target in includes(path):
        if target == PUBLIC:
            continue
        own = os.path.normpath(os.path.join(folder, target))
        if kind == '"' and "/" not in target and os.path.isfile(own):
            continue
        if kind == "<" and resolve(path, kind, target) is None:
            continue  # a system header
        problems.append(f'{path}:{number}: #include {kind}{target}{">" if kind == "<" else kind}: '
                        f"{folder} may include only {PUBLIC} and its own folder's headers")

# ---- Calls: the same layers for calls as for includes, and no loops.
# A library function (ax_*, not static) belongs to the file that defines it;
# a call in another file is an edge from the caller's file to it. Fails when
# a file calls a function of a layer above its own (or of a leaf beside it),
# except the calls of CALL_EXCEPTIONS, and when files call each other in a
# loop (A calls B, B calls A; or longer). Comments and strings are ignored;
# functions reached through a table (a pointer) are not calls here.
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
DEFINITION = re.compile(r"^(?!static\b)(?![ \t#])[A-Za-z_][\w \t\*]*?\b(ax_\w+)\s*\(([^;{}()]|\([^;{}()]*\))*\)\s*\{",
                        re.M)
CALL = re.compile(r"\b(ax_\w+)\s*\(")

# Calls up the layers left as they are, each with its reason; an entry that
# matches no call fails the check.
CALL_EXCEPTIONS = {
    # ax_train (the public entry, in the training loop's file) asks the
    # parallel layer for the reducer it trains with: the one call up.
    ("src/core/train.c", "ax_reducer_create"),
    ("src/core/train.c", "ax_reducer_finish"),
}


def code_of(path):
    with open(path, encoding="utf-8", errors="replace") as text:
        return COMMENT.sub(lambda m: " " if m.group(0).startswith("/") else '""', text.read())


code_files = [p for p in files_under("src", (".c", ".cu")) if folder_of(p) in RANK]
texts = {p: code_of(p) for p in code_files}
defined = {}
for path, text in texts.items():
    for match in DEFINITION.finditer(text):
        defined.setdefault(match.group(1), []).append(path)


def owner(name, caller):
    """The file defining name as seen from caller: its own folder's, else the lowest layer's."""
    paths = defined.get(name, [])
    if not paths or caller in paths:
        return None
    same = [p for p in paths if folder_of(p) == folder_of(caller)]
    if same:
        return same[0]
    return min(paths, key=lambda p: RANK[folder_of(p)])


calls = {}
used_call_exceptions = set()
for path, text in texts.items():
    folder = folder_of(path)
    for match in CALL.finditer(text):
        name = match.group(1)
        target = owner(name, path)
        if target is None:
            continue
        calls.setdefault(path, {}).setdefault(target, name)
        other = folder_of(target)
        if other == folder or RANK[other] < RANK[folder]:
            continue
        if (path, name) in CALL_EXCEPTIONS:
            used_call_exceptions.add((path, name))
            continue
        where = "above" if RANK[other] > RANK[folder] else "beside"
        number = text.count("\n", 0, match.start()) + 1
        problems.append(f"{path}:{number}: calls {name} ({target}): src/{other} is a layer {where} "
                        f"src/{folder}")

for path, name in sorted(CALL_EXCEPTIONS - used_call_exceptions):
    problems.append(f"{path}: the call exception for {name} in scripts/check_layers.sh matches no "
                    "call any more: remove it")

# Loops among files (Tarjan's strongly connected components).
index_of, low, on_stack, order, components = {}, {}, set(), [], []


def strongconnect(node):
    index_of[node] = low[node] = len(index_of)
    order.append(node)
    on_stack.add(node)
    for target in calls.get(node, {}):
        if target not in index_of:
            strongconnect(target)
            low[node] = min(low[node], low[target])
        elif target in on_stack:
            low[node] = min(low[node], index_of[target])
    if low[node] == index_of[node]:
        component = []
        while True:
            member = order.pop()
            on_stack.discard(member)
            component.append(member)
            if member == node:
                break
        if len(component) > 1:
            components.append(sorted(component))


for path in sorted(texts):
    if path not in index_of:
        strongconnect(path)
for component in sorted(components):
    links = [f"{a} -> {b} ({calls[a][b]})" for a in component for b in calls.get(a, {})
             if b in component]
    problems.append("files that call each other in a loop: " + "; ".join(links))

if problems:
    print("\n".join(problems), file=sys.stderr)
    print(f"check_layers: {len(problems)} problem(s); the layers are in scripts/check_layers.sh "
          "and docs/design.md", file=sys.stderr)
    sys.exit(1)
print(f"check_layers: {len(sources)} files of src/ in {len(LAYERS)} layers, "
      f"{len(EXCEPTIONS)} include exception(s), {len(CALL_EXCEPTIONS)} call(s) up the layers "
      f"allowed, no call loops among {len(code_files)} files; tools/ includes only {PUBLIC}: ok")
EOF
