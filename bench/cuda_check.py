"""The CUDA target checked on a GPU, in two halves: a device machine cannot
build Kiln (it has no LLVM or MLIR), so the artifacts, the inputs and the
CPU's outputs are made here and carried over with kiln-run.

  python3 bench/cuda_check.py prepare OUT [--gpu sm_90] [--build build] [MODEL.onnx...]

compiles each export (by default models/exports/*.onnx) into one artifact
with both codes (kilnc --target=x86,cuda), makes the inputs of
compare_ort.py's cases, runs the artifact's CPU code on them for the
reference outputs (--device cpu), and copies
kiln-run, the runtime and the shared libraries they need that a CUDA image
may lack into OUT/bin. Then, on the device machine:

  python3 bench/cuda_check.py check OUT

runs the same artifacts with kiln-run --device cuda (KILN_CUDA_DRIVER,
else libcuda.so.1): each case once for its outputs, then timed
(--benchmark), and compares each output with the CPU code's: max |gpu - cpu| / max |cpu| must
be at most 1e-3 (issue #19: tf32 and bf16 may come later; the kernels are
fp32 today). It prints a line per case with kiln-run's load time and median
latency, and exits 1 on any mismatch or failed run.

Through the device tool: prepare into a folder of the checkout that
.git/info/exclude ignores (say gpu_check/, a few MiB for models/exports),
then run `python3 bench/cuda_check.py check gpu_check` with
carry=["gpu_check"].

It has not yet run on a GPU: no session that wrote it had one.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "e2e"))

TOLERANCE = 1e-3
# Libraries every Linux image has; the rest of kiln-run's are carried.
SYSTEM_LIBRARIES = ("libc.so", "libm.so", "libdl.so", "libpthread.so", "librt.so",
                    "ld-linux", "libgcc_s.so", "libstdc++.so", "linux-vdso")


def input_flags(out, inputs):
    """kiln-run's --input flags for a case's inputs, stored relative to OUT."""
    flags = []
    for name, path in inputs.items():
        flags += ["--input", f"{name}={os.path.join(out, path)}"]
    return flags


def prepare(args):
    import harness
    from compare_ort import dim_bounds, model_cases

    kilnc = os.path.join(args.build, "bin", "kilnc")
    kiln_run = os.path.join(args.build, "bin", "kiln-run")
    models = args.models or sorted(glob.glob("models/exports/*.onnx"))
    os.makedirs(os.path.join(args.out, "bin"), exist_ok=True)
    shutil.copy(kiln_run, os.path.join(args.out, "bin"))
    listed = subprocess.run(["ldd", kiln_run], capture_output=True, text=True, check=True)
    for path in re.findall(r"=> (/\S+)", listed.stdout):
        if not any(name in os.path.basename(path) for name in SYSTEM_LIBRARIES):
            shutil.copy(path, os.path.join(args.out, "bin"))
    cases_json = []
    for model in models:
        name = os.path.basename(model)[:-len(".onnx")]
        cases, dims = model_cases(model)
        bounds = dim_bounds(cases, dims)
        artifact = os.path.join(args.out, f"{name}.kiln")
        harness.run_command([kilnc, model, "--target=x86,cuda", f"--gpu={args.gpu}", "-o",
                             artifact, *bounds])
        for seed, (batch, sequence, past) in enumerate(cases):
            case_dir = f"{name}_{batch}_{sequence}_{past}"
            for sub in ("inputs", "cpu", "gpu"):
                os.makedirs(os.path.join(args.out, case_dir, sub), exist_ok=True)
            arrays = harness.make_inputs(model, batch, sequence, past, seed=seed)
            harness.save_inputs(arrays, os.path.join(args.out, case_dir, "inputs"))
            inputs = {input_name: os.path.join(case_dir, "inputs", input_name + ".npy")
                      for input_name in arrays}
            harness.run_kiln(kiln_run, artifact, [*input_flags(args.out, inputs), "--device", "cpu"],
                             os.path.join(args.out, case_dir, "cpu"))
            cases_json.append({"model": name, "case": [batch, sequence, past],
                               "artifact": os.path.basename(artifact), "dir": case_dir,
                               "inputs": inputs, "outputs": harness.output_names(model)})
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(cases_json, f, indent=1)
    print(f"prepared {len(cases_json)} cases of {len(models)} models in {args.out}")


def check(args):
    import harness
    import numpy as np

    out = os.path.abspath(args.out)
    os.environ["LD_LIBRARY_PATH"] = os.path.join(out, "bin")
    kiln_run = os.path.join(out, "bin", "kiln-run")
    devices = subprocess.run([kiln_run, "--devices"], capture_output=True, text=True)
    print(devices.stdout.strip() or devices.stderr.strip())
    with open(os.path.join(out, "cases.json")) as f:
        cases = json.load(f)
    failures = 0
    for case in cases:
        what = f"{case['model']} (batch, sequence, past) = {tuple(case['case'])}"
        flags = [*input_flags(out, case["inputs"]), "--device", "cuda"]
        artifact = os.path.join(out, case["artifact"])
        gpu_dir = os.path.join(out, case["dir"], "gpu")
        try:
            harness.run_kiln(kiln_run, artifact, flags, gpu_dir)
            stats = harness.run_kiln(kiln_run, artifact, flags, benchmark=20)
        except RuntimeError as error:
            failures += 1
            print(f"FAIL: {what}: {error}")
            continue
        expected = harness.load_outputs(os.path.join(out, case["dir"], "cpu"), case["outputs"])
        actual = harness.load_outputs(gpu_dir, case["outputs"])
        worst = 0.0
        for name in case["outputs"]:
            error = harness.max_relative_error(actual[name], expected[name])
            worst = max(worst, error)
            if actual[name].shape != expected[name].shape or not error <= TOLERANCE:
                failures += 1
                print(f"FAIL: {what} {name}: shape {actual[name].shape} against "
                      f"{expected[name].shape}, max relative error {error:.3g}")
        print(f"{'PASS' if worst <= TOLERANCE else 'FAIL'}: {what}: max relative error "
              f"{worst:.3g}; load {stats['load_ms']:.1f} ms, median {stats['median_ms']:.3f} ms")
    print(f"{failures} failure(s) in {len(cases)} cases")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare")
    prepare_parser.add_argument("out")
    prepare_parser.add_argument("models", nargs="*")
    prepare_parser.add_argument("--gpu", default="sm_90")
    prepare_parser.add_argument("--build", default="build")
    check_parser = commands.add_parser("check")
    check_parser.add_argument("out")
    args = parser.parse_args()
    if args.command == "prepare":
        args.out = os.path.abspath(args.out)
        prepare(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
