//===- Passes.td - Kiln passes -----------------------------*- tablegen -*-===//
#ifndef KILN_PASSES_PASSES_TD
#define KILN_PASSES_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnPrintSummary : Pass<"kiln-print-summary", "mlir::ModuleOp"> {
  let summary = "Prints each function's signature with dimension names and its op counts";
  let description = [{
    For every function of the module, prints its inputs and outputs (ONNX
    name, tensor type and the names of the dynamic dimensions) followed by
    how many ops of each kind it holds. It changes nothing; `kilnc
    --emit=summary` and `make demo` use it to show what an import produced.

    Example output:

    ```
    func @main
      input  input_ids: tensor<?x?xi64> [batch, sequence]
      output logits: tensor<?x?x256xf32> [batch, sequence, 256]
      ops: 812
        kiln.add  40
    ```
  }];
  let options = [
    Option<"outputFile", "output", "std::string", /*default=*/"\"-\"",
           "Where to write the summary ('-' is standard output)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFoldQuantizedProducts : Pass<"kiln-fold-quantized-products", "mlir::ModuleOp"> {
  let summary = "Folds a quantized model's int8 products into int8 kiln.linear";
  let description = [{
    Rewrites the products of models that arrive quantized into int8
    `kiln.linear`s: the weight's values laid out in row quads with their
    column sums and one scale per column, the input quantized inside the
    GEMM. The products run in integers, as ONNX Runtime runs the same model.

    - QDQ (ORT's quantize_static): a `kiln.matmul` whose input is quantized
      and dequantized again with one scale and zero point (constants, per
      tensor) and whose weight is the dequantize of a constant int8 [K, N]
      with zero points 0 and a scale per tensor or per column. The linear's
      `input_scale` and `input_zero_point` are the activation's (its uint8
      form).
    - ORT's quantize_dynamic: `mul(cast(matmul_integer(q, W, z, 0)), s ·
      scale_W)` (either way round), where q, s and z are the results of one
      `kiln.dynamic_quantize` of x, W a constant int8 [K, N] and scale_W a
      constant per tensor or per column. The linear quantizes x by its
      whole range at run time (`input_tensor_range`).

    It does not fire when K is not a multiple of 4 or is over 65536, when
    a zero point of the weight is not 0, when the weight's scale is per row,
    when the activation's quantize and dequantize differ in scale or zero
    point, or when they are not constants. Those products run as written:
    the quantize, dequantize and integer products execute, and a dequantize
    of a constant weight is computed here, at compile time, into an f32
    constant that kiln-pack-weights packs as any other. Runs first, before
    the fusions (which then fuse the int8 linears' epilogues), on the
    module so that it can give the replaced weights' blobs back.

    Example:

    ```mlir
    %q = kiln.quantize %x, %s, %z : (tensor<?x64xf32>, tensor<f32>, tensor<i8>) -> tensor<?x64xi8>
    %a = kiln.dequantize %q, %s, %z : (tensor<?x64xi8>, tensor<f32>, tensor<i8>) -> tensor<?x64xf32>
    %w = kiln.dequantize %wq, %ws, %wz : (tensor<64x96xi8>, tensor<96xf32>, tensor<96xi8>) -> tensor<64x96xf32>
    %y = kiln.matmul %a, %w : (tensor<?x64xf32>, tensor<64x96xf32>) -> tensor<?x96xf32>
    // becomes, for %s = 0.05 and %z = -3
    %y = kiln.linear %x, %quads scales %scales column_sums %sums
        {group_size = 64 : i64, input_scale = 5.000000e-02 : f32, input_zero_point = 125 : i64,
         packed, quantize_input}
        : (tensor<?x64xf32>, tensor<2x64x64xi8>, tensor<2x1x64xf32>, tensor<2x64xi32>) -> tensor<?x96xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::tensor::TensorDialect"];
}

def KilnFoldConstants : Pass<"kiln-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluates ops on constants at compile time";
  let description = [{
    Replaces every kiln op whose operands are all dense constants with the
    constant it computes, when that has at most `max-elements` elements:
    elementwise ops (with broadcasting), casts, where, and the data movement
    ops (reshape, squeeze, unsqueeze, transpose, concat, gather, slice,
    expand, range). Ops run in program order, so constant chains fold in one
    sweep. An element of `shape_of(x)` picked by a constant index becomes
    `kiln.dim x`, a constant when that dim is static, which is how the shape
    subgraphs of exports (Shape → Gather → Unsqueeze → Concat → Reshape)
    lose their static parts. Where the op's result type is less static than
    the constant, a `tensor.cast` keeps the users' types.

    Before an op is folded, its result types are refined from its operands
    (`refineResultTypes`, ShapeInference.h): a reshape whose folded shape
    entries are constants or static dims, and the transposes, products,
    slices, concats, splits, reductions and elementwise ops after it, get
    the static sizes that ONNX shape inference lost, so that dims read from
    them fold in the same sweep. Nothing is refined where a declared static
    size disagrees, or where the new type would break a constraint of the op
    or of a kiln op using it: the run-time checks report those.

    Ops whose run-time checks would fail (an index out of range, an integer
    division by zero, a float-to-integer cast out of range) are left for run
    time, so that the error still names them. Weights (`dense_resource`) are
    not folded.

    Example:

    ```mlir
    %s = kiln.shape_of %x : tensor<?x?x64xf32> -> tensor<3xi64>
    %c2 = kiln.constant dense<2> : tensor<i64>
    %d = kiln.gather %s[%c2] {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
    // becomes
    %d = kiln.constant dense<64> : tensor<i64>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"65536",
           "The most elements a folded constant may have">,
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::tensor::TensorDialect"];
}

def KilnEinsumToMatMul : Pass<"kiln-einsum-to-matmul", "mlir::func::FuncOp"> {
  let summary = "Rewrites two-input einsums that contract one letter as kiln.matmul";
  let description = [{
    A two-input `kiln.einsum` that sums over exactly one letter is a batched
    matrix product: the letters in both inputs and the output are batch
    dims, the summed letter is K, and the letters of one input only are M
    (the first input's) and N (the second's). It becomes `kiln.matmul`
    (with `transpose_b` when the second input lists N before K) between
    `kiln.transpose`s where the letters are not already in that order, so
    that attention written with einsums fuses, and a product by a weight
    becomes a packed `kiln.linear`, as the same graph written with MatMul
    does. Letters that only one input has beyond its M or N stay leading
    batch dims of that input; only one input may have them.

    It does not fire for other einsums (an outer product, several summed
    letters, a letter summed within one input, a diagonal, one or three
    inputs) or integer elements: those run as the einsum's loop nest.

    Example:

    ```mlir
    %s = kiln.einsum %q, %k {equation = "bqhd,bkhd->bhqk"} : ...
    // becomes
    %qt = kiln.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : ...
    %kt = kiln.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : ...
    %s = kiln.matmul %qt, %kt {transpose_b} : ...
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseAttention : Pass<"kiln-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Fuses decomposed scaled dot-product attention into kiln.attention";
  let description = [{
    Recognizes the attention core that exporters emit for multi-head and
    grouped-query attention once the key/value heads are laid out per query
    head:

    ```
    softmax(where(keep, (Q · transpose(K, [0, 1, 3, 2])) / c, fill) + mask) · V
    ```

    where the `where`, the additive `mask` and the scale (a division or a
    multiplication by a scalar constant) are each optional, and replaces it
    with one `kiln.attention`, which the CPU backend runs as a
    streaming-softmax kernel that never materializes the scores.

    Grouped-query attention reaches this form with K and V repeated per
    query head (`repeat_kv`: unsqueeze, expand by the group size, reshape).
    When both are provably such repeats of [B, Hkv, T, D] tensors by the same
    group size, the attention reads the un-repeated K and V instead and maps
    query head h to key/value head h / group itself.

    A decode step attends to the KV cache with the new keys and values
    appended: K = concat(past_k, k) and V = concat(past_v, v) along dim 2,
    the concatenations also being the graph's present outputs. When both
    are such two-part concats whose other users come after the attention
    (or only read their dims), the attention takes the past as operands and
    returns the concatenations as its presents, so the kernel copies each
    cached row while it reads it instead of a concat copying them all first.

    It does not fire when an intermediate has another user (the scores, the
    probabilities, ...), when a mask would broadcast the scores to a larger
    shape, when batch or head dims would broadcast between Q, K and V, when
    the scale or fill is not a scalar constant, or for element types other
    than f32.

    Example:

    ```mlir
    %kt = kiln.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : ...
    %s = kiln.matmul %q, %kt : ...
    %d = kiln.div %s, %c4 : ...
    %m = kiln.add %d, %mask : ...
    %p = kiln.softmax %m {axis = 3 : i64} : ...
    %o = kiln.matmul %p, %v : ...
    // becomes
    %o = kiln.attention %q, %k, %v bias %mask {scale = 2.500000e-01 : f32} : ...
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseNormalizations : Pass<"kiln-fuse-normalizations", "mlir::func::FuncOp"> {
  let summary = "Fuses decomposed LayerNorm and RMSNorm into kiln.layer_norm / kiln.rms_norm";
  let description = [{
    Exports before opset 17 write LayerNorm out, and every export writes
    RMSNorm out:

    ```
    LayerNorm: d = x - mean(x);  d / sqrt(mean(d^2) + eps) * gamma [+ beta]
    RMSNorm:   x * 1 / sqrt(mean(x^2) + eps) * gamma
    ```

    The means must run over the trailing axes with kept dims and `eps` must
    be a scalar constant. `d^2` may be `pow(d, 2)` or `d * d`, and the
    division may be a `div`, or a multiplication by `rsqrt`,
    `reciprocal(sqrt)` or `1 / sqrt`. `gamma` and `beta` must broadcast over
    the normalized axes only. Nothing fires when an intermediate (the mean,
    the deviation, the centered `d` beyond its two uses) has another user.

    Example:

    ```mlir
    %m = kiln.reduce_mean %x {axes = array<i64: 2>} : ...
    %d = kiln.sub %x, %m : ...
    ...
    %y = kiln.add %s, %beta : ...
    // becomes
    %y = kiln.layer_norm %x, %gamma, %beta {axis = 2 : i64, epsilon = 1.0e-05 : f32} : ...
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseActivations : Pass<"kiln-fuse-activations", "mlir::func::FuncOp"> {
  let summary = "Fuses decomposed GELU and SiLU into kiln.gelu / kiln.silu";
  let description = [{
    Recognizes

    ```
    GELU:        0.5 * x * (1 + erf(x / sqrt(2)))
    GELU (tanh): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
    SiLU:        x * sigmoid(x)
    ```

    with the GELU's three factors multiplied in any grouping and order, and
    constants matched to 1e-6 relative (exporters store them in f32). It does
    not fire when an intermediate has another user or when a factor would
    broadcast `x` to a larger shape.

    Example:

    ```mlir
    %s = kiln.sigmoid %x : tensor<?x?x172xf32>
    %y = kiln.mul %x, %s : (tensor<?x?x172xf32>, tensor<?x?x172xf32>) -> tensor<?x?x172xf32>
    // becomes
    %y = kiln.silu %x : tensor<?x?x172xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseRotaryEmbeddings : Pass<"kiln-fuse-rotary-embeddings", "mlir::func::FuncOp"> {
  let summary = "Fuses the decomposed rotary position embedding into kiln.rotary";
  let description = [{
    Recognizes the rotary embedding in the layout of Llama and GPT-NeoX,

    ```
    x * cos + rotate_half(x) * sin
    rotate_half(x) = concat(-x[..., D/2:], x[..., :D/2], axis = -1)
    ```

    with the products' and the sum's operands in either order and the
    halves taken by single-step slices of the last axis (ONNX's negative and
    clamped indices allowed), and replaces it with one `kiln.rotary`, which
    the CPU backend computes in one loop that reads each element's partner
    in place of the halves, negation and concat.

    Partial rotary (GPT-NeoX's `rotary_pct`), the rotary of the first R
    elements of the last axis concatenated with the rest,
    `concat(rotary(x[..., :R]), x[..., R:], axis = -1)`, then becomes one
    `kiln.rotary` of `x` with R-wide `cos` and `sin`, which passes the
    elements past R through.

    It does not fire when an intermediate (a product, the concat, the
    negation, a half) has another user, when the halves are not exactly the
    two halves of a static, even last axis, when `cos` or `sin` does not
    have that last dim, or for GPT-J's interleaved pairs, which are another
    function.

    Example:

    ```mlir
    %a = kiln.mul %x, %cos : ...
    %h2 = kiln.slice %x[%c8 : %end : %c1] {axes = array<i64: 3>} : ...
    %n = kiln.neg %h2 : ...
    %h1 = kiln.slice %x[%c0 : %c8 : %c1] {axes = array<i64: 3>} : ...
    %r = kiln.concat %n, %h1 {axis = 3 : i64} : ...
    %b = kiln.mul %r, %sin : ...
    %y = kiln.add %a, %b : ...
    // becomes
    %y = kiln.rotary %x, %cos, %sin : ...
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnFuseGemmEpilogues : Pass<"kiln-fuse-gemm-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fuses a product's bias, activation and residual into kiln.linear";
  let description = [{
    Folds what follows a product by a 2-D weight into one `kiln.linear`, in
    the order the epilogue applies them:

    ```
    add(P, bias)                       bias of shape [N]
    act(P), act(reshape(P))            relu, gelu (exact or tanh), silu
    mul(P, g), mul(reshape(P), g)      the gate g, of the same shape
    add(P, r), add(reshape(P), r)      the residual r, of the same shape
    ```

    A SwiGLU MLP, silu(x·Wg) * (x·Wu), becomes two linears: the SiLU in the
    first one's epilogue and the product with it in the second's.

    P is a `kiln.matmul` by a 2-D weight, or a `kiln.linear` whose epilogue
    has none of the later stages yet. Activations commute with the reshape
    that exporters put after a product whose rows they flattened (GPT-2's
    Conv1D); a residual behind such a reshape is reshaped to the product's
    shape instead. The CPU backend applies the epilogue to each tile of the
    product while it is in cache, instead of in separate passes over memory.

    It does not fire when the product or the reshape has another user, when
    the weight is not 2-D or is already packed, for element types other than f32, when the bias
    is not [N], when a stage comes out of the epilogue's order, or when the
    gate or residual could broadcast against the product: a static 1 on one
    side only. (A dynamic size that would broadcast fails at run time in
    kiln, as the fused op's size check does.) Behind a reshape, where the
    gate or residual is reshaped by its element count, its shape must be
    provably the reshape's, each dim traced to its source (`traceDim` in
    PatternUtils).

    Example:

    ```mlir
    %p = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x256xf32>) -> tensor<?x256xf32>
    %b = kiln.add %p, %bias : (tensor<?x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    %g = kiln.gelu %b : tensor<?x256xf32>
    // becomes
    %g = kiln.linear %x, %w bias %bias activation gelu
        : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::tensor::TensorDialect"];
}

def KilnPackWeights : Pass<"kiln-pack-weights", "mlir::ModuleOp"> {
  let summary = "Lays constant weights out as the CPU GEMM microkernels read them";
  let description = [{
    Rewrites each constant 2-D f32 weight whose every use is a product by it
    (a `kiln.linear`, or a `kiln.matmul` with it on the right) into the
    layout that the CPU backend's microkernels read: the columns in panels
    of 64, each panel K rows of 64 floats, the last padded with zeros
    (`kiln.linear`'s `packed`). A transposed weight is transposed here.
    The runtime then neither packs nor transposes it on each call, and a
    product of a few rows (a decode step) streams each panel in order.
    Every product becomes a `kiln.linear {packed}`; a `kiln.matmul` one
    without an epilogue.

    It leaves a weight alone when it has another kind of user (the table of
    a tied embedding that a gather also reads), when its products disagree
    on transposition, when it is not f32, when its data is not at hand, or
    when padding N columns to whole panels would add more than
    `max-padding-percent` of N (a [K, 32] weight doubles): the runtime packs
    those on each call, as before. Runs after the fusions, whose patterns
    match products by weights in their ONNX layout.

    It runs on the module so that it can tell when nothing names a replaced
    `dense_resource` weight any more; it then empties that blob, which gives
    the importer's bytes back (the parsed model's copy is freed, an external
    file's pages are dropped), so a model's weights are held once while it
    compiles.

    Example:

    ```mlir
    %w = kiln.constant dense<...> : tensor<64x172xf32>
    %y = kiln.matmul %x, %w : (tensor<?x64xf32>, tensor<64x172xf32>) -> tensor<?x172xf32>
    // becomes
    %wp = kiln.constant dense<...> : tensor<3x64x64xf32>
    %y = kiln.linear %x, %wp {packed} : (tensor<?x64xf32>, tensor<3x64x64xf32>) -> tensor<?x172xf32>
    ```
  }];
  let options = [
    Option<"maxPaddingPercent", "max-padding-percent", "int64_t", /*default=*/"25",
           "The most zero columns a packed weight may add, in percent of its columns">,
  ];
  let dependentDialects = ["::kiln::KilnDialect", "::mlir::tensor::TensorDialect"];
}

def KilnQuantizeWeights : Pass<"kiln-quantize-weights", "mlir::ModuleOp"> {
  let summary = "Quantizes packed constant weights to int8 or 4 bits by group (weight-only)";
  let description = [{
    Rewrites each packed constant f32 weight whose every use is a packed
    `kiln.linear` into integers and f32 scales, one scale for each column
    and each group of `group-size` rows. With `bits=8`, int8 values,
    symmetric: scale = max |w| / 127 and value = round(w / scale) (to
    nearest, ties to even), so that value · scale is within scale / 2 of w.
    With `bits=4`, 4-bit values two to a byte, asymmetric: the group's
    range [min(w, 0), max(w, 0)] is cut into 15 steps of scale, the zero
    point z = round(-min / scale) is where 0 lands, and value = round(w /
    scale) + z, clamped to [0, 15]. The linears take the values, `scales`
    (and `zero_points`) with `group_size` (`kiln.linear`'s quantized
    forms); the activations stay f32, and the runtime multiplies the values
    back as it reads them. A decode step, which streams every weight from
    memory, then reads about a quarter (an eighth) of the bytes.

    With `quantize-inputs` (W8A8, `bits=8`), each weight gets one scale per
    column (`group-size` does not apply), its values laid out in row quads
    with their column sums (`kiln.linear`'s `quantize_input` form), and the
    linear quantizes its input to uint8 per row at run time: the product
    runs in integers (VNNI's dot products of 4 bytes on the CPU). A weight
    whose K is not a multiple of 4 (or is over 65536) stays f32, and the
    report lists it under `kept_f32` with the reason.

    Static W8A8 (`kilnc --quantize=int8 --calibration DIR`): when the module
    carries `kiln.calibrated_input_ranges`, a dictionary from each weight's
    name (its ONNX initializer's) to the range [lo, hi] that calibration saw
    its products' inputs take, every linear that quantize-inputs rewrites
    quantizes its input with one fixed scale and zero point instead: the
    range widened to include 0 and cut into 255 steps, z = round(-lo /
    scale) (`input_scale`, `input_zero_point`). A weight the dictionary does
    not name is an error: its products ran in no calibration run.

    The product that makes the model's results (its LM head: a linear whose
    result reaches the return through reshapes and casts only) stays f32
    unless `lm-head` is set, as its error is not averaged away by later
    layers. Weights that kiln-pack-weights left unpacked stay f32. Runs
    after kiln-pack-weights, whose panels it quantizes, and frees each
    replaced weight's blob as kiln-pack-weights does.

    Example:

    ```mlir
    %wp = kiln.constant dense<...> : tensor<3x256x64xf32>
    %y = kiln.linear %x, %wp {packed} : (tensor<?x256xf32>, tensor<3x256x64xf32>) -> tensor<?x172xf32>
    // becomes, with group-size=128
    %wq = kiln.constant dense<...> : tensor<3x256x64xi8>
    %s = kiln.constant dense<...> : tensor<3x2x64xf32>
    %y = kiln.linear %x, %wq scales %s {group_size = 128 : i64, packed}
        : (tensor<?x256xf32>, tensor<3x256x64xi8>, tensor<3x2x64xf32>) -> tensor<?x172xf32>
    ```
  }];
  let options = [
    Option<"bits", "bits", "int64_t", /*default=*/"8",
           "8: symmetric int8 values; 4: 4-bit values with zero points">,
    Option<"groupSize", "group-size", "int64_t", /*default=*/"128",
           "Rows of a column that share one scale">,
    Option<"quantizeLmHead", "lm-head", "bool", /*default=*/"false",
           "Quantize the product that makes the model's results too">,
    Option<"quantizeInputs", "quantize-inputs", "bool", /*default=*/"false",
           "W8A8: int8 weights with one scale per column, and the linears "
           "quantize their inputs to uint8 per row at run time (bits=8)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def KilnPageKvCache : Pass<"kiln-page-kv-cache", "mlir::ModuleOp"> {
  let summary = "Gives a decoder the generation engine's paged KV-cache interface";
  let description = [{
    Rewrites `@main` of a decoder with the optimum KV-cache interface
    (inputs input_ids, attention_mask and past_key_values.N.key/.value,
    outputs present.N.key/.value, each layer's past absorbed into a
    `kiln.attention` by `kiln-fuse-attention`) to read its past from the
    engine's paged pool instead:

    - the past inputs go; in their place come `kv_cache` [kv_blocks,
      layers, 2, kv_heads, block-size, head_dim], `block_tables` [batch,
      kv_table] and `past_lengths` [batch] (i64);
    - each layer's `kiln.attention ... past` becomes a
      `kiln.paged_attention` of that layer (the pool's element type is
      `kv-dtype`'s), reading a padded past as wide
      as the attention mask's columns less the new tokens
      (dim(attention_mask, 1) - dim(input_ids, 1)), which is also what the
      graph's reads of the past's length become;
    - the present outputs become the new rows only,
      `new_key_values.N.key/.value` [batch, kv_heads, sequence, head_dim],
      which the engine writes into its blocks.

    It fails, naming the culprit, when an input is missing, when a past
    input is read by anything but its attention and dim reads, or when a
    present feeds anything but the outputs.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "Tokens per block of the pool">,
    Option<"kvDtype", "kv-dtype", "std::string", /*default=*/"\"f32\"",
           "The pool's element type: f32, or f16 or bf16 (half the memory "
           "and bytes read; the attention widens them to f32)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_PASSES_TD
