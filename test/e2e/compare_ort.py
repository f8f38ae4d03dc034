"""Runs every models/ export through kiln and through ONNX Runtime on the same
random inputs and requires max |kiln - ORT| / max |ORT| <= 1e-4 on every
output. Decoders run with past length 0 and > 0. Kiln compiles each model
twice, with every optimization and with every fusion off. In batches of more
than one, the last sequence's first keys are padding (attention_mask 0), so
that the masks take part.

usage: compare_ort.py KILNC KILN_RUN MODELS_DIR WORK_DIR
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "bench"))
import harness  # noqa: E402

TOLERANCE = 1e-4
# (batch, sequence, past) per model; the encoder has no past.
CASES = {
    "bert_tiny": [(1, 1, 0), (1, 7, 0), (3, 16, 0)],
    "gpt2_tiny": [(1, 1, 0), (2, 7, 0), (1, 1, 5), (3, 4, 9)],
    "llama_tiny": [(1, 1, 0), (2, 7, 0), (1, 1, 5), (3, 4, 9)],
}

# Every optimization on, and every fusion off.
VARIANTS = {"fused": [], "unfused": ["--disable=fusion"]}


def main():
    kilnc, kiln_run, models_dir, work_dir = sys.argv[1:5]
    os.makedirs(work_dir, exist_ok=True)
    failures = 0
    for model_name, cases in CASES.items():
        model = os.path.join(models_dir, model_name + ".onnx")
        artifacts = {}
        for variant, options in VARIANTS.items():
            artifacts[variant] = os.path.join(work_dir, f"{model_name}.{variant}.kiln")
            harness.run_command([kilnc, model, "-o", artifacts[variant], *options])
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
            for variant, artifact in artifacts.items():
                harness.run_kiln(kiln_run, artifact, flags, os.path.join(case_dir, variant))
                kiln = harness.load_outputs(os.path.join(case_dir, variant), names)
                for name in names:
                    error = harness.max_relative_error(kiln[name], ort[name])
                    ok = error <= TOLERANCE
                    failures += not ok
                    print(f"{'PASS' if ok else 'FAIL'}: {case} {variant} {name} "
                          f"{list(ort[name].shape)} max relative error {error:.3g}")
    print(f"{failures} output(s) over the {TOLERANCE} tolerance")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
