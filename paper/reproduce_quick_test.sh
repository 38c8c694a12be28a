#!/usr/bin/env bash
# CI smoke test of `reproduce --quick --busy bursty,spin`: every table and every workload's figures
# are produced, quiet and under both competing loads. It never checks a timing. Quick runs skip
# the peers (and say so); it passes with or without valgrind installed.
set -euo pipefail

out="${TEST_TMPDIR:-$(mktemp -d)}/results"
bin="paper/reproduce"
[[ -x "$bin" ]] || bin="$(dirname "$0")/reproduce"

"$bin" --quick --busy bursty,spin --out "$out" > "$out.log" 2>&1 || { cat "$out.log"; echo "reproduce failed"; exit 1; }

fail=0
check() {  # check DESCRIPTION COMMAND...
  if ! "${@:2}"; then
    echo "FAILED: $1"
    fail=1
  fi
}
for f in figures.tsv seed_000_topological_nr.md seed_001_needs_input_grad.md \
         seed_002_alias_db.md seed_003_guarded_saves.md issue_044_views.md \
         issue_045_hooks.md issue_046_forward.md; do
  check "$f written and non-empty" test -s "$out/$f"
done
check "figures.tsv header" grep -q $'^workload\tvariant\tmetric\tvalue\tunit\tdevice$' "$out/figures.tsv"
# Every workload has rows with off and on variants.
for row in $'unrolled_loop\tpruning off\tlast/first block' $'unrolled_loop\tpruning on\tlast/first block' \
           $'tiny_graph\tpruning off\ttime per call' $'tiny_graph\tpruning on\ttime per call' \
           $'scalar_chain\tpruning on\ttime per call' \
           $'hessian_relu\tper-call off\tstep time, no final backward' \
           $'hessian_tanh\tper-call on\tstep time, with final backward' \
           $'hessian_relu\tours\tstep time, with final backward' \
           $'hessian_relu\tours\tproducts written as zeros, with final backward' \
           $'hessian_memory\tall on\tpeak bytes' $'hessian_memory\tall off\tpeak bytes' \
           $'dropout_memory\tguard_saves off\textra live bytes' \
           $'dropout_memory\tguard_saves on\textra live bytes' \
           $'create_autodiff_subgraphs\trebuild\tpass time@nodes=' \
           $'create_autodiff_subgraphs\tincremental\tpass time@nodes=' \
           $'unrolled_loop\tpruning on\tmedian block [busy: bursty]' \
           $'tiny_graph\tpruning on\ttime per call [busy: spin]' \
           $'scalar_chain\tpruning on\ttime per call [busy: bursty]' \
           $'hessian_relu\tours\tstep time, no final backward [busy: spin]' \
           $'hessian_tanh\tours\tstep time, with final backward [busy: bursty]' \
           $'hessian_tanh\tours\tstep time at one thread each, with final backward' \
           $'hessian_relu\tours\tcores used, no final backward [busy: spin]' \
           $'rnn_time_slices\tours\tstep time [quiet]' \
           $'rnn_time_slices\tours\tstep time [busy: bursty]' \
           $'rnn_time_slices\tours\tstep time at one thread each' \
           $'rnn_time_slices\tours\tbytes saved for backward' \
           $'rnn_time_slices\tours\tgradient checksum' \
           $'join_cat\tours\tstep time [quiet]' $'join_stack\tours\tstep time [busy: spin]' \
           $'join_split_cat\tours\tstep time [quiet]' \
           $'join_unbind_stack\tours\tgradient checksum' \
           $'residual_mlp\tours plain\tstep time [quiet]' \
           $'residual_mlp\tours checkpointed\tstep time [quiet]' \
           $'residual_mlp\tours checkpointed\tpeak bytes' \
           $'hooked_chain\tours hooked\tstep time [quiet]' \
           $'hooked_chain\tours without hooks\tstep time [quiet]' \
           $'hooked_chain\tours hooked\tstep time [busy: bursty]' \
           $'residual_mlp\tours checkpointed\tstep time [busy: spin]' \
           $'no_hooks_tiny_graph\tpruning on\ttime per call [busy: spin]' \
           $'no_hooks_scalar_chain\tpruning on\ttime per call [quiet]' \
           $'no_hooks_hessian_relu\tours\tstep time [quiet]' \
           $'no_hooks_hessian_tanh_final_backward\tours\tstep time [busy: bursty]' \
           $'pack_dropout\tguard_saves on\tpack calls' \
           $'pack_residual_mlp\tguard_saves off\tpack calls' \
           $'pack_hessian_mlp\tguard_saves on\tbytes packed' \
           $'forward_hvp_relu\tours forward-over-reverse\tstep time [quiet]' \
           $'forward_hvp_tanh\tours nested grads\tstep time [busy: spin]' \
           $'forward_jvp_tanh\tours jvp\tstep time [quiet]' \
           $'forward_jvp_tanh\tours forward\tstep time [busy: bursty]' \
           $'jacobian_16\tours jacfwd\tstep time [quiet]' \
           $'jacobian_16\tours jacrev\tstep time [busy: spin]'; do
  check "figures.tsv has a row starting '${row//$'\t'/ | }'" grep -qF -- "$row" "$out/figures.tsv"
done
# Each table is a Markdown table with the published figures (or the peers) beside ours.
for f in "$out"/seed_*.md "$out/issue_044_views.md" "$out/issue_045_hooks.md" \
         "$out/issue_046_forward.md"; do
  check "$(basename "$f") has a table" grep -q '^| --- |' "$f"
  check "$(basename "$f") names the peer or says it is missing" grep -q -E 'PyTorch' "$f"
  check "$(basename "$f") says the peers were skipped" grep -q 'Peers: skipped in --quick runs' "$f"
done
# The busy conditions appear in the comparison tables, and each load was started and stopped.
check "seed 001 has busy rows" grep -q '| busy: spin |' "$out/seed_001_needs_input_grad.md"
check "seed 000 has busy rows" grep -q '| busy: bursty |' "$out/seed_000_topological_nr.md"
check "issue 44 has busy rows" grep -q '| busy: spin |' "$out/issue_044_views.md"
check "issue 46 has busy rows" grep -q '| busy: spin |' "$out/issue_046_forward.md"
check "load generators started" test "$(grep -c '^  load: busy: ' "$out.log")" -ge 8
check "load generators stopped with a report" \
  test "$(grep -c -E '^load_generator: (bursty|spin): [0-9]+ ' "$out.log")" -ge 8
# Every row has six tab-separated columns and a numeric value.
check "figures.tsv rows well-formed" awk -F'\t' 'NR > 1 && (NF != 6 || $4 !~ /^-?[0-9.e+-]+$|^nan$/) { bad = 1 } END { exit bad }' "$out/figures.tsv"
# The cores our step got: CPU time of all our threads over the step's time, so above 0 and at
# most the CPUs there are (a tenth over for the clocks' reading order).
cpus=$(nproc)
check "cores used within (0, $cpus]" awk -F'\t' -v cpus="$cpus" '$3 ~ /^cores used/ { n++; if (!($4 > 0 && $4 <= cpus * 1.1)) bad = 1 } END { exit bad || n != 12 }' "$out/figures.tsv"
check "seed 001 has the one-core table" grep -q '^#### One core each' "$out/seed_001_needs_input_grad.md"
# Progress lines for every workload.
check "progress lines" test "$(grep -c '^\[reproduce [0-9]/9\]' "$out.log")" -eq 9

if [[ $fail -ne 0 ]]; then
  echo "--- reproduce output ---"
  cat "$out.log"
  exit 1
fi
echo "reproduce --quick produced $(($(wc -l < "$out/figures.tsv") - 1)) figures and 7 tables"
