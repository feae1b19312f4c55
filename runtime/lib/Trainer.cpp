//===- Trainer.cpp - One optimizer step of a training program -------------===//
#include "hetpar/runtime/Training.h"

#include <cstring>

namespace hetpar::rt {

Status Trainer::create(Program &program, Dataset &data,
                       std::unique_ptr<Trainer> &out) {
  out.reset();
  const TrainingInfo &t = program.training();
  if (!t.present)
    return Status::error(program.outDir() +
                         "/manifest.json has no 'training' object: not a "
                         "training program (compile with hetpar-compile "
                         "--mode training)");
  if (program.numDevices() != 1 || program.microbatches() != 1)
    return Status::error("--train runs single-device programs only (this one "
                         "has " +
                         std::to_string(program.numDevices()) + " devices)");
  const std::vector<TensorInfo> &outs = program.outputs();
  if (outs.empty() || outs[0].dtype != DType::Float32 ||
      shapeElements(outs[0].shape) != 1)
    return Status::error("output 0 of a training program must be the loss, a "
                         "float32 scalar");
  for (const TensorInfo &in : program.inputs())
    if (in.shape.empty() || in.shape[0] != t.batchSize)
      return Status::error("input '" + in.name + "' has shape " +
                           formatShape(in.shape) + ", not a batch of " +
                           std::to_string(t.batchSize) + " on axis 0");
  out.reset(new Trainer(program, data));
  return Status::ok();
}

Status Trainer::step(uint64_t step, float &loss) {
  Status s = data_.batch(step, batch_);
  if (s.isOk())
    s = program_.uploadInputs(batch_);
  if (s.isOk())
    s = program_.runDevice();
  if (s.isOk())
    s = program_.downloadOutputs(outputs_);
  if (!s.isOk())
    return Status::error("step " + std::to_string(step + 1) + ": " +
                         s.message());
  float value;
  std::memcpy(&value, outputs_[0].data.data(), sizeof(value));
  loss = value;
  return Status::ok();
}

} // namespace hetpar::rt
