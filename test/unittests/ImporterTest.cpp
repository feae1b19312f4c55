//===- ImporterTest.cpp - model-level import properties
//---------------------===//
#include "hetpar/Dialect/ONNX/ONNXOps.h"
#include "hetpar/Import/ONNXImporter.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>

using namespace mlir;

namespace {

/// Writes a model y = x + w with w a 1 MiB initializer stored in raw_data.
std::string writeAddModel(const std::string &dir) {
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto *g = model.mutable_graph();
  g->set_name("add");
  auto *w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(262144);
  std::string bytes(262144 * 4, '\0');
  reinterpret_cast<float *>(bytes.data())[5] = 2.5f;
  w->set_raw_data(bytes);
  auto addIO = [](::onnx::ValueInfoProto *v, const char *name) {
    v->set_name(name);
    auto *tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(::onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_value(262144);
  };
  addIO(g->add_input(), "x");
  addIO(g->add_output(), "y");
  auto *n = g->add_node();
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  std::string path = dir + "/add.onnx";
  std::ofstream os(path, std::ios::binary);
  model.SerializeToOstream(&os);
  return path;
}

TEST(Importer, LargeInitializerBecomesResourceBlob) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("hetpar-import", dir));
  std::string path = writeAddModel(std::string(dir));
  MLIRContext ctx;
  auto module = hetpar::importONNXModel(path, &ctx);
  ASSERT_TRUE(module);
  hetpar::onnx::ConstantOp weight;
  module->walk([&](hetpar::onnx::ConstantOp c) { weight = c; });
  ASSERT_TRUE(weight);
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(weight.getValue());
  ASSERT_TRUE(res);
  ArrayRef<char> data = res.getRawHandle().getBlob()->getData();
  ASSERT_EQ(data.size(), 262144u * 4);
  EXPECT_EQ(reinterpret_cast<const float *>(data.data())[5], 2.5f);
  // The constant is named after the initializer.
  EXPECT_EQ(hetpar::onnx::getNodeName(weight.getLoc()), "w");
  llvm::sys::fs::remove_directories(dir);
}

TEST(Importer, MissingFileIsOneDiagnostic) {
  MLIRContext ctx;
  int errors = 0;
  std::string message;
  ScopedDiagnosticHandler h(&ctx, [&](Diagnostic &d) {
    ++errors;
    message = d.str();
    return success();
  });
  EXPECT_FALSE(hetpar::importONNXModel("/nonexistent/model.onnx", &ctx));
  EXPECT_EQ(errors, 1);
  EXPECT_NE(message.find("no such file"), std::string::npos);
}

} // namespace
