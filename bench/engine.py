#!/usr/bin/env python3
"""The generation engine's serving benchmark, side by side in one run:

- kiln-bench-throughput with continuous batching, on the paged build
  (kilnc --kv-cache=paged: the attention reads the engine's blocks) and on
  the export's dense interface (each step gathers the pasts from the
  blocks), and with static batching on the paged build in the same KV bytes
  (the baseline that reserves every sequence's longest KV and runs a batch
  to its end);
- ONNX Runtime through bench/ort/generate_ort.js: the same requests, greedy,
  in static batches of --ort-batch with left padding, as a user of ORT
  batches them today;
- a decode-only step of the engine at batch 32 (both builds) against a
  batch-32 step of the plain artifact (kiln-run, past 512), held against the step's
  floor: the bytes it must move and the FLOPs it must do (bench/run.py's
  step_cost, for the models export.py makes) at the read bandwidth and FMA
  peak kiln-roofline measures before and after (the highest stands).

--kv-dtype f16|bf16 adds the paged build with a 16-bit pool (kilnc
--kv-dtype) as a contender in the same KV bytes, and its decode-only step.

--quantize MODE (and --quantize-lm-head) builds both artifacts quantized, as
kilnc does with those options, and holds the decode step against that
build's floor (bench/run.py's variants: int8, int4, w8a8, "_head").

Requests: --num-prompts random prompts of --input-len tokens and outputs of
--output-len tokens (uniform, seed 0), written to WORK/requests.json so that
every contender runs the same ones. The KV pool holds --kv-seqs sequences
of the longest request (at least one of the model's longest, 1024
tokens). Prints a table and writes WORK/engine.json.

    /usr/bin/python3 bench/engine.py                       # llama_medium
    /usr/bin/python3 bench/engine.py --model llama_tiny --smoke
"""
import argparse
import json
import os
import sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "bin")


# kilnc's --quantize modes and the names bench/run.py's step_cost knows
# their builds by.
QUANTIZED_VARIANTS = {"int8-weight": "int8", "int4-weight": "int4", "int8-dynamic": "w8a8"}

def kv_bytes_per_token(model_path):
    """Every layer's key and value rows of one token, f32."""
    model = onnx.load(model_path, load_external_data=False)
    total = 0
    for value in model.graph.input:
        if value.name.startswith("past_key_values."):
            dims = value.type.tensor_type.shape.dim
            total += dims[1].dim_value * dims[3].dim_value * 4
    return total


def vocab_size(model_path):
    model = onnx.load(model_path, load_external_data=False)
    logits = next(o for o in model.graph.output if o.name == "logits")
    return logits.type.tensor_type.shape.dim[2].dim_value


def parse_range(text):
    low, high = (int(x) for x in text.split(":"))
    return low, high


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="llama_medium")
    parser.add_argument("--num-prompts", type=int, default=64)
    parser.add_argument("--input-len", default="32:512")
    parser.add_argument("--output-len", default="16:256")
    parser.add_argument("--kv-seqs", type=int, default=8,
                        help="the KV pool holds this many sequences of the longest request")
    parser.add_argument("--ort-batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--kilnc", default=os.path.join(BUILD, "kilnc"))
    parser.add_argument("--kiln-run", default=os.path.join(BUILD, "kiln-run"))
    parser.add_argument("--throughput", default=os.path.join(BUILD, "kiln-bench-throughput"))
    parser.add_argument("--roofline", default=os.path.join(BUILD, "kiln-roofline"))
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build", "bench_engine"))
    parser.add_argument("--quantize", choices=sorted(QUANTIZED_VARIANTS),
                        help="build both artifacts quantized (kilnc --quantize)")
    parser.add_argument("--quantize-lm-head", action="store_true",
                        help="with --quantize, quantize the LM head too")
    parser.add_argument("--kv-dtype", choices=["f16", "bf16"],
                        help="also run a paged build whose pool stores 16-bit keys and values")
    parser.add_argument("--smoke", action="store_true",
                        help="a few short requests: the benchmark runs, no figures")
    args = parser.parse_args()
    if args.quantize_lm_head and not args.quantize:
        parser.error("--quantize-lm-head needs --quantize")
    quantization = ([f"--quantize={args.quantize}"] if args.quantize else []) + (
        ["--quantize-lm-head"] if args.quantize_lm_head else [])
    variant = (QUANTIZED_VARIANTS[args.quantize] + ("_head" if args.quantize_lm_head else "")
               if args.quantize else "fused")
    if args.smoke:
        args.num_prompts, args.input_len, args.output_len = 6, "4:24", "2:12"
    os.makedirs(args.work_dir, exist_ok=True)

    model_path = run.model_path(args.model, args.work_dir)
    artifact = os.path.join(args.work_dir, f"{args.model}.engine.kiln")
    paged = os.path.join(args.work_dir, f"{args.model}.paged.kiln")
    max_len = 1024
    bounds = ["--dim=batch=1:32", "--dim=sequence=1:512", f"--dim=total_sequence=1:{max_len}"]
    harness.run_command([args.kilnc, model_path, "-o", artifact, *bounds,
                         f"--dim=past_sequence=0:{max_len - 1}", *quantization])
    harness.run_command([args.kilnc, model_path, "-o", paged, "--kv-cache=paged", *bounds,
                         *quantization])
    # (name, artifact) of the paged builds: f32 pool, and 16-bit if asked.
    paged_builds = [("paged", paged)]
    if args.kv_dtype:
        narrow = os.path.join(args.work_dir, f"{args.model}.paged_{args.kv_dtype}.kiln")
        harness.run_command([args.kilnc, model_path, "-o", narrow, "--kv-cache=paged",
                             f"--kv-dtype={args.kv_dtype}", *bounds, *quantization])
        paged_builds.append((f"paged_{args.kv_dtype}", narrow))

    rng = np.random.default_rng(0)
    vocab = vocab_size(model_path)
    input_len, output_len = parse_range(args.input_len), parse_range(args.output_len)
    requests = [{"prompt_ids": rng.integers(0, vocab, rng.integers(input_len[0], input_len[1] + 1)).tolist(),
                 "max_tokens": int(rng.integers(output_len[0], output_len[1] + 1))}
                for _ in range(args.num_prompts)]
    requests_path = os.path.join(args.work_dir, "requests.json")
    with open(requests_path, "w") as f:
        json.dump({"requests": requests}, f)
    longest = max(len(r["prompt_ids"]) + r["max_tokens"] for r in requests)
    # The engine refuses a pool that cannot hold one sequence of the model's
    # longest length.
    kv_bytes = max(args.kv_seqs * longest, max_len) * kv_bytes_per_token(model_path)

    ceilings = [json.loads(harness.run_command(
        [args.roofline, "--threads", str(args.threads)]).strip().splitlines()[-1])]
    results = {"model": args.model, "build": variant, "threads": args.threads,
               "num_prompts": args.num_prompts,
               "input_len": args.input_len, "output_len": args.output_len,
               "kv_cache_bytes": kv_bytes, "longest": longest}
    contenders = [("continuous", paged, "continuous"),
                  ("continuous_dense", artifact, "continuous"),
                  ("static", paged, "static")]
    contenders += [("continuous_" + name, build, "continuous")
                   for name, build in paged_builds[1:]]
    for name, build, batching in contenders:
        out = harness.run_command([args.throughput, build, "--requests", requests_path,
                                   "--kv-cache-bytes", str(kv_bytes), "--batching", batching,
                                   "--threads", str(args.threads), "--json"])
        results[name] = json.loads(out)
    out = harness.run_command(["node", os.path.join(ROOT, "bench", "ort", "generate_ort.js"),
                               model_path, "--requests", requests_path,
                               "--batch", str(args.ort_batch), "--threads", str(args.threads)])
    ort = json.loads(out)
    results["ort"] = {k: v for k, v in ort.items() if k != "outputs"}

    # A decode-only step at batch 32: the engine's, with 32 requests of the
    # same prompt length, against the plain artifact's at that past.
    past = 64 if args.smoke else 512
    # 48 tokens: the last of the 32 prompts is admitted 32 steps after the
    # first, and then all 32 decode together.
    decode = [{"prompt_ids": rng.integers(0, vocab, past).tolist(), "max_tokens": 48}
              for _ in range(32)]
    decode_path = os.path.join(args.work_dir, "decode32.json")
    with open(decode_path, "w") as f:
        json.dump({"requests": decode}, f)
    engine_decode = {name: json.loads(harness.run_command(
        [args.throughput, build, "--requests", decode_path, "--threads", str(args.threads),
         "--json"])) for name, build in paged_builds + [("dense", artifact)]}
    case_dir = os.path.join(args.work_dir, f"plain_32_1_{past}")
    os.makedirs(case_dir, exist_ok=True)
    flags = harness.save_inputs(harness.make_inputs(model_path, 32, 1, past, vocab=vocab), case_dir)
    plain = harness.run_kiln(args.kiln_run, artifact, flags, threads=args.threads,
                             benchmark=5 if args.smoke else 20)
    ceilings.append(json.loads(harness.run_command(
        [args.roofline, "--threads", str(args.threads)]).strip().splitlines()[-1]))
    results["decode_step"] = {"past": past,
                              "engine_batch": engine_decode["paged"]["decode_step_batch"],
                              "engine_ms": engine_decode["paged"]["decode_step_ms"],
                              "engine_dense_batch": engine_decode["dense"]["decode_step_batch"],
                              "engine_dense_ms": engine_decode["dense"]["decode_step_ms"],
                              "plain_ms": plain["median_ms"]}
    for name, _ in paged_builds[1:]:
        results["decode_step"][f"engine_{name}_ms"] = engine_decode[name]["decode_step_ms"]
    architecture_path = os.path.join(args.work_dir, args.model + ".json")
    if os.path.exists(architecture_path):  # the architectures export.py wrote
        with open(architecture_path) as f:
            moved, flops, memory_s, compute_s = run.step_seconds(
                json.load(f), 32, 1, past, variant, ceilings)
        bandwidth, peak, _ = run.highest_ceilings(ceilings)
        results["decode_step"].update(
            {"mb_per_step": moved / 1e6, "gflop": flops / 1e9,
             "read_gb_per_s": bandwidth / 1e9, "fma_gflop_per_s": peak / 1e9,
             "floor_ms": 1e3 * max(memory_s, compute_s)})

    with open(os.path.join(args.work_dir, "engine.json"), "w") as f:
        json.dump(results, f, indent=1)
    c, s, cd = results["continuous"], results["static"], results["continuous_dense"]
    print(f"{args.model} ({variant} build), {args.num_prompts} requests, prompts {args.input_len}, outputs "
          f"{args.output_len}, KV pool {kv_bytes / 2**20:.1f} MiB ({args.kv_seqs} x {longest} "
          f"tokens), {args.threads} threads")
    print("| contender | s | requests/s | output tokens/s | peak concurrent | preemptions | KV waste |")
    print("|---|---|---|---|---|---|---|")
    rows = [("kiln continuous, paged", c), ("kiln continuous, dense", cd),
            ("kiln static, paged", s)]
    rows += [(f"kiln continuous, {name} pool", results["continuous_" + name])
             for name, _ in paged_builds[1:]]
    for name, r in rows:
        waste = r["kv_waste_steady_state"]
        print(f"| {name} | {r['seconds']:.2f} | {r['requests_per_s']:.2f} | "
              f"{r['output_tokens_per_s']:.1f} | {r['peak_concurrent_sequences']} | "
              f"{r['preemptions']} | {'-' if waste is None else f'{100 * waste:.2f}%'} |")
    print(f"| ORT, static batches of {args.ort_batch} | {ort['seconds']:.2f} | "
          f"{args.num_prompts / ort['seconds']:.2f} | {ort['output_tokens_per_s']:.1f} | "
          f"{min(args.ort_batch, args.num_prompts)} | - | - |")
    print(f"continuous / static output tokens/s: {c['output_tokens_per_s'] / s['output_tokens_per_s']:.2f}; "
          f"continuous / ORT: {c['output_tokens_per_s'] / ort['output_tokens_per_s']:.2f}; "
          f"peak concurrent continuous / static: "
          f"{c['peak_concurrent_sequences'] / s['peak_concurrent_sequences']:.2f}")
    d = results["decode_step"]
    print(f"continuous paged / dense output tokens/s: "
          f"{c['output_tokens_per_s'] / cd['output_tokens_per_s']:.2f}")
    for name, _ in paged_builds[1:]:
        n = results["continuous_" + name]
        narrow_ms = results["decode_step"][f"engine_{name}_ms"]
        print(f"{name} / f32 pool, same KV bytes: output tokens/s "
              f"{n['output_tokens_per_s'] / c['output_tokens_per_s']:.2f}, peak concurrent "
              f"{n['peak_concurrent_sequences'] / c['peak_concurrent_sequences']:.2f}"
              + (f", decode-only step {d['engine_ms'] / narrow_ms:.2f}x faster"
                 if narrow_ms and d["engine_ms"] else ""))
    if d["engine_ms"] is not None and d["engine_dense_ms"] is not None:
        print(f"decode-only step, past {d['past']}: engine paged {d['engine_ms']:.2f} ms "
              f"(batch {d['engine_batch']}), dense {d['engine_dense_ms']:.2f} ms "
              f"(batch {d['engine_dense_batch']}), plain artifact (batch 32) "
              f"{d['plain_ms']:.2f} ms; paged / plain {d['engine_ms'] / d['plain_ms']:.2f}")
        if "floor_ms" in d:
            print(f"  the step moves {d['mb_per_step']:.0f} MB and does {d['gflop']:.1f} GFLOP: "
                  f"floor {d['floor_ms']:.2f} ms at {d['read_gb_per_s']:.1f} GB/s and "
                  f"{d['fma_gflop_per_s']:.0f} GFLOP/s; engine paged "
                  f"{100 * d['floor_ms'] / d['engine_ms']:.0f}%, plain "
                  f"{100 * d['floor_ms'] / d['plain_ms']:.0f}% of it")


if __name__ == "__main__":
    main()
