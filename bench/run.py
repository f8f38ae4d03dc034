"""Runs Kiln and ONNX Runtime side by side on the models/ exports: same
models, same inputs, same thread count, one process after the other in the
same run. `--suite tiny` (the default) runs Kiln's own exports; `--suite hf`
runs the Hugging Face exports of models/hf and PyTorch's
nn.TransformerEncoder (d=256, 4 layers, exported into the work dir at run
time by models/export.py) at batch 1 and 8, 128 tokens. Kiln runs five builds: every optimization, `--disable=fusion`,
`--disable=fuse-gemm-epilogues`, `--disable=pack-weights` and
`--disable=memory-plan`, so that the effects of the fusions, of the GEMM
epilogues alone, of weight packing and of memory planning are measured in
the same run. Each build declares the dim bounds the
cases need (batch <= 8, sequence <= 128, 256 positions). Each case runs
every build and ONNX Runtime in turn, `--rounds` times over, and keeps each
one's lowest median: the VMs this runs on change speed by tens of percent
over seconds, and interleaving lets every build see the same machine. Prints
a table of those latencies and memory (peak resident set sizes, and the
artifact's arena and weights) and writes JSON for tracking.

This is a benchmark, not a test: it checks no figure. CI runs it with --smoke
(few runs, one shape per model) to keep it working.

usage: bench/run.py [--kilnc PATH] [--kiln-run PATH] [--work-dir DIR] [--suite tiny|hf]
                    [--threads N] [--runs N] [--rounds N] [--json FILE] [--smoke]
"""

import argparse
import datetime
import json
import os
import sys

import harness

ROOT = os.path.dirname(harness.HERE)
MODEL_DIRS = [os.path.join(ROOT, "models", "exports"), os.path.join(ROOT, "models", "hf")]
# Exports made at run time into the work dir (too large to check in).
GENERATED_MODELS = {"torch_encoder"}

# (model, batch, sequence, past, what it stands for)
TINY_CASES = [
    ("bert_tiny", 1, 128, 0, "encode"),
    ("bert_tiny", 8, 128, 0, "encode"),
    ("gpt2_tiny", 1, 128, 0, "prefill"),
    ("gpt2_tiny", 1, 1, 127, "decode"),
    ("gpt2_tiny", 8, 1, 127, "decode"),
    ("llama_tiny", 1, 128, 0, "prefill"),
    ("llama_tiny", 1, 1, 127, "decode"),
    ("llama_tiny", 8, 1, 127, "decode"),
]
HF_MODELS = ["hf_distilbert_dynamo", "hf_distilbert_ts17", "hf_gemma_kv_ts17",
             "hf_gpt_neox_kv_ts17", "hf_opt_kv_ts17", "hf_phi3_kv_ts17",
             "hf_qwen3_kv_ts17", "hf_roberta_dynamo", "hf_roberta_ts17", "torch_encoder"]
HF_CASES = [(model, batch, 128, 0, "encode" if "_kv_" not in model else "prefill")
            for model in HF_MODELS for batch in (1, 8)]
SUITES = {"tiny": TINY_CASES, "hf": HF_CASES}
# The artifacts each case runs: every optimization on, every fusion off, the
# GEMM epilogues off, weight packing off, and memory planning off.
VARIANTS = {"fused": [], "unfused": ["--disable=fusion"],
            "no_epilogues": ["--disable=fuse-gemm-epilogues"],
            "unpacked": ["--disable=pack-weights"],
            "unplanned": ["--disable=memory-plan"]}
# The time-ratio columns: (heading, variant, JSON key), each the variant's
# median over the fused build's.
RATIOS = [("fusion", "unfused", "fusion_speedup"),
          ("epil.", "no_epilogues", "epilogue_speedup"),
          ("pack", "unpacked", "packing_speedup"),
          ("plan", "unplanned", "planning_speedup")]
# The bounds every build declares, for the dims its model has; the decoders'
# past and total lengths are bounded by the tiny exports' 256 positions.
DIM_BOUNDS = {"batch": "1:8", "sequence": "1:128", "past_sequence": "0:255",
              "total_sequence": "1:256"}
SMOKE_CASES = {"tiny": [("bert_tiny", 1, 8, 0, "encode"), ("gpt2_tiny", 1, 1, 7, "decode"),
                        ("llama_tiny", 1, 1, 7, "decode")],
               "hf": [("hf_qwen3_kv_ts17", 1, 8, 0, "prefill"),
                      ("hf_roberta_dynamo", 1, 8, 0, "encode")]}


def model_path(model, work_dir):
    """Where `model` is: a checked-in export, or one made into `work_dir`."""
    if model in GENERATED_MODELS:
        path = os.path.join(work_dir, model + ".onnx")
        if not os.path.exists(path):
            harness.run_command([sys.executable, os.path.join(ROOT, "models", "export.py"),
                                 "--out-dir", work_dir, "--model", model])
        return path
    for directory in MODEL_DIRS:
        path = os.path.join(directory, model + ".onnx")
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"no export named {model} in {MODEL_DIRS}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", default=os.path.join(ROOT, "build/bin/kilnc"))
    parser.add_argument("--kiln-run", default=os.path.join(ROOT, "build/bin/kiln-run"))
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build/bench"))
    parser.add_argument("--suite", choices=sorted(SUITES), default="tiny",
                        help="which models: Kiln's tiny exports, or the Hugging Face "
                        "exports and PyTorch's encoder")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=50,
                        help="timed runs per process")
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per build and case, interleaved")
    parser.add_argument("--json", help="where to write the results "
                        "(default: WORK_DIR/results.json)")
    parser.add_argument("--smoke", action="store_true",
                        help="3 runs of one small shape per model")
    args = parser.parse_args()
    cases = SMOKE_CASES[args.suite] if args.smoke else SUITES[args.suite]
    runs = 3 if args.smoke else args.runs
    rounds = 1 if args.smoke else args.rounds
    os.makedirs(args.work_dir, exist_ok=True)

    artifacts = {}
    paths = {}
    for model in sorted({case[0] for case in cases}):
        paths[model] = model_path(model, args.work_dir)
        dims = harness.symbolic_dims(paths[model])
        bounds = [f"--dim={name}={bound}" for name, bound in DIM_BOUNDS.items()
                  if name in dims]
        for variant, options in VARIANTS.items():
            artifact = os.path.join(args.work_dir, f"{model}.{variant}.kiln")
            harness.run_command([args.kilnc, paths[model], "-o", artifact, *bounds,
                                 *options])
            artifacts[model, variant] = artifact

    results = []
    header = (f"{'model':<20} {'case':<8} {'shape (b, s, past)':<19} "
              f"{'kiln ms':>8} "
              + "".join(f"{variant[:8]:>9} {heading:>6} "
                        for heading, variant, _ in RATIOS)
              + f"{'ORT ms':>8} {'ORT/kiln':>8} {'kiln MB':>8} "
              f"{'unpl. MB':>8} {'arena MB':>8} {'wts MB':>7} {'ORT MB':>7}")
    print(f"threads: {args.threads}, runs: {runs} per process, "
          f"rounds: {rounds} (lowest median of each)")
    print(header)
    print("-" * len(header))
    for model, batch, sequence, past, kind in cases:
        onnx_path = paths[model]
        case_dir = os.path.join(args.work_dir, f"{model}_{batch}_{sequence}_{past}")
        os.makedirs(case_dir, exist_ok=True)
        inputs = harness.make_inputs(onnx_path, batch, sequence, past)
        flags = harness.save_inputs(inputs, case_dir)
        measured = {name: [] for name in [*VARIANTS, "ort"]}
        for _ in range(rounds):
            for variant in VARIANTS:
                measured[variant].append(harness.run_kiln(
                    args.kiln_run, artifacts[model, variant], flags,
                    threads=args.threads, benchmark=runs))
            measured["ort"].append(harness.run_ort(
                onnx_path, flags, threads=args.threads, benchmark=runs))
        best = {name: min(stats, key=lambda s: s["median_ms"])
                for name, stats in measured.items()}
        kiln = {variant: best[variant] for variant in VARIANTS}
        ort = best["ort"]
        fused = kiln["fused"]
        memory = harness.artifact_memory(artifacts[model, "fused"])
        ratio = ort["median_ms"] / fused["median_ms"]
        speedups = {variant: kiln[variant]["median_ms"] / fused["median_ms"]
                    for _, variant, _ in RATIOS}
        shape = f"({batch}, {sequence}, {past})"
        megabytes = 1 << 20
        print(f"{model:<20} {kind:<8} {shape:<19} {fused['median_ms']:>8.4f} "
              + "".join(f"{kiln[variant]['median_ms']:>9.4f} {speedups[variant]:>6.2f} "
                        for _, variant, _ in RATIOS)
              + f"{ort['median_ms']:>8.4f} {ratio:>8.2f} {fused['max_rss_mb']:>8.1f} "
              f"{kiln['unplanned']['max_rss_mb']:>8.1f} "
              f"{memory['arena_bytes'] / megabytes:>8.2f} "
              f"{memory['weights_bytes'] / megabytes:>7.2f} {ort['max_rss_mb']:>7.1f}")
        results.append({"model": model, "case": kind, "batch": batch,
                        "sequence": sequence, "past": past, "kiln": fused,
                        **{f"kiln_{variant}": kiln[variant]
                           for _, variant, _ in RATIOS},
                        "kiln_artifact": memory, "onnxruntime": ort,
                        "ort_over_kiln": ratio,
                        **{key: speedups[variant]
                           for _, variant, key in RATIOS}})
    print("fusion = unfused / kiln, epil. = no_epilogues / kiln, pack = "
          "unpacked / kiln and plan = unplanned / kiln (time ratios); "
          "ORT/kiln > 1 means kiln is faster; kiln MB and ORT MB = peak RSS of "
          "the process (kiln-run, or Node.js running ORT), which includes the "
          "arena and the weights pages touched; arena and wts = the artifact's "
          "arena and weights section.")
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "threads": args.threads, "runs": runs, "rounds": rounds,
              "results": results}
    path = args.json or os.path.join(args.work_dir, "results.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
