#!/usr/bin/env bash
# Runs the commands README.md shows, as written. Every ```sh block that
# follows a `<!-- readme-test -->` line runs in a scratch directory in which
# ./build/mxpack is the binary under test (a failing line fails the test).
# The other ```sh blocks are the set-up commands, which CI itself runs
# (`bash scripts/run.sh test`) and the Python install, which the `python` label
# runs; any further block must be marked, so no README command goes untested.
# Usage: readme_test.sh MXPACK README.md
set -u
MX="$(realpath "$1")"; README="$(realpath "$2")"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
mkdir -p "$T/build" && ln -s "$MX" "$T/build/mxpack"
python3 - "$README" "$T" <<'PY' || exit 1
import re, sys
readme, tmp = sys.argv[1], sys.argv[2]
lines = open(readme).read().split("\n")
known = {  # blocks run elsewhere (see the comment above)
    "bash scripts/run.sh demo", "bash scripts/run.sh test",
    "python3 -m venv .venv && . .venv/bin/activate && pip install .",
}
blocks, i, marked = [], 0, False
while i < len(lines):
    if lines[i].strip() == "<!-- readme-test -->":
        marked = True
    elif lines[i].startswith("```sh"):
        j = i + 1
        while not lines[j].startswith("```"):
            j += 1
        body = lines[i + 1:j]
        cmds = [re.sub(r"\s+#.*$", "", l).strip() for l in body]
        cmds = [c for c in cmds if c]
        if marked:
            blocks.append(cmds)
        elif not all(c in known for c in cmds):
            sys.exit("README.md line %d: a ```sh block that is neither marked "
                     "<!-- readme-test --> nor a known set-up command" % (i + 1))
        marked, i = False, j
    i += 1
if not blocks:
    sys.exit("README.md has no <!-- readme-test --> block")
with open(tmp + "/run.sh", "w") as f:
    f.write("set -euo pipefail\n")
    for b in blocks:
        for c in b:
            f.write("echo '+ %s'\n%s\n" % (c.replace("'", "'\\''"), c))
PY
cd "$T" && bash run.sh >"$T/log" 2>&1
rc=$?
if [ $rc -ne 0 ]; then cat "$T/log"; echo "readme_test: a README command failed (exit $rc)"; exit 1; fi
echo "readme_test: $(grep -c '^+ ' "$T/log") README commands ran"
