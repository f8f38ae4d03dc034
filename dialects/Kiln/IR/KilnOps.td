//===- KilnOps.td - Kiln dialect operations ----------------*- tablegen -*-===//
//
// Every op of the kiln dialect. Shapes follow ONNX semantics unless a
// description says otherwise; axes are always normalized (non-negative).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNOPS_TD
#define KILN_DIALECT_KILN_IR_KILNOPS_TD

include "dialects/Kiln/IR/KilnBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Unary elementwise ops
//===----------------------------------------------------------------------===//

def Kiln_NegOp : Kiln_UnaryOp<"neg", "-x", Kiln_NumericTensor>;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", "|x|", Kiln_NumericTensor>;
def Kiln_ReluOp : Kiln_UnaryOp<"relu", "max(x, 0)", Kiln_NumericTensor>;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "e^x", Kiln_FloatTensor>;
def Kiln_LogOp : Kiln_UnaryOp<"log", "ln(x)", Kiln_FloatTensor>;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "sqrt(x)", Kiln_FloatTensor>;
def Kiln_RsqrtOp : Kiln_UnaryOp<"rsqrt", "1 / sqrt(x)", Kiln_FloatTensor>;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "1 / x", Kiln_FloatTensor>;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "erf(x)", Kiln_FloatTensor>;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "tanh(x)", Kiln_FloatTensor>;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "1 / (1 + e^-x)", Kiln_FloatTensor>;
def Kiln_SiluOp : Kiln_UnaryOp<"silu", "x * sigmoid(x)", Kiln_FloatTensor>;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "cos(x)", Kiln_FloatTensor>;
def Kiln_SinOp : Kiln_UnaryOp<"sin", "sin(x)", Kiln_FloatTensor>;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "tan(x)", Kiln_FloatTensor>;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "asin(x)", Kiln_FloatTensor>;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "acos(x)", Kiln_FloatTensor>;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "atan(x)", Kiln_FloatTensor>;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "sinh(x)", Kiln_FloatTensor>;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "cosh(x)", Kiln_FloatTensor>;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "asinh(x)", Kiln_FloatTensor>;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "acosh(x)", Kiln_FloatTensor>;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "atanh(x)", Kiln_FloatTensor>;
def Kiln_NotOp : Kiln_UnaryOp<"not", "!x", Kiln_BoolTensor>;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "floor(x)", Kiln_FloatTensor>;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "ceil(x)", Kiln_FloatTensor>;
// Halfway cases go to the even neighbour, as ONNX Round and NumPy round.
def Kiln_RoundOp : Kiln_UnaryOp<"round", "x rounded to the nearest integer, halves to even", Kiln_FloatTensor>;
// NaN stays NaN and a zero keeps its sign.
def Kiln_SignOp : Kiln_UnaryOp<"sign", "x > 0 ? 1 : x < 0 ? -1 : x", Kiln_NumericTensor>;

def Kiln_GeluOp : Kiln_Op<"gelu", [Pure, Elementwise, SameOperandsAndResultType]> {
  let summary = "elementwise GELU, exact or tanh-approximated";
  let description = [{
    Computes `x * Phi(x)`, with `Phi` the standard normal CDF:
    `0.5 * x * (1 + erf(x / sqrt(2)))`. With `tanh_approximation` it computes
    `0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))` instead, the
    form GPT-2 uses.

    Example:

    ```mlir
    %y = kiln.gelu %x : tensor<?x?x3072xf32>
    %z = kiln.gelu %x {tanh_approximation} : tensor<?x?x3072xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, UnitAttr:$tanh_approximation);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

def Kiln_AddOp : Kiln_ArithmeticOp<"add", "x + y", Kiln_NumericTensor, [Commutative]>;
def Kiln_SubOp : Kiln_ArithmeticOp<"sub", "x - y", Kiln_NumericTensor>;
def Kiln_MulOp : Kiln_ArithmeticOp<"mul", "x * y", Kiln_NumericTensor, [Commutative]>;
def Kiln_DivOp : Kiln_ArithmeticOp<"div", "x / y", Kiln_NumericTensor>;
def Kiln_PowOp : Kiln_ArithmeticOp<"pow", "x ^ y", Kiln_NumericTensor>;
// The two remainders of ONNX Mod: `mod` takes the divisor's sign (Python's
// %, ONNX fmod=0), `rem` the dividend's (C's fmod and %, ONNX fmod=1).
def Kiln_ModOp : Kiln_ArithmeticOp<"mod", "x - floor(x / y) * y", Kiln_NumericTensor>;
def Kiln_RemOp : Kiln_ArithmeticOp<"rem", "x - trunc(x / y) * y", Kiln_NumericTensor>;
def Kiln_MaxOp : Kiln_ArithmeticOp<"max", "max(x, y)", Kiln_NumericTensor, [Commutative]>;
def Kiln_MinOp : Kiln_ArithmeticOp<"min", "min(x, y)", Kiln_NumericTensor, [Commutative]>;
def Kiln_AndOp : Kiln_LogicalOp<"and", "x && y">;
def Kiln_OrOp : Kiln_LogicalOp<"or", "x || y">;
def Kiln_XorOp : Kiln_LogicalOp<"xor", "x != y">;

def Kiln_CompareOp : Kiln_Op<"compare", [Pure, ResultsBroadcastableShape,
                                         AllElementTypesMatch<["lhs", "rhs"]>]> {
  let summary = "elementwise comparison with broadcasting";
  let description = [{
    Compares the operands element by element with `predicate` (eq, ne, lt,
    le, gt, ge) and yields an i1 tensor. The operands broadcast as in NumPy.

    Example:

    ```mlir
    %m = kiln.compare lt, %a, %b : (tensor<?x8xi64>, tensor<i64>) -> tensor<?x8xi1>
    ```
  }];
  let arguments = (ins Kiln_ComparePredicate:$predicate,
                   Kiln_Tensor:$lhs, Kiln_Tensor:$rhs);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_WhereOp : Kiln_Op<"where", [Pure, ResultsBroadcastableShape,
    AllElementTypesMatch<["on_true", "on_false", "result"]>]> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    Picks `on_true` where `condition` holds and `on_false` elsewhere. All three
    operands broadcast against each other as in NumPy.

    Example:

    ```mlir
    %y = kiln.where %mask, %scores, %neg_inf
        : (tensor<1x1x?x?xi1>, tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$on_true,
                   Kiln_Tensor:$on_false);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:`
    functional-type(operands, results)
  }];
}

def Kiln_ClampOp : Kiln_Op<"clamp", [Pure, AttrSizedOperandSegments,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "clamps every element into [min, max]";
  let description = [{
    Computes `min(max(x, lo), hi)` elementwise. `min` and `max` are optional
    0-d tensors of the input's element type; a missing bound does not clamp.

    Example:

    ```mlir
    %y = kiln.clamp %x min %lo max %hi
        : (tensor<?x64xf32>, tensor<f32>, tensor<f32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input,
                   Optional<Kiln_NumericTensor>:$min,
                   Optional<Kiln_NumericTensor>:$max);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $input (`min` $min^)? (`max` $max^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "converts every element to another element type";
  let description = [{
    Converts element by element. Float to integer truncates toward zero; to
    i1, any non-zero value is true; from i1, true is 1.

    Example:

    ```mlir
    %y = kiln.cast %x : tensor<?x?xi64> to tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasFolder = 1;
}

def Kiln_QuantizeOp : Kiln_Op<"quantize", [Pure]> {
  let summary = "quantizes f32 to int8 with a scale and zero point";
  let description = [{
    ONNX's QuantizeLinear into int8: `clamp(round(x / scale) + zero_point,
    -128, 127)`, rounding halves to even (NaN becomes -128). `scale` and
    `zero_point` have one shape, which broadcasts into the input's (a
    per-tensor quantization has one element; a per-axis one has the axis'
    size there and 1 after it). A uint8 quantization is imported as this
    one with every value and zero point lowered by 128, which changes no
    dequantized value.

    `kiln-fold-quantized-products` folds a `quantize` that a `dequantize`
    with the same parameters undoes, on the input of a product by a
    dequantized int8 weight, into an int8 `kiln.linear`.

    Example:

    ```mlir
    %q = kiln.quantize %x, %s, %z
        : (tensor<?x64xf32>, tensor<f32>, tensor<i8>) -> tensor<?x64xi8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input, RankedTensorOf<[F32]>:$scale,
                   RankedTensorOf<[I8]>:$zero_point);
  let results = (outs RankedTensorOf<[I8]>:$result);
  let assemblyFormat = "$input `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_DequantizeOp : Kiln_Op<"dequantize", [Pure]> {
  let summary = "multiplies int8 values back to f32 by a scale and zero point";
  let description = [{
    ONNX's DequantizeLinear from int8: `(x - zero_point) * scale`, in f32.
    `scale` and `zero_point` broadcast into the input's shape, as for
    `kiln.quantize`.

    `kiln-fold-quantized-products` folds the dequantize of a constant
    weight into the int8 `kiln.linear` that reads it, and computes the
    others of constants at compile time.

    Example:

    ```mlir
    %w = kiln.dequantize %wq, %s, %z
        : (tensor<64x256xi8>, tensor<256xf32>, tensor<256xi8>) -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8]>:$input, RankedTensorOf<[F32]>:$scale,
                   RankedTensorOf<[I8]>:$zero_point);
  let results = (outs RankedTensorOf<[F32]>:$result);
  let assemblyFormat = "$input `,` $scale `,` $zero_point attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_DynamicQuantizeOp : Kiln_Op<"dynamic_quantize", [Pure]> {
  let summary = "quantizes f32 to uint8 by the input's own range";
  let description = [{
    ONNX's DynamicQuantizeLinear: the input's range widened to hold 0,
    [min(x, 0), max(x, 0)], cut into 255 steps of `scale` (1 for an input
    of zeros), the zero point z = clamp(round(-min / scale), 0, 255) where
    0 lands, and the values round(x / scale) + z clamped to [0, 255],
    rounding halves to even. The values and the zero point are uint8,
    returned lowered by 128 as int8 (kiln holds a uint8 quantization so,
    as `kiln.quantize` does).

    `kiln-fold-quantized-products` folds the product that ONNX Runtime's
    quantize_dynamic writes with it (a `kiln.matmul_integer` of its values
    by an int8 weight, cast to f32 and multiplied by its scale times the
    weight's) into an int8 `kiln.linear` whose input is quantized by the
    same range at run time.

    Example:

    ```mlir
    %q, %s, %z = kiln.dynamic_quantize %x : tensor<?x64xf32> -> tensor<?x64xi8>, tensor<f32>, tensor<i8>
    ```
  }];
  let arguments = (ins RankedTensorOf<[F32]>:$input);
  let results = (outs RankedTensorOf<[I8]>:$result, TensorRankOf<[F32], [0]>:$scale,
                      TensorRankOf<[I8], [0]>:$zero_point);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type(results)";
  let hasVerifier = 1;
}

def Kiln_MatMulIntegerOp : Kiln_Op<"matmul_integer", [Pure]> {
  let summary = "int8 matrix product summed in int32, with zero points";
  let description = [{
    ONNX's MatMulInteger for a 2-D right-hand side: `(lhs - lhs_zero_point)
    · (rhs - rhs_zero_point)` summed exactly in int32, for `lhs` [..., M, K]
    and `rhs` [K, N]; `lhs_zero_point` is one value, `rhs_zero_point` one
    value or one per column ([N]). A uint8 operand is held lowered by 128
    with its zero point, which changes no difference.

    Example:

    ```mlir
    %y = kiln.matmul_integer %q, %w, %z, %wz
        : (tensor<?x64xi8>, tensor<64x96xi8>, tensor<i8>, tensor<i8>) -> tensor<?x96xi32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I8]>:$lhs, RankedTensorOf<[I8]>:$rhs,
                   TensorRankOf<[I8], [0]>:$lhs_zero_point,
                   RankedTensorOf<[I8]>:$rhs_zero_point);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $lhs_zero_point `,` $rhs_zero_point attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Contractions, normalizations and reductions
//===----------------------------------------------------------------------===//

def Kiln_MatMulOp : Kiln_Op<"matmul", [Pure,
    AllElementTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "batched matrix product with broadcast batch dimensions";
  let description = [{
    Multiplies the last two dimensions of `lhs` [..., M, K] and `rhs`
    [..., K, N] (or [..., N, K] with `transpose_b`). Both operands have rank
    2 or more; their leading (batch) dimensions broadcast as in NumPy.

    Example:

    ```mlir
    %y = kiln.matmul %x, %w : (tensor<?x?x64xf32>, tensor<64x256xf32>) -> tensor<?x?x256xf32>
    %s = kiln.matmul %q, %k {transpose_b}
        : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$lhs, Kiln_NumericTensor:$rhs,
                   UnitAttr:$transpose_b);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_LinearOp : Kiln_Op<"linear", [Pure, AttrSizedOperandSegments,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "matrix product by a weight with a fused epilogue";
  let description = [{
    Computes `activation(input · weight + bias) * gate + residual` for
    `input` [..., M, K] and `weight` [K, N] ([N, K] with `transpose_b`); the
    result is [..., M, N]. `bias` [N] is added to every row; `gate` and
    `residual`, which have the result's shape exactly (they do not
    broadcast), multiply and then add to the activation's result. Each of
    `bias`, `activation`, `gate` and `residual` is optional; a SwiGLU MLP is
    `linear(x, Wu, gate linear(x, Wg, activation silu))`.
    `kiln-fuse-gemm-epilogues` creates it from a `kiln.matmul` and the
    elementwise ops that consume the product, so that the CPU backend applies
    them to each tile of the product while it is in cache.

    Example:

    ```mlir
    %h = kiln.linear %x, %w1 bias %b1 activation gelu_tanh
        : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    %y = kiln.linear %h, %w2 bias %b2 residual %x
        : (tensor<?x256xf32>, tensor<256x64xf32>, tensor<64xf32>, tensor<?x64xf32>) -> tensor<?x64xf32>
    %g = kiln.linear %x, %wg activation silu : (tensor<?x64xf32>, tensor<64x172xf32>) -> tensor<?x172xf32>
    %m = kiln.linear %x, %wu gate %g
        : (tensor<?x64xf32>, tensor<64x172xf32>, tensor<?x172xf32>) -> tensor<?x172xf32>
    ```

    With `packed`, the weight is laid out for the CPU microkernels
    (`kiln-pack-weights` does it at compile time): [ceil(N/64), K, 64], the
    columns of the [K, N] weight cut into panels 64 wide, each panel row by
    row, the last one padded with zeros. N is then the result's last dim,
    which must be static.

    ```mlir
    %y = kiln.linear %x, %wp bias %b {packed}
        : (tensor<?x64xf32>, tensor<3x64x64xf32>, tensor<172xf32>) -> tensor<?x172xf32>
    ```

    A packed weight may be quantized by group (`kiln-quantize-weights`
    does it): int8 values in the panels, and `scales` of the result's
    element type laid out as panels too, [ceil(N/64), ceil(K/G), 64] for
    `group_size` G. Weight element [p][j] is value [p][j] times scale
    [p / G][j]: each column's K values are cut into groups of G rows, each
    group with its own scale.

    ```mlir
    %y = kiln.linear %x, %wq scales %s {packed, group_size = 128 : i64}
        : (tensor<?x256xf32>, tensor<3x256x64xi8>, tensor<3x2x64xf32>) -> tensor<?x172xf32>
    ```

    Or asymmetric 4-bit: `ui8` panels [ceil(N/64), K, 32], each byte two
    unsigned 4-bit values (column c of a panel in the low 4 bits of byte c,
    column c + 32 in its high 4 bits), with `zero_points` (`ui8` in
    [0, 15], the scales' shape). Weight element [p][j] is then (value
    [p][j] - zero point [p / G][j]) times scale [p / G][j].

    ```mlir
    %y = kiln.linear %x, %wq scales %s zero_points %z {packed, group_size = 128 : i64}
        : (tensor<?x256xf32>, tensor<3x256x32xui8>, tensor<3x2x64xf32>, tensor<3x2x64xui8>)
        -> tensor<?x172xf32>
    ```

    With `quantize_input` the input is quantized too (W8A8): at run time,
    each row of it to uint8 with its own scale s and zero point z (its
    range, widened to include 0, in 255 steps), and the product is summed
    in integers. The weight is then int8 with one scale per column
    (`group_size` = K, scales [ceil(N/64), 1, 64]), K a multiple of 4 and at
    most 65536, its panel rows in quads: row 4q + i of column c at byte
    (q · 64 + c) · 4 + i of its panel, the operand of the CPU's dot
    products of 4 bytes. `column_sums` ([ceil(N/64), 64] i32) holds each
    column's sum of values, which the zero points multiply: row i of the
    result is s · (q_i · W − z · column_sums) · scale.

    ```mlir
    %y = kiln.linear %x, %wq scales %s column_sums %cs {packed, group_size = 256 : i64, quantize_input}
        : (tensor<?x256xf32>, tensor<3x256x64xi8>, tensor<3x1x64xf32>, tensor<3x64xi32>)
        -> tensor<?x172xf32>
    ```

    With `input_scale` s and `input_zero_point` z as well, the input is
    quantized with that one scale and zero point (z in [0, 255]) instead
    of each row's own: a static per-tensor quantization, a QDQ model's
    (`kiln-fold-quantized-products` makes it). With `input_tensor_range`
    instead, one scale and zero point for every row, from the range of the
    whole input at run time (ONNX's DynamicQuantizeLinear). Values are
    round(x / s) + z clamped to [0, 255], as `kiln.quantize` computes them.
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                   AnyTypeOf<[Kiln_FloatTensor, TensorOf<[I8]>, TensorOf<[UI8]>]>:$weight,
                   Optional<Kiln_FloatTensor>:$scales,
                   Optional<TensorOf<[UI8]>>:$zero_points,
                   Optional<TensorOf<[I32]>>:$column_sums,
                   Optional<Kiln_FloatTensor>:$bias,
                   OptionalAttr<Kiln_Activation>:$activation,
                   Optional<Kiln_FloatTensor>:$gate,
                   Optional<Kiln_FloatTensor>:$residual, UnitAttr:$transpose_b,
                   UnitAttr:$packed, OptionalAttr<I64Attr>:$group_size,
                   UnitAttr:$quantize_input, OptionalAttr<F32Attr>:$input_scale,
                   OptionalAttr<I64Attr>:$input_zero_point, UnitAttr:$input_tensor_range);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`scales` $scales^)? (`zero_points` $zero_points^)?
    (`column_sums` $column_sums^)?
    (`bias` $bias^)? (`activation` $activation^)?
    (`gate` $gate^)? (`residual` $residual^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Columns per panel of a packed weight. The runtime's
    /// kiln::rt::kWeightPanelWidth: keep the two in step.
    static constexpr int64_t kPanelWidth = 64;
    /// How many panels a packed weight of `columns` columns has.
    static int64_t panelCount(int64_t columns) {
      return (columns + kPanelWidth - 1) / kPanelWidth;
    }

    /// The weight's contraction size K and column count N (dynamic when
    /// unknown), whatever its layout.
    std::pair<int64_t, int64_t> getWeightSizes();
    /// Whether the weight is quantized values with scales by group.
    bool isQuantized() { return getScales() != nullptr; }
    /// The quantize_input form's checks, for a weight with scales and
    /// contraction size `weightK`.
    ::mlir::LogicalResult verifyQuantizedInput(int64_t weightK);
    /// Whether the weight is 4-bit values in pairs, with zero points.
    bool isUint4() { return getZeroPoints() != nullptr; }
    /// The deepest product whose input may be quantized: its integer sums
    /// stay below 2^31. The runtime's kiln::rt::kMaxInt8Depth: keep the
    /// two in step.
    static constexpr int64_t kMaxInt8Depth = 65536;
    /// Rows of a column per 4 bytes of a weight whose input is quantized.
    static constexpr int64_t kRowQuad = 4;
    /// Bytes (elements) per row of a packed weight's panel.
    int64_t panelRowElements() { return isUint4() ? kPanelWidth / 2 : kPanelWidth; }
  }];
  let hasVerifier = 1;
}

def Kiln_RotaryOp : Kiln_Op<"rotary", [Pure,
    AllElementTypesMatch<["input", "cos", "sin", "result"]>]> {
  let summary = "rotary position embedding over the first R of the last axis";
  let description = [{
    Rotates the first R elements of the last axis, where R is the last dim
    of `cos` and `sin`, and passes the others through: with `x` those R
    elements, `x * cos + rotate_half(x) * sin`, where `rotate_half(x)` is
    `concat(-x[..., R/2:], x[..., :R/2])` (the GPT-NeoX / Llama layout).
    With `interleaved`, the pairs are neighbours instead (GPT-J's
    `rotate_every_two`): `rotate_every_two(x)[2i] = -x[2i + 1]` and
    `rotate_every_two(x)[2i + 1] = x[2i]`. R is static, even and at most
    the input's last dim D, which is static and the result's too. R < D is
    partial rotary (GPT-NeoX's `rotary_pct`), which the exporters spell as the
    rotary of a slice concatenated with the rest. The other dims broadcast
    as in NumPy. `kiln-fuse-rotary-embeddings` creates it from the
    decomposed form, which the CPU backend then computes in one loop without
    materializing the halves, the slices or the concat.

    Example:

    ```mlir
    %q = kiln.rotary %x, %cos, %sin
        : (tensor<?x4x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x16xf32>
    %k = kiln.rotary %y, %cos, %sin
        : (tensor<?x4x?x32xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) -> tensor<?x4x?x32xf32>
    %j = kiln.rotary %y, %cos, %sin {interleaved}
        : (tensor<?x?x4x16xf32>, tensor<?x?x1x8xf32>, tensor<?x?x1x8xf32>) -> tensor<?x?x4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$cos,
                   Kiln_FloatTensor:$sin, UnitAttr:$interleaved);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $cos `,` $sin attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// R, the rotated elements at the start of the last axis.
    int64_t getRotaryWidth();
  }];
  let hasVerifier = 1;
}

def Kiln_SoftmaxOp : Kiln_AxisOp<"softmax", "exp(x) / sum(exp(x))">;
def Kiln_LogSoftmaxOp : Kiln_AxisOp<"log_softmax", "x - log(sum(exp(x)))">;

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure,
    AllElementTypesMatch<["input", "scale", "result"]>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the trailing axes";
  let description = [{
    Normalizes over the axes `axis` .. rank-1: `(x - mean) / sqrt(var +
    epsilon) * scale + bias`, with the biased variance. `scale` and the
    optional `bias` broadcast against those trailing axes.

    Example:

    ```mlir
    %y = kiln.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   Optional<Kiln_FloatTensor>:$bias, I64Attr:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-5f">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_RmsNormOp : Kiln_Op<"rms_norm", [Pure,
    AllElementTypesMatch<["input", "scale", "result"]>,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "root-mean-square normalization over the trailing axes";
  let description = [{
    Computes `x / sqrt(mean(x^2) + epsilon) * scale` over the axes `axis` ..
    rank-1, as Llama's RMSNorm does. `scale` broadcasts against those axes.

    Example:

    ```mlir
    %y = kiln.rms_norm %x, %w {axis = 2 : i64, epsilon = 1.0e-06 : f32}
        : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                   I64Attr:$axis, DefaultValuedAttr<F32Attr, "1.0e-6f">:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure, AttrSizedOperandSegments,
    AllElementTypesMatch<["query", "key", "value", "result"]>]> {
  let summary = "scaled dot-product attention over 4-D query, key and value";
  let description = [{
    For query [B, H, Tq, D], key [B, Hkv, Tk, D] and value [B, Hkv, Tk, Dv],
    with H a multiple of Hkv (grouped-query attention: query head `h` reads
    key/value head `h / (H / Hkv)`), computes

    ```
    s    = scale * query · keyᵀ                    [B, H, Tq, Tk]
    s    = s + position_bias                        if `position_bias` is given
    s    = where(keep, s, masked_value)             if `keep` is given
    s    = s + bias                                 if `bias` is given
    out  = softmax(s, axis = 3) · value             [B, H, Tq, Dv]
    ```

    `position_bias` (added beneath the mask: ALiBi's slopes times key
    positions), `keep` (i1) and `bias` (the additive mask) broadcast against
    [B, H, Tq, Tk] as in NumPy. This is the decomposed form that
    `kiln-fuse-attention` recognizes; the CPU backend lowers it to one
    streaming-softmax kernel that never materializes `s`.

    With `past` (a past key [B, Hkv, P, D] and a past value [B, Hkv, P, Dv],
    the KV cache of the steps before), the keys and values attended to are
    concat(past key, key) and concat(past value, value) along dim 2, so the
    scores are [B, H, Tq, P + Tk], and the op also returns those two
    concatenations as `presents`: the cache that the next step reads. That is
    a decode step's KV-cache concat fused into the attention, which then
    reads each past row once, copying it to the present as it attends.

    Example:

    ```mlir
    %o = kiln.attention %q, %k, %v keep %causal bias %mask
        {scale = 2.500000e-01 : f32, masked_value = -3.40282347E+38 : f32}
        : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>,
           tensor<1x1x?x?xi1>, tensor<?x1x1x?xf32>) -> tensor<?x4x?x16xf32>
    %o2, %present_k, %present_v = kiln.attention %q, %k, %v
        past %past_k, %past_v bias %mask {scale = 2.500000e-01 : f32}
        : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>,
           tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x1x1x?xf32>)
        -> (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key,
                   Kiln_FloatTensor:$value, Variadic<Kiln_FloatTensor>:$past,
                   Optional<Kiln_FloatTensor>:$position_bias,
                   Optional<Kiln_BoolTensor>:$keep,
                   Optional<Kiln_FloatTensor>:$bias, F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0f">:$masked_value);
  let results = (outs Kiln_FloatTensor:$result,
                 Variadic<Kiln_FloatTensor>:$presents);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`past` $past^)?
    (`position_bias` $position_bias^)? (`keep` $keep^)?
    (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The past key and value, or null without `past`.
    ::mlir::Value getPastKey() {
      return getPast().empty() ? ::mlir::Value() : getPast()[0];
    }
    ::mlir::Value getPastValue() {
      return getPast().empty() ? ::mlir::Value() : getPast()[1];
    }
  }];
  let hasVerifier = 1;
}

def Kiln_PagedAttentionOp : Kiln_Op<"paged_attention", [Pure,
    AttrSizedOperandSegments, AllElementTypesMatch<["query", "key", "value", "result"]>]> {
  let summary = "attention whose past keys and values are read from a paged pool";
  let description = [{
    `kiln.attention` with a past, for the generation engine: the past keys
    and values are not operands but rows of `cache`, the engine's pool
    [blocks, layers, 2, Hkv, block_size, D] (2: key, value), of which this
    op reads layer `layer`. Sequence b's cached token t is row t % block_size
    of block `block_tables[b, t / block_size]`, for t < `past_lengths[b]`.
    `key` and `value` [B, Hkv, Tk, D] are the new rows. The masks
    (`position_bias`, `keep` and `bias`, applied as `kiln.attention` applies
    them) see a padded past of `past_width` columns followed by the new rows:
    sequence b's cached rows are columns [past_width - past_lengths[b],
    past_width), and the columns in front of them hold no key (they take no
    weight). No presents: the engine stores the new rows in its blocks.
    The pool holds the query's element type, or, for an f32 query, f16 or
    bf16 (`kilnc --kv-dtype`): half the memory, widened to f32 as read.
    `kiln-page-kv-cache` makes it from a `kiln.attention` whose past is a
    graph input.

    ```mlir
    %o = kiln.paged_attention %q, %k, %v cache %pool tables %tables
        lengths %lengths width %width bias %mask {layer = 0 : i64, scale = 2.500000e-01 : f32}
        : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>,
           tensor<?x2x2x2x16x16xf32>, tensor<?x?xi64>, tensor<?xi64>, tensor<i64>,
           tensor<?x1x?x?xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key,
                   Kiln_FloatTensor:$value, Kiln_FloatTensor:$cache,
                   RankedTensorOf<[I64]>:$block_tables, Kiln_ShapeTensor:$past_lengths,
                   Kiln_I64Scalar:$past_width,
                   Optional<Kiln_FloatTensor>:$position_bias,
                   Optional<Kiln_BoolTensor>:$keep,
                   Optional<Kiln_FloatTensor>:$bias, I64Attr:$layer,
                   F32Attr:$scale,
                   DefaultValuedAttr<F32Attr, "0.0f">:$masked_value);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `cache` $cache `tables` $block_tables
    `lengths` $past_lengths `width` $past_width
    (`position_bias` $position_bias^)? (`keep` $keep^)?
    (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "sum">;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "mean">;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "maximum">;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "minimum">;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "product">;

//===----------------------------------------------------------------------===//
// Data movement and shape ops
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "reinterprets the elements with a new shape";
  let description = [{
    Gives the elements, in row-major order, the dimensions in `shape`. As in
    ONNX (allowzero = 0), a 0 in `shape` copies the input's dimension at the
    same index, unless `allow_zero` is set (ONNX's allowzero = 1), when it is
    an empty dimension. One -1 stands for the size that keeps the element
    count. The result's rank is the length of `shape`.

    Example:

    ```mlir
    %y = kiln.reshape %x, %shape : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape,
                   UnitAttr:$allow_zero);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$input `,` $shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "permutes the dimensions";
  let description = [{
    Result dimension `i` is input dimension `permutation[i]`.

    Example:

    ```mlir
    %y = kiln.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SqueezeOp : Kiln_Op<"squeeze", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "removes dimensions of size 1";
  let description = [{
    Removes the input dimensions listed in `axes` (sorted, unique,
    normalized), each of which must have size 1.

    Example:

    ```mlir
    %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<?x1x64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_UnsqueezeOp : Kiln_Op<"unsqueeze", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "inserts dimensions of size 1";
  let description = [{
    Inserts a dimension of size 1 at each position of `axes` (sorted, unique,
    normalized against the result's rank).

    Example:

    ```mlir
    %y = kiln.unsqueeze %x {axes = array<i64: 1, 2>} : (tensor<?x?xi64>) -> tensor<?x1x1x?xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "joins tensors along one axis";
  let description = [{
    Concatenates the inputs along `axis`. All inputs have the same rank and
    agree on every other dimension.

    Example:

    ```mlir
    %kv = kiln.concat %past, %new {axis = 2 : i64}
        : (tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SplitOp : Kiln_Op<"split", [Pure]> {
  let summary = "cuts a tensor into pieces along one axis";
  let description = [{
    Splits the input along `axis` into one result per entry of `sizes`. The
    sizes add up to the input's dimension. When the sizes are computed at
    run time, they come as the 1-D i64 operand `split_sizes` (one entry per
    result), and `sizes` holds what is known at compile time: a size, or
    ShapedType::kDynamic (printed as a large negative number) where only the
    operand knows. The run then checks that they are non-negative and add
    up to the dimension.

    Example:

    ```mlir
    %q, %k, %v = kiln.split %qkv {axis = 2 : i64, sizes = array<i64: 64, 64, 64>}
        : (tensor<?x?x192xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>)
    %a, %b = kiln.split %x sizes %n {axis = 0 : i64, sizes = array<i64: -9223372036854775808, -9223372036854775808>}
        : (tensor<6xf32>, tensor<2xi64>) -> (tensor<?xf32>, tensor<?xf32>)
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Optional<Kiln_ShapeTensor>:$split_sizes,
                   I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let assemblyFormat = [{
    $input (`sizes` $split_sizes^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "takes a strided window along some axes";
  let description = [{
    For each entry `i` of `axes`, keeps the elements `starts[i]`,
    `starts[i] + steps[i]`, ... up to (excluding) `ends[i]` along that axis,
    with ONNX's rules: negative indices count from the end, and indices are
    clamped into range. `starts`, `ends` and `steps` are 1-D i64 tensors with
    one entry per axis; they may be computed at run time.

    Example:

    ```mlir
    %y = kiln.slice %x[%starts : %ends : %steps] {axes = array<i64: 2>}
        : (tensor<1x1x256x256xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x?x256xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$starts,
                   Kiln_ShapeTensor:$ends, Kiln_ShapeTensor:$steps,
                   DenseI64ArrayAttr:$axes);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $starts `:` $ends `:` $steps `]` attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure,
    AllElementTypesMatch<["data", "result"]>]> {
  let summary = "picks slices of `data` along an axis by index";
  let description = [{
    Result shape is `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
    Negative indices count from the end of the axis.

    Example:

    ```mlir
    %e = kiln.gather %table[%ids] {axis = 0 : i64}
        : (tensor<256x64xf32>, tensor<?x?xi64>) -> tensor<?x?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements", [Pure,
    AllElementTypesMatch<["data", "result"]>]> {
  let summary = "picks one element of `data` per index, along an axis";
  let description = [{
    ONNX GatherElements: the result has the indices' shape, and element
    `i` is `data[i[0], ..., indices[i], ..., i[r-1]]`, the index replacing
    the coordinate on `axis`. Negative indices count from the end of the
    axis. Every dimension other than `axis` of the indices must fit in the
    data's (it is checked at run time where it is dynamic).

    Example:

    ```mlir
    %y = kiln.gather_elements %x[%i] {axis = 1 : i64}
        : (tensor<?x8xf32>, tensor<?x3xi64>) -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_GatherNdOp : Kiln_Op<"gather_nd", [Pure,
    AllElementTypesMatch<["data", "result"]>]> {
  let summary = "picks slices of `data` by index tuples";
  let description = [{
    ONNX GatherND: the last dimension of `indices` (static, `r`) holds
    tuples that index data dims `batch_dims .. batch_dims + r - 1`; the
    first `batch_dims` dims of both are shared. The result shape is
    `indices.shape[:-1] + data.shape[batch_dims + r:]`. Negative indices
    count from the end of their axis.

    Example:

    ```mlir
    %y = kiln.gather_nd %x[%i] {batch_dims = 0 : i64}
        : (tensor<?x?x64xf32>, tensor<?x2xi64>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   DefaultValuedAttr<I64Attr, "0">:$batch_dims);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `[` $indices `]` attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_CumSumOp : Kiln_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "running sums along an axis";
  let description = [{
    ONNX CumSum: element j along `axis` is the sum of the elements at
    0..j (with `exclusive`, 0..j-1), or with `reverse` of j..n-1
    (j+1..n-1).

    Example:

    ```mlir
    %y = kiln.cumsum %x {axis = 1 : i64} : tensor<?x?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   UnitAttr:$exclusive, UnitAttr:$reverse);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_ArgMaxOp : Kiln_ArgReduceOp<"argmax", "largest">;
def Kiln_ArgMinOp : Kiln_ArgReduceOp<"argmin", "smallest">;

def Kiln_TopKOp : Kiln_Op<"top_k", [Pure,
    AllElementTypesMatch<["input", "values"]>]> {
  let summary = "the k largest (or smallest) elements along an axis";
  let description = [{
    ONNX TopK: along `axis`, the `k` largest elements (the smallest without
    `largest`) and their indices (i64), best first. Of equal elements the one
    with the lower index comes first; NaN ranks above every number. `k` is
    a 0-d or one-element i64 tensor, which may be computed at run time; it
    must not exceed the axis size (checked at run time). With `sorted` unset
    ONNX leaves the order open, and kiln still sorts.

    Example:

    ```mlir
    %v, %i = kiln.top_k %x, %k {axis = 1 : i64, largest}
        : (tensor<?x32000xf32>, tensor<1xi64>) -> (tensor<?x?xf32>, tensor<?x?xi64>)
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$input, RankedTensorOf<[I64]>:$k,
                   I64Attr:$axis, UnitAttr:$largest);
  let results = (outs Kiln_NumericTensor:$values, RankedTensorOf<[I64]>:$indices);
  let assemblyFormat = [{
    $input `,` $k attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_PadOp : Kiln_Op<"pad", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "grows (or, with negative pads, crops) every dimension";
  let description = [{
    ONNX Pad over every axis: `pads` is a 1-D i64 tensor of 2 * rank
    entries, all the begins then all the ends, and may be computed at run
    time. Dimension d of the result is `pads[d] + size(d) + pads[rank + d]`.
    The border holds `value` (a 0-d tensor of the element type, zero when
    absent) in `constant` mode; `reflect` mirrors the input without
    repeating its edge, `edge` repeats the edge, and `wrap` continues
    from the opposite side. A reflected pad must be shorter than its
    dimension (checked at run time).

    Example:

    ```mlir
    %y = kiln.pad constant %x, %pads value %zero
        : (tensor<?x64xf32>, tensor<4xi64>, tensor<f32>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$pads,
                   Optional<Kiln_Tensor>:$value, Kiln_PadMode:$mode);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $mode $input `,` $pads (`value` $value^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements", [Pure,
    AllElementTypesMatch<["data", "updates", "result"]>]> {
  let summary = "writes one update per index into a copy of `data`, along an axis";
  let description = [{
    ONNX ScatterElements, the inverse of gather_elements: the result is
    `data`, except that each update `u[i]` lands at `i` with the coordinate
    on `axis` replaced by `indices[i]` (negative counts from the end). The
    updates are applied in order; `reduction` combines each with what it
    lands on instead of replacing it. `indices` and `updates` have one
    shape, whose dimensions off the axis fit the data's. Indices out of
    range fail at run time.

    Example:

    ```mlir
    %y = kiln.scatter_elements none %x[%i], %u {axis = 1 : i64}
        : (tensor<?x8xf32>, tensor<?x2xi64>, tensor<?x2xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   Kiln_Tensor:$updates, I64Attr:$axis,
                   Kiln_ScatterReduction:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $reduction $data `[` $indices `]` `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_ScatterNdOp : Kiln_Op<"scatter_nd", [Pure,
    AllElementTypesMatch<["data", "updates", "result"]>]> {
  let summary = "writes slices into a copy of `data` at index tuples";
  let description = [{
    ONNX ScatterND, the inverse of gather_nd: `indices` [..., q] holds
    tuples of q leading coordinates of `data`; `updates` has the indices'
    shape without its last dim, followed by the data's dims after the
    first q. Each update slice replaces (or with `reduction` combines with)
    the data slice its tuple names, in order. Indices out of range fail at
    run time.

    Example:

    ```mlir
    %c = kiln.scatter_nd none %cache[%pos], %kv
        : (tensor<1x4x128x16xf32>, tensor<1x4x1x3xi64>, tensor<1x4x1x16xf32>) -> tensor<1x4x128x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices,
                   Kiln_Tensor:$updates, Kiln_ScatterReduction:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $reduction $data `[` $indices `]` `,` $updates attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_EinsumOp : Kiln_Op<"einsum", [Pure, SameOperandsAndResultElementType]> {
  let summary = "a sum of products named by index letters";
  let description = [{
    Einstein summation with an explicit output: `equation` is
    `"<letters>,<letters>...-><letters>"`, one group of lowercase or
    uppercase letters per input (its dims, in order), and the result's.
    Letters missing from the output are summed over; a letter repeated
    within one input takes its diagonal. The importer expands ONNX's
    ellipses and implicit outputs into this form. Dims that share a letter
    must agree (checked at run time where dynamic).

    Example:

    ```mlir
    %f = kiln.einsum %t, %inv {equation = "i,j->ij"}
        : (tensor<?xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_NumericTensor>:$inputs, StrAttr:$equation);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_ExpandOp : Kiln_Op<"expand", [Pure,
    AllElementTypesMatch<["input", "result"]>]> {
  let summary = "broadcasts a tensor to a shape";
  let description = [{
    Broadcasts `input` against `shape` as ONNX Expand does: the result shape
    is the NumPy broadcast of the input's shape and `shape`, so a 1 in
    `shape` keeps the input's dimension.

    Example:

    ```mlir
    %y = kiln.expand %x, %shape : (tensor<1x1x?x16xf32>, tensor<4xi64>) -> tensor<?x2x?x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$input `,` $shape attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TileOp : Kiln_Op<"tile", [Pure, AllElementTypesMatch<["input", "result"]>]> {
  let summary = "repeats a tensor along every axis";
  let description = [{
    Repeats the input `repeats[i]` times along axis `i`; `repeats` has one
    entry per input dimension.

    Example:

    ```mlir
    %y = kiln.tile %x, %repeats : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$repeats);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$input `,` $repeats attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_TriluOp : Kiln_Op<"trilu", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "keeps the upper or lower triangle of the last two dims";
  let description = [{
    Zeroes the elements outside a triangle of every matrix in the last two
    dimensions. With `upper`, element (i, j) is kept when `j - i >= k`;
    otherwise when `j - i <= k`. `k` is the attribute, or the one i64 of the
    `diagonal` operand when the graph computes it (a causal mask offset by
    the cache length, `triu(mask, past + 1)`).

    Example:

    ```mlir
    %mask = kiln.trilu %ones {k = 1 : i64, upper} : tensor<?x?xf32>
    %shifted = kiln.trilu %ones, %k {upper} : tensor<?x?xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input,
                   Optional<RankedTensorOf<[I64]>>:$diagonal,
                   DefaultValuedAttr<I64Attr, "0">:$k, UnitAttr:$upper);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat =
      "$input (`,` $diagonal^ `:` type($diagonal))? attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Kiln_RangeOp : Kiln_Op<"range", [Pure,
    AllElementTypesMatch<["start", "limit", "delta", "result"]>]> {
  let summary = "an arithmetic sequence";
  let description = [{
    Yields `start, start + delta, ...` for as long as the values stay short of
    `limit`: `max(ceil((limit - start) / delta), 0)` elements. The operands
    are 0-d tensors.

    Example:

    ```mlir
    %pos = kiln.range %zero, %len, %one : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Kiln_NumericTensor:$start, Kiln_NumericTensor:$limit,
                   Kiln_NumericTensor:$delta);
  let results = (outs 1DTensorOf<[Kiln_NumericElement]>:$result);
  let assemblyFormat = [{
    $start `,` $limit `,` $delta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let description = [{
    Holds a tensor literal. Weights are `dense_resource` blobs that the
    printer keeps out of the op's text; small constants are `dense` literals
    that folders can read. Besides the kiln element types, a constant may
    be `ui8`: the packed 4-bit weights and zero points that
    `kiln-quantize-weights` makes for `kiln.linear`, which no other op reads.

    Example:

    ```mlir
    %shape = kiln.constant dense<[0, 0, 4, 16]> : tensor<4xi64>
    %w = kiln.constant dense_resource<wte> : tensor<256x64xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyTypeOf<[Kiln_Tensor, RankedTensorOf<[UI8]>]>:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Kiln_AssertOp : Kiln_Op<"assert", [MemoryEffects<[MemWrite]>]> {
  let summary = "ends the run with an error unless a condition holds";
  let description = [{
    Checks at run time that the 0-d i1 `condition` is true; otherwise the
    run ends with an error that names the op's ONNX node (its location) and
    says `message`. The importer emits it where it builds an ONNX op out of
    others and must check what the op itself would: a CumSum axis computed
    at run time must name a dimension, for one. It has a side effect, so
    nothing removes it for having no users.

    Example:

    ```mlir
    kiln.assert %ok, "the axis is out of range" : tensor<i1>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I1]>:$condition, StrAttr:$message);
  let assemblyFormat = "$condition `,` $message attr-dict `:` type($condition)";
}

def Kiln_ShapeOfOp : Kiln_Op<"shape_of", [Pure]> {
  let summary = "the dimensions of a tensor, as a 1-D i64 tensor";
  let description = [{
    Yields the input's dimension sizes at run time. Folds to a constant when
    the input shape is static.

    Example:

    ```mlir
    %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_ShapeTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_DimOp : Kiln_Op<"dim", [Pure]> {
  let summary = "one dimension of a tensor, as a 0-d i64 tensor";
  let description = [{
    Yields the size of dimension `index` at run time. Folds to a constant when
    that dimension is static.

    Example:

    ```mlir
    %seq = kiln.dim %x {index = 1 : i64} : tensor<?x?x64xf32> -> tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$index);
  let results = (outs Kiln_I64Scalar:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_SizeOp : Kiln_Op<"size", [Pure]> {
  let summary = "the number of elements of a tensor, as a 0-d i64 tensor";
  let description = [{
    Yields the product of the input's dimensions. Folds to a constant when
    the input shape is static.

    Example:

    ```mlir
    %n = kiln.size %x : tensor<?x64xf32> -> tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_I64Scalar:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
}

#endif // KILN_DIALECT_KILN_IR_KILNOPS_TD
