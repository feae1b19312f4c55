//===- ShardingRule.h - how an op's work splits over devices ------*- C++
//-*-===//
//
// An op's sharding rule in the form Shardy's OpShardingRuleAttr uses: the op's
// iteration space is a set of factors, each of a size and a kind; every
// dimension of every operand and result is made of zero or more factors
// (outermost first). MatMul [b,m,k] x [b,k,n] -> [b,m,n] has factors b, m, n
// (parallel) and k (reduction). Splitting a parallel factor splits every
// dimension it appears in and leaves the result split; splitting a reduction
// factor leaves partial results that an all-reduce (or reduce-scatter) sums.
// A factor of kind Whole must not be split (the normalized axis of a Softmax, a
// convolution's spatial axes, a concatenation axis).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DIALECT_ONNX_SHARDINGRULE_H
#define HETPAR_DIALECT_ONNX_SHARDINGRULE_H

#include "hetpar/Dialect/Dist/DistOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hetpar {

enum class FactorKind {
  Parallel,  ///< splitting it splits the result; no communication
  Reduction, ///< splitting it leaves partial results that combine
             ///< elementwise (ShardingRule::reduction) to reduce
  Whole,     ///< must stay whole on every device
};

struct ShardingFactor {
  int64_t size;
  FactorKind kind;
};

/// The factors of each dimension of one value, outermost first; an empty list
/// for a dimension that no factor maps (a broadcast dimension of size 1, or an
/// operand such as Reshape's `shape` that is read whole).
using DimFactors = std::vector<llvm::SmallVector<int, 2>>;

/// Where splitting a factor splits a value: dimension `dim` in blocks of
/// `granule` elements (the product of the factor sizes inside the factor in
/// that dimension: splitting the heads of [b, s, 12 * 64] splits dimension 2
/// in blocks of 64), repeated in each of `outer` equal chunks of the dimension
/// (the product of the factor sizes outside it: Split's fused [b, s, 3 * 768]
/// input split by its 768 factor is split within each third).
struct FactorPlacement {
  int dim;
  int64_t granule;
  int64_t outer;
};

struct ShardingRule {
  std::vector<ShardingFactor> factors;
  std::vector<DimFactors> operands, results;
  /// How the partial results left by splitting a reduction factor combine
  /// (the all-reduce after the op): sum for contractions, ReduceSum and
  /// friends, max for ReduceMax and GlobalMaxPool, min, prod. A factor whose
  /// partial results do not combine elementwise (ReduceMean's, whose local
  /// means divide by the local count) is Whole, not Reduction. The one
  /// answer of the search, the simulator and the partition.
  dist::ReductionKind reduction = dist::ReductionKind::Sum;

  int addFactor(int64_t size, FactorKind kind) {
    factors.push_back({size, kind});
    return static_cast<int>(factors.size()) - 1;
  }

  /// Where factor `f` splits a value with dimensions `dims`: std::nullopt when
  /// the value does not contain `f`.
  static std::optional<FactorPlacement>
  placement(const DimFactors &dims, int f,
            llvm::ArrayRef<ShardingFactor> factors);

  /// Printed as Shardy prints rules: "([i, j], [j, k]) -> ([i, k])
  /// {i=4, j=3 reduction, k=5}" ("reduction(max)" where partial results
  /// combine by another kind than a sum); compound dimensions as "(i j)",
  /// dimensions with no factor as "_", factors named i, j, k, ... in order.
  std::string str() const;
};

/// The rule of an elementwise op whose operands broadcast to `resultShape`
/// (numpy rules): one parallel factor per result dimension of size > 1.
ShardingRule
makeElementwiseRule(llvm::ArrayRef<int64_t> resultShape,
                    llvm::ArrayRef<llvm::ArrayRef<int64_t>> operandShapes,
                    unsigned numResults = 1);

/// The rule of a reshape from `from` to `to` (same element count), in common
/// sub-factors: walking both shapes outermost first, the greatest common
/// divisor of what is left of the current dimension on each side is a
/// parallel factor of both ((2, 128) -> (8, 32) is i=2, j=4, k=32 with
/// [i, (j k)] -> [(i j), k]), so a batch or head count merged into another
/// dimension can still be split. Where the two sides are coprime
/// ((2, 3) -> (3, 2)), the dimensions up to where the products meet again are
/// one Whole factor. Dimensions of size 1 have no factor. `numOperands`
/// counts the shape operand, whose factors are empty (read whole).
ShardingRule makeReshapeRule(llvm::ArrayRef<int64_t> from,
                             llvm::ArrayRef<int64_t> to, unsigned numOperands);

} // namespace hetpar

#endif // HETPAR_DIALECT_ONNX_SHARDINGRULE_H
