"""Kiln's quantization (kilnc --quantize=int8-weight, int4-weight and
int8-dynamic, passes/QuantizeWeights.cpp) redone in numpy and ONNX, for
references: the same scales (and zero points) per column and group of
rows, computed in float32 with the same rounding, so that an ONNX model
whose weights are replaced by their dequantized values computes what the
quantized artifact computes. For int8-dynamic the products' inputs are
also quantized and multiplied back per row, by ONNX ops doing the runtime's
float32 arithmetic (gemmInt8DynamicRows). Runs under /usr/bin/python3
(numpy, onnx)."""

import numpy as np
import onnx
from onnx import numpy_helper

INT8_MAX = np.float32(127)
UINT4_MAX = np.float32(15)


def quantize(weight, group_size, mode):
    """`weight` [K, N] (float32) as integer values [K, N], float32 scales
    and zero points [ceil(K / group_size), N], per column's group of rows.
    int8-weight: scale = max |w| / 127, value = round(w / scale), zero
    point 0 (int8-dynamic: the same, with one group of all K rows).
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
        if mode in ("int8-weight", "int8-dynamic"):
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


def weight_orientation(graph, name):
    """True when initializer `name` is a product's [N, K] weight (a Gemm's
    B with transB), False when it is [K, N] (a MatMul's right side, a
    Gemm's B without transB); None when no product reads it as its weight."""
    for node in graph.node:
        if len(node.input) > 1 and node.input[1] == name:
            if node.op_type == "MatMul":
                return False
            if node.op_type == "Gemm":
                trans_b = [a.i for a in node.attribute if a.name == "transB"]
                return bool(trans_b and trans_b[0])
    return None


def quantized_rows(graph, x, prefix, opset):
    """Appends to `graph` the nodes that quantize `x` to uint8 per row (its
    last axis) and multiply it back, as the runtime does for int8-dynamic:
    the row's range [min(x, 0), max(x, 0)] in 255 steps of scale (1 for a
    row of zeros), zero point round(-min / scale), value round(x · (1 /
    scale) + zero point) clamped to [0, 255], each float32 operation
    rounded apart. Returns the nodes and the name of (value − zero point) ·
    scale."""
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
    low = node("Min", [reduce("ReduceMin"), zero])
    high = node("Max", [reduce("ReduceMax"), zero])
    step = node("Div", [node("Sub", [high, low]), top])
    scale = node("Where", [node("Greater", [step, zero]), step, one])
    zero_point = node("Clip", [node("Round", [node("Div", [node("Neg", [low]), scale])]), zero, top])
    shifted = node("Add", [node("Mul", [x, node("Reciprocal", [scale])]), zero_point])
    value = node("Clip", [node("Round", [shifted]), zero, top])
    restored = node("Mul", [node("Sub", [value, zero_point]), scale])
    return nodes, restored


def quantize_product_inputs(model, weight_names):
    """Routes the input of every product reading one of `weight_names` as
    its weight, directly or through Identity nodes (a module repeated by
    deep copy exports its copies' weights so), through quantized_rows."""
    graph = model.graph
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    weight_names = set(weight_names)
    for node in graph.node:
        if node.op_type == "Identity" and node.input[0] in weight_names:
            weight_names.add(node.output[0])
    nodes = []
    for index, node in enumerate(graph.node):
        if node.op_type in ("MatMul", "Gemm") and node.input[1] in weight_names:
            if any(a.name == "transA" and a.i for a in node.attribute):
                raise ValueError(f"{node.name}: a Gemm with transA has no rows to quantize")
            quantize_nodes, restored = quantized_rows(graph, node.input[0],
                                                      f"kiln_w8a8_{index}", opset)
            nodes += quantize_nodes
            node.input[0] = restored
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)


def dequantized_model(model_path, quantization, output_path):
    """Writes `model_path` with every weight that kilnc's --report
    `quantization` record names replaced by its dequantized values (and,
    for int8-dynamic, the products' inputs quantized per row).
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
        group_size = entry["rows"] if mode == "int8-dynamic" else quantization["group_size"]
        restored = dequantize(*quantize(matrix, group_size, mode), group_size)
        initializers[name].CopyFrom(numpy_helper.from_array(
            np.ascontiguousarray(restored.T if transposed else restored), name))
    if mode == "int8-dynamic":
        quantize_product_inputs(model, {entry["name"] for entry in quantization["weights"]})
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


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(
        description="Writes an export with its MatMuls by constant weights as ONNX "
                    "Runtime's 4-bit MatMulNBits, quantized as kilnc --quantize=int4-weight.")
    parser.add_argument("model")
    parser.add_argument("output")
    parser.add_argument("--block-size", type=int, default=32)
    args = parser.parse_args()
    count = matmul_nbits_model(args.model, args.output, args.block_size)
    print(f"{args.output}: {count} MatMul(s) as MatMulNBits, blocks of {args.block_size}")
