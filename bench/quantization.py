"""Kiln's quantization (kilnc --quantize=int8-weight, int4-weight and
int8-dynamic, passes/QuantizeWeights.cpp) redone in numpy and ONNX, for
references: the same scales (and zero points) per column and group of
rows, computed in float32 with the same rounding, so that an ONNX model
whose weights are replaced by their dequantized values computes what the
quantized artifact computes. For int8-dynamic the products' inputs are
also quantized and multiplied back per row, by ONNX ops doing the runtime's
float32 arithmetic (gemmInt8). It also writes an export in ONNX Runtime's
own quantized formats, for models that kiln imports as they are and ORT
runs as the reference: 4-bit MatMulNBits (matmul_nbits_model), the QDQ
and QOperator models of ORT's quantize_static (qdq_model, and
qoperator_model: QuantizeLinear, QLinearMatMul and DequantizeLinear) and
the QOperator model of ORT's quantize_dynamic (dynamic_model:
DynamicQuantizeLinear and MatMulInteger). Runs under /usr/bin/python3
(numpy, onnx; ONNX Runtime through bench/ort for the static models'
calibration)."""

import os
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

import harness

INT8_MAX = np.float32(127)
UINT4_MAX = np.float32(15)


# kilnc's W8A8 modes (--report's `mode`): int8 weights with a scale per
# column, inputs quantized per row at run time or with a calibrated scale.
W8A8_MODES = ("int8-dynamic", "int8")


def quantize(weight, group_size, mode):
    """`weight` [K, N] (float32) as integer values [K, N], float32 scales
    and zero points [ceil(K / group_size), N], per column's group of rows.
    int8-weight: scale = max |w| / 127, value = round(w / scale), zero
    point 0 (W8A8_MODES: the same, with one group of all K rows).
    int4-weight: the range [min(w, 0), max(w, 0)] in 15 steps of
    scale, zero point = round(-min / scale), value = round(w / scale) +
    zero point in [0, 15]. Rounding is to nearest, ties to even."""
    k = weight.shape[0]
    groups = -(-k // group_size)
    values = np.zeros(weight.shape, np.float32)
    scales = np.zeros((groups, weight.shape[1]), np.float32)
    zero_points = np.zeros_like(scales)
    for group in range(groups):
        rows = weight[group * group_size:(group + 1) * group_size]
        low = np.minimum(rows.min(axis=0), np.float32(0))
        high = np.maximum(rows.max(axis=0), np.float32(0))
        if mode == "int8-weight" or mode in W8A8_MODES:
            scale = (np.maximum(high, -low) / INT8_MAX).astype(np.float32)
            zero_point, lowest, highest = np.zeros_like(scale), -INT8_MAX, INT8_MAX
        elif mode == "int4-weight":
            scale = ((high - low) / UINT4_MAX).astype(np.float32)
            zero_point = np.clip(np.round(np.divide(-low, scale, out=np.zeros_like(low),
                                                    where=scale > 0)), 0, UINT4_MAX)
            lowest, highest = np.float32(0), UINT4_MAX
        else:
            raise ValueError(f"unknown quantization mode '{mode}'")
        quotient = np.divide(rows, scale, out=np.zeros_like(rows), where=scale > 0)
        value = np.clip(np.round(quotient) + zero_point, lowest, highest)
        # A zero scale leaves the values zero, as kiln does.
        values[group * group_size:(group + 1) * group_size] = np.where(scale > 0, value, 0)
        scales[group] = scale
        zero_points[group] = zero_point
    return values, scales, zero_points


def dequantize(values, scales, zero_points, group_size):
    """(value − zero point) · scale in float32, each product rounded once."""
    def per_row(groups):
        return np.repeat(groups, group_size, axis=0)[:values.shape[0]]
    return ((values - per_row(zero_points)) * per_row(scales)).astype(np.float32)


def einsum_weight_orientation(node):
    """For a two-input Einsum that is a product by its second input, as
    kilnc's kiln-einsum-to-matmul makes it one ("btd,df->btf"): True when
    that input is [N, K], False when [K, N]; None for any other einsum, or
    one whose first input does not end in K (its rows must be along K, as a
    product's input is quantized per row)."""
    equation = next((a.s.decode() for a in node.attribute if a.name == "equation"), "")
    equation = equation.replace(" ", "")
    if "->" not in equation or "." in equation:
        return None
    inputs, output = equation.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or len(terms[1]) != 2:
        return None
    x, w = terms
    summed = [c for c in w if c in x and c not in output]
    own = [c for c in w if c not in x and c in output]
    if len(summed) != 1 or len(own) != 1 or not x.endswith(summed[0]):
        return None
    return w == own[0] + summed[0]


def is_weight_product(node):
    """Whether `node` multiplies its first input by its second as a product
    by a weight: a MatMul, a Gemm, or an einsum that is one
    (einsum_weight_orientation)."""
    return node.op_type in ("MatMul", "Gemm") or (
        node.op_type == "Einsum" and einsum_weight_orientation(node) is not None)


def weight_orientation(graph, name):
    """True when initializer `name` is a product's [N, K] weight (a Gemm's
    B with transB), False when it is [K, N] (a MatMul's right side, a
    Gemm's B without transB, an einsum's as einsum_weight_orientation
    reads it); None when no product reads it as its weight."""
    for node in graph.node:
        if len(node.input) > 1 and node.input[1] == name:
            if node.op_type == "MatMul":
                return False
            if node.op_type == "Gemm":
                trans_b = [a.i for a in node.attribute if a.name == "transB"]
                return bool(trans_b and trans_b[0])
            if node.op_type == "Einsum":
                orientation = einsum_weight_orientation(node)
                if orientation is not None:
                    return orientation
    return None


def quantized_rows(graph, x, prefix, opset, fixed=None):
    """Appends to `graph` the nodes that quantize `x` to uint8 per row (its
    last axis) and multiply it back, as the runtime does for int8-dynamic:
    the row's range [min(x, 0), max(x, 0)] in 255 steps of scale (1 for a
    row of zeros), zero point round(-min / scale), value round(x / scale)
    + zero point clamped to [0, 255] (ONNX QuantizeLinear's formula), each
    float32 operation rounded apart. With `fixed`, a (scale, zero point)
    pair, every row is quantized with it instead (static W8A8, kilnc
    --quantize=int8). Returns the nodes and the name of (value − zero
    point) · scale."""
    helper = onnx.helper
    def constant(name, value):
        graph.initializer.append(numpy_helper.from_array(np.array(value, np.float32),
                                                         f"{prefix}_{name}"))
        return f"{prefix}_{name}"
    zero, one, top = constant("zero", 0), constant("one", 1), constant("top", 255)
    nodes = []
    def node(op, inputs, **attributes):
        output = f"{prefix}_{op}_{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [output], **attributes))
        return output
    def reduce(op):
        # Reductions take their axes as an input from opset 18.
        if opset >= 18:
            axes = f"{prefix}_axes"
            if not any(i.name == axes for i in graph.initializer):
                graph.initializer.append(numpy_helper.from_array(np.array([-1], np.int64), axes))
            return node(op, [x, axes], keepdims=1)
        return node(op, [x], axes=[-1], keepdims=1)
    if fixed is not None:
        scale, zero_point = constant("scale", fixed[0]), constant("zero_point", fixed[1])
    else:
        low = node("Min", [reduce("ReduceMin"), zero])
        high = node("Max", [reduce("ReduceMax"), zero])
        step = node("Div", [node("Sub", [high, low]), top])
        scale = node("Where", [node("Greater", [step, zero]), step, one])
        zero_point = node("Clip", [node("Round", [node("Div", [node("Neg", [low]), scale])]),
                                   zero, top])
    value = node("Clip", [node("Add", [node("Round", [node("Div", [x, scale])]), zero_point]),
                          zero, top])
    restored = node("Mul", [node("Sub", [value, zero_point]), scale])
    return nodes, restored


def quantize_product_inputs(model, weights):
    """Routes the input of every product reading one of `weights` as its
    weight, directly or through Identity nodes (a module repeated by deep
    copy exports its copies' weights so), through quantized_rows: `weights`
    maps each weight's name to its products' fixed (scale, zero point), or
    None for a per-row quantization at run time."""
    graph = model.graph
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    weights = dict(weights)
    for output, source in identity_sources(graph).items():
        if source in weights:
            weights[output] = weights[source]
    nodes = []
    for index, node in enumerate(graph.node):
        if is_weight_product(node) and len(node.input) > 1 and node.input[1] in weights:
            if any(a.name == "transA" and a.i for a in node.attribute):
                raise ValueError(f"{node.name}: a Gemm with transA has no rows to quantize")
            quantize_nodes, restored = quantized_rows(graph, node.input[0],
                                                      f"kiln_w8a8_{index}", opset,
                                                      weights[node.input[1]])
            nodes += quantize_nodes
            node.input[0] = restored
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def dequantized_model(model_path, quantization, output_path):
    """Writes `model_path` with every weight that kilnc's --report
    `quantization` record names replaced by its dequantized values (and,
    for int8-dynamic, the products' inputs quantized per row; for int8,
    with the record's fixed input scale and zero point).
    Raises ValueError for a named weight that is not an initializer read by
    a product, which the reference cannot reproduce."""
    model = onnx.load(model_path)
    initializers = {i.name: i for i in model.graph.initializer}
    mode = quantization["mode"]
    for entry in quantization["weights"]:
        name = entry["name"]
        transposed = weight_orientation(model.graph, name)
        if name not in initializers or transposed is None:
            raise ValueError(f"{model_path}: quantized weight '{name}' is not an "
                             "initializer read as a product's weight")
        weight = numpy_helper.to_array(initializers[name]).astype(np.float32)
        matrix = weight.T if transposed else weight
        if list(matrix.shape) != [entry["rows"], entry["columns"]]:
            raise ValueError(f"{model_path}: '{name}' is {list(weight.shape)}, the "
                             f"report says {entry['rows']}x{entry['columns']}")
        # W8A8 scales whole columns.
        group_size = entry["rows"] if mode in W8A8_MODES else quantization["group_size"]
        restored = dequantize(*quantize(matrix, group_size, mode), group_size)
        initializers[name].CopyFrom(numpy_helper.from_array(
            np.ascontiguousarray(restored.T if transposed else restored), name))
    if mode in W8A8_MODES:
        quantize_product_inputs(model, {
            entry["name"]: (entry["input_scale"], entry["input_zero_point"])
            if mode == "int8" else None for entry in quantization["weights"]})
    onnx.save(model, output_path)


def pack_nibbles(values):
    """uint8 bytes of 4-bit `values` along the last axis, two to a byte, the
    low 4 bits first (an odd count is padded with a 0)."""
    values = values.astype(np.uint8)
    if values.shape[-1] % 2:
        values = np.concatenate([values, np.zeros(values.shape[:-1] + (1,), np.uint8)], -1)
    return (values[..., 0::2] | (values[..., 1::2] << 4)).astype(np.uint8)


def matmul_nbits_model(model_path, output_path, block_size):
    """Writes `model_path` with every MatMul by a 2-D float initializer
    replaced by ONNX Runtime's com.microsoft MatMulNBits (bits 4, blocks of
    `block_size` along K), as ORT's MatMul4BitsQuantizer lays it out: B
    [N, blocks, block_size / 2] of 4-bit values packed low first along K,
    scales [N · blocks], zero points [N · ceil(blocks / 2)] packed the same
    way. The values are kiln's int4-weight quantization (quantize()), so
    that ORT and kiln run the same quantized model. Returns the number of
    products replaced."""
    model = onnx.load(model_path)
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    readers = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    replaced = 0
    nodes = []
    for node in graph.node:
        weight = initializers.get(node.input[1]) if node.op_type == "MatMul" else None
        if (weight is None or len(weight.dims) != 2 or readers[node.input[1]] != 1
                or weight.data_type != onnx.TensorProto.FLOAT):
            nodes.append(node)
            continue
        matrix = numpy_helper.to_array(weight).astype(np.float32)
        k, n = matrix.shape
        values, scales, zero_points = quantize(matrix, block_size, "int4-weight")
        blocks = scales.shape[0]
        padded = np.zeros((blocks * block_size, n), np.float32)
        padded[:k] = values
        b = pack_nibbles(padded.T.reshape(n, blocks, block_size))
        prefix = node.name or node.output[0]
        tensors = {f"{prefix}_B": b,
                   f"{prefix}_scales": np.ascontiguousarray(scales.T).reshape(-1),
                   f"{prefix}_zero_points": pack_nibbles(zero_points.T).reshape(-1)}
        graph.initializer.extend(numpy_helper.from_array(v, name) for name, v in tensors.items())
        graph.initializer.remove(weight)
        nodes.append(onnx.helper.make_node(
            "MatMulNBits", [node.input[0], *tensors], list(node.output), name=node.name,
            domain="com.microsoft", K=k, N=n, bits=4, block_size=block_size))
        replaced += 1
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, output_path)
    return replaced


# QuantizeLinear's integer range and zero point type per activation type
# (ORT's get_qmin_qmax_for_qType, not symmetric, no reduced range).
ACTIVATION_TYPES = {"int8": (-128, 127, np.int8), "uint8": (0, 255, np.uint8)}


def activation_scale_zero_point(rmin, rmax, activation_type):
    """Scale (float32) and zero point of a calibrated range, as ORT's
    compute_scale_zp does for an asymmetric activation: the range widened
    to hold 0, scale = (rmax − rmin) / (qmax − qmin) with the difference
    taken in float32 and the quotient in float64, zero point = round(qmin −
    rmin / scale) (ties to even) from that float64 scale, and only then the
    scale rounded to float32. A scale under float32's smallest normal (an
    all-zero range) becomes 1 with zero point 0."""
    qmin, qmax, dtype = ACTIVATION_TYPES[activation_type]
    rmin = np.minimum(np.float32(rmin), np.float32(0))
    rmax = np.maximum(np.float32(rmax), np.float32(0))
    scale = np.float64(rmax - rmin) / (np.float64(qmax) - np.float64(qmin))
    if scale < np.finfo(np.float32).tiny:
        return np.float32(1), dtype(0)
    zero_point = np.clip(np.round(qmin - np.float64(rmin) / scale), qmin, qmax)
    return np.float32(scale), dtype(zero_point)


def symmetric_int8(matrix, per_channel):
    """`matrix` [K, N] (float32) as ORT quantizes a weight for QDQ (int8,
    WeightSymmetric, range [-127, 127]): scale = 2 · max |w| / 254 in
    float64 rounded to float32, once for the whole tensor or, with
    `per_channel`, once per output column (axis 1, ORT's default axis for a
    MatMul's B); a zero scale becomes 1. Returns the int8 values clip(
    round(w / scale), −127, 127) (float32 division, ties to even) and the
    scales (a scalar, or [N])."""
    absmax = np.abs(matrix).max(axis=0) if per_channel else np.abs(matrix).max()
    scale = ((2 * absmax.astype(np.float32)).astype(np.float64) / 254).astype(np.float32)
    scale = np.where(scale < np.finfo(np.float32).tiny, np.float32(1), scale).astype(np.float32)
    values = np.clip(np.rint(matrix / scale), -127, 127).astype(np.int8)
    return values, scale


def identity_sources(graph):
    """{output: input} of the graph's Identity nodes, in graph order: how a
    module repeated by deep copy exports its copies' weights."""
    return {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity"}


def products_by_constant(graph):
    """The MatMuls that ORT's quantize_static quantizes with
    op_types_to_quantize=["MatMul"] and MatMulConstBOnly: those whose B is
    a 2-D float32 initializer, directly or through an Identity of one (what
    ORT sees once its pre-processing has removed the Identity nodes a deep
    copy of a module exports). A MatMul whose A is also an initializer
    multiplies two constants and is left alone. Returns (node, weight
    initializer name) pairs in graph order."""
    initializers = {i.name: i for i in graph.initializer}
    through_identity = identity_sources(graph)
    products = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[0] in initializers:
            continue
        name = through_identity.get(node.input[1], node.input[1])
        weight = initializers.get(name)
        if (weight is not None and len(weight.dims) == 2
                and weight.data_type == onnx.TensorProto.FLOAT):
            products.append((node, name))
    return products


def require_opset(model, model_path, least, why):
    """Raises ValueError unless `model`'s ONNX opset is at least `least`
    (`why`: the ops that need it)."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < least:
        raise ValueError(f"{model_path}: opset {opset}; {why} needs opset {least} or later")


def name_allocator(graph):
    """Two functions that add names to `graph` as ORT's quantization tools
    name what they add: unique(name), `name` itself or, where the graph
    (its initializers, inputs, node outputs or a name allocated before)
    has it already, the first of name_1, name_2, ... that it has not; and
    constant(name, value), an initializer of the array `value` under
    unique(name), whose name it returns."""
    taken = {i.name for i in graph.initializer} | {v.name for v in graph.input}
    taken |= {name for node in graph.node for name in node.output}
    def unique(name):
        candidate, suffix = name, 1
        while candidate in taken:
            candidate, suffix = f"{name}_{suffix}", suffix + 1
        taken.add(candidate)
        return candidate
    def constant(name, value):
        name = unique(name)
        graph.initializer.append(numpy_helper.from_array(np.asarray(value), name))
        return name
    return unique, constant


def quantized_weights(graph, products, per_channel, constant):
    """Each distinct weight of `products` (products_by_constant) as ORT
    quantizes it, symmetric_int8 (per tensor, or per column with
    `per_channel`), in three initializers added by `constant`
    (name_allocator): <weight>_quantized (int8 [K, N]), <weight>_scale
    (float32, 0-d or [N]) and <weight>_zero_point (int8 zeros, the scale's
    shape). Returns {weight name: [those three names]}."""
    initializers = {i.name: i for i in graph.initializer}
    weights = {}
    for name in dict.fromkeys(name for _, name in products):
        matrix = numpy_helper.to_array(initializers[name]).astype(np.float32)
        values, scale = symmetric_int8(matrix, per_channel)
        weights[name] = [constant(f"{name}_quantized", values), constant(f"{name}_scale", scale),
                         constant(f"{name}_zero_point", np.zeros(scale.shape, np.int8))]
    return weights


def rewrite_products(graph, products, preludes, rewrite):
    """`graph`'s node list with each product of `products` ((node, weight
    name) pairs, products_by_constant) replaced by the nodes rewrite(node,
    weight name) returns, and preceded by the nodes that quantize its A and
    its weight, preludes[A's name] and preludes[weight name] (where
    preludes has them), before the first product that reads them only: the
    order stays topological. Returns the list; `graph`'s own list is left
    for drop_bypassed_weights to replace."""
    weight_of = {id(node): name for node, name in products}
    inserted = set()
    nodes = []
    for node in graph.node:
        if id(node) not in weight_of:
            nodes.append(node)
            continue
        for key in (node.input[0], weight_of[id(node)]):
            if key in preludes and key not in inserted:
                inserted.add(key)
                nodes += preludes[key]
        nodes += rewrite(node, weight_of[id(node)])
    return nodes


def drop_bypassed_weights(graph, nodes, weights):
    """Makes `nodes` `graph`'s nodes, less the Identity nodes of one of
    `weights` (float initializer names, whose products now read their
    quantized values) whose outputs nothing reads any more, and then drops
    those of `weights` that nothing reads (their initializers and graph
    inputs). A subgraph's reads count."""
    def reads(nodes):
        names = set()
        for node in nodes:
            names.update(node.input)
            for attribute in node.attribute:
                for subgraph in (*attribute.graphs, *([attribute.g] if attribute.HasField("g") else [])):
                    names |= reads(subgraph.node)
                    names.update(v.name for v in subgraph.output)
        return names
    outputs = {v.name for v in graph.output}
    while True:
        read = reads(nodes) | outputs
        kept = [n for n in nodes if not (n.op_type == "Identity" and n.input[0] in weights
                                         and n.output[0] not in read)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del graph.node[:]
    graph.node.extend(nodes)
    unread = {name for name in weights if name not in read}
    kept = [i for i in graph.initializer if i.name not in unread]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    kept = [v for v in graph.input if v.name not in unread]
    del graph.input[:]
    graph.input.extend(kept)


def calibrated_ranges(model, tensors, calibration_feeds):
    """The (min, max) of each of `tensors` (float32 activations of `model`)
    over every run of `calibration_feeds`, ORT's MinMax calibration (not
    symmetric, no moving average): ONNX Runtime runs a copy of the model
    with each tensor copied (Identity) to an extra graph output, named
    kiln_calibration_N so that the output files have plain names; the
    outputs' element types come from ONNX shape inference where it runs
    (onnx 1.12 stops at opset 17), else float (a MatMul's A has its B's
    type). `calibration_feeds` is a list of dicts {input name: array}, as
    harness.make_inputs returns. A tensor that was empty in every run gets
    the range (0, 0)."""
    augmented = onnx.ModelProto()
    augmented.CopyFrom(model)
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model).graph
        for value in (*inferred.input, *inferred.value_info, *inferred.output):
            if value.type.tensor_type.elem_type:
                types[value.name] = value.type.tensor_type.elem_type
    except Exception:  # onnx too old for the model's opset: take float
        pass
    outputs = {}
    for index, tensor in enumerate(tensors):
        output = f"kiln_calibration_{index}"
        outputs[tensor] = output
        augmented.graph.node.append(onnx.helper.make_node("Identity", [tensor], [output]))
        augmented.graph.output.append(onnx.helper.make_tensor_value_info(
            output, types.get(tensor, onnx.TensorProto.FLOAT), None))
    low = {tensor: None for tensor in tensors}
    high = dict(low)
    with tempfile.TemporaryDirectory(prefix="kiln_calibration_") as work:
        augmented_path = os.path.join(work, "augmented.onnx")
        onnx.save(augmented, augmented_path)
        for run, feeds in enumerate(calibration_feeds):
            run_dir = os.path.join(work, str(run))
            os.makedirs(os.path.join(run_dir, "outputs"))
            flags = harness.save_inputs(feeds, run_dir)
            harness.run_ort(augmented_path, flags, os.path.join(run_dir, "outputs"))
            values = harness.load_outputs(os.path.join(run_dir, "outputs"), outputs.values())
            for tensor, output in outputs.items():
                value = values[output].astype(np.float32)
                if not value.size:
                    continue
                low[tensor] = value.min() if low[tensor] is None else min(low[tensor], value.min())
                high[tensor] = value.max() if high[tensor] is None else max(high[tensor], value.max())
    return {tensor: (np.float32(0 if low[tensor] is None else low[tensor]),
                     np.float32(0 if high[tensor] is None else high[tensor]))
            for tensor in tensors}


def static_products(model_path, activation_type, least_opset, why):
    """quantize_static's first steps, for qdq_model and qoperator_model:
    checks `activation_type` ("int8" or "uint8"), loads `model_path`,
    requires opset `least_opset` (for `why`), and returns the model and its
    products_by_constant."""
    if activation_type not in ACTIVATION_TYPES:
        raise ValueError(f"unknown activation type '{activation_type}' (int8 or uint8)")
    model = onnx.load(model_path)
    require_opset(model, model_path, least_opset, why)
    return model, products_by_constant(model.graph)


def calibrated_parameters(model, tensors, calibration_feeds, activation_type, constant):
    """The scale and zero point of each of `tensors` (activations of
    `model`) as quantize_static computes them: its MinMax range over the
    runs of `calibration_feeds` (calibrated_ranges, all of `tensors` in
    each run), per tensor and asymmetric (activation_scale_zero_point,
    ORT's compute_scale_zp), in 0-d initializers <tensor>_scale (float32)
    and <tensor>_zero_point (`activation_type`) added by `constant`
    (name_allocator). Returns {tensor: [scale name, zero point name]}."""
    ranges = calibrated_ranges(model, tensors, calibration_feeds)
    parameters = {}
    for tensor in tensors:
        scale, zero_point = activation_scale_zero_point(*ranges[tensor], activation_type)
        parameters[tensor] = [constant(f"{tensor}_scale", np.array(scale, np.float32)),
                              constant(f"{tensor}_zero_point", np.array(zero_point))]
    return parameters


def qdq_model(model_path, output_path, calibration_feeds, activation_type="int8",
              per_channel=False):
    """Writes `model_path` quantized as ONNX Runtime's quantize_static does
    with quant_format=QDQ, calibrate_method=MinMax,
    op_types_to_quantize=["MatMul"] and extra_options={"MatMulConstBOnly":
    True, "OpTypesToExcludeOutputQuantization": ["MatMul"]} (ORT's Python
    tool does not run here, so this mirrors it), so that ORT and kiln can
    run the same QDQ model. Only MatMuls by a constant weight
    (products_by_constant) are quantized; Gemms stay f32.

    - Each distinct A (activation) gets one QuantizeLinear and one
      DequantizeLinear, shared by every MatMul reading it (ORT's default,
      DedicatedQDQPair off), per tensor and asymmetric, `activation_type`
      "int8" or "uint8", its range the min and max over the runs of
      `calibration_feeds` (a list of dicts {input name: array}, as
      harness.make_inputs returns; see calibrated_ranges) and its scale and
      zero point ORT's compute_scale_zp (activation_scale_zero_point).
    - Each B (weight [K, N]) becomes an int8 initializer and a
      DequantizeLinear, symmetric, per tensor or with `per_channel` per
      column (axis 1), as ORT quantizes weights (symmetric_int8); the float
      initializer is dropped where nothing else reads it.

    The names follow ORT's (<tensor>_QuantizeLinear_Output,
    <weight>_quantized, _scale, _zero_point, ...); scales and zero points
    are 0-d initializers ([N] per channel). The Q/DQ nodes go right before
    their first consumer, so the node order stays topological. Unlike
    quantize_static's own default, the MatMuls' outputs get no Q/DQ pair:
    the products' inputs are what kiln quantizes. Raises ValueError below
    opset 13 (DequantizeLinear's axis). Returns the number of MatMuls
    quantized."""
    model, products = static_products(model_path, activation_type, 13,
                                      "QDQ (per-axis DequantizeLinear)")
    if not products:
        onnx.save(model, output_path)
        return 0
    graph = model.graph
    activations = list(dict.fromkeys(node.input[0] for node, _ in products))
    unique, constant = name_allocator(graph)
    parameters = calibrated_parameters(model, activations, calibration_feeds, activation_type,
                                       constant)
    helper = onnx.helper
    preludes = {}  # tensor name -> its Q/DQ nodes
    restored = {}  # tensor name -> its dequantized name
    for tensor in activations:
        quantized, restored[tensor] = unique(f"{tensor}_QuantizeLinear_Output"), \
            unique(f"{tensor}_DequantizeLinear_Output")
        preludes[tensor] = [
            helper.make_node("QuantizeLinear", [tensor, *parameters[tensor]], [quantized],
                             name=unique(f"{tensor}_QuantizeLinear")),
            helper.make_node("DequantizeLinear", [quantized, *parameters[tensor]],
                             [restored[tensor]], name=unique(f"{tensor}_DequantizeLinear"))]
    weights = quantized_weights(graph, products, per_channel, constant)
    for name, inputs in weights.items():
        restored[name] = unique(f"{name}_DequantizeLinear_Output")
        attributes = {"axis": 1} if per_channel else {}
        preludes[name] = [helper.make_node("DequantizeLinear", inputs, [restored[name]],
                                           name=unique(f"{name}_DequantizeLinear"),
                                           **attributes)]

    def rewrite(node, weight):
        node.input[0] = restored[node.input[0]]
        node.input[1] = restored[weight]
        return [node]
    drop_bypassed_weights(graph, rewrite_products(graph, products, preludes, rewrite), weights)
    onnx.save(model, output_path)
    return len(products)


def qoperator_model(model_path, output_path, calibration_feeds, activation_type="int8",
                     per_channel=False):
    """Writes `model_path` quantized as ONNX Runtime's quantize_static does
    with quant_format=QOperator, calibrate_method=MinMax,
    op_types_to_quantize=["MatMul"] and extra_options={"MatMulConstBOnly":
    True} (ORT's Python tool does not run here, so this mirrors it), so
    that ORT and kiln can run the same model. Only MatMuls by a constant
    weight (products_by_constant) are quantized; Gemms stay f32. The
    activations and weights are quantized as qdq_model quantizes them:

    - Each distinct A (activation) gets one QuantizeLinear (node
      <A>_QuantizeLinear, output <A>_quantized), shared by every MatMul
      reading it, its scale <A>_scale and zero point <A>_zero_point from
      its range over the runs of `calibration_feeds`
      (calibrated_parameters: per tensor, asymmetric, `activation_type`
      "int8" or "uint8"). An A that is itself a quantized MatMul's output
      is read quantized as that product wrote it, as ORT reuses it.
    - Each B (weight [K, N]) becomes int8 initializers (quantized_weights:
      symmetric_int8, per tensor or with `per_channel` per column, scale
      and zero point [N]), read by the QLinearMatMuls as they are (no
      DequantizeLinear); the float initializer is dropped where nothing
      else reads it.
    - Each MatMul becomes QLinearMatMul(<A>_quantized, <A>_scale,
      <A>_zero_point, <B>_quantized, <B>_scale, <B>_zero_point, <Y>_scale,
      <Y>_zero_point) -> <Y>_quantized (node <name>_quant; an unnamed
      MatMul's from its output, which ORT leaves unnamed), Y being the
      MatMul's output, calibrated with the A's (the same rule and type),
      and DequantizeLinear(<Y>_quantized, <Y>_scale, <Y>_zero_point) -> Y
      (node <Y>_DequantizeLinear): ORT dequantizes a QOperator result
      where the next op is not quantized, which with only MatMuls
      quantized is every reader of Y but another product's A.

    The QuantizeLinear goes right before its first consumer, so the node
    order stays topological. Raises ValueError below opset 10
    (QLinearMatMul). Returns the number of MatMuls quantized."""
    model, products = static_products(model_path, activation_type, 10, "QLinearMatMul")
    if not products:
        onnx.save(model, output_path)
        return 0
    graph = model.graph
    activations = list(dict.fromkeys(node.input[0] for node, _ in products))
    outputs = [node.output[0] for node, _ in products]
    tensors = list(dict.fromkeys(activations + outputs))
    unique, constant = name_allocator(graph)
    parameters = calibrated_parameters(model, tensors, calibration_feeds, activation_type,
                                       constant)
    helper = onnx.helper
    # tensor name -> [values, scale, zero point] of its quantization
    quantized = {tensor: [unique(f"{tensor}_quantized"), *parameters[tensor]]
                 for tensor in tensors}
    preludes = {tensor: [helper.make_node("QuantizeLinear", [tensor, *parameters[tensor]],
                                          [quantized[tensor][0]],
                                          name=unique(f"{tensor}_QuantizeLinear"))]
                for tensor in activations if tensor not in outputs}
    weights = quantized_weights(graph, products, per_channel, constant)

    def rewrite(node, weight):
        output = node.output[0]
        return [
            helper.make_node("QLinearMatMul",
                             [*quantized[node.input[0]], *weights[weight], *parameters[output]],
                             [quantized[output][0]],
                             name=unique(f"{node.name or output}_quant")),
            helper.make_node("DequantizeLinear", quantized[output], [output],
                             name=unique(f"{output}_DequantizeLinear"))]
    drop_bypassed_weights(graph, rewrite_products(graph, products, preludes, rewrite), weights)
    onnx.save(model, output_path)
    return len(products)


def dynamic_model(model_path, output_path, per_channel=False):
    """Writes `model_path` quantized as ONNX Runtime's quantize_dynamic does
    with its defaults (QOperator format, uint8 activations, MatMulConstBOnly)
    and op_types_to_quantize=["MatMul"], weight_type=QInt8 (ORT's Python
    tool does not run here, so this mirrors it), so that ORT and kiln can
    run the same model. Only MatMuls by a constant weight
    (products_by_constant) are quantized; Gemms stay f32.

    - Each distinct A (activation) gets one DynamicQuantizeLinear (node
      <A>_QuantizeLinear), shared by every MatMul reading it: uint8 values
      <A>_quantized, and the scale <A>_scale and zero point <A>_zero_point
      of the tensor's range at run time.
    - Each B (weight [K, N]) becomes int8 initializers as ORT quantizes
      weights (quantized_weights: symmetric_int8, per tensor or with
      `per_channel` per column); the float initializer is dropped where
      nothing else reads it.
    - Each MatMul becomes what ORT's MatMulInteger operator
      (quantization/operators/matmul.py) writes: MatMulInteger(
      <A>_quantized, <B>_quantized, <A>_zero_point, <B>_zero_point) ->
      <Y>_output_quantized (int32), Cast to float -> <Y>_output_quantized_
      cast_output, Mul(<A>_scale, <B>_scale) -> <name>_quant_scales_mul:0,
      and Mul(cast, scales) -> Y, the MatMul's own output. The nodes are
      named from the MatMul's name (<name>_quant, ..._scales_mul,
      ..._output_scale_mul) as ORT names them; an unnamed MatMul's from
      its output instead (ORT leaves those unnamed and shares their scales'
      Mul), so that each product has its own scales' Mul.

    The DynamicQuantizeLinear goes right before its first consumer, so the
    node order stays topological. Raises ValueError below opset 11
    (DynamicQuantizeLinear). Returns the number of MatMuls quantized."""
    model = onnx.load(model_path)
    require_opset(model, model_path, 11, "DynamicQuantizeLinear")
    graph = model.graph
    products = products_by_constant(graph)
    if not products:
        onnx.save(model, output_path)
        return 0

    unique, constant = name_allocator(graph)
    helper = onnx.helper
    preludes = {}  # tensor name -> its DynamicQuantizeLinear
    quantized = {}  # tensor name -> [values, scale, zero point]
    for tensor in dict.fromkeys(node.input[0] for node, _ in products):
        quantized[tensor] = [unique(f"{tensor}{suffix}")
                             for suffix in ("_quantized", "_scale", "_zero_point")]
        preludes[tensor] = [helper.make_node("DynamicQuantizeLinear", [tensor], quantized[tensor],
                                             name=unique(f"{tensor}_QuantizeLinear"))]
    weights = quantized_weights(graph, products, per_channel, constant)

    def rewrite(node, weight):
        (a, a_scale, a_zero_point), (b, b_scale, b_zero_point) = \
            quantized[node.input[0]], weights[weight]
        prefix = f"{node.name or node.output[0]}_quant"
        product = unique(f"{node.output[0]}_output_quantized")
        cast = unique(f"{product}_cast_output")
        scales = unique(f"{prefix}_scales_mul:0")
        return [
            helper.make_node("MatMulInteger", [a, b, a_zero_point, b_zero_point], [product],
                             name=unique(prefix)),
            helper.make_node("Cast", [product], [cast], name=unique(f"{product}_cast"),
                             to=onnx.TensorProto.FLOAT),
            helper.make_node("Mul", [a_scale, b_scale], [scales],
                             name=unique(f"{prefix}_scales_mul")),
            helper.make_node("Mul", [cast, scales], list(node.output),
                             name=unique(f"{prefix}_output_scale_mul"))]
    drop_bypassed_weights(graph, rewrite_products(graph, products, preludes, rewrite), weights)
    onnx.save(model, output_path)
    return len(products)


def default_calibration_cases(model_path):
    """(batch, sequence, past) cases to calibrate an export on: a prompt, a
    batch of prompts and, for a decoder with a KV cache, a decode step
    after a past."""
    graph = onnx.load(model_path, load_external_data=False).graph
    if any(i.name.startswith("past_key_values") for i in graph.input):
        return [(1, 16, 0), (2, 7, 0), (1, 1, 16)]
    return [(1, 16, 0), (2, 7, 0)]


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(
        description="Writes an export with its MatMuls by constant weights as ONNX "
                    "Runtime's 4-bit MatMulNBits, quantized as kilnc --quantize=int4-weight; "
                    "with --qdq, quantized instead as ONNX Runtime's quantize_static writes "
                    "a QDQ model (int8 weights, calibrated 8-bit activations); with "
                    "--qoperator, as quantize_static writes a QOperator model (the same "
                    "quantization, in QLinearMatMul products whose outputs are quantized "
                    "too, with calibrated ranges); with --dynamic, as its quantize_dynamic "
                    "writes a QOperator model (int8 weights, uint8 activations quantized at "
                    "run time by DynamicQuantizeLinear, MatMulInteger products).")
    parser.add_argument("model")
    parser.add_argument("output")
    parser.add_argument("--block-size", type=int, default=32,
                        help="MatMulNBits: rows of a block (default 32)")
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--qdq", action="store_true",
                         help="write QuantizeLinear/DequantizeLinear (QDQ) instead")
    formats.add_argument("--qoperator", action="store_true",
                         help="write QuantizeLinear/QLinearMatMul/DequantizeLinear instead")
    formats.add_argument("--dynamic", action="store_true",
                         help="write DynamicQuantizeLinear/MatMulInteger instead")
    parser.add_argument("--activation-type", choices=sorted(ACTIVATION_TYPES), default="int8",
                        help="--qdq, --qoperator: the activations' integer type (default int8)")
    parser.add_argument("--per-channel", action="store_true",
                        help="--qdq, --qoperator, --dynamic: a weight scale per output column")
    parser.add_argument("--case", action="append", metavar="BATCH,SEQUENCE,PAST",
                        help="--qdq, --qoperator: a calibration case (repeatable; default: "
                             "a prompt, a batch and, for a decoder, a decode step after a "
                             "past)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1],
                        help="--qdq, --qoperator: the random inputs' seeds, each case once "
                             "per seed")
    args = parser.parse_args()
    weights = f"int8 weights {'per channel' if args.per_channel else 'per tensor'}"
    if args.qdq or args.qoperator:
        cases = ([tuple(int(x) for x in case.split(",")) for case in args.case]
                 if args.case else default_calibration_cases(args.model))
        feeds = [harness.make_inputs(args.model, *case, seed=seed)
                 for case in cases for seed in args.seeds]
        write, written = (qdq_model, "QDQ") if args.qdq else (qoperator_model, "QLinearMatMul")
        count = write(args.model, args.output, feeds, args.activation_type, args.per_channel)
        print(f"{args.output}: {count} MatMul(s) quantized as {written} ({args.activation_type} "
              f"activations, {weights}), calibrated on {len(feeds)} run(s)")
    elif args.dynamic:
        count = dynamic_model(args.model, args.output, args.per_channel)
        print(f"{args.output}: {count} MatMul(s) quantized dynamically as MatMulInteger "
              f"(uint8 activations, {weights})")
    else:
        count = matmul_nbits_model(args.model, args.output, args.block_size)
        print(f"{args.output}: {count} MatMul(s) as MatMulNBits, blocks of {args.block_size}")
