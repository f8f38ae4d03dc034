#!/usr/bin/env bash
# make demo: compiles the bundled default model into an artifact and runs it
# with kiln-run on random inputs, printing the outputs' summary and latencies.
set -euo pipefail
build="${1:-build}"
model="${2:-models/exports/gpt2_tiny.onnx}"
demo="$build/demo"
mkdir -p "$demo"

echo "== kilnc $model -o $demo/model.kiln"
"$build/bin/kilnc" "$model" -o "$demo/model.kiln" \
  --dim batch=1:8 --dim sequence=1:256 --dim past_sequence=0:255 \
  --dim total_sequence=1:256
ls -l "$demo/model.kiln"

echo "== kiln-run on batch 1, sequence 16"
flags=$(/usr/bin/python3 bench/make_inputs.py "$model" --batch 1 --sequence 16 \
  --out "$demo/inputs")
# shellcheck disable=SC2086 # flags is a list of --input NAME=FILE pairs
"$build/bin/kiln-run" "$demo/model.kiln" $flags --output-dir "$demo/outputs" \
  --benchmark 20
