#!/usr/bin/env bash
# check_layers.sh: checks that src/ is layered and that the command line uses
# only the public header (docs/design.md, "Layers"). Fails, naming file, line
# and include, when
#   - a file in src/ includes a header of a layer above its own, or of another
#     folder of the same layer (the leaves prep and stats);
#   - the headers of src/ include each other in a cycle;
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

if problems:
    print("\n".join(problems), file=sys.stderr)
    print(f"check_layers: {len(problems)} problem(s); the layers are in scripts/check_layers.sh "
          "and docs/design.md", file=sys.stderr)
    sys.exit(1)
print(f"check_layers: {len(sources)} files of src/ in {len(LAYERS)} layers, "
      f"{len(EXCEPTIONS)} exception(s); tools/ includes only {PUBLIC}: ok")
EOF
