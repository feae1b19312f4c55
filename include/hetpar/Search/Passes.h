//===- Passes.h - HetPar's policy passes --------------------------*- C++
//-*-===//
//
// hetpar-search-plan (Passes.td): the search writes its plan as annotations;
// the passes of hetpar/Transforms/Passes.h apply them.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SEARCH_PASSES_H
#define HETPAR_SEARCH_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace hetpar {

#define GEN_PASS_DECL
#include "hetpar/Search/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "hetpar/Search/Passes.h.inc"

} // namespace hetpar

#endif // HETPAR_SEARCH_PASSES_H
