//===- PassReport.cpp - What each compiler pass did, as JSON --------------===//
#include "compiler/Codegen/Common/PassReport.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

namespace kiln {

class PassReportInstrumentation : public PassInstrumentation {
public:
  explicit PassReportInstrumentation(PassReport &report) : report_(report) {}

  void runBeforePass(Pass *pass, Operation *op) override {
    // Pass adaptors (which run nested pass managers) have no argument.
    if (pass->getArgument().empty())
      return;
    PassReport::OpCounts counts = PassReport::countOps(op);
    std::lock_guard<std::mutex> lock(report_.mutex_);
    pending_[{pass, op}] = std::move(counts);
  }

  void runAfterPass(Pass *pass, Operation *op) override {
    if (pass->getArgument().empty())
      return;
    PassReport::OpCounts counts = PassReport::countOps(op);
    std::lock_guard<std::mutex> lock(report_.mutex_);
    auto before = pending_.find({pass, op});
    report_.runs_.push_back({pass->getArgument().str(), describe(op),
                             std::move(before->second), std::move(counts)});
    pending_.erase(before);
  }

private:
  static std::string describe(Operation *op) {
    std::string name = op->getName().getStringRef().str();
    if (auto symbol = op->getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      name += " @" + symbol.str();
    return name;
  }

  PassReport &report_;
  std::map<std::pair<Pass *, Operation *>, PassReport::OpCounts> pending_;
};

std::unique_ptr<PassInstrumentation> PassReport::instrumentation() {
  return std::make_unique<PassReportInstrumentation>(*this);
}

PassReport::OpCounts PassReport::countOps(Operation *root) {
  OpCounts counts;
  root->walk([&](Operation *op) {
    if (op != root)
      ++counts[op->getName().getStringRef().str()];
  });
  return counts;
}

static int64_t total(const PassReport::OpCounts &counts) {
  int64_t sum = 0;
  for (const auto &[name, count] : counts)
    sum += count;
  return sum;
}

/// Whether a fusion pass that creates ops of kind `name` has fused something
/// into them: the reshapes, squeezes, unsqueezes and constants that a fusion
/// adds to give an operand the fused op's shape (batched attention's 3-D
/// operands as 4-D) are not fusions.
static bool isFusedOp(llvm::StringRef name) {
  return name.starts_with("kiln.") &&
         !llvm::is_contained({"kiln.reshape", "kiln.squeeze", "kiln.unsqueeze",
                              "kiln.constant"},
                             name);
}

llvm::json::Object PassReport::toJson() const {
  std::lock_guard<std::mutex> lock(mutex_);
  llvm::json::Array passes;
  std::map<std::string, int64_t> fusions;
  int64_t folded = 0;
  for (const PassRun &run : runs_) {
    llvm::json::Object created, removed;
    std::map<std::string, int64_t> delta;
    for (const auto &[name, count] : run.after)
      delta[name] += count;
    for (const auto &[name, count] : run.before)
      delta[name] -= count;
    bool isFusion = llvm::StringRef(run.pass).starts_with("kiln-fuse-");
    bool isFolding = run.pass == "kiln-fold-constants";
    for (const auto &[name, change] : delta) {
      if (change > 0) {
        created[name] = change;
        if (isFusion && isFusedOp(name))
          fusions[name] += change;
      } else if (change < 0) {
        removed[name] = -change;
        if (isFolding && name != "kiln.constant")
          folded -= change;
      }
    }
    passes.push_back(llvm::json::Object{{"pass", run.pass},
                                        {"on", run.target},
                                        {"ops_before", total(run.before)},
                                        {"ops_after", total(run.after)},
                                        {"created", std::move(created)},
                                        {"removed", std::move(removed)}});
  }
  llvm::json::Object fused;
  for (const auto &[name, count] : fusions)
    fused[name] = count;
  llvm::json::Object report{{"passes", std::move(passes)},
                            {"fusions", std::move(fused)},
                            {"folded_ops", folded}};
  if (memoryPlan_.kind() != llvm::json::Value::Null)
    report["memory_plan"] = memoryPlan_;
  if (quantization_.kind() != llvm::json::Value::Null)
    report["quantization"] = quantization_;
  if (calibration_.kind() != llvm::json::Value::Null)
    report["calibration"] = calibration_;
  return report;
}

/// The JSON form of the booleans, numbers, strings, arrays and dictionaries
/// that make up a memory plan or a quantization record.
static llvm::json::Value toJsonValue(Attribute attr) {
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return boolean.getValue();
  if (auto integer = dyn_cast<IntegerAttr>(attr))
    return integer.getInt();
  if (auto number = dyn_cast<FloatAttr>(attr))
    return number.getValueAsDouble();
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.str();
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute element : array)
      values.push_back(toJsonValue(element));
    return values;
  }
  llvm::json::Object object;
  for (NamedAttribute entry : cast<DictionaryAttr>(attr))
    object[entry.getName().str()] = toJsonValue(entry.getValue());
  return object;
}

void PassReport::setMemoryPlan(DictionaryAttr plan) {
  std::lock_guard<std::mutex> lock(mutex_);
  memoryPlan_ = toJsonValue(plan);
}

void PassReport::setCalibration(llvm::json::Value calibration) {
  std::lock_guard<std::mutex> lock(mutex_);
  calibration_ = std::move(calibration);
}

void PassReport::setQuantization(DictionaryAttr quantization) {
  std::lock_guard<std::mutex> lock(mutex_);
  quantization_ = toJsonValue(quantization);
}

bool PassReport::write(llvm::StringRef path, std::string &error) const {
  auto output = openOutputFile(path, &error);
  if (!output)
    return false;
  output->os() << llvm::formatv("{0:2}", llvm::json::Value(toJson())) << "\n";
  output->keep();
  return true;
}

} // namespace kiln
