//===- YAMLReader.h - reading YAML/JSON files with located errors -*- C++
//-*-===//
//
// A thin layer over llvm::yaml's document tree for HetPar's input files
// (cluster descriptions, plans; JSON is read as YAML). Every error is recorded
// once as "FILE:LINE:COL: FIELD: message"; unknown fields are errors.
// llvm::yaml parses lazily, so a value must be read while its key is visited;
// locate() turns a node's position into text that outlives the document.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_SUPPORT_YAMLREADER_H
#define HETPAR_SUPPORT_YAMLREADER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

class YAMLReader {
public:
  YAMLReader(llvm::StringRef text, llvm::StringRef path);

  /// The first document's root; null (with error() set) on a syntax error or an
  /// empty file (`what` names the file's kind in that message).
  llvm::yaml::Node *root(llvm::StringRef what);

  /// The first error, or "" when there is none.
  const std::string &error() const;

  /// "FILE:LINE:COL" of `node`.
  std::string locate(llvm::yaml::Node *node);

  /// Records an error at `node` (the first one wins); returns false.
  bool fail(llvm::yaml::Node *node, const llvm::Twine &field,
            const llvm::Twine &message);

  std::optional<std::string> scalar(llvm::yaml::Node *node,
                                    const llvm::Twine &field);
  std::optional<double> number(llvm::yaml::Node *node,
                               const llvm::Twine &field);
  /// A number > 0.
  std::optional<double> positive(llvm::yaml::Node *node,
                                 const llvm::Twine &field);
  /// A number >= 0.
  std::optional<double> nonNegative(llvm::yaml::Node *node,
                                    const llvm::Twine &field);
  std::optional<int64_t> integer(llvm::yaml::Node *node,
                                 const llvm::Twine &field);
  std::optional<bool> boolean(llvm::yaml::Node *node, const llvm::Twine &field);
  /// A list of integers.
  std::optional<std::vector<int64_t>> integers(llvm::yaml::Node *node,
                                               const llvm::Twine &field);
  std::optional<std::vector<double>> numbers(llvm::yaml::Node *node,
                                             const llvm::Twine &field);

  /// Calls `fn(key, value)` for each field of a mapping; keys outside `allowed`
  /// are errors (a misspelt field would otherwise be ignored), as are repeats.
  bool forEachField(
      llvm::yaml::Node *node, const llvm::Twine &where,
      llvm::ArrayRef<llvm::StringRef> allowed,
      llvm::function_ref<bool(llvm::StringRef, llvm::yaml::Node *)> fn);
  /// Calls `fn(index, item)` for each item of a sequence.
  bool forEachItem(llvm::yaml::Node *node, const llvm::Twine &where,
                   llvm::function_ref<bool(unsigned, llvm::yaml::Node *)> fn);

private:
  llvm::SourceMgr sm;
  std::string path;
  std::string firstError;
  std::string syntaxError;
  std::unique_ptr<llvm::yaml::Stream> stream;
};

} // namespace hetpar

#endif // HETPAR_SUPPORT_YAMLREADER_H
