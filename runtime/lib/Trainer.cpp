//===- Trainer.cpp - Training and evaluation steps of a training program --===//
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
  if (program.microbatches() != 1)
    return Status::error("--train runs training programs, whose microbatches "
                         "are training.microbatches; this program's manifest "
                         "has an inference pipeline's microbatches (" +
                         std::to_string(program.microbatches()) + ")");
  const std::vector<TensorInfo> &outs = program.outputs();
  if (outs.empty() || outs[0].dtype != DType::Float32 ||
      shapeElements(outs[0].shape) != 1)
    return Status::error("output 0 of a training program must be the loss, a "
                         "float32 scalar");
  for (const TensorInfo &in : program.inputs())
    if (in.shape.empty() || in.shape[0] != t.batchRows * t.callMicrobatches)
      return Status::error("input '" + in.name + "' has shape " +
                           formatShape(in.shape) + ", not " +
                           std::to_string(t.batchRows * t.callMicrobatches) +
                           " rows of the batch "
                           "on axis 0");
  out.reset(new Trainer(program, data));
  for (const WeightTensor &w : program.weightTensors())
    if (w.role == "state" && w.name == "hetpar.loss_scale" &&
        w.dtype == DType::Float32 && w.bytes == sizeof(float))
      out->lossScale_ = &w;
  if (t.dynamicLossScale && !out->lossScale_) {
    out.reset();
    return Status::error("the manifest asks for dynamic loss scaling but "
                         "weights.json has no float32 scalar "
                         "'hetpar.loss_scale' of role state");
  }
  return Status::ok();
}

Status Trainer::runMicrobatch(uint64_t index, float &loss, Status &refused) {
  Status s = data_.batch(index, batch_);
  if (s.isOk())
    s = program_.uploadInputs(batch_);
  // A refused run still gives its outputs: the step fails at its end.
  if (s.isOk())
    s = program_.runInStep(refused);
  if (s.isOk() && tracing_) {
    int64_t calls = program_.training().microbatches;
    int64_t call = int64_t(index % uint64_t(calls));
    const std::vector<double> &t = program_.lastTrace();
    const std::vector<Program::TraceSpan> &spans = program_.traceSpans();
    for (size_t i = 0; i < spans.size(); ++i)
      trace_.push_back({t[i], t[i + 1], &spans[i],
                        spans[i].microbatch >= 0 ? spans[i].microbatch
                        : calls > 1              ? call
                                                 : -1});
  }
  if (s.isOk())
    s = program_.downloadOutputs(outputs_);
  if (s.isOk())
    std::memcpy(&loss, outputs_[0].data.data(), sizeof(loss));
  return s;
}

Status Trainer::enableTrace() {
  Status s = program_.enableTrace();
  tracing_ = s.isOk();
  return s;
}

Status Trainer::readLossScale(float &scale) {
  scale = 0;
  if (!lossScale_)
    return Status::ok();
  return program_.readWeights(lossScale_->offset, &scale, sizeof(scale));
}

Status Trainer::step(uint64_t step, StepResult &r) {
  int64_t n = program_.training().microbatches;
  float before = 0;
  trace_.clear();
  Status s = readLossScale(before);
  // The first run that found an index out of range: the step's other runs
  // still run (the other devices' exchanges and collectives need them),
  // and at its end the devices agree whether any failed.
  Status refused = Status::ok();
  double sum = 0;
  for (int64_t k = 0; k < n && s.isOk(); ++k) {
    float loss = 0;
    s = runMicrobatch(step * uint64_t(n) + uint64_t(k), loss, refused);
    sum += loss;
  }
  if (s.isOk())
    s = program_.agree(refused);
  if (s.isOk())
    s = readLossScale(r.lossScale);
  if (!s.isOk())
    return s.prefixed("step " + std::to_string(step + 1) + ": ");
  r.loss = float(sum / double(n));
  r.skipped = lossScale_ && r.lossScale < before;
  return Status::ok();
}

Status Evaluator::create(Program &step, Program &eval,
                         std::unique_ptr<Evaluator> &out) {
  out.reset();
  if (eval.backend() != step.backend())
    return Status::error("the evaluation step runs on " + eval.backend() +
                         ", the training step on " + step.backend());
  const std::vector<TensorInfo> &outs = eval.outputs();
  if (outs.empty() || outs[0].dtype != DType::Float32 ||
      shapeElements(outs[0].shape) != 1)
    return Status::error("output 0 of the evaluation step must be the loss, "
                         "a float32 scalar");
  std::unique_ptr<Evaluator> e(new Evaluator(eval));
  const std::vector<TensorInfo> &ins = eval.inputs();
  for (size_t i = 0; i < ins.size(); ++i) {
    const TensorInfo &in = ins[i];
    if (in.boundWeight.empty()) {
      if (in.shape.empty() || in.shape[0] != step.training().batchSize)
        return Status::error("evaluation input '" + in.name + "' has shape " +
                             formatShape(in.shape) + ", not a batch of " +
                             std::to_string(step.training().batchSize) +
                             " on axis 0");
      e->dataInputs_.push_back(in);
      e->dataIndex_.push_back(i);
      continue;
    }
    const WeightTensor *w = nullptr;
    for (const WeightTensor &t : step.weightTensors())
      if (t.name == in.boundWeight)
        w = &t;
    if (!w || w->dtype != in.dtype || w->shape != in.shape)
      return Status::error("evaluation input '" + in.name +
                           "' reads weights tensor '" + in.boundWeight + "' (" +
                           dtypeName(in.dtype) + " " + formatShape(in.shape) +
                           "), which the training step " +
                           (w ? "holds as " + std::string(dtypeName(w->dtype)) +
                                    " " + formatShape(w->shape)
                              : std::string("lacks")));
    if (Status s = eval.bindInput(i, step.weightsAt(w->offset)); !s.isOk())
      return s;
  }
  out = std::move(e);
  return Status::ok();
}

Status Evaluator::evaluate(Dataset &data, Result &r) {
  const TrainingInfo &t = eval_.training();
  uint64_t b = uint64_t(t.batchSize);
  r = Result();
  r.batches = data.samples() / b;
  r.samples = r.batches * b;
  r.left = data.samples() - r.samples;
  double sum = 0;
  for (uint64_t k = 0; k < r.batches; ++k) {
    Status s = data.batch(k, batch_);
    for (size_t j = 0; s.isOk() && j < dataIndex_.size(); ++j)
      s = eval_.uploadInput(dataIndex_[j], batch_[j]);
    if (s.isOk())
      s = eval_.runDevice();
    if (s.isOk())
      s = eval_.downloadOutputs(outputs_);
    if (!s.isOk())
      return Status::error("evaluation batch " + std::to_string(k + 1) + ": " +
                           s.message());
    float loss = 0;
    std::memcpy(&loss, outputs_[0].data.data(), sizeof(loss));
    sum += loss;
  }
  r.loss = r.batches ? sum / double(r.batches) : 0;
  return Status::ok();
}

} // namespace hetpar::rt
