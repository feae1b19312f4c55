//===- Recompute.h - layer-by-layer activation recomputation --*- C++ -*-===//
//
// Shared by hetpar-train-recompute (a one-device step: forward, then
// backward) and hetpar-dist-pipeline-schedule (a pipeline stage's step of
// one microbatch, before it is laid out per microbatch): the rewrite that
// makes the backward ops of each layer read clones of the layer's forward
// values, rebuilt from the layer's inputs just before the layer's first
// backward reader (docs/training.md, "Activation recomputation").
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_LIB_TRANSFORMS_RECOMPUTE_H
#define HETPAR_LIB_TRANSFORMS_RECOMPUTE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <functional>

namespace hetpar::train {

/// The forward pass of a step, as the rewrite sees it.
struct RecomputeScope {
  /// The forward ops (top-level ops of the block), leaves included.
  llvm::DenseSet<mlir::Operation *> forward;
  /// Layer of each forward op that is not a leaf (assignForwardLayers).
  llvm::DenseMap<mlir::Operation *, int> layer;
  /// The last layer, which is not recomputed when `keepLastLayer` (its
  /// backward follows its forward at once: a clone would save nothing).
  int lastLayer = -1;
  bool keepLastLayer = true;
  /// Globals the forward stores (BatchNormalization's running statistics):
  /// an op reading one is not cloned, since its clone would read the new
  /// value (code generation keeps one copy of a global); a training-mode
  /// BatchNormalization is, with constants for its running statistics,
  /// which its Y does not read.
  llvm::DenseSet<mlir::StringAttr> stored;
  /// Whether a top-level op of the block that is not forward belongs to the
  /// backward pass (may read a recomputed value).
  std::function<bool(mlir::Operation *)> isBackward;
};

/// Whether `op` is a leaf that takes no part in layers and is never cloned:
/// a constant, an absent optional operand, a read of a global.
bool isRecomputeLeaf(mlir::Operation *op);

/// Assigns the forward ops of `body` that are not leaves to layers by their
/// ONNX node names (assignLayers, the search's layers), in program order.
void assignForwardLayers(RecomputeScope &scope, mlir::Block &body);

/// The rewrite: per layer (the last one only without `keepLastLayer`), the
/// forward values that backward ops read and that are neither layer inputs
/// nor kept (ops with effects, reads of stored state) are cloned from the
/// layer's inputs just before their first backward reader, and every
/// backward reader reads the clones. Returns the clones.
llvm::SmallVector<mlir::Operation *>
recomputeLayers(const RecomputeScope &scope, mlir::Block &body);

} // namespace hetpar::train

#endif // HETPAR_LIB_TRANSFORMS_RECOMPUTE_H
