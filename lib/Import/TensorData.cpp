//===- TensorData.cpp - ONNX tensor data to ElementsAttr
//-------------------===//
#include "TensorData.h"

#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <memory>

using namespace mlir;

namespace hetpar::import {

Type getElementType(MLIRContext *ctx, int32_t t) {
  using TP = ::onnx::TensorProto;
  auto signless = [&](unsigned w) { return IntegerType::get(ctx, w); };
  auto unsignedTy = [&](unsigned w) {
    return IntegerType::get(ctx, w, IntegerType::Unsigned);
  };
  switch (t) {
  case TP::FLOAT:
    return Float32Type::get(ctx);
  case TP::DOUBLE:
    return Float64Type::get(ctx);
  case TP::FLOAT16:
    return Float16Type::get(ctx);
  case TP::BFLOAT16:
    return BFloat16Type::get(ctx);
  case TP::BOOL:
    return signless(1);
  case TP::INT8:
    return signless(8);
  case TP::INT16:
    return signless(16);
  case TP::INT32:
    return signless(32);
  case TP::INT64:
    return signless(64);
  case TP::UINT8:
    return unsignedTy(8);
  case TP::UINT16:
    return unsignedTy(16);
  case TP::UINT32:
    return unsignedTy(32);
  case TP::UINT64:
    return unsignedTy(64);
  default:
    return {};
  }
}

int32_t getONNXElementType(Type type) {
  using TP = ::onnx::TensorProto;
  if (type.isF32())
    return TP::FLOAT;
  if (type.isF64())
    return TP::DOUBLE;
  if (type.isF16())
    return TP::FLOAT16;
  if (type.isBF16())
    return TP::BFLOAT16;
  auto it = llvm::dyn_cast<IntegerType>(type);
  if (!it)
    return TP::UNDEFINED;
  bool u = it.isUnsigned();
  switch (it.getWidth()) {
  case 1:
    return TP::BOOL;
  case 8:
    return u ? TP::UINT8 : TP::INT8;
  case 16:
    return u ? TP::UINT16 : TP::INT16;
  case 32:
    return u ? TP::UINT32 : TP::INT32;
  case 64:
    return u ? TP::UINT64 : TP::INT64;
  default:
    return TP::UNDEFINED;
  }
}

std::string getONNXTypeName(int32_t t) {
  if (::onnx::TensorProto::DataType_IsValid(t))
    return ::onnx::TensorProto::DataType_Name(
        static_cast<::onnx::TensorProto::DataType>(t));
  return "type code " + std::to_string(t);
}

int64_t getElementByteSize(Type type) {
  unsigned bits = type.getIntOrFloatBitWidth();
  return bits == 1 ? 1 : bits / 8;
}

namespace {

/// Creates a dense_resource attribute that owns `data` through `deleter`.
ElementsAttr makeResource(ShapedType type, StringRef name, ArrayRef<char> data,
                          AsmResourceBlob::DeleterFn deleter) {
  size_t align = 1;
  auto addr = reinterpret_cast<uintptr_t>(data.data());
  while (align < 16 && addr % (align * 2) == 0)
    align *= 2;
  AsmResourceBlob blob(data, align, std::move(deleter),
                       /*dataIsMutable=*/false);
  return DenseResourceElementsAttr::get(type, name.empty() ? "tensor" : name,
                                        std::move(blob));
}

/// A dense attribute from little-endian raw bytes (bool: one byte per element).
ElementsAttr makeDense(ShapedType type, ArrayRef<char> bytes) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> values;
    for (char c : bytes)
      values.push_back(c != 0);
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

/// Builds the attribute from bytes we must copy (typed fields, small data).
ElementsAttr fromCopiedBytes(ShapedType type, StringRef name,
                             std::vector<char> bytes, int64_t inlineLimit) {
  if (static_cast<int64_t>(bytes.size()) <= inlineLimit)
    return makeDense(type, bytes);
  auto *owned = new std::vector<char>(std::move(bytes));
  return makeResource(type, name, *owned,
                      [owned](void *, size_t, size_t) { delete owned; });
}

/// Appends `v` as `width` little-endian bytes.
void appendLE(std::vector<char> &out, uint64_t v, int64_t width) {
  for (int64_t i = 0; i < width; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// Checks that `rel` (an external data location) stays inside `dir`, following
/// links; returns the resolved absolute path.
FailureOr<std::string> resolveExternalPath(StringRef dir, StringRef rel,
                                           Location loc, StringRef what) {
  if (rel.empty())
    return emitError(loc) << what << ": external data has no 'location'";
  if (llvm::sys::path::is_absolute(rel) || rel.starts_with("/") ||
      rel.starts_with("\\"))
    return emitError(loc)
           << what << ": external data location '" << rel
           << "' is an absolute path; only paths inside the model's "
              "folder are allowed";
  for (auto it = llvm::sys::path::begin(rel), e = llvm::sys::path::end(rel);
       it != e; ++it)
    if (*it == "..")
      return emitError(loc)
             << what << ": external data location '" << rel
             << "' contains '..'; only paths inside the model's folder "
                "are allowed";
  SmallString<256> joined(dir);
  llvm::sys::path::append(joined, rel);
  if (!llvm::sys::fs::exists(joined))
    return emitError(loc) << what << ": external data file '" << joined
                          << "' does not exist";
  if (!llvm::sys::fs::is_regular_file(joined))
    return emitError(loc) << what << ": external data location '" << rel
                          << "' is not a regular file";
  SmallString<256> realFile, realDir;
  if (llvm::sys::fs::real_path(joined, realFile) ||
      llvm::sys::fs::real_path(dir, realDir))
    return emitError(loc) << what << ": cannot resolve external data path '"
                          << joined << "'";
  StringRef prefix = realDir;
  if (!StringRef(realFile).starts_with(prefix) ||
      (realFile.size() > prefix.size() &&
       !llvm::sys::path::is_separator(realFile[prefix.size()])))
    return emitError(loc) << what << ": external data location '" << rel
                          << "' resolves to '" << realFile
                          << "', outside the model's folder '" << realDir
                          << "'";
  return std::string(realFile);
}

FailureOr<int64_t> parseNonNegative(StringRef text, Location loc,
                                    StringRef what, StringRef key) {
  int64_t v;
  if (text.getAsInteger(10, v) || v < 0)
    return emitError(loc) << what << ": external data '" << key << "' is '"
                          << text << "', not a non-negative integer";
  return v;
}

/// The number of elements in the typed data field that holds `t`'s data
/// type (float_data, double_data, int64_data, uint64_data for UINT32 and
/// UINT64, int32_data for INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16
/// and BFLOAT16, as onnx.proto assigns them).
int64_t typedElementCount(const ::onnx::TensorProto &t) {
  using TP = ::onnx::TensorProto;
  switch (t.data_type()) {
  case TP::FLOAT:
    return t.float_data_size();
  case TP::DOUBLE:
    return t.double_data_size();
  case TP::INT64:
    return t.int64_data_size();
  case TP::UINT32:
  case TP::UINT64:
    return t.uint64_data_size();
  default:
    return t.int32_data_size();
  }
}

} // namespace

FailureOr<ElementsAttr> importTensor(::onnx::TensorProto &t,
                                     const TensorSource &source, Location loc,
                                     StringRef what) {
  MLIRContext *ctx = source.context;
  Type elt = getElementType(ctx, t.data_type());
  if (!elt)
    return emitError(loc) << what << " has element type "
                          << getONNXTypeName(t.data_type())
                          << ", which HetPar does not support";
  SmallVector<int64_t> shape;
  for (int64_t d : t.dims()) {
    if (d < 0)
      return emitError(loc) << what << " has a negative dimension " << d;
    shape.push_back(d);
  }
  auto numel = getNumElements(shape);
  int64_t width = getElementByteSize(elt);
  if (!numel || *numel > std::numeric_limits<int64_t>::max() / width)
    return emitError(loc) << what << " of shape " << formatShape(shape)
                          << " has more elements than fit in 64 bits";
  int64_t bytes = *numel * width;
  auto type = RankedTensorType::get(shape, elt);
  std::string name = t.name();

  auto sizeError = [&](StringRef field, int64_t got, StringRef unit) {
    return emitError(loc) << what << " of type " << type << " needs " << bytes
                          << " bytes (" << *numel << " elements) but its "
                          << field << " holds " << got << " " << unit;
  };

  // External data: memory-map the slice of the file; nothing is copied.
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    std::string location, offsetText = "0", lengthText;
    bool hasLength = false;
    for (const auto &entry : t.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offsetText = entry.value();
      else if (entry.key() == "length") {
        lengthText = entry.value();
        hasLength = true;
      }
    }
    auto offset = parseNonNegative(offsetText, loc, what, "offset");
    if (failed(offset))
      return failure();
    int64_t length = bytes;
    if (hasLength) {
      auto l = parseNonNegative(lengthText, loc, what, "length");
      if (failed(l))
        return failure();
      if (*l != bytes)
        return sizeError("external data 'length'", *l, "bytes");
      length = *l;
    }
    if (!source.loadExternalData) {
      // Planning only: the file is never opened (it may be absent); a resource
      // without data carries the type, which is all the planner needs.
      if (location.empty())
        return emitError(loc) << what << ": external data has no 'location'";
      auto &manager = DenseResourceElementsHandle::getManagerInterface(ctx);
      auto handle = manager.insert(name.empty() ? "tensor" : name);
      return ElementsAttr(DenseResourceElementsAttr::get(type, handle));
    }
    auto path = resolveExternalPath(source.modelDir, location, loc, what);
    if (failed(path))
      return failure();
    if (source.externalFilesRead)
      source.externalFilesRead->push_back(*path);
    uint64_t fileSize = 0;
    if (llvm::sys::fs::file_size(*path, fileSize))
      return emitError(loc)
             << what << ": cannot read the size of '" << *path << "'";
    if (static_cast<uint64_t>(*offset) + length > fileSize)
      return emitError(loc)
             << what << ": external data needs bytes [" << *offset << ", "
             << *offset + length << ") of '" << location
             << "', but the file has only " << fileSize << " bytes";
    if (length == 0)
      return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, {}));
    auto buffer = llvm::MemoryBuffer::getFileSlice(*path, length, *offset,
                                                   /*IsVolatile=*/false);
    if (!buffer)
      return emitError(loc) << what << ": cannot read '" << *path
                            << "': " << buffer.getError().message();
    std::shared_ptr<llvm::MemoryBuffer> owned = std::move(*buffer);
    ArrayRef<char> data(owned->getBufferStart(), owned->getBufferSize());
    if (length <= source.inlineLimitBytes)
      return makeDense(type, data);
    if (reinterpret_cast<uintptr_t>(data.data()) % width != 0) {
      // Unaligned slice: copy so that element reads are aligned.
      return fromCopiedBytes(type, name,
                             std::vector<char>(data.begin(), data.end()),
                             source.inlineLimitBytes);
    }
    return makeResource(
        type, name, data,
        [owned](void *, size_t, size_t) mutable { owned.reset(); });
  }

  // Raw little-endian bytes inside the model: take the string out of the proto.
  if (t.has_raw_data()) {
    int64_t got = t.raw_data().size();
    if (got != bytes)
      return sizeError("raw_data", got, "bytes");
    if (bytes <= source.inlineLimitBytes)
      return makeDense(
          type, ArrayRef<char>(t.raw_data().data(), t.raw_data().size()));
    std::string *raw = t.release_raw_data();
    return makeResource(type, name, ArrayRef<char>(raw->data(), raw->size()),
                        [raw](void *, size_t, size_t) { delete raw; });
  }

  // Typed fields (small tensors, Constant nodes): convert to raw bytes, once
  // their count matches the dims (which may claim any size: the bytes are
  // reserved only then).
  using TP = ::onnx::TensorProto;
  int64_t got = typedElementCount(t);
  if (got != *numel)
    return emitError(loc) << what << " of type " << type << " needs " << *numel
                          << " elements but its data holds " << got;
  std::vector<char> out;
  out.reserve(bytes);
  switch (t.data_type()) {
  case TP::FLOAT:
    for (float v : t.float_data()) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      appendLE(out, u, 4);
    }
    break;
  case TP::DOUBLE:
    for (double v : t.double_data()) {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      appendLE(out, u, 8);
    }
    break;
  case TP::INT64:
    for (int64_t v : t.int64_data())
      appendLE(out, static_cast<uint64_t>(v), 8);
    break;
  case TP::UINT32:
  case TP::UINT64:
    for (uint64_t v : t.uint64_data())
      appendLE(out, v, width);
    break;
  default:
    for (int32_t v : t.int32_data())
      appendLE(out, static_cast<uint64_t>(static_cast<uint32_t>(v)), width);
    break;
  }
  return fromCopiedBytes(type, name, std::move(out), source.inlineLimitBytes);
}

} // namespace hetpar::import
