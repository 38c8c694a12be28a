#!/usr/bin/env bash
# The findings catalogue's scripts are reports a maintainer can run (issue 47): each is
# `import torch` and at most 10 lines besides (blank lines and comments aside), imports nothing
# else, is named in paper/results/foreign_findings.md, and every script the catalogue names
# exists. Running them needs PyTorch: tools/rerun_foreign_findings.sh.
set -euo pipefail
dir=paper/results/foreign_findings
catalogue=paper/results/foreign_findings.md
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

shopt -s nullglob
scripts=("$dir"/*.py)
((${#scripts[@]} > 0)) || fail "no scripts in $dir"
for f in "${scripts[@]}"; do
  name="$(basename "$f")"
  [[ "$(head -n1 "$f")" == "import torch" ]] || fail "$name: the first line is not 'import torch'"
  others="$(grep -E '^\s*(import|from)\s' "$f" | grep -vx 'import torch' || true)"
  [[ -z "$others" ]] || fail "$name imports more than torch: $others"
  lines="$(grep -vE '^\s*(#|$)' "$f" | grep -vxc 'import torch' || true)"
  ((lines <= 10)) || fail "$name: $lines lines besides the import (at most 10)"
  grep -q "foreign_findings/$name" "$catalogue" || fail "$name is not named in $catalogue"
done
while read -r named; do
  [[ -f "paper/results/$named" ]] || fail "$catalogue names $named, which does not exist"
done < <(grep -oE 'foreign_findings/[A-Za-z0-9_]+\.py' "$catalogue" | sort -u)
echo "${#scripts[@]} scripts checked, $failures failures"
((failures == 0))
