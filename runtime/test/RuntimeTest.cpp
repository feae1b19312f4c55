//===- RuntimeTest.cpp - The native runtime, without a GPU ----------------===//
//
// .npy reading and writing (against files numpy wrote, Inputs/make_inputs.py)
// and Program load/run on hand-written fake programs (FakeProgram.cpp).
//
//===----------------------------------------------------------------------===//
#include "hetpar/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace hetpar::rt;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const std::string kInputs = HETPAR_RUNTIME_TEST_INPUTS;

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

template <typename T>
HostTensor makeTensor(DType dtype, std::vector<int64_t> shape,
                      std::vector<T> values) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

template <typename T> std::vector<T> values(const HostTensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

/// A fresh temporary directory, removed at the end of the test.
class TempDirTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string tmpl =
        (fs::temp_directory_path() / "hetpar-runtime-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
  std::string dir;
};

//===----------------------------------------------------------------------===//
// DType
//===----------------------------------------------------------------------===//

TEST(DTypeTest, NamesAndSizes) {
  const std::pair<const char *, size_t> all[] = {
      {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8},
      {"int64", 8},   {"int32", 4},   {"int16", 2},    {"int8", 1},
      {"uint8", 1},   {"bool", 1}};
  for (auto [name, size] : all) {
    std::optional<DType> d = dtypeFromName(name);
    ASSERT_TRUE(d) << name;
    EXPECT_STREQ(dtypeName(*d), name);
    EXPECT_EQ(dtypeSize(*d), size) << name;
  }
  EXPECT_FALSE(dtypeFromName("float8"));
  EXPECT_FALSE(dtypeFromName(""));
  EXPECT_EQ(formatShape({2, 3}), "[2,3]");
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(shapeElements({}), 1);
  EXPECT_EQ(shapeElements({0, 5}), 0);
  EXPECT_EQ(shapeElements({-1}), std::nullopt);
  EXPECT_EQ(shapeElements({int64_t(1) << 40, int64_t(1) << 40}), std::nullopt);
  EXPECT_EQ(shapeElements({0, int64_t(1) << 40, int64_t(1) << 40}), 0);
  HostTensor t = makeTensor<float>(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(t.numElements(), 6);
  EXPECT_EQ(t.numBytes(), 24u);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

using NpyTest = TempDirTest;

// A caller that writes to a staging file and renames it later (hetpar-run
// --outputs) has errors name the file it publishes.
TEST_F(NpyTest, WriteErrorsNameTheGivenFile) {
  HostTensor t;
  t.dtype = DType::Float32;
  t.shape = {2};
  t.data.resize(t.numBytes());
  std::string staged = path("missing-folder/.output_0.npy.new");
  Status st = writeNpy(staged, t, "out/output_0.npy");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("cannot write 'out/output_0.npy'"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find(".new"), std::string::npos) << st.message();
  st = writeNpy(staged, t);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find(staged), std::string::npos) << st.message();
}

TEST_F(NpyTest, RoundTripEveryDType) {
  for (DType d :
       {DType::Float32, DType::Float16, DType::Float64, DType::Int64,
        DType::Int32, DType::Int16, DType::Int8, DType::UInt8, DType::Bool}) {
    for (std::vector<int64_t> shape :
         {std::vector<int64_t>{2, 3}, std::vector<int64_t>{},
          std::vector<int64_t>{0, 3}, std::vector<int64_t>{5},
          std::vector<int64_t>{1, 2, 1, 2}}) {
      HostTensor t;
      t.dtype = d;
      t.shape = shape;
      t.data.resize(t.numBytes());
      for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = d == DType::Bool ? uint8_t(i % 2) : uint8_t(i * 37 + 1);
      std::string p = path(std::string(dtypeName(d)) + ".npy");
      Status st = writeNpy(p, t);
      ASSERT_TRUE(st.isOk()) << st.message();
      HostTensor back;
      st = readNpy(p, back);
      ASSERT_TRUE(st.isOk()) << st.message();
      EXPECT_EQ(back.dtype, d);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.data, t.data) << dtypeName(d) << formatShape(shape);
    }
  }
  // Writing is atomic: no temporary file stays behind.
  for (const auto &entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().extension(), ".npy") << entry.path();
}

TEST_F(NpyTest, ReadsWhatNumpyWrote) {
  HostTensor t;
  Status st = readNpy(kInputs + "/f32_2x3.npy", t);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(t.dtype, DType::Float32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(t), (std::vector<float>{0, 1, 2, 3, 4, 5}));

  ASSERT_TRUE(readNpy(kInputs + "/f64_scalar.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Float64);
  EXPECT_TRUE(t.shape.empty());
  EXPECT_EQ(values<double>(t), (std::vector<double>{3.25}));

  ASSERT_TRUE(readNpy(kInputs + "/f32_0x3.npy", t).isOk());
  EXPECT_EQ(t.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(t.data.empty());

  ASSERT_TRUE(readNpy(kInputs + "/f16_4.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Float16);
  // 0.5, -1, 65504, inf as IEEE half bits.
  EXPECT_EQ(values<uint16_t>(t),
            (std::vector<uint16_t>{0x3800, 0xbc00, 0x7bff, 0x7c00}));

  ASSERT_TRUE(readNpy(kInputs + "/i64_2x2.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Int64);
  EXPECT_EQ(values<int64_t>(t),
            (std::vector<int64_t>{1, -2, 3, int64_t(1) << 40}));

  ASSERT_TRUE(readNpy(kInputs + "/i32_3.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Int32);
  EXPECT_EQ(values<int32_t>(t), (std::vector<int32_t>{7, -8, 2147483647}));

  ASSERT_TRUE(readNpy(kInputs + "/i16_2.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Int16);
  EXPECT_EQ(values<int16_t>(t), (std::vector<int16_t>{-32768, 300}));

  ASSERT_TRUE(readNpy(kInputs + "/i8_3.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Int8);
  EXPECT_EQ(values<int8_t>(t), (std::vector<int8_t>{-128, 0, 127}));

  ASSERT_TRUE(readNpy(kInputs + "/u8_3.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::UInt8);
  EXPECT_EQ(values<uint8_t>(t), (std::vector<uint8_t>{0, 1, 255}));

  ASSERT_TRUE(readNpy(kInputs + "/bool_3.npy", t).isOk());
  EXPECT_EQ(t.dtype, DType::Bool);
  EXPECT_EQ(values<uint8_t>(t), (std::vector<uint8_t>{1, 0, 1}));

  // Format versions 2.0 and 3.0 (4-byte header length).
  for (const char *name : {"f32_v2.npy", "f32_v3.npy"}) {
    st = readNpy(kInputs + "/" + name, t);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(values<float>(t), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  }
}

TEST_F(NpyTest, WritesWhatNumpyWrites) {
  // writeNpy reproduces numpy.save's version 1.0 files byte for byte.
  for (const char *name :
       {"f32_2x3.npy", "f32_1x3.npy", "f32_0x3.npy", "f64_2x3.npy",
        "f64_scalar.npy", "f16_4.npy", "i64_2x2.npy", "i32_3.npy", "i16_2.npy",
        "i8_3.npy", "u8_3.npy", "bool_3.npy", "fake_output.npy"}) {
    HostTensor t;
    Status st = readNpy(kInputs + "/" + name, t);
    ASSERT_TRUE(st.isOk()) << st.message();
    st = writeNpy(path(name), t);
    ASSERT_TRUE(st.isOk()) << st.message();
    EXPECT_EQ(readBytes(path(name)), readBytes(kInputs + "/" + name)) << name;
  }
}

TEST_F(NpyTest, Aliases) {
  // '<u1', '=f4' and '>i1' (byte order means nothing for one byte).
  HostTensor t;
  std::string good = readBytes(kInputs + "/u8_3.npy");
  std::string alias = good;
  alias.replace(alias.find("|u1"), 3, "<u1");
  writeBytes(path("alias.npy"), alias);
  ASSERT_TRUE(readNpy(path("alias.npy"), t).isOk());
  EXPECT_EQ(t.dtype, DType::UInt8);

  alias = readBytes(kInputs + "/f32_2x3.npy");
  alias.replace(alias.find("<f4"), 3, "=f4");
  writeBytes(path("native.npy"), alias);
  ASSERT_TRUE(readNpy(path("native.npy"), t).isOk());
  EXPECT_EQ(t.dtype, DType::Float32);

  alias = readBytes(kInputs + "/i8_3.npy");
  alias.replace(alias.find("|i1"), 3, ">i1");
  writeBytes(path("bigbyte.npy"), alias);
  ASSERT_TRUE(readNpy(path("bigbyte.npy"), t).isOk());
  EXPECT_EQ(t.dtype, DType::Int8);
}

/// readNpy fails on `file` with a message that names it and contains `what`.
void expectReadError(const std::string &file, const std::string &what) {
  HostTensor t;
  t.shape = {42};
  Status st = readNpy(file, t);
  ASSERT_FALSE(st.isOk()) << file;
  EXPECT_NE(st.message().find(file), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  // The output is untouched on failure.
  EXPECT_EQ(t.shape, std::vector<int64_t>{42});
}

TEST_F(NpyTest, BadFiles) {
  expectReadError(path("missing.npy"), "cannot read '" + path("missing.npy") +
                                           "': No such file or directory");
  expectReadError(dir, "it is a directory");
  expectReadError(kInputs + "/f32_fortran.npy",
                  "fortran_order arrays are not supported");
  expectReadError(kInputs + "/f32_bigendian.npy",
                  "big-endian data ('>f4') is not supported");
  std::string complex = readBytes(kInputs + "/u32_3.npy");
  complex.replace(complex.find("<u4"), 3, "<c8");
  writeBytes(path("complex.npy"), complex);
  expectReadError(path("complex.npy"), "dtype '<c8' is not supported");

  std::string good = readBytes(kInputs + "/f32_2x3.npy");
  writeBytes(path("truncated.npy"), good.substr(0, good.size() - 4));
  expectReadError(path("truncated.npy"),
                  "truncated data: 20 bytes, 24 expected for float32 [2,3]");
  writeBytes(path("short-header.npy"), good.substr(0, 40));
  expectReadError(path("short-header.npy"), "truncated header");
  writeBytes(path("magic.npy"), "hello, world, this is not numpy");
  expectReadError(path("magic.npy"), "not a .npy file (bad magic)");
  writeBytes(path("empty.npy"), "");
  expectReadError(path("empty.npy"), "not a .npy file (bad magic)");

  std::string v9 = good;
  v9[6] = 9;
  writeBytes(path("v9.npy"), v9);
  expectReadError(path("v9.npy"), ".npy format version 9.0 is not supported");

  std::string header = good;
  header.replace(header.find("'shape'"), 7, "'shapf'");
  writeBytes(path("key.npy"), header);
  expectReadError(path("key.npy"), "malformed header (unexpected key 'shapf'");

  header = good;
  header.replace(header.find("(2, 3)"), 6, "(2, -3)");
  header.erase(header.find("}") + 1, 1); // keep the length
  writeBytes(path("negative.npy"), header);
  expectReadError(path("negative.npy"), "malformed header");

  header = good;
  header.replace(header.find("'fortran_order': False, "), 24, "");
  header.insert(header.find("}") + 1, 24, ' ');
  writeBytes(path("nokey.npy"), header);
  expectReadError(path("nokey.npy"),
                  "it needs the keys 'descr', 'fortran_order' and 'shape'");
}

TEST_F(NpyTest, BFloat16TravelsAsUInt16Bits) {
  // NumPy has no bfloat16; like onnx.numpy_helper, the raw bits go to uint16.
  HostTensor t = makeTensor<uint16_t>(DType::BFloat16, {2}, {0x3f80, 0x4000});
  ASSERT_TRUE(writeNpy(path("bf16.npy"), t).isOk());
  HostTensor back;
  ASSERT_TRUE(readNpy(path("bf16.npy"), back).isOk());
  EXPECT_EQ(back.dtype, DType::UInt16);
  EXPECT_EQ(back.data, t.data);

  // What ml_dtypes writes for bfloat16: a void descr.
  std::string bytes = readBytes(kInputs + "/i16_2.npy");
  bytes.replace(bytes.find("<i2"), 3, "<V2");
  writeBytes(path("v2.npy"), bytes);
  expectReadError(path("v2.npy"), "bfloat16 travels as its raw bits in uint16");
}

TEST_F(NpyTest, WriteErrors) {
  HostTensor t = makeTensor<float>(DType::Float32, {2, 3}, {1, 2, 3});
  Status st = writeNpy(path("short.npy"), t);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message(), "cannot write '" + path("short.npy") +
                              "': the tensor holds 12 bytes, 24 expected for "
                              "float32 [2,3]");
  t = makeTensor<float>(DType::Float32, {3}, {1, 2, 3});
  st = writeNpy(path("no/such/dir/x.npy"), t);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message(), "cannot write '" + path("no/such/dir/x.npy") +
                              "': No such file or directory");
  // Replaces an existing file.
  writeBytes(path("old.npy"), "old");
  ASSERT_TRUE(writeNpy(path("old.npy"), t).isOk());
  HostTensor back;
  ASSERT_TRUE(readNpy(path("old.npy"), back).isOk());
  EXPECT_EQ(back.data, t.data);
}

//===----------------------------------------------------------------------===//
// Program
//===----------------------------------------------------------------------===//

uint32_t crcOf(const std::string &bytes) {
  return uint32_t(crc32(0L, reinterpret_cast<const Bytef *>(bytes.data()),
                        uInt(bytes.size())));
}

/// Writes an output folder for the fake program: y = x + bias, x and y
/// float32 [2,3], bias = {10, 20, 30}.
class ProgramTest : public TempDirTest {
protected:
  void SetUp() override {
    TempDirTest::SetUp();
    std::vector<float> bias = {10, 20, 30};
    weights.assign(reinterpret_cast<const char *>(bias.data()),
                   bias.size() * sizeof(float));
    index = {{"file", "weights.bin"},
             {"bytes", weights.size()},
             {"tensors",
              {{{"name", "bias"},
                {"dtype", "float32"},
                {"shape", {3}},
                {"offset", 0},
                {"bytes", weights.size()},
                {"crc32", crcOf(weights)}}}}};
    manifest = {
        {"format", "hetpar-program"},
        {"version", 1},
        {"model", "model.onnx"},
        {"dtype", "float32"},
        {"devices",
         {{{"id", 0},
           {"source", "device_0.cu"},
           {"libraries", {{"cpu", HETPAR_FAKE_PROGRAM}}},
           {"arena_bytes", 256},
           {"weights_bytes", weights.size()},
           {"weights", "weights.bin"},
           {"weights_index", "weights.json"},
           {"inputs",
            {{{"name", "x"}, {"dtype", "float32"}, {"shape", {2, 3}}}}},
           {"outputs",
            {{{"name", "y"}, {"dtype", "float32"}, {"shape", {2, 3}}}}}}}}};
  }

  json &device() { return manifest["devices"][0]; }

  void writeOut() {
    writeBytes(path("manifest.json"), manifest.dump(1));
    writeBytes(path("weights.json"), index.dump(1));
    writeBytes(path("weights.bin"), weights);
  }

  Status load(const std::string &backend = "cpu") {
    writeOut();
    return Program::load(dir, backend, program);
  }

  /// Loading fails with exactly `message`.
  void expectLoadError(const std::string &message,
                       const std::string &backend = "cpu") {
    Status st = load(backend);
    ASSERT_FALSE(st.isOk());
    EXPECT_EQ(st.message(), message);
    EXPECT_EQ(program, nullptr);
  }

  HostTensor x() const {
    return makeTensor<float>(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, 6});
  }

  std::string weights;
  json index, manifest;
  std::unique_ptr<Program> program;
};

TEST_F(ProgramTest, LoadAndRun) {
  Status st = load();
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(program->backend(), "cpu");
  EXPECT_EQ(program->fallbackReason(), "");
  EXPECT_EQ(program->arenaBytes(), 256u);
  EXPECT_EQ(program->weightsBytes(), 12u);
  ASSERT_EQ(program->inputs().size(), 1u);
  EXPECT_EQ(program->inputs()[0].name, "x");
  EXPECT_EQ(program->inputs()[0].dtype, DType::Float32);
  EXPECT_EQ(program->inputs()[0].shape, (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(program->outputs().size(), 1u);
  EXPECT_EQ(program->outputs()[0].name, "y");

  std::vector<HostTensor> outputs;
  st = program->run({x()}, outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].dtype, DType::Float32);
  EXPECT_EQ(outputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(outputs[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));

  // The buffers are reused: a second run with other data.
  HostTensor x2 = makeTensor<float>(DType::Float32, {2, 3}, {0, 0, 0, 1, 1, 1});
  st = program->run({x2}, outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(values<float>(outputs[0]),
            (std::vector<float>{10, 20, 30, 11, 21, 31}));

  // The pieces of run() one by one.
  ASSERT_TRUE(program->uploadInputs({x()}).isOk());
  ASSERT_TRUE(program->runDevice().isOk());
  ASSERT_TRUE(program->runDevice().isOk());
  std::vector<HostTensor> again;
  ASSERT_TRUE(program->downloadOutputs(again).isOk());
  EXPECT_EQ(values<float>(again[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST_F(ProgramTest, RelativeLibraryAndTrailingSlash) {
  fs::copy_file(HETPAR_FAKE_PROGRAM, path("device_0.cpu.so"));
  device()["libraries"]["cpu"] = "device_0.cpu.so";
  writeOut();
  Status st = Program::load(dir + "/", "auto", program);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(program->backend(), "cpu");
  EXPECT_EQ(program->libraryPath(), dir + "/device_0.cpu.so");
  std::vector<HostTensor> outputs;
  ASSERT_TRUE(program->run({x()}, outputs).isOk());
  EXPECT_EQ(values<float>(outputs[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST_F(ProgramTest, InputErrors) {
  ASSERT_TRUE(load().isOk());
  std::vector<HostTensor> outputs;
  Status st = program->run({}, outputs);
  EXPECT_EQ(st.message(), "expected 1 input (x), got 0");
  st = program->run({x(), x()}, outputs);
  EXPECT_EQ(st.message(), "expected 1 input (x), got 2");

  HostTensor wrongShape = makeTensor<float>(DType::Float32, {1, 3}, {1, 2, 3});
  st = program->run({wrongShape}, outputs);
  EXPECT_EQ(st.message(),
            "input 0 'x': shape [1,3] does not match the model's [2,3]");

  HostTensor wrongDType =
      makeTensor<double>(DType::Float64, {2, 3}, {1, 2, 3, 4, 5, 6});
  st = program->run({wrongDType}, outputs);
  EXPECT_EQ(st.message(),
            "input 0 'x': dtype float64 does not match the model's float32");

  HostTensor wrongSize = makeTensor<float>(DType::Float32, {2, 3}, {1, 2, 3});
  st = program->run({wrongSize}, outputs);
  EXPECT_EQ(st.message(),
            "input 0 'x': holds 12 bytes, 24 expected for float32 [2,3]");

  // Two inputs in the message, with their names.
  device()["inputs"].push_back(
      {{"name", "mask"}, {"dtype", "int64"}, {"shape", {1, 3}}});
  st = load();
  EXPECT_EQ(st.message(), HETPAR_FAKE_PROGRAM
            ": hetpar_num_inputs() is 1 but manifest.json says 2 "
            "(devices[0].inputs)");
}

TEST_F(ProgramTest, GraphInputs) {
  // Without "graph_inputs" the program takes every graph input.
  ASSERT_TRUE(load().isOk());
  ASSERT_EQ(program->graphInputs().size(), 1u);
  EXPECT_EQ(program->graphInputs()[0].name, "x");

  // A pipeline stage's program takes x of the graph's mask and x: the user
  // gives both, checked on every device, and the program gets x.
  manifest["graph_inputs"] = {
      {{"name", "mask"}, {"dtype", "int64"}, {"shape", {1, 3}}},
      {{"name", "x"}, {"dtype", "float32"}, {"shape", {2, 3}}}};
  ASSERT_TRUE(load().isOk());
  ASSERT_EQ(program->graphInputs().size(), 2u);
  EXPECT_EQ(program->graphInputs()[0].name, "mask");
  EXPECT_EQ(program->inputs().size(), 1u);
  HostTensor mask = makeTensor<int64_t>(DType::Int64, {1, 3}, {1, 0, 1});
  EXPECT_EQ(program->checkGraphInputs({x()}).message(),
            "expected 2 inputs (mask, x), got 1");
  EXPECT_EQ(program->checkGraphInputs({x(), mask}).message(),
            "input 0 'mask': dtype float32 does not match the model's int64");
  ASSERT_TRUE(program->checkGraphInputs({mask, x()}).isOk());
  std::vector<HostTensor> mine = program->programInputsOf({mask, x()});
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].data, x().data);
  std::vector<HostTensor> outputs;
  EXPECT_TRUE(program->run(mine, outputs).isOk());

  // A manifest whose graph inputs miss the program's, or disagree on its
  // dtype, or repeat a name.
  manifest["graph_inputs"].erase(1);
  expectLoadError(path("manifest.json") +
                  ": graph_inputs: lists no input 'x', which the device's "
                  "program takes");
  manifest["graph_inputs"].push_back(
      {{"name", "x"}, {"dtype", "float64"}, {"shape", {2, 3}}});
  expectLoadError(path("manifest.json") +
                  ": graph_inputs[1].dtype: is float64 but the device's "
                  "program takes input 'x' as float32");
  manifest["graph_inputs"][1]["dtype"] = "float32";
  manifest["graph_inputs"].push_back(manifest["graph_inputs"][1]);
  expectLoadError(path("manifest.json") +
                  ": graph_inputs[2].name: names graph input 'x' twice");
}

TEST_F(ProgramTest, RunFailure) {
  ASSERT_TRUE(load().isOk());
  HostTensor bad =
      makeTensor<float>(DType::Float32, {2, 3}, {-999, 0, 0, 0, 0, 0});
  std::vector<HostTensor> outputs;
  Status st = program->run({bad}, outputs);
  EXPECT_EQ(st.message(), "hetpar_run failed on the cpu backend: the fake "
                          "program was asked to fail");
  // The program stays usable.
  st = program->run({x()}, outputs);
  EXPECT_TRUE(st.isOk()) << st.message();
}

TEST_F(ProgramTest, ChecksumMismatchNamesTheTensor) {
  weights[0] ^= 1;
  expectLoadError(path("weights.bin") +
                  ": tensor 'bias' checksum mismatch (expected " +
                  std::to_string(index["tensors"][0]["crc32"].get<uint32_t>()) +
                  ", got " + std::to_string(crcOf(weights)) + ")");
}

TEST_F(ProgramTest, WeightErrors) {
  weights += "xxxx";
  expectLoadError(path("weights.bin") +
                  ": 16 bytes, expected 12 (devices[0].weights_bytes in "
                  "manifest.json)");
  weights.resize(12);

  index["tensors"][0]["offset"] = 4;
  expectLoadError(path("weights.json") +
                  ": tensor 'bias' (offset 4, 12 bytes) lies outside " +
                  path("weights.bin") + " (12 bytes)");
  index["tensors"][0]["offset"] = 0;

  index["tensors"][0]["shape"] = {4};
  expectLoadError(path("weights.json") +
                  ": tensor 'bias': 12 bytes do not match float32 [4] (16 "
                  "bytes)");
  index["tensors"][0]["shape"] = {3};

  index["bytes"] = 13;
  expectLoadError(path("weights.json") +
                  ": bytes: 13 but manifest.json's devices[0].weights_bytes "
                  "is 12");
  index["bytes"] = 12;

  // Only training state can be zero between steps (weights.json
  // "zero_between_steps"), and it says so with a boolean.
  index["tensors"][0]["zero_between_steps"] = true;
  expectLoadError(path("weights.json") +
                  ": tensors[0].zero_between_steps: belongs to optimizer or "
                  "state tensors");
  index["tensors"][0]["role"] = "state";
  index["tensors"][0]["zero_between_steps"] = 1;
  expectLoadError(path("weights.json") +
                  ": tensors[0].zero_between_steps: expected true or false, "
                  "got 1");
  index["tensors"][0].erase("zero_between_steps");
  index["tensors"][0].erase("role");

  index["tensors"][0].erase("crc32");
  expectLoadError(path("weights.json") + ": missing field tensors[0].crc32");

  writeOut();
  fs::remove(path("weights.bin"));
  Status st = Program::load(dir, "cpu", program);
  EXPECT_EQ(st.message(), "cannot read '" + path("weights.bin") +
                              "': No such file or directory");
}

TEST_F(ProgramTest, ManifestErrors) {
  Status st = Program::load(dir, "cpu", program);
  EXPECT_EQ(st.message(), "cannot read '" + path("manifest.json") +
                              "': No such file or directory");
  st = Program::load(path("nowhere"), "cpu", program);
  EXPECT_EQ(st.message(), "cannot read the program folder '" + path("nowhere") +
                              "': No such file or directory");
  writeBytes(path("file"), "");
  st = Program::load(path("file"), "cpu", program);
  EXPECT_EQ(st.message(), "'" + path("file") +
                              "' is not a directory (give the output folder "
                              "of hetpar-compile)");

  device().erase("arena_bytes");
  expectLoadError(path("manifest.json") +
                  ": missing field devices[0].arena_bytes");
  device()["arena_bytes"] = -1;
  expectLoadError(path("manifest.json") +
                  ": devices[0].arena_bytes: expected a non-negative integer, "
                  "got -1");
  device()["arena_bytes"] = 256;

  device()["inputs"][0]["dtype"] = "float8";
  expectLoadError(path("manifest.json") +
                  ": devices[0].inputs[0].dtype: unknown dtype 'float8'");
  device()["inputs"][0]["dtype"] = "float32";

  device()["outputs"][0].erase("shape");
  expectLoadError(path("manifest.json") +
                  ": missing field devices[0].outputs[0].shape");
  device()["outputs"][0]["shape"] = {2, 3};

  manifest["version"] = 2;
  expectLoadError(
      path("manifest.json") +
      ": version 2 is not supported (this runtime reads version 1)");
  manifest["version"] = 1;

  manifest["format"] = "other";
  expectLoadError(path("manifest.json") +
                  ": format is 'other', expected 'hetpar-program'");
  manifest["format"] = "hetpar-program";

  // Two devices outside a launcher: the message says how to start them.
  manifest["devices"].push_back(manifest["devices"][0]);
  unsetenv("HETPAR_DEVICE");
  expectLoadError(path("manifest.json") +
                  ": the program has 2 devices: run one process per device, "
                  "e.g. mpirun -np 2 hetpar-run OUT");
  // A rank past the device list (rank r runs devices[r]).
  setenv("HETPAR_DEVICE", "5", 1);
  expectLoadError(path("manifest.json") +
                  ": this process has rank 5 but the program has 2 devices "
                  "(start exactly one process per device)");
  // Rank 1's errors name its own manifest entry.
  manifest["devices"][1]["weights_bytes"] = 13;
  setenv("HETPAR_DEVICE", "1", 1);
  writeOut();
  st = Program::load(dir, "cpu", program);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("but manifest.json says 13 "
                              "(devices[1].weights_bytes)"),
            std::string::npos)
      << st.message();
  unsetenv("HETPAR_DEVICE");
  manifest["devices"].erase(1);

  writeOut();
  writeBytes(path("manifest.json"), "{\"format\": ");
  st = Program::load(dir, "cpu", program);
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message().rfind(path("manifest.json") + ": not valid JSON: ", 0),
            0u)
      << st.message();
}

TEST_F(ProgramTest, LibraryChecks) {
  // The library does not match the manifest.
  device()["arena_bytes"] = 512;
  expectLoadError(std::string(HETPAR_FAKE_PROGRAM) +
                  ": hetpar_arena_bytes() is 256 but manifest.json says 512 "
                  "(devices[0].arena_bytes)");
  device()["arena_bytes"] = 256;

  device()["libraries"]["cpu"] = HETPAR_FAKE_PROGRAM_BADABI;
  expectLoadError(std::string(HETPAR_FAKE_PROGRAM_BADABI) +
                  ": program ABI version 99, this runtime needs 2 (recompile "
                  "the model with a matching hetpar-compile)");

  device()["libraries"]["cpu"] = "missing.so";
  Status st = load();
  ASSERT_FALSE(st.isOk());
  EXPECT_EQ(st.message().rfind(
                "cannot load the cpu library: " + path("missing.so"), 0),
            0u)
      << st.message();

  // Not a program library, or an incomplete one.
  device()["libraries"]["cpu"] = HETPAR_FAKE_PROGRAM_NORUN;
  expectLoadError(std::string(HETPAR_FAKE_PROGRAM_NORUN) +
                  ": no symbol hetpar_run (not a HetPar program library)");

  // A CUDA library listed as the CPU one.
  device()["libraries"]["cpu"] = HETPAR_FAKE_PROGRAM_NOCUDA;
  expectLoadError(std::string(HETPAR_FAKE_PROGRAM_NOCUDA) +
                  ": the library is a 'cuda' program but manifest.json lists "
                  "it as the cpu library");

  st = Program::load(dir, "tpu", program);
  EXPECT_EQ(st.message(), "unknown backend 'tpu' (cpu, cuda or auto)");
}

TEST_F(ProgramTest, CudaBackendChoice) {
  // No CUDA library in the manifest.
  expectLoadError(path("manifest.json") +
                      ": the program has no CUDA library "
                      "(devices[0].libraries.cuda); it was compiled without "
                      "CUDA",
                  "cuda");
  // A CUDA library whose hetpar_create finds no device: an error when asked
  // for, a fallback to the CPU with auto.
  device()["libraries"]["cuda"] = HETPAR_FAKE_PROGRAM_NOCUDA;
  expectLoadError(std::string(HETPAR_FAKE_PROGRAM_NOCUDA) +
                      ": hetpar_create failed: no CUDA device",
                  "cuda");
  Status st = load("auto");
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(program->backend(), "cpu");
  EXPECT_EQ(program->fallbackReason(),
            std::string(HETPAR_FAKE_PROGRAM_NOCUDA) +
                ": hetpar_create failed: no CUDA device");
  std::vector<HostTensor> outputs;
  ASSERT_TRUE(program->run({x()}, outputs).isOk());

  // A working CUDA library: auto takes it (weights staged and uploaded).
  device()["libraries"]["cuda"] = HETPAR_FAKE_PROGRAM_FAKECUDA;
  st = load("auto");
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(program->backend(), "cuda");
  EXPECT_EQ(program->fallbackReason(), "");
  ASSERT_TRUE(program->run({x()}, outputs).isOk());
  EXPECT_EQ(values<float>(outputs[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
  weights[4] ^= 1;
  expectLoadError(
      path("weights.bin") + ": tensor 'bias' checksum mismatch (expected " +
          std::to_string(index["tensors"][0]["crc32"].get<uint32_t>()) +
          ", got " + std::to_string(crcOf(weights)) + ")",
      "auto");
  weights[4] ^= 1;
  device()["libraries"]["cuda"] = HETPAR_FAKE_PROGRAM_NOCUDA;

  // Only a (failing) CUDA library: auto says why neither works.
  device()["libraries"].erase("cpu");
  expectLoadError(path("manifest.json") +
                      ": the program has no CPU library "
                      "(devices[0].libraries.cpu); CUDA is unavailable: " +
                      HETPAR_FAKE_PROGRAM_NOCUDA +
                      ": hetpar_create failed: no CUDA device",
                  "auto");
}

TEST_F(ProgramTest, ZeroByteArena) {
  // hetpar_alloc(0) of this fake returns NULL and its hetpar_run fails on a
  // null buffer: the runtime still passes non-null pointers.
  device()["libraries"]["cpu"] = HETPAR_FAKE_PROGRAM_NOARENA;
  device()["arena_bytes"] = 0;
  Status st = load();
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(program->arenaBytes(), 0u);
  std::vector<HostTensor> outputs;
  st = program->run({x()}, outputs);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(values<float>(outputs[0]),
            (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

} // namespace

// compareTensors: numpy.allclose semantics. Values by hand: |1.001 - 1| =
// 0.001 <= 1e-3 * 1 + 0, but 1.01 is not; NaN equals NaN only; integers
// exactly; bfloat16 against its uint16 bits (0x3f80 is 1.0, 0x4000 is 2.0).
TEST(Compare, Tolerances) {
  HostTensor ref = makeTensor<float>(DType::Float32, {2}, {1.0f, 2.0f});
  HostTensor close = makeTensor<float>(DType::Float32, {2}, {1.001f, 2.0f});
  HostTensor far = makeTensor<float>(DType::Float32, {2}, {1.01f, 2.0f});
  EXPECT_TRUE(compareTensors(close, ref, 1.1e-3, 0).match);
  Comparison c = compareTensors(far, ref, 1.1e-3, 0);
  EXPECT_FALSE(c.match);
  EXPECT_EQ(c.mismatches, 1);

  float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor nans = makeTensor<float>(DType::Float32, {2}, {nan, 2.0f});
  EXPECT_TRUE(compareTensors(nans, nans, 0, 0).match);
  c = compareTensors(nans, ref, 1, 1);
  EXPECT_FALSE(c.match);
  EXPECT_NE(c.detail.find("1 of them NaN against a number"), std::string::npos)
      << c.detail;
  EXPECT_NE(c.detail.find("max abs error 0 where both are numbers"),
            std::string::npos)
      << c.detail;

  HostTensor i1 = makeTensor<int64_t>(DType::Int64, {2}, {3, 4});
  HostTensor i2 = makeTensor<int64_t>(DType::Int64, {2}, {3, 5});
  EXPECT_FALSE(compareTensors(i1, i2, 1, 1).match); // integers: exactly

  HostTensor bf = makeTensor<uint16_t>(DType::BFloat16, {2}, {0x3f80, 0x4000});
  HostTensor bits = makeTensor<uint16_t>(DType::UInt16, {2}, {0x3f80, 0x4000});
  EXPECT_TRUE(compareTensors(bf, bits, 0, 0).match);
  EXPECT_TRUE(compareTensors(bf, ref, 0, 0).match);

  HostTensor other = makeTensor<float>(DType::Float32, {1, 2}, {1.0f, 2.0f});
  c = compareTensors(other, ref, 1, 1);
  EXPECT_FALSE(c.match);
  EXPECT_NE(c.detail.find("shape [1,2], reference [2]"), std::string::npos)
      << c.detail;
}
