#!/bin/sh
# A stand-in peer for harness_test, speaking paper/peers/common.py's protocol:
#   echo V...  answers ok V...;  fail  answers error;  hang  never answers
#   fake_peer.sh unavailable  says it cannot run here
if [ "$1" = unavailable ]; then
  printf 'unavailable\tno such library here\n'
  exit 3
fi
printf 'peer\tFake 1.0 (test peer), OMP_NUM_THREADS=%s\n' "$OMP_NUM_THREADS"
echo ready
while IFS= read -r line; do
  set -- $line
  case "$1" in
    echo) shift; printf 'ok'; for v in "$@"; do printf '\t%s' "$v"; done; printf '\n' ;;
    fail) printf 'error\tasked to fail\n' ;;
    hang) exec sleep 30 ;;
    quit) exit 0 ;;
    *) printf 'error\tunknown task %s\n' "$1" ;;
  esac
done
