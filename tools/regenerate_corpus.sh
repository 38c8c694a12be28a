#!/usr/bin/env bash
# Regenerates the conformance corpus (proptests/conformance/corpus/: 2000 programs from seed 1 and
# the hand-written programs/*.txt, with the records PyTorch wrote for them), then runs
# //proptests/conformance:corpus_test on it, which prints the corpus' counts (programs, views,
# writes through views, numbers compared, deviations used) and fails on any mismatch.
#   tools/regenerate_corpus.sh [--python PY] [EXPORT FLAGS...]
#   tools/regenerate_corpus.sh --hooks [--python PY]   corpus/hooks.txt alone: 300 programs with
#       hooks from seed 45 and the hand-written programs/hooks/*.txt (Note [Conformance hooks],
#       proptests/conformance/program.h); about 5 minutes
#   tools/regenerate_corpus.sh --forward [--python PY]   corpus/forward.txt alone: forward-mode
#       programs (dual levels, make_dual/unpack_dual, torch.func transforms) from seed 46 and the
#       hand-written programs/forward/*.txt (Note [Conformance forward mode], program.h)
# PY: $AG_PEER_PYTHON, else the peers' venv (tools/setup.sh --peers), else python3. Takes about
# 20 minutes on 2 cores. Rerun it whenever the generator, the scripts' runtime or the engine's
# semantics change; commit the corpus with the change.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

hooks=()
if [[ "${1:-}" == "--hooks" ]]; then
  hooks=(--hooks --seed 45 --programs 300)
  shift
elif [[ "${1:-}" == "--forward" ]]; then
  hooks=(--forward --seed 46 --programs 300)
  shift
fi

python="${AG_PEER_PYTHON:-}"
if [[ -z "$python" ]]; then
  venv="${AG_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autograd-peers}/venv/bin/python"
  if [[ -x "$venv" ]]; then python="$venv"; else python=python3; fi
fi
if [[ "${1:-}" == "--python" ]]; then
  python="$2"
  shift 2
fi
bazel run -c opt //proptests/conformance:export -- --write --python "$python" "${hooks[@]}" "$@"
bazel test //proptests/conformance:corpus_test --test_output=all
