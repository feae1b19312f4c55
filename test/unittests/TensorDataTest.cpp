//===- TensorDataTest.cpp - ONNX tensor data to ElementsAttr
//----------------===//
#include "TensorData.h"

#include "hetpar/Support/ShapeUtils.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <unistd.h>

using namespace mlir;
using namespace hetpar;
using namespace hetpar::import;

namespace {

class TensorDataTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.getOrLoadDialect<BuiltinDialect>();
    handler =
        std::make_unique<ScopedDiagnosticHandler>(&ctx, [this](Diagnostic &d) {
          lastError = d.str();
          return success();
        });
    llvm::SmallString<128> dir;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("hetpar-tensor", dir));
    root = std::string(dir);
    modelDir = root + "/model";
    ASSERT_FALSE(llvm::sys::fs::create_directory(modelDir));
    source.context = &ctx;
    source.modelDir = modelDir;
  }
  void TearDown() override { llvm::sys::fs::remove_directories(root); }

  void writeFile(const std::string &path, size_t bytes) {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    for (size_t i = 0; i < bytes; ++i)
      os << static_cast<char>(i % 251);
  }

  FailureOr<ElementsAttr> run(::onnx::TensorProto &t) {
    lastError.clear();
    return importTensor(t, source, UnknownLoc::get(&ctx), "initializer 'w'");
  }

  static ::onnx::TensorProto floatTensor(std::vector<int64_t> dims) {
    ::onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
      t.add_dims(d);
    return t;
  }

  static void setExternal(::onnx::TensorProto &t, const std::string &location,
                          const std::string &offset = "",
                          const std::string &length = "") {
    t.set_data_location(::onnx::TensorProto::EXTERNAL);
    auto *e = t.add_external_data();
    e->set_key("location");
    e->set_value(location);
    if (!offset.empty()) {
      e = t.add_external_data();
      e->set_key("offset");
      e->set_value(offset);
    }
    if (!length.empty()) {
      e = t.add_external_data();
      e->set_key("length");
      e->set_value(length);
    }
  }

  MLIRContext ctx;
  std::unique_ptr<ScopedDiagnosticHandler> handler;
  std::string lastError, root, modelDir;
  TensorSource source;
};

TEST_F(TensorDataTest, SmallRawDataBecomesDense) {
  auto t = floatTensor({2});
  float values[2] = {1.5f, -2.0f};
  t.set_raw_data(std::string(reinterpret_cast<char *>(values), sizeof(values)));
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr));
  ASSERT_TRUE(llvm::isa<DenseElementsAttr>(*attr));
  auto read = readFloatElements(*attr);
  ASSERT_TRUE(read);
  EXPECT_EQ((*read)[0], 1.5);
  EXPECT_EQ((*read)[1], -2.0);
}

TEST_F(TensorDataTest, LargeRawDataIsMovedNotCopied) {
  auto t = floatTensor({1024});
  std::string bytes(4096, '\0');
  reinterpret_cast<float *>(bytes.data())[1023] = 7.0f;
  t.set_raw_data(std::move(bytes));
  const char *before = t.raw_data().data();
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr));
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(*attr);
  ASSERT_TRUE(res);
  // The blob holds the proto's own buffer: the weights were not copied.
  EXPECT_EQ(res.getRawHandle().getBlob()->getData().data(), before);
  EXPECT_FALSE(t.has_raw_data());
  EXPECT_EQ((*readFloatElements(*attr))[1023], 7.0);
}

TEST_F(TensorDataTest, ShortRawDataIsAnError) {
  auto t = floatTensor({2, 3});
  t.set_raw_data(std::string(20, '\0'));
  EXPECT_TRUE(failed(run(t)));
  EXPECT_NE(lastError.find(
                "needs 24 bytes (6 elements) but its raw_data holds 20 bytes"),
            std::string::npos)
      << lastError;
}

TEST_F(TensorDataTest, TypedFieldsMustMatchTheShape) {
  auto t = floatTensor({3});
  t.add_float_data(1.0f);
  t.add_float_data(2.0f);
  EXPECT_TRUE(failed(run(t)));
  EXPECT_NE(lastError.find("needs 3 elements but its data holds 2"),
            std::string::npos);
  t.add_float_data(3.0f);
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr));
  EXPECT_EQ((*readFloatElements(*attr))[2], 3.0);
}

TEST_F(TensorDataTest, Int32FieldHoldsNarrowTypes) {
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::INT8);
  t.add_dims(2);
  t.add_int32_data(-3);
  t.add_int32_data(100);
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr));
  EXPECT_EQ(*readIntElements(*attr), (llvm::SmallVector<int64_t>{-3, 100}));
}

TEST_F(TensorDataTest, ResourceElementsReadBackWithSignAndHalfPrecision) {
  // Large enough to become dense_resource blobs, read back element by element.
  ::onnx::TensorProto i8;
  i8.set_data_type(::onnx::TensorProto::INT8);
  i8.add_dims(2048);
  std::string bytes(2048, '\0');
  bytes[7] = static_cast<char>(-5);
  i8.set_raw_data(bytes);
  auto ints = run(i8);
  ASSERT_TRUE(succeeded(ints));
  ASSERT_TRUE(llvm::isa<DenseResourceElementsAttr>(*ints));
  EXPECT_EQ((*readIntElements(*ints))[7], -5);

  ::onnx::TensorProto f16;
  f16.set_data_type(::onnx::TensorProto::FLOAT16);
  f16.add_dims(1024);
  std::string half(2048, '\0');
  half[2] = 0x00; // element 1 = 0x3C00 = 1.0 in IEEE half precision
  half[3] = 0x3C;
  f16.set_raw_data(half);
  auto floats = run(f16);
  ASSERT_TRUE(succeeded(floats));
  ASSERT_TRUE(llvm::isa<DenseResourceElementsAttr>(*floats));
  EXPECT_EQ((*readFloatElements(*floats))[1], 1.0);
}

TEST_F(TensorDataTest, BadDimensionsAndTypes) {
  auto neg = floatTensor({2, -1});
  EXPECT_TRUE(failed(run(neg)));
  EXPECT_NE(lastError.find("negative dimension -1"), std::string::npos);
  auto huge = floatTensor({int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_TRUE(failed(run(huge)));
  EXPECT_NE(lastError.find("more elements than fit in 64 bits"),
            std::string::npos);
  ::onnx::TensorProto str;
  str.set_data_type(::onnx::TensorProto::STRING);
  EXPECT_TRUE(failed(run(str)));
  EXPECT_NE(lastError.find("STRING, which HetPar does not support"),
            std::string::npos);
}

TEST_F(TensorDataTest, ExternalDataIsReadFromTheSlice) {
  writeFile(modelDir + "/weights.bin", 4096 + 64);
  auto t = floatTensor({1024});
  setExternal(t, "weights.bin", "64", "4096");
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr)) << lastError;
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(*attr);
  ASSERT_TRUE(res);
  ArrayRef<char> data = res.getRawHandle().getBlob()->getData();
  ASSERT_EQ(data.size(), 4096u);
  EXPECT_EQ(static_cast<unsigned char>(data[0]), 64u % 251u);
}

TEST_F(TensorDataTest, ExternalDataOutsideTheFolderIsRefused) {
  writeFile(root + "/secret.bin", 16);
  auto abs = floatTensor({4});
  setExternal(abs, root + "/secret.bin");
  EXPECT_TRUE(failed(run(abs)));
  EXPECT_NE(lastError.find("absolute path"), std::string::npos) << lastError;

  auto dotdot = floatTensor({4});
  setExternal(dotdot, "../secret.bin");
  EXPECT_TRUE(failed(run(dotdot)));
  EXPECT_NE(lastError.find("contains '..'"), std::string::npos) << lastError;

  // A link inside the folder that points outside it.
  ASSERT_EQ(::symlink((root + "/secret.bin").c_str(),
                      (modelDir + "/link.bin").c_str()),
            0);
  auto link = floatTensor({4});
  setExternal(link, "link.bin");
  EXPECT_TRUE(failed(run(link)));
  EXPECT_NE(lastError.find("outside the model's folder"), std::string::npos)
      << lastError;
}

TEST_F(TensorDataTest, ExternalDataMissingOrShort) {
  auto missing = floatTensor({4});
  setExternal(missing, "nothere.bin");
  EXPECT_TRUE(failed(run(missing)));
  EXPECT_NE(lastError.find("does not exist"), std::string::npos) << lastError;

  writeFile(modelDir + "/short.bin", 10);
  auto shortT = floatTensor({4});
  setExternal(shortT, "short.bin", "0", "16");
  EXPECT_TRUE(failed(run(shortT)));
  EXPECT_NE(lastError.find("needs bytes [0, 16)"), std::string::npos)
      << lastError;
  EXPECT_NE(lastError.find("has only 10 bytes"), std::string::npos)
      << lastError;

  auto wrongLength = floatTensor({4});
  setExternal(wrongLength, "short.bin", "0", "8");
  EXPECT_TRUE(failed(run(wrongLength)));
  EXPECT_NE(lastError.find("needs 16 bytes"), std::string::npos) << lastError;
}

TEST_F(TensorDataTest, PlanningDoesNotReadExternalData) {
  writeFile(modelDir + "/weights.bin", 4096);
  source.loadExternalData = false;
  auto t = floatTensor({1024});
  setExternal(t, "weights.bin");
  auto attr = run(t);
  ASSERT_TRUE(succeeded(attr)) << lastError;
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(*attr);
  ASSERT_TRUE(res);
  EXPECT_EQ(res.getRawHandle().getBlob(), nullptr);
  EXPECT_EQ(llvm::cast<ShapedType>(res.getType()).getNumElements(), 1024);
}

} // namespace
