"""Kiln's weight-only int8 quantization (kilnc --quantize=int8-weight,
passes/QuantizeWeights.cpp) redone in numpy, for references: the same
symmetric scales per column and group of rows, computed in float32 with
the same rounding, so that an ONNX model whose weights are replaced by
their dequantized values computes what the quantized artifact computes.
Runs under /usr/bin/python3 (numpy, onnx)."""

import numpy as np
import onnx
from onnx import numpy_helper

INT8_MAX = np.float32(127)


def quantize_int8(weight, group_size):
    """`weight` [K, N] (float32) as int8 values and float32 scales
    [ceil(K / group_size), N]: scale = max |w| / 127 over each column's
    group of rows, value = round(w / scale), ties to even."""
    k = weight.shape[0]
    groups = -(-k // group_size)
    values = np.zeros(weight.shape, np.int8)
    scales = np.zeros((groups, weight.shape[1]), np.float32)
    for group in range(groups):
        rows = weight[group * group_size:(group + 1) * group_size]
        scale = (np.abs(rows).max(axis=0) / INT8_MAX).astype(np.float32)
        quotient = np.divide(rows, scale, out=np.zeros_like(rows), where=scale > 0)
        values[group * group_size:(group + 1) * group_size] = \
            np.clip(np.round(quotient), -INT8_MAX, INT8_MAX).astype(np.int8)
        scales[group] = scale
    return values, scales


def dequantize_int8(values, scales, group_size):
    """value · scale in float32, each product rounded once."""
    rows = np.repeat(scales, group_size, axis=0)[:values.shape[0]]
    return (values.astype(np.float32) * rows).astype(np.float32)


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


def dequantized_model(model_path, quantization, output_path):
    """Writes `model_path` with every weight that kilnc's --report
    `quantization` record names replaced by its dequantized int8 values.
    Raises ValueError for a named weight that is not an initializer read by
    a product, which the reference cannot reproduce."""
    model = onnx.load(model_path)
    initializers = {i.name: i for i in model.graph.initializer}
    group_size = quantization["group_size"]
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
        restored = dequantize_int8(*quantize_int8(matrix, group_size), group_size)
        initializers[name].CopyFrom(numpy_helper.from_array(
            np.ascontiguousarray(restored.T if transposed else restored), name))
    onnx.save(model, output_path)
