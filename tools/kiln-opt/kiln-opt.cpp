//===- kiln-opt.cpp - mlir-opt with the kiln dialects and passes ----------===//
//
// Every upstream dialect, extension and pass is registered as well, so that
// each stage of the code generation pipeline can be run and tested alone.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/Registration.h"
#include "compiler/Conversion/Passes.h"
#include "passes/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  kiln::registerKilnPasses();
  kiln::registerKilnConversionPasses();
  kiln::registerKilnCodegenPasses();
  kiln::registerKilnPipelines();
  kiln::registerKilnGraphPipeline();
  mlir::DialectRegistry registry;
  kiln::registerCodegenDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Kiln optimizer driver\n", registry));
}
