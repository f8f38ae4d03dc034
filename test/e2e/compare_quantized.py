"""Checks kilnc --quantize=int8-weight, int4-weight and int8-dynamic end
to end: each export is compiled quantized (groups of 32 rows, so that the
tiny models' weights have several groups; decoders also with
--quantize-lm-head), its --report names the
weights it quantized, and ONNX Runtime runs the export with exactly those
weights replaced by their dequantized values (bench/quantization.py redoes
kiln's quantization in numpy), and for int8-dynamic the products' inputs
quantized and multiplied back per row by ONNX ops. The export is also written with its MatMuls
as ONNX Runtime's 4-bit MatMulNBits (bench/quantization.py, as ORT's
quantizer lays them out), which kiln compiles as it is and ORT runs as
the reference. Kiln's outputs must match within 1e-4 of
the largest, as the f32 builds do (W8A8: see DYNAMIC_SHARE): the quantized kernels compute the same
products as the dequantized f32 weights. The quantization error itself
(against the f32 export) is printed, not checked: on random weights it
says nothing of accuracy (bench/run.py reports it).

usage: compare_quantized.py KILNC KILN_RUN WORK_DIR MODELS_DIR...
KILN_E2E_ONLY=NAME runs only the models whose file name contains NAME.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
sys.path.insert(0, HERE)
import compare_ort  # noqa: E402
import harness  # noqa: E402
import quantization  # noqa: E402

TOLERANCE = 1e-4
# W8A8's reference quantizes ORT's own f32 inputs of each product, which
# differ from kiln's by f32 rounding: an input value within that of a
# rounding tie lands one step apart (about one in 40,000 values), and
# through attention a step in one row moves a whole sequence's outputs.
# Where no value fell on a tie the outputs match to 1e-7; where one did
# they are still far closer to the reference than to f32, which is what is
# checked: the relative RMS error against the reference at most
# DYNAMIC_SHARE of the quantization's own (against f32), or TOLERANCE.
DYNAMIC_SHARE = 0.25
GROUP_SIZE = 32


def compare_model(kilnc, kiln_run, model, work_dir):
    failures = 0
    model_name = os.path.basename(model)[:-len(".onnx")]
    cases, dims = compare_ort.model_cases(model)
    variants = {"int8": ["--quantize=int8-weight"], "int4": ["--quantize=int4-weight"],
                "int8_dynamic": ["--quantize=int8-dynamic"]}
    if cases is compare_ort.DECODER_CASES:
        for mode in ("int8", "int4", "int8_dynamic"):
            variants[f"{mode}_lm_head"] = [*variants[mode], "--quantize-lm-head"]
    # ONNX Runtime's own 4-bit format: the export with its MatMuls as
    # MatMulNBits, which kiln imports and ORT runs as written.
    variants["matmul_nbits"] = None
    names = harness.output_names(model)
    for variant, options in variants.items():
        artifact = os.path.join(work_dir, f"{model_name}.{variant}.kiln")
        reference = os.path.join(work_dir, f"{model_name}.{variant}.reference.onnx")
        if options is None:
            count = quantization.matmul_nbits_model(model, reference, GROUP_SIZE)
            if not count:
                print(f"SKIP: {model_name} {variant}: no MatMul by a constant weight "
                      "(its products are Gemms), nothing to write as MatMulNBits")
                continue
            harness.run_command([kilnc, reference, "-o", artifact,
                                 *compare_ort.dim_bounds(cases, dims)])
            quantized = f"{count} MatMulNBits"
        else:
            report_path = os.path.join(work_dir, f"{model_name}.{variant}.json")
            # W8A8 scales whole columns: no group size.
            groups = [] if "--quantize=int8-dynamic" in options else [
                f"--quant-group-size={GROUP_SIZE}"]
            harness.run_command([kilnc, model, "-o", artifact, *groups,
                                 f"--report={report_path}",
                                 *compare_ort.dim_bounds(cases, dims), *options])
            with open(report_path) as report:
                record = json.load(report)["quantization"]
            if not record["weights"]:
                print(f"FAIL: {model_name} {variant}: no weight was quantized")
                failures += 1
                continue
            quantization.dequantized_model(model, record, reference)
            quantized = f"{len(record['weights'])} weights quantized"
        for seed, (batch, sequence, past) in enumerate(cases):
            case = f"{model_name} {variant} batch={batch} sequence={sequence} past={past}"
            case_dir = os.path.join(work_dir, f"{model_name}_{variant}_{batch}_{sequence}_{past}")
            for sub in ("inputs", "ort", "ort_f32", "kiln"):
                os.makedirs(os.path.join(case_dir, sub), exist_ok=True)
            inputs = harness.make_inputs(model, batch, sequence, past, seed=seed)
            flags = harness.save_inputs(inputs, os.path.join(case_dir, "inputs"))
            harness.run_ort(reference, flags, os.path.join(case_dir, "ort"))
            harness.run_ort(model, flags, os.path.join(case_dir, "ort_f32"))
            harness.run_kiln(kiln_run, artifact, flags, os.path.join(case_dir, "kiln"))
            ort = harness.load_outputs(os.path.join(case_dir, "ort"), names)
            f32 = harness.load_outputs(os.path.join(case_dir, "ort_f32"), names)
            kiln = harness.load_outputs(os.path.join(case_dir, "kiln"), names)
            for name in names:
                error = harness.max_relative_error(kiln[name], ort[name])
                quantization_error = harness.max_relative_error(kiln[name], f32[name])
                if options and "--quantize=int8-dynamic" in options:
                    rms = harness.relative_rms_error(kiln[name], ort[name])
                    quantization_error = harness.relative_rms_error(kiln[name], f32[name])
                    ok = rms <= max(TOLERANCE, DYNAMIC_SHARE * quantization_error)
                    measured = f"relative RMS error {rms:.3g} (max {error:.3g})"
                else:
                    ok = error <= TOLERANCE
                    measured = f"max relative error {error:.3g}"
                failures += not ok
                print(f"{'PASS' if ok else 'FAIL'}: {case} {name} {list(ort[name].shape)} "
                      f"{measured} against the reference "
                      f"({quantization_error:.3g} against f32, {quantized})")
    return failures


if __name__ == "__main__":
    sys.exit(compare_ort.main(compare_model))
