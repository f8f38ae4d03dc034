"""Compiles every export into an artifact of the CUDA target (kilnc
--target=cuda) and runs each of compare_ort.py's cases of it over the fake
CUDA driver (test/runtime/FakeCudaDriver.cpp), which checks every driver
call the runtime makes and runs no kernel. What this checks without a GPU
is the host side of every model: its shape arithmetic (each output's shape
must be the CPU build's on the same inputs), its device allocations and
copies, and its launches (each a kernel of the module, with its parameters
and a legal grid), with every device buffer and context given back at exit.
The kernels' results need a GPU: bench/cuda_check.py.

usage: KILN_CUDA_DRIVER=FAKE_DRIVER cuda_artifacts.py KILNC KILN_RUN WORK_DIR MODELS_DIR...
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import compare_ort  # noqa: E402
from compare_ort import dim_bounds, model_cases  # noqa: E402

LEAK_FREE = re.compile(r"at exit 0 buffers \(0 bytes\) and 0 contexts still held")
LAUNCHES = re.compile(r"(\d+) launches")


def check_model(kilnc, kiln_run, model, work_dir):
    """Returns the number of failed cases of `model`."""
    name = os.path.basename(model)[:-len(".onnx")]
    cases, dims = model_cases(model)
    bounds = dim_bounds(cases, dims)
    cpu = os.path.join(work_dir, f"{name}.cpu.kiln")
    gpu = os.path.join(work_dir, f"{name}.cuda.kiln")
    harness.run_command([kilnc, model, "-o", cpu, *bounds])
    harness.run_command([kilnc, model, "--target=cuda", "-o", gpu, *bounds])
    names = harness.output_names(model)
    env = dict(os.environ, KILN_FAKE_CUDA_REPORT="1")
    failures = 0
    for seed, (batch, sequence, past) in enumerate(cases):
        case = f"{name} batch={batch} sequence={sequence} past={past}"
        case_dir = os.path.join(work_dir, f"{name}_{batch}_{sequence}_{past}")
        for sub in ("inputs", "cpu", "cuda"):
            os.makedirs(os.path.join(case_dir, sub), exist_ok=True)
        inputs = harness.make_inputs(model, batch, sequence, past, seed=seed)
        flags = harness.save_inputs(inputs, os.path.join(case_dir, "inputs"))
        harness.run_kiln(kiln_run, cpu, flags, os.path.join(case_dir, "cpu"))
        expected = harness.load_outputs(os.path.join(case_dir, "cpu"), names)
        run = subprocess.run([kiln_run, gpu, *flags, "--output-dir",
                              os.path.join(case_dir, "cuda")],
                             capture_output=True, text=True, env=env)
        problems = []
        if run.returncode != 0:
            problems.append(f"kiln-run exited {run.returncode}: {run.stderr.strip()}")
        else:
            actual = harness.load_outputs(os.path.join(case_dir, "cuda"), names)
            problems += [f"{output} has shape {list(actual[output].shape)}, the CPU's "
                         f"{list(expected[output].shape)}"
                         for output in names if actual[output].shape != expected[output].shape]
            launches = LAUNCHES.search(run.stderr)
            if not launches or int(launches.group(1)) == 0:
                problems.append(f"no kernel launched: {run.stderr.strip()}")
            if not LEAK_FREE.search(run.stderr):
                problems.append(f"device buffers or contexts left: {run.stderr.strip()}")
        failures += bool(problems)
        print(f"{'FAIL' if problems else 'PASS'}: {case}"
              + (": " + "; ".join(problems) if problems else
                 f": {launches.group(1)} launches, output shapes as on the CPU"))
    return failures


if __name__ == "__main__":
    if "KILN_CUDA_DRIVER" not in os.environ:
        sys.exit(__doc__)
    sys.exit(compare_ort.main(check_model))
