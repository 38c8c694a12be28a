#!/usr/bin/env bash
# Checks that every C++ and CUDA source in git is formatted as .clang-format says (clang-format
# from tools/setup.sh). Prints the files that are not and exits 1 if there are any; fix them
# with `clang-format -i FILE...`. Run by .ci/run as one test case.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mapfile -t sources < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
unformatted=()
for f in "${sources[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
if ((${#unformatted[@]})); then
  echo "not formatted (clang-format -i to fix):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
echo "${#sources[@]} sources formatted"
