//===- Export.cpp - The trained tensors an export writes ------------------===//
#include "Export.h"

#include "hetpar/runtime/Training.h"

#include <set>

namespace hetpar::run {

using rt::Status;

namespace {

bool trained(const rt::WeightTensor &w) {
  return w.role == "param" || w.role == "buffer";
}

} // namespace

bool exportJoinsCheckpoint(const rt::ProgramWeights &weights) {
  std::set<std::string> all;
  for (const auto &device : weights.devices)
    for (const rt::WeightTensor &w : device)
      if (trained(w))
        all.insert(w.name);
  for (const auto &device : weights.devices) {
    size_t whole = 0;
    for (const rt::WeightTensor &w : device)
      whole += trained(w) && w.tensorDim < 0;
    if (whole != all.size())
      return true;
  }
  return false;
}

Status exportONNX(rt::Program &program, const std::string &file) {
  TrainedTensors out;
  for (const rt::WeightTensor &w : program.weightTensors()) {
    if (!trained(w))
      continue;
    if (w.tensorDim >= 0)
      return Status::error("--export-onnx: this device holds a shard of '" +
                           w.name + "' (export the joined checkpoint)");
    rt::HostTensor &t = out[w.name];
    t.dtype = w.dtype;
    t.shape = w.shape;
    t.data.resize(w.bytes);
    if (Status s = program.readWeights(w.offset, t.data.data(), w.bytes);
        !s.isOk())
      return s;
  }
  return writeTrainedONNX(program.outDir(), program.training().model, out,
                          file);
}

Status exportCheckpoint(const std::string &outDir,
                        const std::string &checkpointDir,
                        const std::string &file) {
  rt::ProgramWeights weights;
  Status s = rt::readProgramWeights(outDir, weights);
  rt::JoinedCheckpoint joined;
  if (s.isOk())
    s = rt::joinCheckpoint(checkpointDir, joined);
  if (!s.isOk())
    return s;
  TrainedTensors out;
  for (const auto &device : weights.devices)
    for (const rt::WeightTensor &w : device) {
      if (!trained(w) || out.count(w.name))
        continue;
      rt::TensorPlacement whole;
      whole.wholeShape = rt::placementOf(device, w).wholeShape;
      s = rt::cutFromJoined(joined, w.name, whole, w.dtype, whole.wholeShape,
                            out[w.name]);
      if (!s.isOk())
        return Status::error("--export-onnx: '" + checkpointDir +
                             "': " + s.message());
    }
  return writeTrainedONNX(outDir, weights.model, out, file);
}

} // namespace hetpar::run
