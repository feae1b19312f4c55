//===- Output.h - writing tool outputs safely --------------------*- C++
//-*-===//
#ifndef HETPAR_SUPPORT_OUTPUT_H
#define HETPAR_SUPPORT_OUTPUT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace hetpar {

/// Writes an output file so that it is either complete or absent: a regular
/// file is written to a temporary file next to `path`, checked for write errors
/// (a full disk), given the permissions of the file it replaces, and renamed
/// over `path` only then. A symbolic link is written through (its target is
/// replaced; a dangling link is an error). "-" writes to stdout; an existing
/// non-regular file (/dev/null, a FIFO) is written in place. Either way a write
/// error is returned, never ignored. Replacing a file this way gives it a new
/// inode: other hard links to the old file keep the old contents.
llvm::Error writeOutput(llvm::StringRef path,
                        llvm::function_ref<void(llvm::raw_ostream &)> body);

/// An error when writing `output` would replace one of `inputs` (the same file
/// through any name: a relative path, a symbolic or hard link).
llvm::Error checkNotAnInput(llvm::StringRef output,
                            llvm::ArrayRef<std::string> inputs);

} // namespace hetpar

#endif // HETPAR_SUPPORT_OUTPUT_H
