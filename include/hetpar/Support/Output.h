//===- Output.h - writing tool outputs safely --------------------*- C++ -*-===//
#ifndef HETPAR_SUPPORT_OUTPUT_H
#define HETPAR_SUPPORT_OUTPUT_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace hetpar {

/// Writes an output file so that it is either complete or absent: a regular file
/// is written to a temporary file next to `path`, checked for write errors (a
/// full disk), and renamed over `path` only then. "-" writes to stdout; an
/// existing non-regular file (/dev/null, a FIFO) is written in place. Either way
/// a write error is returned, never ignored.
llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<void(llvm::raw_ostream &)> body);

} // namespace hetpar

#endif // HETPAR_SUPPORT_OUTPUT_H
