//===- ShapeUtils.cpp -----------------------------------------------------===//
#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MathExtras.h"

#include <cstring>

using namespace mlir;

namespace hetpar {

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    int64_t r;
    if (da == db)
      r = da;
    else if (da == 1)
      r = db;
    else if (db == 1)
      r = da;
    else if (isDynamic(da))
      r = db;
    else if (isDynamic(db))
      r = da;
    else
      return std::nullopt;
    out[i] = r;
  }
  return out;
}

bool isUnidirectionalBroadcastable(llvm::ArrayRef<int64_t> from,
                                   llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t f = from[i], t = to[i + off];
    if (f == 1 || f == t || isDynamic(f) || isDynamic(t))
      continue;
    return false;
  }
  return true;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

bool exceedsMaxTensorBytes(Type t) {
  auto st = llvm::dyn_cast<RankedTensorType>(t);
  if (!st)
    return false;
  Type elt = st.getElementType();
  int64_t bytes =
      elt.isIntOrFloat()
          ? std::max<int64_t>(1, (elt.getIntOrFloatBitWidth() + 7) / 8)
          : 8;
  for (int64_t d : st.getShape())
    if (llvm::MulOverflow(bytes, isDynamic(d) ? 1 : std::max<int64_t>(d, 1),
                          bytes) ||
        bytes > kMaxTensorBytes)
      return true;
  return false;
}

std::string oversizeReason(Type t) {
  ArrayRef<int64_t> shape = llvm::cast<ShapedType>(t).getShape();
  std::string why =
      llvm::is_contained(shape, 0)
          ? "is empty, but its other extents span more than 2^53 bytes (8 "
            "PiB; its strides do)"
      : llvm::any_of(shape, isDynamic)
          ? "holds more than 2^53 bytes (8 PiB) whatever its unknown extents"
          : "holds more than 2^53 bytes (8 PiB)";
  return why + ", the most HetPar plans for one tensor";
}

std::optional<int64_t> getNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (isDynamic(d) || d < 0)
      return std::nullopt;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += isDynamic(shape[i]) ? std::string("?") : std::to_string(shape[i]);
  }
  return s;
}

ElementsAttr getConstantElements(Value v) {
  if (!v)
    return {};
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return {};
  return llvm::dyn_cast<ElementsAttr>(attr);
}

static int64_t elementByteWidth(Type t) {
  unsigned bits = t.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

/// Calls `fn(raw)` with each element of a dense_resource attribute as
/// little-endian bits (bool is one byte); false when the blob is gone or
/// shorter than the shape.
static bool forEachResourceElement(ElementsAttr attr, Type elt,
                                   llvm::function_ref<void(uint64_t)> fn) {
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(attr);
  AsmResourceBlob *blob = res ? res.getRawHandle().getBlob() : nullptr;
  if (!blob)
    return false;
  ArrayRef<char> bytes = blob->getData();
  auto n = getNumElements(llvm::cast<ShapedType>(attr.getType()).getShape());
  int64_t w = elementByteWidth(elt);
  if (!n || static_cast<int64_t>(bytes.size()) < *n * w)
    return false;
  const char *p = bytes.data();
  for (int64_t i = 0; i < *n; ++i, p += w) {
    uint64_t raw = 0;
    std::memcpy(&raw, p, w);
    fn(raw);
  }
  return true;
}

std::optional<llvm::SmallVector<int64_t>> readIntElements(ElementsAttr attr) {
  if (!attr)
    return std::nullopt;
  auto intType = llvm::dyn_cast<IntegerType>(
      llvm::cast<ShapedType>(attr.getType()).getElementType());
  if (!intType)
    return std::nullopt;
  llvm::SmallVector<int64_t> out;
  bool isUnsigned = intType.isUnsigned() || intType.getWidth() == 1;
  if (auto dense = llvm::dyn_cast<DenseIntElementsAttr>(attr)) {
    out.reserve(dense.getNumElements());
    for (const APInt &v : dense.getValues<APInt>())
      out.push_back(isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                               : v.getSExtValue());
    return out;
  }
  unsigned bits = intType.getWidth() == 1 ? 8 : intType.getWidth();
  if (!forEachResourceElement(attr, intType, [&](uint64_t raw) {
        if (intType.getWidth() == 1)
          out.push_back(raw != 0);
        else
          out.push_back(isUnsigned || bits == 64
                            ? static_cast<int64_t>(raw)
                            : llvm::SignExtend64(raw, bits));
      }))
    return std::nullopt;
  return out;
}

std::optional<llvm::SmallVector<double>> readFloatElements(ElementsAttr attr) {
  if (!attr)
    return std::nullopt;
  Type elt = llvm::cast<ShapedType>(attr.getType()).getElementType();
  if (llvm::isa<IntegerType>(elt)) {
    auto ints = readIntElements(attr);
    if (!ints)
      return std::nullopt;
    return llvm::SmallVector<double>(ints->begin(), ints->end());
  }
  auto ft = llvm::dyn_cast<FloatType>(elt);
  if (!ft)
    return std::nullopt;
  llvm::SmallVector<double> out;
  auto toDouble = [](APFloat f) {
    bool lost;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
    return f.convertToDouble();
  };
  if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(attr)) {
    out.reserve(dense.getNumElements());
    for (const APFloat &v : dense.getValues<APFloat>())
      out.push_back(toDouble(v));
    return out;
  }
  unsigned bits = ft.getWidth();
  if (!forEachResourceElement(attr, ft, [&](uint64_t raw) {
        out.push_back(
            toDouble(APFloat(ft.getFloatSemantics(), APInt(bits, raw))));
      }))
    return std::nullopt;
  return out;
}

std::optional<llvm::SmallVector<int64_t>> getConstantIntValues(Value v) {
  return readIntElements(getConstantElements(v));
}

mlir::FailureOr<Type> refineType(Type a, Type b) {
  auto sa = llvm::dyn_cast<ShapedType>(a), sb = llvm::dyn_cast<ShapedType>(b);
  if (!sa || !sb) {
    if (a == b)
      return a;
    return failure();
  }
  if (sa.getElementType() != sb.getElementType())
    return failure();
  if (!sa.hasRank())
    return b;
  if (!sb.hasRank())
    return a;
  if (sa.getRank() != sb.getRank())
    return failure();
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(sa.getShape(), sb.getShape())) {
    if (!isDynamic(x) && !isDynamic(y) && x != y)
      return failure();
    shape.push_back(isDynamic(x) ? y : x);
  }
  return Type(RankedTensorType::get(shape, sa.getElementType()));
}

llvm::Expected<std::pair<std::string, SmallVector<int64_t>>>
parseInputShapeSpec(StringRef spec) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || name.size() == spec.size())
    return llvm::createStringError(
        "input shape '%s' is not of the form NAME=2x128", spec.str().c_str());
  SmallVector<int64_t> shape;
  if (!dims.empty()) {
    SmallVector<StringRef> parts;
    dims.split(parts, dims.contains(',') ? ',' : 'x');
    for (StringRef p : parts) {
      p = p.trim();
      int64_t d;
      if (p == "?")
        shape.push_back(ShapedType::kDynamic);
      else if (!p.getAsInteger(10, d) && d >= 0)
        shape.push_back(d);
      else
        return llvm::createStringError(
            "input shape '%s': '%s' is not a dimension (a non-negative integer "
            "or ?)",
            spec.str().c_str(), p.str().c_str());
    }
  }
  return std::make_pair(name.str(), shape);
}

bool hasNonFiniteElements(ElementsAttr attr) {
  auto elt = llvm::dyn_cast<FloatType>(
      llvm::cast<ShapedType>(attr.getType()).getElementType());
  if (!elt)
    return false;
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(attr)) {
    if (dense.isSplat())
      return !dense.getSplatValue<llvm::APFloat>().isFinite();
    return llvm::any_of(dense.getValues<llvm::APFloat>(),
                        [](const llvm::APFloat &f) { return !f.isFinite(); });
  }
  // IEEE and bfloat16 layouts: the exponent's bits all set.
  const llvm::fltSemantics &sem = elt.getFloatSemantics();
  unsigned bits = elt.getWidth(),
           mantissa = llvm::APFloat::semanticsPrecision(sem) - 1;
  uint64_t exponent = ((uint64_t(1) << (bits - 1 - mantissa)) - 1) << mantissa;
  bool found = false;
  forEachResourceElement(
      attr, elt, [&](uint64_t raw) { found |= (raw & exponent) == exponent; });
  return found;
}

/// The model's bytes of a constant (little-endian, bool one byte), or failure
/// when a dense_resource blob is missing or short.
FailureOr<std::vector<char>> getElementsBytes(ElementsAttr attr) {
  auto type = llvm::cast<ShapedType>(attr.getType());
  Type elt = type.getElementType();
  int64_t n = getNumElements(type.getShape()).value_or(0);
  unsigned bits = elt.getIntOrFloatBitWidth();
  int64_t w = bits == 1 ? 1 : bits / 8;
  std::vector<char> out(n * w);
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || static_cast<int64_t>(blob->getData().size()) < n * w)
      return failure();
    std::memcpy(out.data(), blob->getData().data(), n * w);
    return out;
  }
  auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
  if (!dense)
    return failure();
  int64_t i = 0;
  if (llvm::isa<FloatType>(elt)) {
    for (const llvm::APFloat &f : dense.getValues<llvm::APFloat>()) {
      uint64_t raw = f.bitcastToAPInt().getZExtValue();
      std::memcpy(out.data() + w * i++, &raw, w);
    }
  } else if (bits == 1) {
    for (bool b : dense.getValues<bool>())
      out[i++] = b ? 1 : 0;
  } else {
    for (const llvm::APInt &v : dense.getValues<llvm::APInt>()) {
      uint64_t raw = v.getZExtValue();
      std::memcpy(out.data() + w * i++, &raw, w);
    }
  }
  return out;
}

FailureOr<ElementsAttr> sliceElements(ElementsAttr attr, int dim, int64_t outer,
                                      int64_t start, int64_t size) {
  auto type = llvm::cast<RankedTensorType>(attr.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (dim < 0 || dim >= type.getRank() || outer <= 0 || shape[dim] % outer ||
      start < 0 || size < 0 || start + size > shape[dim] / outer)
    return failure();
  SmallVector<int64_t> newShape(shape);
  newShape[dim] = outer * size;
  auto newType = RankedTensorType::get(newShape, type.getElementType());
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(attr);
      dense && dense.isSplat())
    return ElementsAttr(dense.resizeSplat(newType));
  auto bytes = getElementsBytes(attr);
  if (failed(bytes))
    return failure();
  unsigned bits = type.getElementTypeBitWidth();
  int64_t w = bits == 1 ? 1 : bits / 8;
  // Rows of the dimensions before `dim`, each a run of `chunk` indices of
  // `dim` (outer chunks) times `inner` elements.
  int64_t rows = 1, inner = w;
  for (int d = 0; d < dim; ++d)
    rows *= shape[d];
  for (int64_t d = dim + 1; d < type.getRank(); ++d)
    inner *= shape[d];
  int64_t chunk = shape[dim] / outer;
  std::vector<char> out;
  out.reserve(rows * outer * size * inner);
  for (int64_t r = 0; r < rows * outer; ++r) {
    const char *from = bytes->data() + (r * chunk + start) * inner;
    out.insert(out.end(), from, from + size * inner);
  }
  if (bits == 1) {
    SmallVector<bool> values;
    for (char c : out)
      values.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(newType, values));
  }
  if (out.size() <= 4096)
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(newType, out));
  return ElementsAttr(DenseResourceElementsAttr::get(
      newType, "shard",
      HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<char>(out))));
}

} // namespace hetpar
