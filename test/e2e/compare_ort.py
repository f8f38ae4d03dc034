"""Runs every models/ export through kiln and through ONNX Runtime on the same
random inputs and requires max |kiln - ORT| / max |ORT| <= 1e-4 on every
output. Decoders run with past length 0 and > 0. Kiln compiles each model
three times: with every optimization, with every fusion off, and with memory
planning off. Each build declares dim bounds that the largest cases reach, so
that planned buffers are as big as the plan allows; the planned and unplanned
builds must agree within 1e-5. In batches of more than one, the last
sequence's first keys are padding (attention_mask 0), so that the masks take
part.

usage: compare_ort.py KILNC KILN_RUN MODELS_DIR WORK_DIR
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import harness  # noqa: E402

TOLERANCE = 1e-4
# Planning moves buffers, not arithmetic; only the order of vectorized sums
# may change with alignment. Two buffers wrongly sharing memory give errors
# of order 1.
PLANNING_TOLERANCE = 1e-5
# (batch, sequence, past) per model; the encoder has no past.
CASES = {
    "bert_tiny": [(1, 1, 0), (1, 7, 0), (3, 16, 0)],
    "gpt2_tiny": [(1, 1, 0), (2, 7, 0), (1, 1, 5), (3, 4, 9)],
    "llama_tiny": [(1, 1, 0), (2, 7, 0), (1, 1, 5), (3, 4, 9)],
}

# The largest sizes the cases above use.
DIM_BOUNDS = {
    "bert_tiny": ["batch=1:3", "sequence=1:16"],
    "gpt2_tiny": ["batch=1:3", "sequence=1:7", "past_sequence=0:9", "total_sequence=1:13"],
    "llama_tiny": ["batch=1:3", "sequence=1:7", "past_sequence=0:9", "total_sequence=1:13"],
}

# Every optimization on, every fusion off, and memory planning off.
VARIANTS = {"fused": [], "unfused": ["--disable=fusion"],
            "unplanned": ["--disable=memory-plan"]}


def main():
    kilnc, kiln_run, models_dir, work_dir = sys.argv[1:5]
    os.makedirs(work_dir, exist_ok=True)
    failures = 0
    for model_name, cases in CASES.items():
        model = os.path.join(models_dir, model_name + ".onnx")
        artifacts = {}
        for variant, options in VARIANTS.items():
            artifacts[variant] = os.path.join(work_dir, f"{model_name}.{variant}.kiln")
            bounds = [f"--dim={bound}" for bound in DIM_BOUNDS[model_name]]
            harness.run_command([kilnc, model, "-o", artifacts[variant], *bounds, *options])
        names = harness.output_names(model)
        for seed, (batch, sequence, past) in enumerate(cases):
            case = f"{model_name} batch={batch} sequence={sequence} past={past}"
            case_dir = os.path.join(work_dir, f"{model_name}_{batch}_{sequence}_{past}")
            for sub in ("inputs", "ort", *VARIANTS):
                os.makedirs(os.path.join(case_dir, sub), exist_ok=True)
            inputs = harness.make_inputs(model, batch, sequence, past, seed=seed)
            mask = inputs["attention_mask"]
            if batch > 1:
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
    print(f"{failures} output(s) over their tolerance")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
