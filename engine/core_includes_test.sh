#!/usr/bin/env bash
# The engine core (the files of //engine:core under engine/) includes no ops/ header but through
# engine/engine_ops.h's declarations (Note [The engine's ops]), and nothing of engine/jit: the
# JIT reaches the backward pass only through engine/slot_masks.h. Its arguments are the core's
# files.
set -euo pipefail
status=0
for f in "$@"; do
  if grep -nE '^#include "(ops|engine/jit)/' "$f"; then
    echo "core_includes_test: $f includes ops/ or engine/jit/ (see engine/engine_ops.h)" >&2
    status=1
  fi
done
[[ $# -gt 0 ]] || { echo "core_includes_test: no files given" >&2; exit 1; }
exit $status
