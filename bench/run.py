"""Runs Kiln and ONNX Runtime side by side on the models/ exports: same
models, same inputs, same thread count, one process after the other in the
same run. Prints a table of median latencies and writes JSON for tracking.

This is a benchmark, not a test: it checks no figure. CI runs it with --smoke
(few runs, one shape per model) to keep it working.

usage: bench/run.py [--kilnc PATH] [--kiln-run PATH] [--work-dir DIR]
                    [--threads N] [--runs N] [--json FILE] [--smoke]
"""

import argparse
import datetime
import json
import os
import sys

import harness

ROOT = os.path.dirname(harness.HERE)
MODELS = os.path.join(ROOT, "models", "exports")

# (model, batch, sequence, past, what it stands for)
CASES = [
    ("bert_tiny", 1, 128, 0, "encode"),
    ("bert_tiny", 8, 128, 0, "encode"),
    ("gpt2_tiny", 1, 128, 0, "prefill"),
    ("gpt2_tiny", 1, 1, 127, "decode"),
    ("gpt2_tiny", 8, 1, 127, "decode"),
    ("llama_tiny", 1, 128, 0, "prefill"),
    ("llama_tiny", 1, 1, 127, "decode"),
    ("llama_tiny", 8, 1, 127, "decode"),
]
SMOKE_CASES = [("bert_tiny", 1, 8, 0, "encode"), ("gpt2_tiny", 1, 1, 7, "decode"),
               ("llama_tiny", 1, 1, 7, "decode")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", default=os.path.join(ROOT, "build/bin/kilnc"))
    parser.add_argument("--kiln-run", default=os.path.join(ROOT, "build/bin/kiln-run"))
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build/bench"))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", help="where to write the results "
                        "(default: WORK_DIR/results.json)")
    parser.add_argument("--smoke", action="store_true",
                        help="3 runs of one small shape per model")
    args = parser.parse_args()
    cases = SMOKE_CASES if args.smoke else CASES
    runs = 3 if args.smoke else args.runs
    os.makedirs(args.work_dir, exist_ok=True)

    artifacts = {}
    for model in sorted({case[0] for case in cases}):
        artifact = os.path.join(args.work_dir, model + ".kiln")
        harness.run_command([args.kilnc, os.path.join(MODELS, model + ".onnx"),
                             "-o", artifact])
        artifacts[model] = artifact

    results = []
    header = (f"{'model':<11} {'case':<8} {'shape (b, s, past)':<19} "
              f"{'kiln ms':>9} {'ORT ms':>9} {'ORT/kiln':>9}")
    print(f"threads: {args.threads}, runs: {runs} (median of each)")
    print(header)
    print("-" * len(header))
    for model, batch, sequence, past, kind in cases:
        onnx_path = os.path.join(MODELS, model + ".onnx")
        case_dir = os.path.join(args.work_dir, f"{model}_{batch}_{sequence}_{past}")
        os.makedirs(case_dir, exist_ok=True)
        inputs = harness.make_inputs(onnx_path, batch, sequence, past)
        flags = harness.save_inputs(inputs, case_dir)
        kiln = harness.run_kiln(args.kiln_run, artifacts[model], flags,
                                threads=args.threads, benchmark=runs)
        ort = harness.run_ort(onnx_path, flags, threads=args.threads, benchmark=runs)
        ratio = ort["median_ms"] / kiln["median_ms"]
        shape = f"({batch}, {sequence}, {past})"
        print(f"{model:<11} {kind:<8} {shape:<19} {kiln['median_ms']:>9.3f} "
              f"{ort['median_ms']:>9.3f} {ratio:>9.2f}")
        results.append({"model": model, "case": kind, "batch": batch,
                        "sequence": sequence, "past": past, "kiln": kiln,
                        "onnxruntime": ort, "ort_over_kiln": ratio})
    print("ORT/kiln > 1 means kiln is faster.")
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "threads": args.threads, "runs": runs, "results": results}
    path = args.json or os.path.join(args.work_dir, "results.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
