//===- YAMLReader.cpp
//-------------------------------------------------------===//
#include "hetpar/Support/YAMLReader.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;

namespace hetpar {

YAMLReader::YAMLReader(StringRef text, StringRef path) : path(path.str()) {
  sm.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(text, path), SMLoc());
  // The YAML parser reports syntax errors through the SourceMgr.
  sm.setDiagHandler(
      [](const SMDiagnostic &d, void *ctx) {
        auto *out = static_cast<std::string *>(ctx);
        if (out->empty())
          *out = (d.getFilename() + ":" + Twine(d.getLineNo()) + ":" +
                  Twine(d.getColumnNo() + 1) + ": " + d.getMessage())
                     .str();
      },
      &syntaxError);
  stream = std::make_unique<yaml::Stream>(
      sm.getMemoryBuffer(sm.getMainFileID())->getBuffer(), sm,
      /*ShowColors=*/false);
}

const std::string &YAMLReader::error() const {
  return syntaxError.empty() ? firstError : syntaxError;
}

yaml::Node *YAMLReader::root(StringRef what) {
  auto doc = stream->begin();
  yaml::Node *r = doc != stream->end() ? doc->getRoot() : nullptr;
  if (!r || isa<yaml::NullNode>(r)) {
    if (syntaxError.empty() && firstError.empty())
      firstError = path + ": the " + what.str() + " is empty";
    return nullptr;
  }
  return r;
}

std::string YAMLReader::locate(yaml::Node *node) {
  // A node the parser made after an error may point outside the text.
  SMLoc start = node ? node->getSourceRange().Start : SMLoc();
  if (!start.isValid() || !sm.FindBufferContainingLoc(start))
    return path;
  auto lc = sm.getLineAndColumn(start);
  return path + ":" + std::to_string(lc.first) + ":" +
         std::to_string(lc.second);
}

bool YAMLReader::fail(yaml::Node *node, const Twine &field,
                      const Twine &message) {
  if (firstError.empty())
    firstError = (locate(node) + ": " + field + ": " + message).str();
  return false;
}

std::optional<std::string> YAMLReader::scalar(yaml::Node *node,
                                              const Twine &field) {
  auto *s = dyn_cast_or_null<yaml::ScalarNode>(node);
  if (!s) {
    fail(node, field, "must be a scalar");
    return std::nullopt;
  }
  SmallString<32> storage;
  return s->getValue(storage).str();
}

/// The text of a scalar that must be a plain (unquoted) value: a quoted scalar
/// is a string even when its text is a number ("2"). `what` says what the value
/// must be ("a number"), for both messages.
static std::optional<std::string> plainScalar(YAMLReader &in, yaml::Node *node,
                                              const Twine &field,
                                              StringRef what) {
  auto text = in.scalar(node, field);
  if (!text)
    return std::nullopt;
  StringRef raw = cast<yaml::ScalarNode>(node)->getRawValue();
  if (raw.starts_with("\"") || raw.starts_with("'")) {
    in.fail(node, field,
            "must be " + what + ", got the string '" + *text + "'");
    return std::nullopt;
  }
  return text;
}

std::optional<double> YAMLReader::number(yaml::Node *node, const Twine &field) {
  auto text = plainScalar(*this, node, field, "a number");
  if (!text)
    return std::nullopt;
  double v;
  if (StringRef(*text).trim().getAsDouble(v) || !std::isfinite(v)) {
    fail(node, field, "must be a number, got '" + *text + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<double> YAMLReader::positive(yaml::Node *node,
                                           const Twine &field) {
  auto v = number(node, field);
  if (v && *v <= 0) {
    fail(node, field, "must be positive, got " + *scalar(node, field));
    return std::nullopt;
  }
  return v;
}

std::optional<double> YAMLReader::nonNegative(yaml::Node *node,
                                              const Twine &field) {
  auto v = number(node, field);
  if (v && *v < 0) {
    fail(node, field, "must not be negative");
    return std::nullopt;
  }
  return v;
}

std::optional<int64_t> YAMLReader::integer(yaml::Node *node,
                                           const Twine &field) {
  auto text = plainScalar(*this, node, field, "an integer");
  if (!text)
    return std::nullopt;
  int64_t v;
  if (StringRef(*text).trim().getAsInteger(10, v)) {
    fail(node, field, "must be an integer, got '" + *text + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> YAMLReader::boolean(yaml::Node *node, const Twine &field) {
  auto text = plainScalar(*this, node, field, "true or false");
  if (!text)
    return std::nullopt;
  if (*text == "true")
    return true;
  if (*text == "false")
    return false;
  fail(node, field, "must be true or false, got '" + *text + "'");
  return std::nullopt;
}

/// The items of a sequence, each read with `read`.
template <typename T, typename Read>
static std::optional<std::vector<T>> readList(YAMLReader &in, yaml::Node *node,
                                              const Twine &field, Read read) {
  std::vector<T> out;
  bool ok = in.forEachItem(node, field, [&](unsigned, yaml::Node *item) {
    std::optional<T> v = read(item);
    if (v)
      out.push_back(*v);
    return v.has_value();
  });
  if (!ok)
    return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> YAMLReader::integers(yaml::Node *node,
                                                         const Twine &field) {
  return readList<int64_t>(*this, node, field, [&](yaml::Node *item) {
    return integer(item, field);
  });
}

std::optional<std::vector<double>> YAMLReader::numbers(yaml::Node *node,
                                                       const Twine &field) {
  return readList<double>(*this, node, field, [&](yaml::Node *item) {
    return number(item, field);
  });
}

bool YAMLReader::forEachField(yaml::Node *node, const Twine &where,
                              ArrayRef<StringRef> allowed,
                              function_ref<bool(StringRef, yaml::Node *)> fn) {
  auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
  if (!map)
    return fail(node, where, "must be a mapping");
  StringSet<> seen;
  for (auto &kv : *map) {
    auto key = scalar(kv.getKey(), where + " key");
    if (!key)
      return false;
    if (!is_contained(allowed, *key)) {
      std::string list;
      for (StringRef a : allowed)
        list += (list.empty() ? "" : ", ") + a.str();
      return fail(kv.getKey(), where,
                  "unknown field '" + *key + "' (fields: " + list + ")");
    }
    if (!seen.insert(*key).second)
      return fail(kv.getKey(), where, "field '" + *key + "' is given twice");
    // No value node: the YAML parser failed inside it (its error wins).
    yaml::Node *value = kv.getValue();
    if (!value)
      return fail(kv.getKey(), where, "field '" + *key + "' has no value");
    if (!fn(*key, value))
      return false;
  }
  return syntaxError.empty();
}

bool YAMLReader::forEachItem(yaml::Node *node, const Twine &where,
                             function_ref<bool(unsigned, yaml::Node *)> fn) {
  auto *seq = dyn_cast_or_null<yaml::SequenceNode>(node);
  if (!seq)
    return fail(node, where, "must be a list");
  unsigned i = 0;
  for (yaml::Node &item : *seq)
    if (!fn(i++, &item))
      return false;
  return syntaxError.empty();
}

} // namespace hetpar
