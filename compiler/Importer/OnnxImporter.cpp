//===- OnnxImporter.cpp - ONNX model to kiln module -----------------------===//
//
// The stages, each reporting its own failure: read and parse the file, check
// the model, check the opset, list every unsupported op, run ONNX shape
// inference, then build the function node by node and verify it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer/OnnxImporter.h"
#include "compiler/Importer/ImportContext.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/ShapeInference.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <algorithm>
#include <map>
#include <set>
#include <onnx/defs/parser.h>
#include <onnx/shape_inference/implementation.h>

using namespace mlir;

namespace kiln {

void registerImporterDialects(MLIRContext &context) {
  context.loadDialect<KilnDialect, func::FuncDialect, tensor::TensorDialect>();
}

namespace {

/// Older opsets are read op by op: each importer names the oldest version of
/// its op it reads (OpImporterEntry), and checkSupportedOps refuses a node
/// whose op changed meaning since the model's opset.
constexpr int64_t kMaxOpset = 21;
/// The newest opset whose schemas Debian's ONNX library (1.12) knows. Past
/// it, the library would check and infer newer nodes against older schemas
/// (ReduceMean-13 for a ReduceMean-18 with its axes as an input), so kiln
/// does not ask it: the op importers read each node by its opset's
/// signature, the kiln verifier checks the IR, and types come from the
/// model's value_info and kiln's own shape refinement.
constexpr int64_t kLibraryOpset = 17;

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

/// Formats diagnostics as "<node>: <message>"; the location's name is the
/// node, and the file name is given once by the caller.
std::string formatDiagnostic(Diagnostic &diag) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto nameLoc = dyn_cast<NameLoc>(diag.getLocation()))
    os << "node '" << nameLoc.getName().getValue() << "': ";
  os << diag.str();
  for (const Diagnostic &note : diag.getNotes())
    os << "\n  note: " << note.str();
  return text;
}

class GraphImporter {
public:
  GraphImporter(MLIRContext &context, std::shared_ptr<onnx::ModelProto> model,
                StringRef sourceName, StringRef baseDir, const ImportOptions &options)
      : context_(context), model_(std::move(model)), sourceName_(sourceName.str()),
        baseDir_(baseDir.str()), options_(options),
        weights_(baseDir.str(), model_, options.inlineConstantLimit) {}

  OwningOpRef<ModuleOp> run(std::string &errorMessage);

private:
  /// Opset version by domain, with the default domain ("" or "ai.onnx")
  /// under "".
  using OpsetVersions = std::map<std::string, int64_t>;

  void checkModel(int64_t opset) const;
  LogicalResult validateTensors(std::string &error) const;
  OpsetVersions opsetVersions() const;
  LogicalResult checkOpset(const OpsetVersions &opsets, std::string &error);
  LogicalResult checkSupportedOps(const OpsetVersions &opsets, std::string &error);
  /// Refines each node's result types from its operands as it is imported:
  /// the next node's importer may need a shape operand's static length.
  LogicalResult buildFunction(ModuleOp module, int64_t opset);

  MLIRContext &context_;
  std::shared_ptr<onnx::ModelProto> model_;
  std::string sourceName_;
  std::string baseDir_;
  const ImportOptions &options_;
  WeightLoader weights_;
  OpImporterRegistry registry_;
};

/// onnx::checker::check_model on a ModelProto resolves external data against
/// the working directory; this runs the same graph check against the model's
/// own directory instead. Past kLibraryOpset only what does not depend on
/// op schemas is checked: the initializers and Constant tensors, and that
/// every value is produced once (use before definition is the import's own
/// error). Throws onnx::checker::ValidationError.
void GraphImporter::checkModel(int64_t opset) const {
  if (!model_->has_ir_version())
    throw onnx::checker::ValidationError("the model has no ir_version");
  std::unordered_map<std::string, int> opsets;
  for (const auto &entry : model_->opset_import())
    opsets[entry.domain()] = entry.version();
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model_->ir_version()));
  ctx.set_opset_imports(opsets);
  ctx.set_model_dir(baseDir_);
  const onnx::GraphProto &graph = model_->graph();
  if (opset <= kLibraryOpset) {
    onnx::checker::LexicalScopeContext scope;
    onnx::checker::check_graph(graph, ctx, scope);
    return;
  }
  std::set<std::string> produced;
  auto define = [&](const std::string &name, const std::string &by) {
    if (!name.empty() && !produced.insert(name).second)
      throw onnx::checker::ValidationError("value '" + name + "' of " + by +
                                           " is produced more than once");
  };
  for (const auto &input : graph.input())
    define(input.name(), "a graph input");
  for (const auto &init : graph.initializer()) {
    onnx::checker::check_tensor(init, ctx);
    if (!std::any_of(graph.input().begin(), graph.input().end(),
                     [&](const auto &input) { return input.name() == init.name(); }))
      define(init.name(), "an initializer");
  }
  for (const auto &node : graph.node()) {
    for (const auto &attr : node.attribute())
      if (attr.has_t())
        onnx::checker::check_tensor(attr.t(), ctx);
    for (const auto &output : node.output())
      define(output, "node '" + node.name() + "' (" + node.op_type() + ")");
  }
}

/// validateTensor on every initializer and Constant value, before anything
/// of the ONNX library reads them.
LogicalResult GraphImporter::validateTensors(std::string &error) const {
  const onnx::GraphProto &graph = model_->graph();
  for (const auto &init : graph.initializer())
    if (failed(validateTensor(init, "initializer '" + init.name() + "'", error)))
      return failure();
  for (const auto &node : graph.node())
    for (const auto &attr : node.attribute())
      if (attr.has_t() &&
          failed(validateTensor(attr.t(),
                                "attribute '" + attr.name() + "' of node '" +
                                    node.name() + "' (" + node.op_type() + ")",
                                error)))
        return failure();
  return success();
}

GraphImporter::OpsetVersions GraphImporter::opsetVersions() const {
  OpsetVersions opsets;
  for (const auto &entry : model_->opset_import())
    opsets[isDefaultDomain(entry.domain()) ? "" : entry.domain()] = entry.version();
  return opsets;
}

LogicalResult GraphImporter::checkOpset(const OpsetVersions &opsets,
                                        std::string &error) {
  auto defaultDomain = opsets.find("");
  if (defaultDomain == opsets.end()) {
    error = "the model imports no opset of the default ONNX domain";
    return failure();
  }
  int64_t opset = defaultDomain->second;
  if (opset < 1 || opset > kMaxOpset) {
    error = "the model uses opset " + std::to_string(opset) +
            " of the default ONNX domain; kiln supports opsets up to " +
            std::to_string(kMaxOpset);
    return failure();
  }
  return success();
}

LogicalResult GraphImporter::checkSupportedOps(const OpsetVersions &opsets,
                                               std::string &error) {
  std::vector<std::string> unsupported;
  for (const auto &node : model_->graph().node()) {
    std::string domain = isDefaultDomain(node.domain()) ? "" : node.domain();
    int64_t opset = opsets.count(domain) ? opsets.at(domain) : 0;
    OpImporterEntry entry = registry_.lookup(domain, node.op_type());
    if (entry.importer && opset >= entry.oldestOpset)
      continue;
    std::string label = node.name().empty()
                            ? "<unnamed, output '" +
                                  (node.output_size() ? node.output(0) : "") + "'>"
                            : "'" + node.name() + "'";
    std::string line = "node " + label + ": op '" +
                       (domain.empty() ? "" : domain + ".") + node.op_type() +
                       "' (opset " + std::to_string(opset) + ")";
    if (entry.importer)
      line += ": kiln reads " + node.op_type() + " from opset " +
              std::to_string(entry.oldestOpset) +
              " on; its older versions mean something else";
    unsupported.push_back(line);
  }
  if (unsupported.empty())
    return success();
  error = std::to_string(unsupported.size()) + " unsupported operator" +
          (unsupported.size() == 1 ? "" : "s") + ":";
  for (const auto &line : unsupported)
    error += "\n  " + line;
  return failure();
}

LogicalResult GraphImporter::buildFunction(ModuleOp module, int64_t opset) {
  const onnx::GraphProto &graph = model_->graph();
  OpBuilder builder(module.getBodyRegion());
  ImportContext ctx(builder, sourceName_, weights_, opset);
  Location fileLoc = FileLineColLoc::get(&context_, sourceName_, 0, 0);

  for (const auto &info : graph.value_info())
    ctx.setValueInfo(info);
  for (const auto &info : graph.output()) {
    ctx.setValueInfo(info);
    ctx.markUsed(info.name());
  }
  for (const auto &node : graph.node())
    for (const auto &input : node.input())
      ctx.markUsed(input);

  std::set<std::string> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());

  // Graph inputs that are also initializers (old-style defaults) are
  // constants, not function arguments.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  auto valueAttrs = [&](const onnx::ValueInfoProto &info) {
    SmallVector<Attribute> dims;
    for (const auto &dim : info.type().tensor_type().shape().dim())
      dims.push_back(builder.getStringAttr(dim.has_dim_value() ? "" : dim.dim_param()));
    return builder.getDictionaryAttr(
        {builder.getNamedAttr(KilnDialect::kNameAttrName,
                              builder.getStringAttr(info.name())),
         builder.getNamedAttr(KilnDialect::kDimsAttrName, builder.getArrayAttr(dims))});
  };
  for (const auto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    auto type = ctx.convertType(input.type(), fileLoc,
                                "graph input '" + input.name() + "'");
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    argAttrs.push_back(valueAttrs(input));
    argNames.push_back(input.name());
  }

  auto func = builder.create<func::FuncOp>(fileLoc, options_.functionName,
                                           builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    ctx.bind(name, entry->getArgument(i));
    func.setArgAttrs(i, argAttrs[i]);
  }
  builder.setInsertionPointToStart(entry);

  for (onnx::TensorProto &init : *model_->mutable_graph()->mutable_initializer()) {
    std::string message;
    auto attr = weights_.loadReleasable(init, &context_, message);
    if (failed(attr))
      return emitError(fileLoc) << "initializer: " << message;
    Location loc = NameLoc::get(builder.getStringAttr(init.name()), fileLoc);
    ctx.bind(init.name(), builder.create<ConstantOp>(loc, *attr));
  }

  for (const auto &node : graph.node()) {
    OpImporter importer =
        registry_.lookup(isDefaultDomain(node.domain()) ? "" : node.domain(),
                         node.op_type())
            .importer;
    const bool readsQuantized = isDefaultDomain(node.domain()) &&
                                (node.op_type() == "DequantizeLinear" ||
                                 node.op_type() == "MatMulInteger" ||
                                 node.op_type() == "QLinearMatMul");
    for (const std::string &input : node.input())
      if (ctx.isLoweredUint8(input))
        ctx.bindUint8View(input, /*lowered=*/readsQuantized, ctx.loc(node));
    Operation *last = entry->empty() ? nullptr : &entry->back();
    if (failed(importer(ctx, node)))
      return failure();
    for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
             last ? std::next(last->getIterator()) : entry->begin(), entry->end()))) {
      refineResultTypes(&op);
      for (Type type : op.getResultTypes())
        if (auto shaped = dyn_cast<ShapedType>(type);
            shaped && shaped.hasRank() && !staticElementsFit(shaped.getShape()))
          return ctx.error(node) << "a result of " << type
                                 << " has more than 2^48 elements";
    }
    for (int i = 0; i < node.output_size(); ++i)
      if (ctx.isOutputUsed(node, i) && !ctx.lookup(node.output(i)))
        return ctx.error(node) << "output '" << node.output(i)
                               << "' was not produced";
  }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const auto &output : graph.output()) {
    if (ctx.isLoweredUint8(output.name()))
      ctx.bindUint8View(output.name(), /*lowered=*/false, fileLoc);
    Value value = ctx.lookup(output.name());
    if (!value)
      return emitError(fileLoc) << "graph output '" << output.name()
                                << "' is not produced by any node";
    results.push_back(value);
    resultTypes.push_back(value.getType());
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, output] : llvm::enumerate(graph.output())) {
    // The graph's declared output shape may name dims the value's type has
    // resolved; keep the names only where the dimension is still dynamic.
    DictionaryAttr attrs = valueAttrs(output);
    auto type = cast<RankedTensorType>(resultTypes[i]);
    auto dims = attrs.getAs<ArrayAttr>(KilnDialect::kDimsAttrName);
    SmallVector<Attribute> kept;
    for (int64_t d = 0; d < type.getRank(); ++d)
      kept.push_back(type.isDynamicDim(d) && d < static_cast<int64_t>(dims.size())
                         ? dims[d]
                         : builder.getStringAttr(""));
    func.setResultAttrs(
        i, builder.getDictionaryAttr(
               {builder.getNamedAttr(KilnDialect::kNameAttrName,
                                     builder.getStringAttr(output.name())),
                builder.getNamedAttr(KilnDialect::kDimsAttrName,
                                     builder.getArrayAttr(kept))}));
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run(std::string &errorMessage) {
  auto fail = [&](const std::string &stage, const std::string &message) {
    errorMessage = sourceName_ + ": " + stage + ": " + message;
    return OwningOpRef<ModuleOp>();
  };
  if (!model_->has_graph())
    return fail("invalid model", "it has no graph");
  std::string error;
  OpsetVersions opsets = opsetVersions();
  if (failed(checkOpset(opsets, error)))
    return fail("unsupported opset", error);
  if (failed(validateTensors(error)))
    return fail("invalid model", error);
  int64_t opset = opsets.at("");
  if (options_.runChecker) {
    try {
      checkModel(opset);
    } catch (const std::exception &e) {
      return fail("ONNX checker", e.what());
    }
  }
  if (failed(checkSupportedOps(opsets, error)))
    return fail("unsupported operators", error);
  // ONNX's shape inference trusts what the checker checks: a node reading a
  // value nothing produced crashes it. So it runs only on models the
  // library's checker has passed, and without its data propagation, which
  // crashes on valid models too (Unsqueeze of a one-element 1-D constant;
  // both found by the importer's fuzzer). The values shape subgraphs
  // compute are kiln's to work out: each node's types are refined from its
  // operands as it is imported.
  if (options_.runChecker && opset <= kLibraryOpset) {
    try {
      onnx::shape_inference::InferShapes(
          *model_, onnx::OpSchemaRegistry::Instance(),
          onnx::ShapeInferenceOptions(/*check_type=*/false, /*strict_mode=*/0,
                                      /*data_prop=*/false));
    } catch (const std::exception &e) {
      return fail("ONNX shape inference", e.what());
    }
  }

  std::string diagnostics;
  ScopedDiagnosticHandler handler(&context_, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error) {
      if (!diagnostics.empty())
        diagnostics += "\n";
      diagnostics += formatDiagnostic(diag);
    }
    return success();
  });
  OwningOpRef<ModuleOp> module = ModuleOp::create(
      FileLineColLoc::get(&context_, sourceName_, 0, 0));
  if (failed(buildFunction(*module, opset)))
    return fail("import", diagnostics);
  if (failed(verify(*module)))
    return fail("verification of the imported IR", diagnostics);
  return module;
}

} // namespace

namespace {

std::string unparsableModelMessage(StringRef sourceName) {
  return sourceName.str() + ": not a valid ONNX model: the protobuf could not be "
                            "parsed (the file is truncated, corrupted or not ONNX)";
}

bool isTextModel(OnnxInputFormat format, StringRef sourceName) {
  return format == OnnxInputFormat::Text ||
         (format == OnnxInputFormat::Auto && sourceName.ends_with(".onnxtxt"));
}

/// Parses `contents` as an ONNX model, binary or text (`.onnxtxt`).
std::shared_ptr<onnx::ModelProto> parseModel(StringRef contents, StringRef sourceName,
                                             OnnxInputFormat format,
                                             std::string &errorMessage) {
  auto model = std::make_shared<onnx::ModelProto>();
  if (isTextModel(format, sourceName)) {
    // The parser needs a NUL-terminated string.
    std::string source = contents.str();
    auto status = onnx::OnnxParser::Parse(*model, source.c_str());
    if (!status.IsOK()) {
      errorMessage = sourceName.str() + ": cannot parse ONNX text: " +
                     status.ErrorMessage();
      return nullptr;
    }
  } else if (contents.size() > static_cast<size_t>(INT_MAX) ||
             !model->ParseFromArray(contents.data(), static_cast<int>(contents.size()))) {
    errorMessage = unparsableModelMessage(sourceName);
    return nullptr;
  }
  return model;
}

/// Parses the binary model at `path` as it is read, never mapping it whole:
/// the parsed model holds a copy of its weights, and the file's pages would
/// be a second.
std::shared_ptr<onnx::ModelProto> readBinaryModel(StringRef path,
                                                  std::string &errorMessage) {
  int fd = -1;
  std::error_code ec = llvm::sys::fs::is_directory(path)
                           ? std::make_error_code(std::errc::is_a_directory)
                           : llvm::sys::fs::openFileForRead(path, fd);
  if (ec) {
    errorMessage = path.str() + ": cannot read: " + ec.message();
    return nullptr;
  }
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  auto model = std::make_shared<onnx::ModelProto>();
  if (!model->ParseFromZeroCopyStream(&stream)) {
    errorMessage = unparsableModelMessage(path);
    return nullptr;
  }
  return model;
}

} // namespace

OwningOpRef<ModuleOp> importOnnxBuffer(MLIRContext &context, StringRef contents,
                                       StringRef sourceName, StringRef baseDir,
                                       const ImportOptions &options,
                                       std::string &errorMessage) {
  registerImporterDialects(context);
  auto model = parseModel(contents, sourceName, options.format, errorMessage);
  if (!model)
    return {};
  GraphImporter importer(context, std::move(model), sourceName, baseDir, options);
  return importer.run(errorMessage);
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, StringRef path,
                                     const ImportOptions &options,
                                     std::string &errorMessage) {
  registerImporterDialects(context);
  std::shared_ptr<onnx::ModelProto> model;
  if (path == "-" || isTextModel(options.format, path)) {
    auto buffer = path == "-" ? llvm::MemoryBuffer::getSTDIN()
                              : llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                                            /*RequiresNullTerminator=*/false);
    if (!buffer) {
      errorMessage = path.str() + ": cannot read: " + buffer.getError().message();
      return {};
    }
    model = parseModel((*buffer)->getBuffer(), path, options.format, errorMessage);
  } else {
    model = readBinaryModel(path, errorMessage);
  }
  if (!model)
    return {};
  llvm::SmallString<256> baseDir(path == "-" ? "." : path);
  if (path != "-")
    llvm::sys::path::remove_filename(baseDir);
  if (baseDir.empty())
    baseDir = ".";
  GraphImporter importer(context, std::move(model), path, baseDir, options);
  return importer.run(errorMessage);
}

} // namespace kiln
