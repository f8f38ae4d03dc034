"""Runs Kiln and ONNX Runtime side by side on the models/ exports: same
models, same inputs, same thread count, one process after the other in the
same run. `--suite tiny` (the default) runs Kiln's own exports; `--suite hf`
runs the Hugging Face exports of models/hf and PyTorch's
nn.TransformerEncoder (d=256, 4 layers, exported into the work dir at run
time by models/export.py) at batch 1 and 8, 128 tokens; `--suite scale`
runs Llama at realistic sizes (models/export.py's llama_medium, 155M
parameters, and llama_large, Llama-3.2-1B's shape) and BLOOM at Llama
medium's width and depth (bloom_medium; all made at run time) for a
prefill of 512 tokens and decode steps at batch 1, 8 and 32 after 512, and
holds each step against the machine's ceilings measured in the same run
(bench/roofline.cpp: read bandwidth, fp32 FMA and int8 dot-product peaks): the bytes the step
must move and the FLOPs it must do, and the fraction of the binding ceiling
kiln and ONNX Runtime reach. The tiny and hf suites run five builds: every optimization, `--disable=fusion`,
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

The scale suite runs the default build and four weight-only quantized
builds (`--quantize=int8-weight` and `int4-weight`, each with the LM head
left f32 and with `--quantize-lm-head`), and the export rewritten in ONNX
Runtime's own quantized formats (`nbits`: its MatMuls as 4-bit
MatMulNBits; `qdq`: quantize_static's QDQ model; `dynamic`:
quantize_dynamic's, DynamicQuantizeLinear and MatMulInteger), which ORT
runs too, so both run the same quantized model, rather than the optimization
variants (each of a 5 GB model would compile for minutes), and reports
kilnc's compile time and peak RSS. Each build's step is held against its
own bytes (int8 weights move a quarter of the f32 bytes, 4-bit ones an
eighth, plus their scales and zero points), and the quantized builds' outputs
against ONNX Runtime's f32 ones give the relative RMS error that the
quantization costs (random weights: a measure of the error, not of
accuracy).

usage: bench/run.py [--kilnc PATH] [--kiln-run PATH] [--roofline PATH] [--work-dir DIR]
                    [--suite tiny|hf|scale] [--models NAME...] [--threads N] [--runs N]
                    [--rounds N] [--json FILE] [--smoke]
"""

import argparse
import datetime
import json
import os
import sys
import time

import harness
import quantization

ROOT = os.path.dirname(harness.HERE)
MODEL_DIRS = [os.path.join(ROOT, "models", "exports"), os.path.join(ROOT, "models", "hf")]
# Exports made at run time into the work dir (too large to check in).
GENERATED_MODELS = {"torch_encoder", "llama_medium", "llama_large", "bloom_medium"}

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
    ("bloom_tiny", 1, 128, 0, "prefill"),
    ("bloom_tiny", 1, 1, 127, "decode"),
    ("bloom_tiny", 8, 1, 127, "decode"),
    ("einsum_encoder_tiny", 1, 128, 0, "encode"),
    ("einsum_encoder_tiny", 8, 128, 0, "encode"),
]
HF_MODELS = ["hf_distilbert_dynamo", "hf_distilbert_ts17", "hf_gemma_kv_ts17",
             "hf_gpt_neox_kv_ts17", "hf_opt_kv_ts17", "hf_phi3_kv_ts17",
             "hf_qwen3_kv_ts17", "hf_roberta_dynamo", "hf_roberta_ts17", "torch_encoder"]
HF_CASES = [(model, batch, 128, 0, "encode" if "_kv_" not in model else "prefill")
            for model in HF_MODELS for batch in (1, 8)]
SCALE_MODELS = ["llama_medium", "llama_large", "bloom_medium"]
SCALE_CASES = [case for model in SCALE_MODELS
               for case in [(model, 1, 512, 0, "prefill"), (model, 1, 1, 512, "decode"),
                            (model, 8, 1, 512, "decode"), (model, 32, 1, 512, "decode")]]
SUITES = {"tiny": TINY_CASES, "hf": HF_CASES, "scale": SCALE_CASES}
# The artifacts each case runs: every optimization on, every fusion off, the
# GEMM epilogues off, weight packing off, memory planning off, and einsums
# left as loop nests.
VARIANTS = {"fused": [], "unfused": ["--disable=fusion"],
            "no_epilogues": ["--disable=fuse-gemm-epilogues"],
            "unpacked": ["--disable=pack-weights"],
            "unplanned": ["--disable=memory-plan"],
            "einsums": ["--disable=einsum-to-matmul"]}
# The time-ratio columns: (heading, variant, JSON key), each the variant's
# median over the fused build's.
RATIOS = [("fusion", "unfused", "fusion_speedup"),
          ("epil.", "no_epilogues", "epilogue_speedup"),
          ("pack", "unpacked", "packing_speedup"),
          ("plan", "unplanned", "planning_speedup"),
          ("einsum", "einsums", "einsum_speedup")]
# The bounds every build declares, for the dims its model has; the decoders'
# past and total lengths are bounded by the tiny exports' 256 positions, and
# at scale by what the cases need.
DIM_BOUNDS = {"batch": "1:8", "sequence": "1:128", "past_sequence": "0:255",
              "total_sequence": "1:256"}
# The scale suite's builds: the default one, the weight-only quantized
# ones and W8A8 (int8-dynamic), each mode with the LM head f32 and
# quantized ("_head").
QUANT_GROUP_SIZE = 128
SCALE_VARIANTS = {"fused": []}
for _mode in ("int8", "int4"):
    SCALE_VARIANTS[_mode] = [f"--quantize={_mode}-weight",
                             f"--quant-group-size={QUANT_GROUP_SIZE}"]
    SCALE_VARIANTS[f"{_mode}_head"] = [*SCALE_VARIANTS[_mode], "--quantize-lm-head"]
SCALE_VARIANTS["w8a8"] = ["--quantize=int8-dynamic"]
SCALE_VARIANTS["w8a8_head"] = [*SCALE_VARIANTS["w8a8"], "--quantize-lm-head"]
# Static W8A8: kilnc calibrates each product's input scale on
# CALIBRATION_CASES (--calibration, added per model by compile_artifacts).
STATIC_W8A8 = "--quantize=int8"
SCALE_VARIANTS["w8a8_static"] = [STATIC_W8A8]
SCALE_VARIANTS["w8a8_static_head"] = [STATIC_W8A8, "--quantize-lm-head"]
# Builds of another model, which ONNX Runtime runs too, each written by
# bench/quantization.py from the export with every MatMul by a constant
# weight (the LM head's included) quantized: as ORT's 4-bit MatMulNBits,
# blocks of QUANT_GROUP_SIZE ("nbits"); as ORT's quantize_static writes a
# QDQ model ("qdq": int8 weights per tensor, int8 activations per tensor
# from a MinMax calibration on CALIBRATION_CASES), which kiln folds into
# int8 products with static input scales; or as ORT's quantize_dynamic
# writes it ("dynamic": int8 weights per tensor, uint8 activations
# quantized per tensor at run time by DynamicQuantizeLinear, MatMulInteger
# products), int8 products in kiln too.
NBITS = "nbits"
QDQ = "qdq"
DYNAMIC = "dynamic"
# (batch, sequence, past, seed): a prefill and a decode step with a past.
CALIBRATION_CASES = [(1, 128, 0, 100), (4, 1, 256, 101)]


def calibration_feeds(source):
    """The export's inputs for each of CALIBRATION_CASES."""
    return [harness.make_inputs(source, batch, sequence, past, seed=seed)
            for batch, sequence, past, seed in CALIBRATION_CASES]


def calibrated_qdq_model(source, destination):
    """qdq_model calibrated on CALIBRATION_CASES."""
    quantization.qdq_model(source, destination, calibration_feeds(source))


def calibration_sets(source, work_dir):
    """kilnc --calibration's directory of CALIBRATION_CASES' inputs for the
    export (the data the QDQ model is calibrated on too)."""
    directory = os.path.join(work_dir, os.path.basename(source) + ".calibration")
    harness.save_calibration_sets(calibration_feeds(source), directory)
    return directory


# The builds of a written model: the function writing it (export path,
# destination path). Their options in SCALE_VARIANTS are None.
WRITTEN_MODELS = {
    NBITS: lambda source, destination: quantization.matmul_nbits_model(
        source, destination, QUANT_GROUP_SIZE),
    QDQ: calibrated_qdq_model,
    DYNAMIC: quantization.dynamic_model,
}
SCALE_VARIANTS.update(dict.fromkeys(WRITTEN_MODELS))
SCALE_DIM_BOUNDS = {"batch": "1:32", "sequence": "1:512", "past_sequence": "0:1023",
                    "total_sequence": "1:1024"}
SMOKE_CASES = {"tiny": [("bert_tiny", 1, 8, 0, "encode"), ("gpt2_tiny", 1, 1, 7, "decode"),
                        ("llama_tiny", 1, 1, 7, "decode")],
               "hf": [("hf_qwen3_kv_ts17", 1, 8, 0, "prefill"),
                      ("hf_roberta_dynamo", 1, 8, 0, "encode")],
               "scale": [("llama_medium", 1, 8, 0, "prefill"),
                         ("llama_medium", 1, 1, 8, "decode")]}


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


def compile_artifacts(args, models, variants, dim_bounds):
    """Compiles every model in every variant; returns the artifacts by
    (model, variant), the ONNX paths by model, and kilnc's seconds and peak
    RSS for each model's default build."""
    artifacts, paths, compiles = {}, {}, {}
    for model in models:
        paths[model] = model_path(model, args.work_dir)
        dims = harness.symbolic_dims(paths[model])
        bounds = [f"--dim={name}={bound}" for name, bound in dim_bounds.items()
                  if name in dims]
        for variant, options in variants.items():
            artifact = os.path.join(args.work_dir, f"{model}.{variant}.kiln")
            source = paths[model]
            if variant in WRITTEN_MODELS:
                source = paths[model, variant] = os.path.join(
                    args.work_dir, f"{model}.{variant}.onnx")
                WRITTEN_MODELS[variant](paths[model], source)
            options = list(options or [])
            if STATIC_W8A8 in options:
                options += ["--calibration", calibration_sets(source, args.work_dir)]
            usage = {}
            start = time.monotonic()
            harness.run_command([args.kilnc, source, "-o", artifact, *bounds, *options],
                                usage)
            if variant == "fused":
                compiles[model] = {"seconds": time.monotonic() - start,
                                   "max_rss_mb": usage["max_rss_mb"]}
            artifacts[model, variant] = artifact
    return artifacts, paths, compiles


def measure_case(args, case, artifacts, paths, variants, runs, rounds, check=False):
    """Each build and ONNX Runtime, `rounds` times in turn; the lowest median
    of each. A build of another model (WRITTEN_MODELS, its model in `paths`)
    has ORT run that model too, as "ort_" + the build. With `check`, the
    first round's processes also write their outputs, and "errors" gives
    each build's largest max |kiln - ORT| / max |ORT| ("max_rel_err",
    against ORT running the build's own model) and relative RMS error
    against ORT's f32 outputs ("rel_rms_err") over its outputs."""
    model, batch, sequence, past, _ = case
    case_dir = os.path.join(args.work_dir, f"{model}_{batch}_{sequence}_{past}")
    os.makedirs(case_dir, exist_ok=True)
    inputs = harness.make_inputs(paths[model], batch, sequence, past)
    flags = harness.save_inputs(inputs, case_dir)
    own_models = [variant for variant in variants if variant in WRITTEN_MODELS]
    measured = {name: [] for name in [*variants, "ort", *(f"ort_{v}" for v in own_models)]}
    # Outputs are written outside the timed runs, so writing them costs no time.
    def output_dir(name, round_index):
        return os.path.join(case_dir, name) if check and round_index == 0 else None

    for round_index in range(rounds):
        for variant in variants:
            measured[variant].append(harness.run_kiln(
                args.kiln_run, artifacts[model, variant], flags,
                output_dir(variant, round_index), threads=args.threads, benchmark=runs))
        for name, onnx_path in [("ort", paths[model]),
                                *((f"ort_{v}", paths[model, v]) for v in own_models)]:
            measured[name].append(harness.run_ort(
                onnx_path, flags, output_dir(name, round_index), threads=args.threads,
                benchmark=runs))
    best = {name: min(stats, key=lambda s: s["median_ms"])
            for name, stats in measured.items()}
    if check:
        names = harness.output_names(paths[model])
        expected = harness.load_outputs(os.path.join(case_dir, "ort"), names)
        best["errors"] = {}
        for variant in variants:
            actual = harness.load_outputs(os.path.join(case_dir, variant), names)
            own = (harness.load_outputs(os.path.join(case_dir, f"ort_{variant}"), names)
                   if variant in own_models else expected)
            best["errors"][variant] = {
                "max_rel_err": max(harness.max_relative_error(actual[name], own[name])
                                   for name in names),
                "rel_rms_err": max(harness.relative_rms_error(actual[name], expected[name])
                                   for name in names)}
    return best


def optimization_table(args, cases, runs, rounds):
    """The tiny and hf suites: five builds per model, and what each
    optimization gains."""
    artifacts, paths, _ = compile_artifacts(
        args, sorted({case[0] for case in cases}), VARIANTS, DIM_BOUNDS)
    results = []
    header = (f"{'model':<20} {'case':<8} {'shape (b, s, past)':<19} "
              f"{'kiln ms':>8} "
              + "".join(f"{variant[:8]:>9} {heading:>6} "
                        for heading, variant, _ in RATIOS)
              + f"{'ORT ms':>8} {'ORT/kiln':>8} {'kiln MB':>8} "
              f"{'unpl. MB':>8} {'arena MB':>8} {'wts MB':>7} {'ORT MB':>7}")
    print(header)
    print("-" * len(header))
    for case in cases:
        model, batch, sequence, past, kind = case
        best = measure_case(args, case, artifacts, paths, VARIANTS, runs, rounds)
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
          "unpacked / kiln, plan = unplanned / kiln and einsum = einsums / kiln "
          "(time ratios); "
          "ORT/kiln > 1 means kiln is faster; kiln MB and ORT MB = peak RSS of "
          "the process (kiln-run, or Node.js running ORT), which includes the "
          "arena and the weights pages touched; arena and wts = the artifact's "
          "arena and weights section.")
    return {"results": results}


def runs_int8_products(variant):
    """Whether the build's products run in int8 (W8A8): int8-dynamic, the
    folded QDQ model, or the dynamic one."""
    return variant.startswith("w8a8") or variant in (QDQ, DYNAMIC)


def weight_bytes(variant):
    """Bytes per weight element of a build's quantized products: an int8
    value and its share of a column's f32 group scale, or half a byte and
    its share of a group's scale and one-byte zero point; 4 for f32. W8A8's
    int8 value has a scale and a sum per column of K rows, under 1% for
    K >= 1024, left out."""
    if runs_int8_products(variant):
        return 1
    if variant.startswith("int8"):
        return 1 + 4 / QUANT_GROUP_SIZE
    if variant.startswith("int4") or variant == NBITS:
        return 0.5 + 5 / QUANT_GROUP_SIZE
    return 4


def product_weights(architecture):
    """The weight elements of one layer's projections (Q, K, V, O and the
    MLP's matrices: a gated MLP's three, BLOOM's two) and of the LM head."""
    a = architecture
    hidden, head_dim = a["hidden_size"], a["head_dim"]
    projections = (hidden * a["num_heads"] * head_dim + 2 * hidden * a["num_kv_heads"] * head_dim
                   + a["num_heads"] * head_dim * hidden
                   + a.get("mlp_matrices", 3) * hidden * a["intermediate_size"])
    return projections, hidden * a["vocab_size"]


def quantizes_lm_head(architecture, variant):
    """Whether the build quantizes the LM head (a tied one stays f32): the
    written models quantize every MatMul by a constant weight."""
    return ((variant.endswith("_head") or variant in WRITTEN_MODELS)
            and not architecture["tied_embeddings"])


def int8_flops(architecture, batch, sequence, variant):
    """The part of step_cost's FLOPs that a W8A8 build runs as int8 dot
    products: the projections', and the LM head's where it is quantized;
    0 for the other builds."""
    if not runs_int8_products(variant):
        return 0
    projections, lm_head = product_weights(architecture)
    return 2 * batch * sequence * (architecture["num_layers"] * projections
                                   + (lm_head if quantizes_lm_head(architecture, variant) else 0))


def step_cost(architecture, batch, sequence, past, variant="fused"):
    """What one step of a decoder must move (bytes) and do (FLOPs):
    every weight read once (the embedding only at the rows it gathers,
    unless the LM head reads it whole), the projections' weights at
    weight_bytes(variant) each and the LM head's too when the build
    quantizes it (a tied one stays f32: the gather reads it), the past keys
    and values read and the presents written (the optimum interface returns
    whole presents), and the logits written, all else in fp32; 2 FLOPs per
    multiply-add of the projections and of attention over the keys each
    query sees (causal)."""
    a = architecture
    hidden, layers, head_dim = a["hidden_size"], a["num_layers"], a["head_dim"]
    heads, kv_heads, vocab = a["num_heads"], a["num_kv_heads"], a["vocab_size"]
    projections, lm_head = product_weights(a)
    lm_head_quantized = quantizes_lm_head(a, variant)
    norms = (2 * layers + 1) * hidden
    tokens = batch * sequence
    embedding_rows = 0 if a["tied_embeddings"] else tokens * hidden
    kv_entry = 2 * layers * batch * kv_heads * head_dim
    floats = (norms + embedding_rows + kv_entry * past
              + kv_entry * (past + sequence) + tokens * vocab)
    moved = (4 * floats + weight_bytes(variant) * layers * projections
             + (weight_bytes(variant) if lm_head_quantized else 4) * lm_head)
    keys_seen = sequence * past + sequence * (sequence + 1) // 2
    flops = (2 * tokens * (layers * projections + lm_head)
             + 4 * layers * batch * heads * head_dim * keys_seen)
    return moved, flops


def highest_ceilings(ceilings):
    """kiln-roofline's highest read bandwidth (bytes/s), fp32 FMA peak and
    int8 dot-product peak (operations/s) over `ceilings`, its measurements:
    the VM's speed drifts, so the highest stands. Where no measurement has
    an int8 peak (no VNNI), W8A8's products are held against the FMA one."""
    bandwidth = max(c["read_gb_per_s"] for c in ceilings) * 1e9
    peak = max(c["fma_gflop_per_s"] for c in ceilings) * 1e9
    int8_peaks = [c["int8_gop_per_s"] for c in ceilings if c.get("int8_gop_per_s")]
    return bandwidth, peak, max(int8_peaks) * 1e9 if int8_peaks else peak


def step_seconds(architecture, batch, sequence, past, variant, ceilings):
    """step_cost's bytes and FLOPs, and the seconds moving and doing them
    take at highest_ceilings(ceilings), W8A8's integer products at the int8
    peak: (moved, flops, memory_s, compute_s)."""
    bandwidth, peak, int8_peak = highest_ceilings(ceilings)
    moved, flops = step_cost(architecture, batch, sequence, past, variant)
    integer = int8_flops(architecture, batch, sequence, variant)
    return moved, flops, moved / bandwidth, integer / int8_peak + (flops - integer) / peak


def roofline_table(args, cases, runs, rounds):
    """The scale suite: the default and quantized builds against ONNX Runtime,
    each step held against the ceilings measured in the same run."""
    models = list(dict.fromkeys(case[0] for case in cases))
    variants = {name: options for name, options in SCALE_VARIANTS.items()
                if name == "fused" or not args.variants or name in args.variants}
    artifacts, paths, compiles = compile_artifacts(
        args, models, variants, SCALE_DIM_BOUNDS)
    # The VM's bandwidth drifts by a fifth within minutes, so the ceilings
    # are measured before every case and after the last, and the highest
    # seen stands: a fraction of the roofline is then never flattered.
    ceilings = []

    def measure_ceilings():
        ceilings.append(json.loads(harness.run_command(
            [args.roofline, "--threads", str(args.threads)]).strip().splitlines()[-1]))

    for model in models:
        memory = harness.artifact_memory(artifacts[model, "fused"])
        print(f"{model}: kilnc {compiles[model]['seconds']:.1f} s, peak RSS "
              f"{compiles[model]['max_rss_mb']:.0f} MB for "
              f"{memory['weights_bytes'] / 1e6:.0f} MB of weights "
              f"({compiles[model]['max_rss_mb'] * 2**20 / memory['weights_bytes']:.2f}x); "
              + ", ".join(f"{variant} artifact weights "
                          f"{harness.artifact_memory(artifacts[model, variant])['weights_bytes'] / 1e6:.0f} MB"
                          for variant in variants if variant != "fused"))
    header = (f"{'model':<14} {'case':<8} {'shape (b, s, past)':<19} {'build':<16} "
              f"{'MB/step':>8} {'GFLOP':>7} {'bound':>5} {'floor ms':>9} {'kiln ms':>9} "
              f"{'kiln %':>6} {'x f32':>6} {'ORT ms':>9} {'ORT %':>6} {'ORT/kiln':>8} "
              f"{'kiln MB':>8} {'ORT MB':>7} {'kiln ld':>8} {'ORT ld':>8} {'rel err':>8}")
    measured = []
    for case in cases:
        measure_ceilings()
        measured.append((case, measure_case(args, case, artifacts, paths, variants,
                                            runs, rounds, check=True)))
    measure_ceilings()
    bandwidth, peak, int8_peak = highest_ceilings(ceilings)
    int8_peaks = [c["int8_gop_per_s"] for c in ceilings if c.get("int8_gop_per_s")]
    print(f"ceilings ({ceilings[0]['isa']}, {args.threads} threads, the highest of "
          f"{len(ceilings)} measurements): read {bandwidth / 1e9:.1f} GB/s "
          f"(lowest {min(c['read_gb_per_s'] for c in ceilings):.1f}), fp32 FMA "
          f"{peak / 1e9:.1f} GFLOP/s (lowest {min(c['fma_gflop_per_s'] for c in ceilings):.1f})"
          + (f", int8 dot products {int8_peak / 1e9:.1f} GOP/s (lowest {min(int8_peaks):.1f})"
             if int8_peaks else ", no int8 dot products (VNNI)"))
    print(header)
    print("-" * len(header))
    results = []
    for case, best in measured:
        model, batch, sequence, past, kind = case
        with open(os.path.join(args.work_dir, model + ".json")) as f:
            architecture = json.load(f)
        shape = f"({batch}, {sequence}, {past})"
        for variant in variants:
            ort = best.get(f"ort_{variant}", best["ort"])
            moved, flops, memory_s, compute_s = step_seconds(
                architecture, batch, sequence, past, variant, ceilings)
            memory_ms, compute_ms = 1e3 * memory_s, 1e3 * compute_s
            floor_ms = max(memory_ms, compute_ms)
            bound = "mem" if memory_ms >= compute_ms else "fma"
            kiln, errors = best[variant], best["errors"][variant]
            # f32 builds (and ORT's own model) must match ORT; the quantized
            # ones show what quantizing cost.
            error = errors["max_rel_err" if variant in ("fused", NBITS) else "rel_rms_err"]
            print(f"{model:<14} {kind:<8} {shape:<19} {variant:<16} {moved / 1e6:>8.1f} "
                  f"{flops / 1e9:>7.2f} {bound:>5} {floor_ms:>9.3f} {kiln['median_ms']:>9.3f} "
                  f"{100 * floor_ms / kiln['median_ms']:>5.0f}% "
                  f"{best['fused']['median_ms'] / kiln['median_ms']:>6.2f} "
                  f"{ort['median_ms']:>9.3f} {100 * floor_ms / ort['median_ms']:>5.0f}% "
                  f"{ort['median_ms'] / kiln['median_ms']:>8.2f} {kiln['max_rss_mb']:>8.0f} "
                  f"{ort['max_rss_mb']:>7.0f} {kiln['load_ms']:>8.0f} {ort['load_ms']:>8.0f} "
                  f"{error:>8.1e}")
            results.append({"model": model, "case": kind, "batch": batch, "sequence": sequence,
                            "past": past, "build": variant, "bytes": moved, "flops": flops,
                            "bound": bound, "floor_ms": floor_ms, "kiln": kiln,
                            "onnxruntime": ort,
                            "ort_over_kiln": ort["median_ms"] / kiln["median_ms"],
                            "f32_over_build": best["fused"]["median_ms"] / kiln["median_ms"],
                            **errors})
    print("build = fused (f32), int8 / int4 (--quantize=int8-weight / int4-weight, the LM "
          "head f32), w8a8 (--quantize=int8-dynamic: the products' inputs quantized too, "
          "per row at run time), w8a8_static (--quantize=int8: one input scale per product, "
          "calibrated by kilnc on the QDQ model's calibration inputs), int8_head / "
          "int4_head / w8a8_head / w8a8_static_head (the LM head quantized too), nbits (the "
          "export "
          "with its MatMuls as ONNX Runtime's 4-bit MatMulNBits, blocks of "
          f"{QUANT_GROUP_SIZE}), qdq (the export as ORT's quantize_static writes a QDQ "
          "model, int8 per tensor, MinMax-calibrated; kiln folds its products into int8 "
          "ones with static input scales) or dynamic (the export as ORT's quantize_dynamic "
          "writes it, int8 weights per tensor, uint8 activations quantized per tensor at "
          "run time, MatMulInteger; int8 products in kiln too), the LM head quantized in "
          "all three: ORT runs those models too, and their ORT columns are ORT on them; "
          "MB/step and "
          "GFLOP = what the build's step must move and do "
          "(bench/run.py step_cost); floor = the slower of the two at the ceilings (W8A8's "
          "products at the int8 dot-product peak); kiln % and "
          "ORT % = floor / time, the fraction of the binding ceiling reached (ORT's against "
          "the build's floor; over 100%: the step beat the STREAM-like read, e.g. with weights "
          "still in the last-level cache); x f32 = the f32 build's time over this build's; "
          "MB = peak RSS; ld = ms to load the model and create a session (the lowest run's); "
          "rel err = max |kiln - ORT| / max |ORT| over the outputs for the f32 and nbits "
          "builds (nbits against ORT on the same MatMulNBits model), and for the others (qdq "
          "and dynamic too) the "
          "relative RMS error against ORT's f32 outputs (the quantization's).")
    failed = [r for r in results
              if r["build"] in ("fused", NBITS) and not r["max_rel_err"] <= 1e-4]
    if failed:
        raise RuntimeError("kiln's outputs differ from ONNX Runtime's by more than 1e-4 in: "
                           + ", ".join(f"{r['model']} {r['case']} ({r['batch']}, "
                                       f"{r['sequence']}, {r['past']})" for r in failed))
    return {"ceilings": ceilings, "compiles": compiles, "results": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kilnc", default=os.path.join(ROOT, "build/bin/kilnc"))
    parser.add_argument("--kiln-run", default=os.path.join(ROOT, "build/bin/kiln-run"))
    parser.add_argument("--roofline", default=os.path.join(ROOT, "build/bin/kiln-roofline"))
    parser.add_argument("--work-dir", default=os.path.join(ROOT, "build/bench"))
    parser.add_argument("--suite", choices=sorted(SUITES), default="tiny",
                        help="which models: Kiln's tiny exports, the Hugging Face "
                        "exports and PyTorch's encoder, or Llama at realistic sizes")
    parser.add_argument("--models", nargs="+",
                        help="only the cases of these models (say, llama_medium)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--runs", type=int, default=50,
                        help="timed runs per process")
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per build and case, interleaved")
    parser.add_argument("--json", help="where to write the results "
                        "(default: WORK_DIR/results.json)")
    parser.add_argument("--variants", nargs="+", choices=sorted(SCALE_VARIANTS),
                        help="the scale suite's builds to run besides the f32 one "
                        "(default: all)")
    parser.add_argument("--smoke", action="store_true",
                        help="3 runs of one small shape per model")
    args = parser.parse_args()
    cases = SMOKE_CASES[args.suite] if args.smoke else SUITES[args.suite]
    if args.models:
        cases = [case for case in cases if case[0] in args.models]
        if not cases:
            parser.error(f"no {args.suite} case runs {' '.join(args.models)}")
    runs = 3 if args.smoke else args.runs
    rounds = 1 if args.smoke else args.rounds
    os.makedirs(args.work_dir, exist_ok=True)
    print(f"threads: {args.threads}, runs: {runs} per process, "
          f"rounds: {rounds} (lowest median of each)")
    table = roofline_table if args.suite == "scale" else optimization_table
    report = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "suite": args.suite, "threads": args.threads, "runs": runs,
              "rounds": rounds, **table(args, cases, runs, rounds)}
    path = args.json or os.path.join(args.work_dir, "results.json")
    with open(path, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
