//===- MapLoopsToGpu.cpp - The kiln-map-loops-to-gpu pass -----------------===//
#include "compiler/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

#include <numeric>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_MAPLOOPSTOGPU
#include "compiler/Codegen/CUDA/Passes.h.inc"

namespace {

gpu::ParallelLoopDimMappingAttr processor(MLIRContext *ctx, gpu::Processor which) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, which, identity, identity);
}

/// Moves `op` into a new parallel loop of one iteration: one thread.
void inOneIterationLoop(Operation *op, IRRewriter &rewriter) {
  Location loc = op->getLoc();
  rewriter.setInsertionPoint(op);
  Value zero = rewriter.create<arith::ConstantIndexOp>(loc, 0);
  Value one = rewriter.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = rewriter.create<scf::ParallelOp>(loc, ValueRange{zero}, ValueRange{one},
                                               ValueRange{one});
  rewriter.moveOpBefore(op, loop.getBody()->getTerminator());
}

/// Puts each sequential loop or branch of `func`'s body that reads or
/// writes a buffer (a scatter's, cumsum's or top-k's loop nest) in one
/// thread: on the host it would touch device memory. One that yields a
/// value to the host stays, for kiln-verify-device-code to report.
void runSequentialCodeInAThread(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<Operation *> sequential;
  for (Operation &op : func.getBody().getOps()) {
    if (!isa<scf::ForOp, scf::WhileOp, scf::IfOp>(op) || op.getNumResults() != 0)
      continue;
    bool touchesBuffers = op.walk([](Operation *inner) {
                              return isa<memref::LoadOp, memref::StoreOp>(inner)
                                         ? WalkResult::interrupt()
                                         : WalkResult::advance();
                            }).wasInterrupted();
    if (touchesBuffers)
      sequential.push_back(&op);
  }
  for (Operation *op : sequential)
    inOneIterationLoop(op, rewriter);
}

/// Lowers each linalg op and memref.copy of `func` to a nest of
/// scf.parallel (its parallel dims) around scf.for (its reductions). An op
/// with no parallel loop (on rank-0 buffers, or a reduction of everything
/// to one value) first gets a parallel loop of one iteration, for its body
/// to run on the GPU too.
LogicalResult lowerToParallelLoops(func::FuncOp func, IRRewriter &rewriter) {
  // memref.copy (what the deallocation pipeline's clones become) would be a
  // memcpy on the host; as linalg.copy it is a kernel like any other op.
  SmallVector<memref::CopyOp> copies;
  func.walk([&](memref::CopyOp copy) { copies.push_back(copy); });
  for (memref::CopyOp copy : copies) {
    rewriter.setInsertionPoint(copy);
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(copy, copy.getSource(), copy.getTarget());
  }
  SmallVector<linalg::LinalgOp> ops;
  func.walk([&](linalg::LinalgOp op) { ops.push_back(op); });
  for (linalg::LinalgOp op : ops) {
    // Parallel dims first, so that they all map onto threads and each
    // thread reduces on its own (a reduction between two parallel dims
    // would otherwise leave the inner ones to run one after another).
    if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
      SmallVector<unsigned> parallelFirst;
      for (auto [dim, iterator] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (iterator == utils::IteratorType::parallel)
          parallelFirst.push_back(dim);
      for (auto [dim, iterator] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (iterator != utils::IteratorType::parallel)
          parallelFirst.push_back(dim);
      if (!llvm::equal(parallelFirst, llvm::seq<unsigned>(0, parallelFirst.size()))) {
        FailureOr<linalg::GenericOp> interchanged =
            linalg::interchangeGenericOp(rewriter, generic, parallelFirst);
        if (failed(interchanged))
          return generic->emitOpError("could not put its parallel dims first");
        op = *interchanged;
      }
    }
    if (!op.hasPureBufferSemantics())
      return op->emitOpError("is not on buffers: bufferize before kiln-map-loops-to-gpu");
    if (op.getNumParallelLoops() == 0)
      inOneIterationLoop(op, rewriter);
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
      return op->emitOpError("could not be lowered to loops");
    rewriter.eraseOp(op);
  }
  return success();
}

/// Replaces `loop` by a nest of scf.for over the same iterations.
LogicalResult runInOrder(scf::ParallelOp loop, IRRewriter &rewriter) {
  if (!loop.getInitVals().empty())
    return loop.emitOpError("reduces across its iterations, which kiln does not "
                            "run inside a GPU thread");
  rewriter.setInsertionPoint(loop);
  scf::LoopNest fors = scf::buildLoopNest(rewriter, loop.getLoc(), loop.getLowerBound(),
                                          loop.getUpperBound(), loop.getStep());
  SmallVector<Value> inductionVars;
  for (scf::ForOp loopOfDim : fors.loops)
    inductionVars.push_back(loopOfDim.getInductionVar());
  rewriter.eraseOp(loop.getBody()->getTerminator());
  rewriter.inlineBlockBefore(loop.getBody(), fors.loops.back().getBody()->getTerminator(),
                             inductionVars);
  rewriter.eraseOp(loop);
  return success();
}

/// Gives `loop` its own memref.get_global of each global it reads: the
/// kernel it becomes then reads the global's copy in its GPU module
/// (gpu-kernel-outlining copies the symbols a kernel uses), not the host's.
void readGlobalsInside(scf::ParallelOp loop, IRRewriter &rewriter) {
  llvm::DenseMap<Value, Value> inside;
  loop.getBody()->walk([&](Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      auto global = operand.get().getDefiningOp<memref::GetGlobalOp>();
      if (!global || loop->isAncestor(global))
        continue;
      Value &copy = inside[global];
      if (!copy) {
        rewriter.setInsertionPointToStart(loop.getBody());
        copy = rewriter.clone(*global)->getResult(0);
      }
      operand.set(copy);
    }
  });
  for (auto [global, copy] : inside)
    if (global.use_empty())
      rewriter.eraseOp(global.getDefiningOp());
}

struct MapLoopsToGpuPass : public impl::MapLoopsToGpuBase<MapLoopsToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    if (blockSize < 1 || blockSize > 1024) {
      func.emitError("kiln-map-loops-to-gpu: block-size must be in [1, 1024], not ")
          << blockSize;
      return signalPassFailure();
    }
    IRRewriter rewriter(ctx);
    auto outermostLoops = [&] {
      SmallVector<scf::ParallelOp> loops;
      func.walk([&](scf::ParallelOp loop) {
        if (!loop->getParentOfType<scf::ParallelOp>())
          loops.push_back(loop);
      });
      return loops;
    };

    if (failed(lowerToParallelLoops(func, rewriter)))
      return signalPassFailure();
    runSequentialCodeInAThread(func, rewriter);

    for (scf::ParallelOp loop : outermostLoops()) {
      if (!loop.getInitVals().empty()) {
        loop.emitOpError("reduces across its iterations, which kiln does not "
                         "map onto GPU threads");
        return signalPassFailure();
      }
      readGlobalsInside(loop, rewriter);
      if (loop.getNumLoops() > 1) {
        std::vector<unsigned> dims(loop.getNumLoops());
        std::iota(dims.begin(), dims.end(), 0);
        rewriter.setInsertionPoint(loop);
        collapseParallelLoops(rewriter, loop, {dims});
      }
    }
    for (scf::ParallelOp loop : outermostLoops()) {
      auto [blocks, threads] =
          scf::tileParallelLoop(loop, {blockSize}, /*noMinMaxBounds=*/true);
      // A parallel loop nested in the thread's body (a named op's parallel
      // dims after a reduction) runs in that thread, as a nest of fors.
      SmallVector<scf::ParallelOp> nested;
      threads.getBody()->walk([&](scf::ParallelOp loop) { nested.push_back(loop); });
      for (scf::ParallelOp loop : nested)
        if (failed(runInOrder(loop, rewriter)))
          return signalPassFailure();
      if (failed(gpu::setMappingAttr(blocks, {processor(ctx, gpu::Processor::BlockX)})) ||
          failed(gpu::setMappingAttr(threads, {processor(ctx, gpu::Processor::ThreadX)})))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace kiln
