"""Compiles every export into an artifact with both the CPU code and the
CUDA target's (kilnc --target=x86,cuda) and runs each of compare_ort.py's
cases of it both ways. The CPU code (--device cpu) must give exactly the
outputs of the CPU-only build: the two codes in one shared object leave
the CPU's as it was. The GPU code (--device cuda) runs over the fake CUDA
driver (test/runtime/FakeCudaDriver.cpp), which checks every driver call
the runtime makes and runs no kernel: what this checks without a GPU is
the host side of every model, its shape arithmetic (each output's shape
must be the CPU's), its device allocations and copies, and its launches
(each a kernel of the module, with its parameters and a legal grid), with
every device buffer and context given back at exit. The kernels' results
need a GPU: bench/cuda_check.py.

usage: KILN_CUDA_DRIVER=FAKE_DRIVER cuda_artifacts.py KILNC KILN_RUN WORK_DIR MODELS_DIR...
"""

import os
import re
import subprocess
import sys

import numpy as np

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
    both = os.path.join(work_dir, f"{name}.both.kiln")
    harness.run_command([kilnc, model, "-o", cpu, *bounds])
    harness.run_command([kilnc, model, "--target=x86,cuda", "-o", both, *bounds])
    names = harness.output_names(model)
    env = dict(os.environ, KILN_FAKE_CUDA_REPORT="1")
    failures = 0
    for seed, (batch, sequence, past) in enumerate(cases):
        case = f"{name} batch={batch} sequence={sequence} past={past}"
        case_dir = os.path.join(work_dir, f"{name}_{batch}_{sequence}_{past}")
        for sub in ("inputs", "cpu", "both_cpu", "both_cuda"):
            os.makedirs(os.path.join(case_dir, sub), exist_ok=True)
        inputs = harness.make_inputs(model, batch, sequence, past, seed=seed)
        flags = harness.save_inputs(inputs, os.path.join(case_dir, "inputs"))
        harness.run_kiln(kiln_run, cpu, flags, os.path.join(case_dir, "cpu"))
        expected = harness.load_outputs(os.path.join(case_dir, "cpu"), names)
        harness.run_kiln(kiln_run, both, [*flags, "--device", "cpu"],
                         os.path.join(case_dir, "both_cpu"))
        on_cpu = harness.load_outputs(os.path.join(case_dir, "both_cpu"), names)
        problems = [f"{output} on the CPU differs from the CPU-only build's"
                    for output in names if not np.array_equal(on_cpu[output], expected[output])]
        run = subprocess.run([kiln_run, both, *flags, "--device", "cuda", "--output-dir",
                              os.path.join(case_dir, "both_cuda")],
                             capture_output=True, text=True, env=env)
        launches = LAUNCHES.search(run.stderr)
        if run.returncode != 0:
            problems.append(f"kiln-run --device cuda exited {run.returncode}: "
                            f"{run.stderr.strip()}")
        else:
            actual = harness.load_outputs(os.path.join(case_dir, "both_cuda"), names)
            problems += [f"{output} has shape {list(actual[output].shape)} on the GPU, "
                         f"{list(expected[output].shape)} on the CPU"
                         for output in names if actual[output].shape != expected[output].shape]
            if not launches or int(launches.group(1)) == 0:
                problems.append(f"no kernel launched: {run.stderr.strip()}")
            if not LEAK_FREE.search(run.stderr):
                problems.append(f"device buffers or contexts left: {run.stderr.strip()}")
        failures += bool(problems)
        print(f"{'FAIL' if problems else 'PASS'}: {case}"
              + (": " + "; ".join(problems) if problems else
                 f": the CPU code's outputs are the CPU-only build's; on the GPU "
                 f"{launches.group(1)} launches, the same output shapes"))
    return failures


if __name__ == "__main__":
    if "KILN_CUDA_DRIVER" not in os.environ:
        sys.exit(__doc__)
    sys.exit(compare_ort.main(check_model))
