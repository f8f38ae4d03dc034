//===- PrintSummary.cpp - Signature and op-count summary ------------------===//
#include "passes/Passes.h"

#include "dialects/Kiln/IR/KilnOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"

#include <map>

namespace kiln {
#define GEN_PASS_DEF_KILNPRINTSUMMARY
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// "[batch, sequence, 64]": each dimension's name, or its size when static.
std::string describeDims(RankedTensorType type, ArrayRef<std::string> names) {
  std::string text = "[";
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (i)
      text += ", ";
    if (!type.isDynamicDim(i))
      text += std::to_string(type.getDimSize(i));
    else if (i < static_cast<int64_t>(names.size()) && !names[i].empty())
      text += names[i];
    else
      text += "?";
  }
  return text + "]";
}

void printValue(llvm::raw_ostream &os, StringRef role, DictionaryAttr attrs,
                Type type, ArrayRef<std::string> dimNames, unsigned index) {
  std::string name = "#" + std::to_string(index);
  if (attrs)
    if (auto onnxName = attrs.getAs<StringAttr>(KilnDialect::kNameAttrName))
      name = onnxName.str();
  os << "  " << role << " " << name << ": " << type;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    os << " " << describeDims(tensor, dimNames);
  os << "\n";
}

struct PrintSummaryPass : impl::KilnPrintSummaryBase<PrintSummaryPass> {
  using KilnPrintSummaryBase::KilnPrintSummaryBase;

  void runOnOperation() override {
    std::string error;
    auto output = openOutputFile(outputFile, &error);
    if (!output) {
      getOperation().emitError() << "kiln-print-summary: " << error;
      return signalPassFailure();
    }
    llvm::raw_ostream &os = output->os();
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      os << "func @" << func.getSymName() << "\n";
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        printValue(os, "input ", func.getArgAttrDict(i), func.getArgumentTypes()[i],
                   getArgumentDimNames(func, i), i);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        printValue(os, "output", func.getResultAttrDict(i), func.getResultTypes()[i],
                   getResultDimNames(func, i), i);
      std::map<std::string, int64_t> counts;
      int64_t total = 0;
      func.walk([&](Operation *op) {
        if (op == func.getOperation())
          return;
        ++counts[op->getName().getStringRef().str()];
        ++total;
      });
      os << "  ops: " << total << "\n";
      for (const auto &[name, count] : counts)
        os << "    " << llvm::left_justify(name, 24) << " " << count << "\n";
    }
    output->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace
} // namespace kiln
