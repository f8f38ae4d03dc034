"""Checks kilnc --quantize=int8-weight, int4-weight, int8-dynamic and
int8 end to end: each export is compiled quantized (groups of 32 rows, so
that the tiny models' weights have several groups; decoders also with
--quantize-lm-head), its --report names the
weights it quantized, and ONNX Runtime runs the export with exactly those
weights replaced by their dequantized values (bench/quantization.py redoes
kiln's quantization in numpy), and for int8-dynamic the products' inputs
quantized and multiplied back per row by ONNX ops, for int8 (static W8A8,
calibrated by kilnc with --calibration on the QDQ models' calibration
inputs) with the input scale and zero point the report gives each
product; the input ranges kilnc calibrated must be those that ORT's MinMax
calibration finds for the same products on the same inputs, within
CALIBRATION_TOLERANCE of the range. The export is also
written in ONNX Runtime's own quantized formats (bench/quantization.py, as
ORT's tools write them), which kiln compiles as they are and ORT runs as
the reference: its MatMuls as 4-bit MatMulNBits, and as quantize_static's
QDQ model (QuantizeLinear/DequantizeLinear around the MatMuls by constant
weights: int8 weights, activations calibrated on every case's inputs at
other seeds than those checked), once with int8 activations and weights
per tensor (qdq_int8), once with uint8 activations and weights per column
(qdq_uint8_per_channel), and once with kiln's folding of the quantized
products off (qdq_int8_as_written); as quantize_static's QOperator model
(the same quantization and calibration, the MatMuls become QLinearMatMul
whose outputs are quantized too, by ranges calibrated as the inputs', and
dequantized), once with int8 activations and weights per tensor
(qoperator_int8), once with uint8 activations and weights per column
(qoperator_uint8_per_channel); and as quantize_dynamic's QOperator model
(DynamicQuantizeLinear, MatMulInteger, and the scales multiplied back:
int8 weights, uint8 activations quantized at run time), with weights per
tensor (dynamic_int8), per column (dynamic_int8_per_channel), and per
tensor with the folding off (dynamic_int8_as_written). Kiln's outputs
must match within 1e-4 of the largest, as the f32 builds do (W8A8, QDQ,
QOperator and dynamic, whose products' inputs are quantized too: see
DYNAMIC_SHARE): the quantized kernels compute the same
products as the dequantized f32 weights. The quantization error itself
(against the f32 export) is printed, not checked: on random weights it
says nothing of accuracy (bench/run.py reports it).

usage: compare_quantized.py KILNC KILN_RUN WORK_DIR MODELS_DIR...
KILN_E2E_ONLY=NAME runs only the models whose file name contains NAME.
"""

import collections
import json
import os
import sys

import numpy as np
import onnx

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
# A QDQ, QLinearMatMul or dynamic (DynamicQuantizeLinear) model is checked
# so too: kiln quantizes each product's input (and a QLinearMatMul's
# output) as its own f32 kernels computed it, as ORT does its own (on
# hf_qwen3, ORT running the QDQ model and ORT running the same
# quantization as float ops differ by an eighth of the quantization
# error).
DYNAMIC_SHARE = 0.25
GROUP_SIZE = 32
# The QDQ and QLinearMatMul models' calibration: every case, at seeds from
# this one on (the cases checked use seeds 0, 1, ...), so that a decoder's
# ranges include those with a past.
CALIBRATION_SEED = 100
# kilnc's calibrated input range against ORT's MinMax calibration of the
# same tensor on the same inputs: each end within this much of the range's
# width (the tensors differ by f32 rounding between the two runtimes).
CALIBRATION_TOLERANCE = 1e-4
# A variant whose model bench/quantization.py writes in one of ONNX
# Runtime's formats: `what` it quantized (for the messages), write(path)
# writing it and returning how many MatMuls it quantized, kilnc's
# `options`, and whether the products' inputs are quantized too (then
# checked by relative RMS error, see DYNAMIC_SHARE).
Written = collections.namedtuple("Written", "what write options inputs_quantized")


def check_calibrated_ranges(model_path, ranges, calibration, label):
    """Failures (0 or 1) where kilnc's calibrated input range of a weight's
    products (`ranges`, by weight name, from --report) is not ORT's MinMax
    range of their inputs on the same `calibration` feeds: the union over
    every product (MatMul, Gemm, or einsum by a weight) reading the weight (an exporter shares one
    initializer between layers that hold the same values)."""
    model = onnx.load(model_path)
    identity = quantization.identity_sources(model.graph)
    activations = collections.defaultdict(set)
    for node in model.graph.node:
        if quantization.is_weight_product(node) and len(node.input) > 1:
            weight = identity.get(node.input[1], node.input[1])
            if weight in ranges:
                activations[weight].add(node.input[0])
    unmatched = sorted(set(ranges) - set(activations))
    if unmatched:
        print(f"FAIL: {label}: calibrated weights {unmatched} are read by no product")
        return 1
    ort = quantization.calibrated_ranges(model, sorted(set().union(*activations.values())),
                                         calibration)
    worst, worst_weight = 0.0, None
    for weight, tensors in activations.items():
        low = min(float(ort[tensor][0]) for tensor in tensors)
        high = max(float(ort[tensor][1]) for tensor in tensors)
        width = max(high - low, np.finfo(np.float32).tiny)
        error = max(abs(ranges[weight][0] - low), abs(ranges[weight][1] - high))
        if error / width >= worst:
            worst, worst_weight = error / width, weight
    ok = worst <= CALIBRATION_TOLERANCE
    print(f"{'PASS' if ok else 'FAIL'}: {label}: the {len(activations)} weights' products' calibrated "
          f"input ranges are ORT's MinMax calibration's within {worst:.3g} of the range "
          f"(worst: {worst_weight})")
    return 0 if ok else 1


def compare_model(kilnc, kiln_run, model, work_dir):
    failures = 0
    model_name = os.path.basename(model)[:-len(".onnx")]
    cases, dims = compare_ort.model_cases(model)
    variants = {"int8": ["--quantize=int8-weight"], "int4": ["--quantize=int4-weight"],
                "int8_dynamic": ["--quantize=int8-dynamic"]}
    if cases is compare_ort.DECODER_CASES:
        for mode in ("int8", "int4", "int8_dynamic"):
            variants[f"{mode}_lm_head"] = [*variants[mode], "--quantize-lm-head"]
    # ONNX Runtime's own formats, which kiln imports and ORT runs as
    # written (Written). The QDQ and dynamic models once more with their
    # quantized products left unfolded (kiln-fold-quantized-products off):
    # their quantizing ops then run as written, which checks their own
    # lowering.
    calibration = [harness.make_inputs(model, *case, seed=seed)
                   for seed, case in enumerate(cases, CALIBRATION_SEED)]
    # Static W8A8, calibrated by kilnc on the same inputs.
    calibration_dir = os.path.join(work_dir, f"{model_name}.calibration")
    harness.save_calibration_sets(calibration, calibration_dir)
    variants["int8_static"] = ["--quantize=int8", "--calibration", calibration_dir]
    if cases is compare_ort.DECODER_CASES:
        variants["int8_static_lm_head"] = [*variants["int8_static"], "--quantize-lm-head"]
    def qdq(activation_type, per_channel=False):
        return lambda path: quantization.qdq_model(model, path, calibration, activation_type,
                                                   per_channel=per_channel)
    def qoperator(activation_type, per_channel=False):
        return lambda path: quantization.qoperator_model(model, path, calibration,
                                                         activation_type, per_channel=per_channel)
    def dynamic(per_channel=False):
        return lambda path: quantization.dynamic_model(model, path, per_channel=per_channel)
    unfolded = ["--disable=fold-quantized-products"]
    written = {
        "matmul_nbits": Written("MatMulNBits", lambda path: quantization.matmul_nbits_model(
            model, path, GROUP_SIZE), [], inputs_quantized=False),
        "qdq_int8": Written("QDQ MatMuls", qdq("int8"), [], inputs_quantized=True),
        "qdq_uint8_per_channel": Written("QDQ MatMuls", qdq("uint8", per_channel=True), [],
                                         inputs_quantized=True),
        "qdq_int8_as_written": Written("QDQ MatMuls", qdq("int8"), unfolded,
                                       inputs_quantized=True),
        "qoperator_int8": Written("QLinearMatMuls", qoperator("int8"), [],
                                  inputs_quantized=True),
        "qoperator_uint8_per_channel": Written("QLinearMatMuls",
                                               qoperator("uint8", per_channel=True), [],
                                               inputs_quantized=True),
        "dynamic_int8": Written("MatMulIntegers", dynamic(), [], inputs_quantized=True),
        "dynamic_int8_per_channel": Written("MatMulIntegers", dynamic(per_channel=True), [],
                                            inputs_quantized=True),
        "dynamic_int8_as_written": Written("MatMulIntegers", dynamic(), unfolded,
                                           inputs_quantized=True),
    }
    variants.update(written)
    names = harness.output_names(model)
    for variant, options in variants.items():
        artifact = os.path.join(work_dir, f"{model_name}.{variant}.kiln")
        reference = os.path.join(work_dir, f"{model_name}.{variant}.reference.onnx")
        # Where the products' inputs are quantized (W8A8, QDQ, QOperator,
        # dynamic): the relative RMS error against the reference, at most
        # DYNAMIC_SHARE of the quantization's own against f32.
        if variant in written:
            what, write, compile_options, relative_rms = options
            count = write(reference)
            if not count:
                print(f"SKIP: {model_name} {variant}: no MatMul by a constant weight "
                      f"(its products are Gemms), nothing to write as {what}")
                continue
            harness.run_command([kilnc, reference, "-o", artifact,
                                 *compare_ort.dim_bounds(cases, dims), *compile_options])
            quantized = f"{count} {what}"
        else:
            w8a8 = "--quantize=int8-dynamic" in options or "--quantize=int8" in options
            relative_rms = w8a8
            report_path = os.path.join(work_dir, f"{model_name}.{variant}.json")
            # W8A8 scales whole columns: no group size.
            groups = [] if w8a8 else [f"--quant-group-size={GROUP_SIZE}"]
            harness.run_command([kilnc, model, "-o", artifact, *groups,
                                 f"--report={report_path}",
                                 *compare_ort.dim_bounds(cases, dims), *options])
            with open(report_path) as report:
                report = json.load(report)
            record = report["quantization"]
            if not record["weights"]:
                print(f"FAIL: {model_name} {variant}: no weight was quantized")
                failures += 1
                continue
            if record["mode"] == "int8":
                failures += check_calibrated_ranges(
                    model, report["calibration"]["input_ranges"], calibration,
                    f"{model_name} {variant}")
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
                if relative_rms:
                    rms = harness.relative_rms_error(kiln[name], ort[name])
                    # A written model: the reference's own error, which
                    # does not depend on kiln.
                    quantization_error = harness.relative_rms_error(
                        ort[name] if variant in written else kiln[name], f32[name])
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
