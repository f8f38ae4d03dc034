#!/usr/bin/env node
// Greedy generation over ONNX Runtime, as a user of ORT batches it today:
// the peer of Kiln's generation engine in bench/run.py --suite engine.
//
//   node generate_ort.js MODEL.onnx --requests FILE.json [--batch N]
//                        [--threads N]
//
// FILE.json is {"requests": [{"prompt_ids": [...], "max_tokens": N}, ...]},
// the optimum KV-cache interface's model (input_ids, attention_mask,
// position_ids, past_key_values.N.key/.value -> logits, present.N.*).
// Requests run in static batches of --batch (default 32) in file order, as
// Hugging Face's generate runs a batch: prompts padded on the left (the
// attention mask hides the padding, positions count real tokens only), one
// step for all rows until the batch's longest output is done, each step's
// presents fed back as the next past. Prints one JSON line:
//   {"output_tokens", "seconds", "output_tokens_per_s", "outputs": [[ids]...]}
// where output_tokens counts each request's own max_tokens (the rows that
// finished early and keep stepping are not counted).
'use strict';

const fs = require('fs');

function fail(message) {
  process.stderr.write(`generate_ort: error: ${message}\n`);
  process.exit(1);
}

function parseArgs(argv) {
  const args = { model: null, requests: null, batch: 32, threads: 0 };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) fail(`${arg} expects a value`);
      return argv[++i];
    };
    const count = (min) => {
      const text = value();
      if (!/^\d+$/.test(text) || Number(text) < min) fail(`${arg} expects an integer >= ${min}, got '${text}'`);
      return Number(text);
    };
    if (arg === '--requests') args.requests = value();
    else if (arg === '--batch') args.batch = count(1);
    else if (arg === '--threads') args.threads = count(0);
    else if (arg.startsWith('--')) fail(`unknown option '${arg}'`);
    else if (args.model === null) args.model = arg;
    else fail(`unexpected argument '${arg}'`);
  }
  if (args.model === null || args.requests === null) fail('usage: generate_ort.js MODEL.onnx --requests FILE.json [--batch N] [--threads N]');
  return args;
}

function argmaxRow(data, offset, width) {
  let best = 0;
  for (let j = 1; j < width; ++j) if (data[offset + j] > data[offset + best]) best = j;
  return best;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const ort = require('onnxruntime-node');
  const requests = JSON.parse(fs.readFileSync(args.requests, 'utf8')).requests;
  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    logSeverityLevel: 4,
  });
  const pasts = session.inputMetadata.filter((m) => m.name.startsWith('past_key_values.'));
  if (pasts.length === 0) fail(`${args.model} has no past_key_values inputs`);
  const presentOf = (name) => 'present.' + name.slice('past_key_values.'.length);

  const outputs = requests.map(() => []);
  let outputTokens = 0;
  const start = process.hrtime.bigint();
  for (let first = 0; first < requests.length; first += args.batch) {
    const batch = requests.slice(first, first + args.batch);
    const rows = batch.length;
    const promptLen = Math.max(...batch.map((r) => r.prompt_ids.length));
    const steps = Math.max(...batch.map((r) => r.max_tokens));
    // The prefill: prompts right-aligned, the padding masked.
    let ids = new BigInt64Array(rows * promptLen);
    let positions = new BigInt64Array(rows * promptLen);
    let mask = new BigInt64Array(rows * promptLen);
    const lengths = batch.map((r) => r.prompt_ids.length);
    batch.forEach((r, b) => {
      const pad = promptLen - r.prompt_ids.length;
      r.prompt_ids.forEach((id, t) => {
        ids[b * promptLen + pad + t] = BigInt(id);
        positions[b * promptLen + pad + t] = BigInt(t);
        mask[b * promptLen + pad + t] = 1n;
      });
    });
    let newTokens = promptLen;
    let total = promptLen;
    const feeds = {};
    for (const p of pasts)
      feeds[p.name] = new ort.Tensor('float32', new Float32Array(0), [rows, p.shape[1], 0, p.shape[3]]);
    for (let step = 0; step < steps; ++step) {
      feeds.input_ids = new ort.Tensor('int64', ids, [rows, newTokens]);
      feeds.position_ids = new ort.Tensor('int64', positions, [rows, newTokens]);
      feeds.attention_mask = new ort.Tensor('int64', mask, [rows, total]);
      const result = await session.run(feeds);
      const logits = result.logits;
      const vocab = logits.dims[2];
      const next = new BigInt64Array(rows);
      for (let b = 0; b < rows; ++b) {
        const token = argmaxRow(logits.data, (b * newTokens + newTokens - 1) * vocab, vocab);
        next[b] = BigInt(token);
        if (step < batch[b].max_tokens) outputs[first + b].push(token);
      }
      for (const p of pasts) feeds[p.name] = result[presentOf(p.name)];
      ids = next;
      positions = new BigInt64Array(rows);
      for (let b = 0; b < rows; ++b) positions[b] = BigInt(lengths[b] + step);
      const grown = new BigInt64Array(rows * (total + 1));
      for (let b = 0; b < rows; ++b) {
        grown.set(mask.subarray(b * total, (b + 1) * total), b * (total + 1));
        grown[b * (total + 1) + total] = 1n;
      }
      mask = grown;
      newTokens = 1;
      total += 1;
    }
    outputTokens += batch.reduce((sum, r) => sum + r.max_tokens, 0);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  process.stdout.write(JSON.stringify({
    output_tokens: outputTokens, seconds, output_tokens_per_s: outputTokens / seconds, outputs,
  }) + '\n');
}

main().catch((e) => fail(e.message));
