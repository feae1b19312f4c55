//===- onnx-mutate.cpp - libFuzzer harness: mutated ONNX models ---------===//
//
// A structure-aware harness: inputs are ONNX models, and the mutator edits
// them as models (LLVMFuzzerCustomMutator): it swaps nodes, changes attribute
// values, dimensions and element types, resizes initializers, and rewires
// node inputs, so that most mutants still parse and reach the later stages.
// Each model that survives import and static shapes is planned (the three
// baselines on a two-device cluster, as `hetpar-compile` scores them) and
// its single-device program is generated (the CUDA/C++ source; nothing is
// compiled). No stage may crash, hang, read out of bounds or overflow
// (AddressSanitizer, UndefinedBehaviorSanitizer). bench/fuzz/run.sh builds it.
//
//===----------------------------------------------------------------------===//
#include "ImportHarness.h"

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Codegen/Codegen.h"
#include "hetpar/CostModel/CostModel.h"
#include "hetpar/Plan/Simulator.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <random>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

using Rng = std::minstd_rand;

size_t pick(Rng &rng, size_t n) { return size_t(rng() % n); }

/// An integer an attribute or dimension might be mutated to: boundaries,
/// small values and a random one.
int64_t interestingInt(Rng &rng) {
  static const int64_t values[] = {0,
                                   1,
                                   2,
                                   3,
                                   -1,
                                   -2,
                                   7,
                                   64,
                                   1 << 20,
                                   INT32_MAX,
                                   -(int64_t(1) << 40),
                                   INT64_MAX,
                                   INT64_MIN};
  if (rng() % 4 == 0)
    return int64_t(rng()) - int64_t(Rng::max() / 2);
  return values[pick(rng, std::size(values))];
}

void mutateAttribute(onnx::AttributeProto &a, Rng &rng) {
  switch (a.type()) {
  case onnx::AttributeProto::INT:
    a.set_i(interestingInt(rng));
    break;
  case onnx::AttributeProto::FLOAT: {
    static const float values[] = {0.f, -1.f, 1e30f, NAN, INFINITY, 0.5f};
    a.set_f(values[pick(rng, std::size(values))]);
    break;
  }
  case onnx::AttributeProto::INTS:
    if (a.ints_size() && rng() % 3)
      a.set_ints(int(pick(rng, a.ints_size())), interestingInt(rng));
    else if (a.ints_size() && rng() % 2)
      a.mutable_ints()->RemoveLast();
    else
      a.add_ints(interestingInt(rng));
    break;
  case onnx::AttributeProto::STRING:
    a.set_s(rng() % 2 ? "" : "NOTSET");
    break;
  default:
    a.set_type(onnx::AttributeProto::AttributeType(pick(rng, 15)));
    break;
  }
}

/// A value's type (graph input, output or value_info) with a changed
/// dimension or element type.
void mutateType(onnx::ValueInfoProto &v, Rng &rng) {
  auto *t = v.mutable_type()->mutable_tensor_type();
  if (rng() % 3 == 0) {
    t->set_elem_type(int32_t(pick(rng, 24)));
    return;
  }
  auto *shape = t->mutable_shape();
  if (shape->dim_size() == 0 || rng() % 5 == 0) {
    shape->add_dim()->set_dim_value(interestingInt(rng));
    return;
  }
  auto *d = shape->mutable_dim(int(pick(rng, shape->dim_size())));
  if (rng() % 4 == 0)
    d->set_dim_param("N");
  else
    d->set_dim_value(interestingInt(rng));
}

void mutateInitializer(onnx::TensorProto &t, Rng &rng) {
  switch (rng() % 4) {
  case 0: // truncate or extend the data
    if (t.has_raw_data()) {
      std::string raw = t.raw_data();
      raw.resize(rng() % 2 ? raw.size() / 2 : raw.size() + 1 + pick(rng, 64));
      t.set_raw_data(raw);
    } else if (t.float_data_size()) {
      t.mutable_float_data()->RemoveLast();
    } else {
      t.add_int64_data(interestingInt(rng));
    }
    break;
  case 1:
    if (t.dims_size())
      t.set_dims(int(pick(rng, t.dims_size())), interestingInt(rng));
    else
      t.add_dims(interestingInt(rng));
    break;
  case 2:
    t.set_data_type(int32_t(pick(rng, 24)));
    break;
  default:
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    break;
  }
}

/// One structural edit of `model`.
void mutateModel(onnx::ModelProto &model, Rng &rng) {
  onnx::GraphProto &g = *model.mutable_graph();
  int nodes = g.node_size();
  switch (rng() % 7) {
  case 0: // node order
    if (nodes > 1)
      g.mutable_node()->SwapElements(int(pick(rng, nodes)),
                                     int(pick(rng, nodes)));
    return;
  case 1: // an attribute value
    if (nodes) {
      onnx::NodeProto &n = *g.mutable_node(int(pick(rng, nodes)));
      if (n.attribute_size())
        mutateAttribute(
            *n.mutable_attribute(int(pick(rng, n.attribute_size()))), rng);
    }
    return;
  case 2: // a graph input's or output's dims or dtype
    if (g.input_size() && rng() % 3)
      mutateType(*g.mutable_input(int(pick(rng, g.input_size()))), rng);
    else if (g.output_size())
      mutateType(*g.mutable_output(int(pick(rng, g.output_size()))), rng);
    return;
  case 3: // an initializer's data, dims or dtype
    if (g.initializer_size())
      mutateInitializer(
          *g.mutable_initializer(int(pick(rng, g.initializer_size()))), rng);
    return;
  case 4: // rewire a node input to another value (or to nothing)
    if (nodes) {
      onnx::NodeProto &n = *g.mutable_node(int(pick(rng, nodes)));
      const onnx::NodeProto &from = g.node(int(pick(rng, nodes)));
      if (n.input_size()) {
        std::string name = from.output_size() ? from.output(0) : "";
        n.set_input(int(pick(rng, n.input_size())), name);
      }
    }
    return;
  case 5: // drop or duplicate a node
    if (nodes && rng() % 2)
      g.mutable_node()->DeleteSubrange(int(pick(rng, nodes)), 1);
    else if (nodes)
      *g.add_node() = g.node(int(pick(rng, nodes)));
    return;
  default: // the opset
    if (model.opset_import_size())
      model.mutable_opset_import(0)->set_version(interestingInt(rng) % 30);
    return;
  }
}

/// The two-device cluster the plans are scored on.
const hetpar::Cluster &cluster() {
  static hetpar::Cluster c = [] {
    auto parsed = hetpar::parseCluster(R"(name: fuzz
nodes:
  - name: box
    devices:
      - kind: A100-PCIe-40GB
        count: 1
      - kind: T4
        count: 1
    interconnect: PCIe3
)",
                                       "fuzz-cluster.yaml");
    if (!parsed) {
      llvm::errs() << llvm::toString(parsed.takeError()) << "\n";
      std::abort();
    }
    return std::move(*parsed);
  }();
  return c;
}

const hetpar::CostModel &costModel() {
  static std::unique_ptr<hetpar::CostModel> model = [] {
    auto m = hetpar::createCostModel("default", hetpar::CostParams::defaults());
    if (!m) {
      llvm::errs() << llvm::toString(m.takeError()) << "\n";
      std::abort();
    }
    return std::move(*m);
  }();
  return *model;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  onnx::ModelProto model;
  if (size > size_t(INT32_MAX) || !model.ParseFromArray(data, int(size)) ||
      !model.has_graph() || seed % 8 == 0)
    return LLVMFuzzerMutate(data, size, maxSize); // bytes, now and then
  Rng rng(seed);
  for (unsigned edits = 1 + rng() % 3; edits; --edits)
    mutateModel(model, rng);
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::copy(out.begin(), out.end(), data);
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::OwningOpRef<mlir::ModuleOp> module = hetpar::fuzz::importToStatic(
      llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!module)
    return 0;
  mlir::ScopedDiagnosticHandler quiet(
      module->getContext(), [](mlir::Diagnostic &) { return mlir::success(); });
  (void)hetpar::makeBaselines(*module, cluster(), hetpar::Mode::Inference,
                              costModel());
  for (auto func : module->getOps<mlir::func::FuncOp>()) {
    if (func.isExternal() ||
        mlir::failed(hetpar::codegen::checkCodegenSupport(func)))
      continue;
    hetpar::codegen::CodegenOptions options;
    options.buildCPU = options.buildCUDA = false;
    (void)hetpar::codegen::generateDeviceProgram(func, options);
  }
  return 0;
}
