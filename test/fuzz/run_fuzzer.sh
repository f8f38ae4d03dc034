#!/bin/sh
# Runs the importer's libFuzzer target for SECONDS from the seed models, with
# a fresh corpus in WORK_DIR. Exits non-zero on a crash, a sanitizer report,
# a leak or an input that runs past 30 s; the input is saved under
# WORK_DIR/crashes/ to become a regression test in test/fuzz/regressions/.
# KILN_FUZZ_SEED fixes libFuzzer's random seed (0, the default, picks one).
# usage: run_fuzzer.sh FUZZER SECONDS WORK_DIR SEED_DIR...
set -eu
fuzzer=$1
seconds=$2
work=$3
shift 3
rm -rf "$work/corpus"
mkdir -p "$work/corpus" "$work/crashes"
exec "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
  -max_len=1048576 -print_final_stats=1 -seed="${KILN_FUZZ_SEED:-0}" -artifact_prefix="$work/crashes/" \
  "$work/corpus" "$@"
