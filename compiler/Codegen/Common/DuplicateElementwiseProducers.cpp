//===- DuplicateElementwiseProducers.cpp - One copy per consumer ---------===//
//
// linalg's elementwise fusion absorbs a producer only into its single
// consumer. A value that several loops read, like the input of a layer norm
// (read by the mean's reduction and by the centering) or the centered values
// (read by the variance's reduction and by the normalization), stays a
// buffer that is written once and read again. Where the producer is cheap
// and every consumer can absorb it, one copy per consumer lets the fusion
// compute it inside each of them instead.
//
//===----------------------------------------------------------------------===//
#include "compiler/Codegen/Common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace kiln {
#define GEN_PASS_DEF_DUPLICATEELEMENTWISEPRODUCERS
#include "compiler/Codegen/Common/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether computing `op`'s body again in each consumer costs less than the
/// buffer it saves: arithmetic short of division, index casts and reads of
/// single elements, nothing that calls out, loops or checks (a gather's
/// bounds check stays in one loop, where it reports once).
bool isCheapToRecompute(linalg::GenericOp op) {
  if (op->getNumResults() != 1)
    return false;
  return llvm::all_of(op.getBody()->getOperations(), [](Operation &inner) {
    if (isa<arith::DivFOp, arith::RemFOp, arith::DivSIOp, arith::DivUIOp,
            arith::RemSIOp, arith::RemUIOp, arith::CeilDivSIOp,
            arith::FloorDivSIOp>(inner))
      return false;
    return isa<arith::ArithDialect>(inner.getDialect()) ||
           isa<linalg::YieldOp, linalg::IndexOp, tensor::ExtractOp>(inner);
  });
}

/// Whether copying `op` would leave a buffer as large as its own where there
/// was none: a producer that fuses into `op` today, directly or through a
/// chain of producers that would be copied along, that cannot be copied
/// itself and that `op` reads element for element. Copying would trade
/// `op`'s buffer for that one (or for several) and gain nothing. A producer
/// that `op` reads broadcast (a norm's mean, one value per row) is smaller,
/// and leaving it a buffer is worth the copy.
bool wouldStrandAProducer(linalg::GenericOp op) {
  for (OpOperand *input : op.getDpsInputOperands()) {
    auto producer = input->get().getDefiningOp<linalg::GenericOp>();
    if (!producer || !producer->hasOneUse() ||
        !linalg::areElementwiseOpsFusable(input))
      continue; // a buffer already, or nothing to fuse
    if (isCheapToRecompute(producer)) {
      if (wouldStrandAProducer(producer))
        return true;
    } else if (op.getMatchingIndexingMap(input).isPermutation()) {
      return true;
    }
  }
  return false;
}

/// The distinct ops that use `producer`'s result, when there are several and
/// elementwise fusion can absorb it into every one of them.
std::optional<SmallVector<Operation *>>
fusableConsumers(linalg::GenericOp producer, int64_t maxConsumers) {
  SmallVector<Operation *> consumers;
  for (OpOperand &use : producer->getResult(0).getUses()) {
    if (!linalg::areElementwiseOpsFusable(&use))
      return std::nullopt;
    if (!llvm::is_contained(consumers, use.getOwner()))
      consumers.push_back(use.getOwner());
  }
  if (consumers.size() < 2 ||
      static_cast<int64_t>(consumers.size()) > maxConsumers)
    return std::nullopt;
  return consumers;
}

struct DuplicateElementwiseProducersPass
    : public impl::DuplicateElementwiseProducersBase<
          DuplicateElementwiseProducersPass> {
  using DuplicateElementwiseProducersBase::DuplicateElementwiseProducersBase;

  void runOnOperation() override {
    // Consumers before producers: copying a consumer adds uses to its
    // producers, which are then copied for those too, so a chain (the
    // centering behind the input of a norm) splits in one sweep.
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp op) { generics.push_back(op); });
    OpBuilder builder(&getContext());
    for (linalg::GenericOp producer : llvm::reverse(generics)) {
      if (!isCheapToRecompute(producer) || wouldStrandAProducer(producer))
        continue;
      std::optional<SmallVector<Operation *>> consumers =
          fusableConsumers(producer, maxConsumers);
      if (!consumers)
        continue;
      Value result = producer->getResult(0);
      builder.setInsertionPoint(producer);
      for (Operation *consumer : llvm::drop_begin(*consumers)) {
        Operation *copy = builder.clone(*producer);
        consumer->replaceUsesOfWith(result, copy->getResult(0));
      }
    }
  }
};

} // namespace
} // namespace kiln
