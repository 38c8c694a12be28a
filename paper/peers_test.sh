#!/usr/bin/env bash
# The peers end to end (manual: needs `tools/setup.sh --peers` first, and HOME for the peers'
# folder): `bazel test //paper:peers_test --test_env=HOME`. Runs reproduce --quick --peers and
# checks that every peer measured every workload it runs, and two values (PyTorch saves 12 bytes
# for ((x + 2) * m).sum(): m only; its RNN of issue 44 saves the bytes ours does; its pack calls
# of issue 45's forwards are ours with guarded saves). Fails when a peer is missing.
set -euo pipefail
out="${TEST_TMPDIR:-$(mktemp -d)}/results"
bin="paper/reproduce"
[[ -x "$bin" ]] || bin="$(dirname "$0")/reproduce"
"$bin" --quick --peers --no-callgrind --no-plots --out "$out" >"$out.log" 2>&1 ||
  { cat "$out.log"; echo "reproduce failed"; exit 1; }

fail=0
has() {  # has WORKLOAD VARIANT-PREFIX METRIC-PREFIX
  if ! awk -F'\t' -v w="$1" -v v="$2" -v m="$3" \
      '$1 == w && index($2, v) == 1 && index($3, m) == 1 && $4 == $4 + 0 { found = 1 }
       END { exit !found }' "$out/figures.tsv"; then
    echo "FAILED: no figure for $1 | $2... | $3..."
    fail=1
  fi
}
has unrolled_loop "PyTorch " "time per 100 steps@step=200"
has tiny_graph "PyTorch " "time per call"
has tiny_graph "libtorch " "time per call"
has scalar_chain "libtorch " "time per call"
for w in hessian_relu hessian_tanh; do
  has "$w" "PyTorch" "step time, with final backward"
  for impl in "autograd" "torch.func.hessian" "torch.func jvp(grad)"; do
    grep -qF "$impl"$'\tstep time, no final backward\t' "$out/figures.tsv" ||
      { echo "FAILED: no $impl figure"; fail=1; }
  done
  for impl in "jax.hessian, jit" "jax.hessian, no jit" "jvp(grad), jit"; do
    grep -qF "$impl"$'\tstep time, with final backward\t' "$out/figures.tsv" ||
      { echo "FAILED: no JAX $impl figure"; fail=1; }
  done
done
has create_autodiff_subgraphs "PyTorch " "pass time@nodes=1000"
grep -qP '^dropout_memory\tPyTorch [^\t]*\tbytes saved for backward\t12\tB\t' "$out/figures.tsv" ||
  { echo "FAILED: PyTorch's saved bytes are not 12"; fail=1; }
for w in rnn_time_slices join_cat join_stack join_split_cat join_unbind_stack; do
  has "$w" "PyTorch " "step time [quiet]"
  has "$w" "PyTorch " "gradient checksum"
done
# Issue 44's RNN: PyTorch's forward saves what ours does, byte for byte (each save counted).
awk -F'\t' '$1 == "rnn_time_slices" && $3 == "bytes saved for backward" { v[$2 ~ /^PyTorch/] = $4 }
     END { exit !(0 in v && 1 in v && v[0] == v[1]) }' "$out/figures.tsv" ||
  { echo "FAILED: the RNN's bytes saved differ from PyTorch's"; fail=1; }
# Issue 45: the peers' steps (libtorch's hooked chain and no-hook rows too), and PyTorch's pack
# calls equal to ours with guarded saves, call for call.
has residual_mlp "PyTorch " "step time [quiet]"
has hooked_chain "PyTorch " "step time [quiet]"
has hooked_chain "libtorch " "step time [quiet]"
has no_hooks_tiny_graph "libtorch " "time per call"
has no_hooks_scalar_chain "libtorch " "time per call"
has no_hooks_hessian_tanh_final_backward "PyTorch " "step time [quiet]"
for w in pack_dropout pack_residual_mlp pack_hessian_mlp; do
  awk -F'\t' -v w="$w" '$1 == w && $3 == "pack calls" { v[$2 ~ /^PyTorch/ ? "p" : $2] = $4 }
       END { exit !("p" in v && v["p"] == v["guard_saves on"]) }' "$out/figures.tsv" ||
    { echo "FAILED: PyTorch's pack calls for $w differ from ours with guarded saves"; fail=1; }
done
# Issue 46: torch.func's jvp(grad), forward_ad's jvp and the forward alone, jacfwd and jacrev.
for w in forward_hvp_relu forward_hvp_tanh; do
  has "$w" "PyTorch " "step time [quiet]"
done
has forward_jvp_tanh "PyTorch " "step time [quiet]"
has jacobian_16 "PyTorch " "step time [quiet]"
grep -q "MKL\|OpenBLAS" "$out/seed_001_needs_input_grad.md" ||
  { echo "FAILED: the report does not name PyTorch's BLAS"; fail=1; }
if [[ $fail -ne 0 ]]; then
  grep '^peers:' "$out.log"
  exit 1
fi
echo "every peer measured every workload it runs"
