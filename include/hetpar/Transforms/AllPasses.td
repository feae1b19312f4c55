//===- AllPasses.td - every HetPar pass, for docs/passes.md -----*- tablegen -*-===//
//
// The mechanism passes (Passes.td, HetParTransforms) and the policy passes
// (hetpar/Search/Passes.td, HetParSearch) in one pass reference.
//
//===----------------------------------------------------------------------===//

include "hetpar/Transforms/Passes.td"
include "hetpar/Search/Passes.td"
