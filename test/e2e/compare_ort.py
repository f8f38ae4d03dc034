"""Runs every models/ export through kiln and through ONNX Runtime on the same
random inputs and requires max |kiln - ORT| / max |ORT| <= 1e-4 on every
output. Decoders run with past length 0 and > 0. Kiln compiles each model
five times: with every optimization, with every fusion off, with memory
planning off, without ONNX's checker and shape inference, and as the CUDA
target's kernels run on the CPU (--gpu-kernels-on-cpu: the GPU lowering's
graph options, device-side fills and loop mapping, checked without a GPU).
Each build declares dim bounds that the largest cases reach, so
that planned buffers are as big as the plan allows; the planned and unplanned
builds must agree within 1e-5. In batches of more than one, the last
sequence's first keys are padding (attention_mask 0), so that the masks take
part.

usage: compare_ort.py KILNC KILN_RUN WORK_DIR MODELS_DIR...
KILN_E2E_ONLY=NAME runs only the models whose file name contains NAME.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import harness  # noqa: E402
import onnx  # noqa: E402

TOLERANCE = 1e-4
# Planning moves buffers, not arithmetic; only the order of vectorized sums
# may change with alignment. Two buffers wrongly sharing memory give errors
# of order 1.
PLANNING_TOLERANCE = 1e-5
# (batch, sequence, past): decoders (a past_key_values input) run every
# case, encoders those without a past.
DECODER_CASES = [(1, 1, 0), (2, 7, 0), (1, 1, 5), (3, 4, 9)]
ENCODER_CASES = [(1, 1, 0), (1, 7, 0), (3, 16, 0)]

# Every optimization on, every fusion off, memory planning off, without
# the ONNX checker and so without ONNX shape inference (the path every
# opset-18+ model takes: kiln's own shape refinement alone), and the CUDA
# target's kernels on the CPU.
VARIANTS = {"fused": [], "unfused": ["--disable=fusion"],
            "unplanned": ["--disable=memory-plan"],
            "kiln_shapes": ["--skip-onnx-checker"],
            "gpu_kernels": ["--gpu-kernels-on-cpu"]}


def model_cases(model):
    """The cases a model runs, from whether it takes a KV cache, and the
    names of the symbolic dims of its inputs and outputs."""
    graph = onnx.load(model, load_external_data=False).graph
    dims = harness.symbolic_dims(model)
    if any(i.name.startswith("past_key_values") for i in graph.input):
        return DECODER_CASES, dims
    return ENCODER_CASES, dims


def dim_bounds(cases, dims):
    """--dim bounds of `dims` that the largest of `cases` reach."""
    sizes = [harness.dim_sizes(*case) for case in cases]
    return [f"--dim={name}={min(s[name] for s in sizes)}:{max(s[name] for s in sizes)}"
            for name in sizes[0] if name in dims]


def compare_model(kilnc, kiln_run, model, work_dir):
    """Compiles `model` in every variant and compares each case's outputs;
    returns the number of failures (a failed compile or run is one)."""
    failures = 0
    model_name = os.path.basename(model)[:-len(".onnx")]
    cases, dims = model_cases(model)
    artifacts = {}
    for variant, options in VARIANTS.items():
        artifacts[variant] = os.path.join(work_dir, f"{model_name}.{variant}.kiln")
        harness.run_command([kilnc, model, "-o", artifacts[variant],
                             *dim_bounds(cases, dims), *options])
    names = harness.output_names(model)
    for seed, (batch, sequence, past) in enumerate(cases):
        case = f"{model_name} batch={batch} sequence={sequence} past={past}"
        case_dir = os.path.join(work_dir, f"{model_name}_{batch}_{sequence}_{past}")
        for sub in ("inputs", "ort", *VARIANTS):
            os.makedirs(os.path.join(case_dir, sub), exist_ok=True)
        inputs = harness.make_inputs(model, batch, sequence, past, seed=seed)
        mask = inputs.get("attention_mask")
        if mask is not None and batch > 1:
            mask[-1, :(mask.shape[1] + 1) // 2] = 0
        flags = harness.save_inputs(inputs, os.path.join(case_dir, "inputs"))
        harness.run_ort(model, flags, os.path.join(case_dir, "ort"))
        ort = harness.load_outputs(os.path.join(case_dir, "ort"), names)
        outputs = {}
        for variant, artifact in artifacts.items():
            harness.run_kiln(kiln_run, artifact, flags, os.path.join(case_dir, variant))
            outputs[variant] = harness.load_outputs(os.path.join(case_dir, variant), names)
        comparisons = [(f"{variant} vs ORT", outputs[variant], ort, TOLERANCE)
                       for variant in VARIANTS]
        comparisons.append(("planned vs unplanned", outputs["fused"],
                            outputs["unplanned"], PLANNING_TOLERANCE))
        for what, actual, expected, tolerance in comparisons:
            for name in names:
                error = harness.max_relative_error(actual[name], expected[name])
                ok = error <= tolerance
                failures += not ok
                print(f"{'PASS' if ok else 'FAIL'}: {case} {what} {name} "
                      f"{list(expected[name].shape)} max relative error {error:.3g}")
    return failures


def main(compare=compare_model):
    """Runs `compare(kilnc, kiln_run, model, work_dir)` on every model of the
    command line's directories; a model that fails to compile or run (or
    that the comparison cannot check) counts as one failure."""
    kilnc, kiln_run, work_dir = sys.argv[1:4]
    model_dirs = sys.argv[4:]
    only = os.environ.get("KILN_E2E_ONLY")  # a substring, to rerun one model by hand
    os.makedirs(work_dir, exist_ok=True)
    failures = 0
    models = sorted(os.path.join(d, f) for d in model_dirs for f in os.listdir(d)
                    if f.endswith(".onnx") and (not only or only in f))
    for model in models:
        try:
            failures += compare(kilnc, kiln_run, model, work_dir)
        except (RuntimeError, ValueError) as error:
            failures += 1
            print(f"FAIL: {os.path.basename(model)}: {error}")
    print(f"{failures} failure(s): outputs over their tolerance, or models that did not compile or run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
