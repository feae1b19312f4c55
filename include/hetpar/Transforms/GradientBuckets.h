//===- GradientBuckets.h - gradient bucket sizes ----------------*- C++ -*-===//
//
// The one check of a gradient bucket size in MiB, for
// hetpar-dist-reduce-gradients' `bucket-mib` and hetpar-compile's
// --bucket-mib (checked there whether or not a step uses it).
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TRANSFORMS_GRADIENTBUCKETS_H
#define HETPAR_TRANSFORMS_GRADIENTBUCKETS_H

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <string>

namespace hetpar::train {

/// Why `mib` is not a bucket size ("bucket-mib must be a positive number of
/// MiB, got X"), or an empty string: it must be positive and finite.
inline std::string bucketMiBError(double mib) {
  if (mib > 0 && !std::isinf(mib))
    return "";
  return "bucket-mib must be a positive number of MiB, got " +
         llvm::formatv("{0}", llvm::format("%g", mib)).str();
}

} // namespace hetpar::train

#endif // HETPAR_TRANSFORMS_GRADIENTBUCKETS_H
