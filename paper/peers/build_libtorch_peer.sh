#!/usr/bin/env bash
# Builds paper/peers/libtorch_peer.cc against the libtorch inside a PyPI torch wheel and prints the
# binary's path. Outside Bazel on purpose: the wheel is an optional download (tools/
# install_peers.sh), not part of the offline build, so a clone without it builds and tests as
# usual. The binary is cached in the peers' folder per torch version and source; a rebuild
# happens only when either changes (about a minute of g++).
#   build_libtorch_peer.sh PYTHON     (PYTHON: a python that imports torch)
set -euo pipefail

python="$1"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/libtorch_peer.cc"
dir="${AG_PEERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/autograd-peers}"

read -r torch_dir version abi < <("$python" -c '
import os, torch
print(os.path.dirname(torch.__file__), torch.__version__, int(torch.compiled_with_cxx11_abi()))')
key="$(sha1sum "$src" | cut -c1-12)"
binary="$dir/libtorch_peer-${version}-${key}"
if [[ ! -x "$binary" ]]; then
  mkdir -p "$dir"
  # The wheel's headers require C++20 (g++ 12 has it); the rpath finds its libraries at run time.
  if ! g++ -std=c++20 -O2 -DNDEBUG -D_GLIBCXX_USE_CXX11_ABI="$abi" -w \
      -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
      "$src" -o "$binary.tmp" \
      -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -Wl,--no-as-needed \
      -ltorch -ltorch_cpu -lc10 >&2; then
    echo "build_libtorch_peer: g++ failed against $torch_dir" >&2
    rm -f "$binary.tmp"
    exit 1
  fi
  mv "$binary.tmp" "$binary"
fi
echo "$binary"
