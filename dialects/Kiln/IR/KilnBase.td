//===- KilnBase.td - Kiln dialect, types and op base classes -*- tablegen -*-===//
//
// The dialect definition, the element-type constraints every op shares, and the
// op base classes (unary, binary-broadcast, axis and reduction ops) that keep
// the op definitions in KilnOps.td short.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNBASE_TD
#define KILN_DIALECT_KILN_IR_KILNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor-level operations for transformer inference graphs";
  let description = [{
    The `kiln` dialect is the compiler's graph IR: value-semantic ops on ranked
    tensors, close to ONNX in meaning but without ONNX's attribute and opset
    variations. The ONNX importer produces it; fusion, folding and quantization
    rewrite it; the code generators lower it.

    Dynamic dimensions are `?` in tensor types. Their ONNX names (`batch`,
    `sequence`, ...) are kept on the entry function's arguments and results in
    the `kiln.dims` attribute, one string per dimension ("" for static ones).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Argument/result attribute naming each dimension (ArrayAttr of strings).
    static constexpr ::llvm::StringLiteral kDimsAttrName = "kiln.dims";
    /// Argument/result attribute holding the ONNX value name.
    static constexpr ::llvm::StringLiteral kNameAttrName = "kiln.name";
    /// Argument attribute bounding each dimension from above (array<i64>):
    /// the declared dim bounds, which memory planning sizes buffers for.
    static constexpr ::llvm::StringLiteral kDimMaxAttrName = "kiln.dim_max";
    /// Its lower counterpart (array<i64>): what the runtime also enforces,
    /// which lets memory planning decide the lowering's guards on a size
    /// (a reshape entry of 0 copies the input's size; no declared dim is 0
    /// when its bound starts at 1).
    static constexpr ::llvm::StringLiteral kDimMinAttrName = "kiln.dim_min";
  }];
}

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

// Float element types. Quantized and packed integer types (i4) extend the
// integer list; every op constraint below is built from these two lists.
def Kiln_FloatElement : AnyTypeOf<[F32, F16, BF16, F64], "float">;
// ONNX's unsigned types stay unsigned (`ui8`...) through the kiln ops, so
// that the ops whose meaning depends on signedness (division, comparison,
// max/min, casts) know it; the lowering to linalg picks the unsigned arith
// ops for them and then makes every type signless, as arith requires.
def Kiln_IntElement : AnyTypeOf<[I64, I32, I16, I8, I<4>, UI64, UI32, UI16, UI8],
                                "integer">;
def Kiln_NumericElement : AnyTypeOf<[Kiln_FloatElement, Kiln_IntElement],
                                    "float or integer">;
def Kiln_Element : AnyTypeOf<[Kiln_NumericElement, I1], "kiln element">;

def Kiln_Tensor : RankedTensorOf<[Kiln_Element]>;
def Kiln_FloatTensor : RankedTensorOf<[Kiln_FloatElement]>;
def Kiln_NumericTensor : RankedTensorOf<[Kiln_NumericElement]>;
def Kiln_BoolTensor : RankedTensorOf<[I1]>;
def Kiln_IndexTensor : RankedTensorOf<[I64, I32]>;
// A 1-D list of dimension sizes or per-axis indices.
def Kiln_ShapeTensor : 1DTensorOf<[I64]>;
def Kiln_I64Scalar : 0DTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Kiln_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "elementwise comparison predicate", [
      I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::kiln";
}

// Values are the runtime's GemmActivation (runtime/src/Gemm.h), which
// kiln_ukernel_linear receives as is; 0 there means none.
def Kiln_Activation : I32EnumAttr<"Activation",
    "activation of a fused matrix product", [
      I32EnumAttrCase<"relu", 1>, I32EnumAttrCase<"gelu", 2>,
      I32EnumAttrCase<"gelu_tanh", 3>, I32EnumAttrCase<"silu", 4>]> {
  let cppNamespace = "::kiln";
}

def Kiln_PadMode : I32EnumAttr<"PadMode", "what fills a pad's border", [
      I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
      I32EnumAttrCase<"edge", 2>, I32EnumAttrCase<"wrap", 3>]> {
  let cppNamespace = "::kiln";
}

// How a scatter combines an update with the element it lands on.
def Kiln_ScatterReduction : I32EnumAttr<"ScatterReduction",
    "how a scatter combines an update with the element it lands on", [
      I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"add", 1>,
      I32EnumAttrCase<"mul", 2>, I32EnumAttrCase<"max", 3>,
      I32EnumAttrCase<"min", 4>]> {
  let cppNamespace = "::kiln";
}

//===----------------------------------------------------------------------===//
// Op base classes
//===----------------------------------------------------------------------===//

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

// y = f(x), one element at a time; the result type is the operand type.
class Kiln_UnaryOp<string mnemonic, string formula, Type tensorType,
                   list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
                  [Pure, Elementwise, SameOperandsAndResultType])> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` for every element of the "
    # "input. The result has the input's type.\n\n"
    # "Example:\n\n```mlir\n%y = kiln." # mnemonic
    # " %x : tensor<?x128xf32>\n```";
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

// z = f(x, y) with NumPy broadcasting between the operands.
class Kiln_BinaryOp<string mnemonic, string formula, Type operandType,
                    Type resultType, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat(traits,
                  [Pure, ResultsBroadcastableShape,
                   AllElementTypesMatch<["lhs", "rhs"]>])> {
  let summary = "elementwise " # formula # " with broadcasting";
  let description = "Computes `" # formula # "` element by element. The "
    # "operands broadcast against each other as in NumPy: shapes align from "
    # "the right, and a dimension of size 1 stretches to the other's size.\n\n"
    # "Example:\n\n```mlir\n%z = kiln." # mnemonic # " %x, %y : "
    # "(tensor<?x128xf32>, tensor<128xf32>) -> tensor<?x128xf32>\n```";
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

class Kiln_ArithmeticOp<string mnemonic, string formula, Type type,
                        list<Trait> traits = []>
    : Kiln_BinaryOp<mnemonic, formula, type, type,
                    !listconcat(traits,
                        [AllElementTypesMatch<["lhs", "rhs", "result"]>])>;

class Kiln_LogicalOp<string mnemonic, string formula>
    : Kiln_BinaryOp<mnemonic, formula, Kiln_BoolTensor, Kiln_BoolTensor,
                    [Commutative]>;

// An op that works along one normalized axis (0 <= axis < rank) and keeps
// the input's type: softmax and log_softmax.
class Kiln_AxisOp<string mnemonic, string formula>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = formula # " along one axis";
  let description = "Computes `" # formula # "` along `axis`, which is "
    # "normalized: 0 <= axis < rank.\n\n"
    # "Example:\n\n```mlir\n%y = kiln." # mnemonic
    # " %x {axis = 3 : i64} : tensor<?x4x?x?xf32>\n```";
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

// Reduces `axes` (sorted, unique, normalized); keeps them as size-1
// dimensions when `keep_dims` is set.
class Kiln_ReduceOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = what # " over a set of axes";
  let description = "Reduces the listed `axes` by taking their " # what
    # ". `axes` is sorted, unique and normalized. With `keep_dims` the "
    # "reduced axes stay as dimensions of size 1, otherwise they are removed. "
    # "An empty `axes` list reduces nothing.\n\n"
    # "Example:\n\n```mlir\n%m = kiln." # mnemonic
    # " %x {axes = array<i64: 2>, keep_dims = true} : "
    # "(tensor<?x?x64xf32>) -> tensor<?x?x1xf32>\n```";
  let arguments = (ins Kiln_NumericTensor:$input, DenseI64ArrayAttr:$axes,
                   DefaultValuedAttr<BoolAttr, "true">:$keep_dims);
  let results = (outs Kiln_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

// The index of the largest (argmax) or smallest (argmin) element along one
// normalized axis.
class Kiln_ArgReduceOp<string mnemonic, string what>
    : Kiln_Op<mnemonic, [Pure]> {
  let summary = "index of the " # what # " element along an axis";
  let description = "Finds, along `axis` (normalized), the index of the "
    # what # " element, as i64. Of equal elements the first wins, or the "
    # "last with `select_last_index`. With `keep_dims` the axis stays as a "
    # "dimension of size 1.\n\n"
    # "Example:\n\n```mlir\n%i = kiln." # mnemonic
    # " %x {axis = 1 : i64, keep_dims = false} : "
    # "(tensor<?x32000xf32>) -> tensor<?xi64>\n```";
  let arguments = (ins Kiln_NumericTensor:$input, I64Attr:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$keep_dims,
                   UnitAttr:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_IR_KILNBASE_TD
