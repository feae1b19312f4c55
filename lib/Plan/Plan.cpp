//===- Plan.cpp - plan.json reading and writing
//----------------------------===//
//
// The format is described in docs/plan-format.md. Plans are read with the YAML
// reader (JSON is YAML), so that errors name the line and the field. Fields the
// simulator writes (predictions) are accepted and ignored, so that a plan.json
// written by HetPar can be edited and fed back.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Plan/Plan.h"
#include "hetpar/Support/YAMLReader.h"

#include "llvm/Support/MemoryBuffer.h"

#include <cmath>

using namespace llvm;

namespace hetpar {

namespace {

/// plan.json's name of the collective after an op ("none" for none).
StringRef collectiveName(std::optional<dist::CollectiveKind> c) {
  return c ? dist::stringifyCollectiveKind(*c) : "none";
}

/// Fields of plan.json that HetPar writes as outputs; accepted and ignored on
/// input.
const StringRef kOutputFields[] = {"predicted_step_time_s",
                                   "predicted_throughput",
                                   "flops_per_step",
                                   "compute_dtype",
                                   "devices",
                                   "baselines",
                                   "bubble_fraction",
                                   "model",
                                   "cluster",
                                   "cost_model",
                                   "batch",
                                   "memory_fits",
                                   "objective",
                                   "warnings",
                                   "search"};

/// The largest ratio between two relative shares of one list: 10^9, far
/// beyond any two devices' speeds or memories, and small enough that the
/// shares' sum and every share of up to 2^53 items stay exact in a double.
constexpr double kMaxShareRatio = 1e9;

/// Relative shares (batch_shares, zero_shares, a sharding's parts):
/// positive, finite, and within kMaxShareRatio of each other. `what`
/// names them in the error ("shares", "parts").
bool parseShares(YAMLReader &in, yaml::Node *value, const std::string &field,
                 std::vector<double> &out, StringRef what = "shares") {
  auto v = in.numbers(value, field);
  if (!v)
    return false;
  for (double share : *v)
    if (!(share > 0) || !std::isfinite(share))
      return in.fail(value, field, what + " must be positive");
  if (!v->empty()) {
    auto [lo, hi] = std::minmax_element(v->begin(), v->end());
    if (*hi > *lo * kMaxShareRatio)
      return in.fail(value, field,
                     what + " must be within a factor of 10^9 of each other "
                            "(they are relative sizes)");
  }
  out = *v;
  return true;
}

bool parseSharding(YAMLReader &in, yaml::Node *node, const std::string &where,
                   OpSharding &out) {
  return in.forEachField(
      node, where, {"dim", "parts", "collective"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = where + "." + key.str();
        if (key == "dim") {
          auto v = in.integer(value, f);
          if (v && *v < -1)
            return in.fail(value, f,
                           "must be an output dimension or -1 "
                           "(the contraction)");
          out.dim = v.value_or(-1);
          return v.has_value();
        }
        if (key == "parts") {
          if (!parseShares(in, value, f, out.parts, "parts"))
            return false;
          if (out.parts.empty())
            return in.fail(value, f, "needs at least one part");
          return true;
        }
        auto c = in.scalar(value, f);
        if (!c)
          return false;
        if (*c == "none") {
          out.collective = std::nullopt;
          return true;
        }
        out.collective = dist::symbolizeCollectiveKind(*c);
        if (!out.collective ||
            (*out.collective != dist::CollectiveKind::AllReduce &&
             *out.collective != dist::CollectiveKind::AllGather &&
             *out.collective != dist::CollectiveKind::ReduceScatter))
          return in.fail(value, f,
                         "must be none, all_reduce, all_gather or "
                         "reduce_scatter, got '" +
                             *c + "'");
        return true;
      });
}

/// One stage: its fields, then the checks that relate them.
bool parseStage(YAMLReader &in, yaml::Node *node, const std::string &where,
                Stage &stage) {
  bool ok = in.forEachField(
      node, where,
      {"ops", "first", "last", "devices", "data", "tensor", "batch_shares",
       "shardings", "recompute", "zero", "zero_shares", "forward_time_s",
       "backward_time_s"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = where + "." + key.str();
        if (key == "ops")
          return in.forEachItem(value, f, [&](unsigned, yaml::Node *item) {
            auto s = in.scalar(item, f);
            if (s)
              stage.ops.push_back(*s);
            return s.has_value();
          });
        if (key == "first" || key == "last") {
          auto s = in.scalar(value, f);
          (key == "first" ? stage.firstOp : stage.lastOp) = s;
          return s.has_value();
        }
        if (key == "devices") {
          auto ids = in.integers(value, f);
          if (!ids)
            return false;
          for (int64_t id : *ids) {
            if (id < 0 || id > (1 << 30))
              return in.fail(value, f, "device ids must be between 0 and 2^30");
            stage.devices.push_back(id);
          }
          if (stage.devices.empty())
            return in.fail(value, f, "a stage needs at least one device");
          return true;
        }
        if (key == "data" || key == "tensor") {
          auto v = in.integer(value, f);
          if (v && (*v < 1 || *v > (1 << 20)))
            return in.fail(value, f, "must be at least 1");
          (key == "data" ? stage.data : stage.tensor) = v.value_or(1);
          return v.has_value();
        }
        if (key == "batch_shares")
          return parseShares(in, value, f, stage.batchShares);
        if (key == "shardings") {
          // A mapping from op name to sharding (free-form keys).
          auto *map = dyn_cast<yaml::MappingNode>(value);
          if (!map)
            return in.fail(value, f,
                           "must be a mapping of op name to sharding");
          for (auto &entry : *map) {
            auto op = in.scalar(entry.getKey(), f + " key");
            if (!op)
              return false;
            OpSharding sharding;
            if (!parseSharding(in, entry.getValue(), f + "['" + *op + "']",
                               sharding))
              return false;
            stage.shardings[*op] = sharding;
          }
          return true;
        }
        if (key == "recompute") {
          auto b = in.boolean(value, f);
          stage.recompute = b.value_or(false);
          return b.has_value();
        }
        if (key == "zero") {
          auto v = in.integer(value, f);
          if (v && (*v < 0 || *v > 2))
            return in.fail(value, f,
                           "must be 0, 1 or 2 (ZeRO-1 shards the optimizer "
                           "state, ZeRO-2 also the summed gradients; stage 3 "
                           "is not implemented)");
          stage.zero = static_cast<int>(v.value_or(0));
          return v.has_value();
        }
        if (key == "zero_shares")
          return parseShares(in, value, f, stage.zeroShares);
        value->skip(); // forward_time_s / backward_time_s: outputs
        return true;
      });
  if (!ok)
    return false;
  if (stage.devices.empty())
    return in.fail(node, where, "needs 'devices'");
  if (stage.ops.empty() && !stage.firstOp && !stage.lastOp)
    return in.fail(node, where, "needs 'ops' (a list) or 'first' and 'last'");
  if (!stage.ops.empty() && (stage.firstOp || stage.lastOp))
    return in.fail(node, where, "gives both 'ops' and 'first'/'last'");
  if (static_cast<int>(stage.devices.size()) != stage.data * stage.tensor)
    return in.fail(node, where,
                   "has " + Twine(stage.devices.size()) + " devices for data " +
                       Twine(stage.data) + " x tensor " + Twine(stage.tensor));
  if (!stage.batchShares.empty() &&
      static_cast<int>(stage.batchShares.size()) != stage.data)
    return in.fail(node, where + ".batch_shares",
                   "has " + Twine(stage.batchShares.size()) +
                       " shares for data " + Twine(stage.data));
  if (!stage.zeroShares.empty() &&
      static_cast<int>(stage.zeroShares.size()) != stage.data)
    return in.fail(node, where + ".zero_shares",
                   "has " + Twine(stage.zeroShares.size()) +
                       " shares for data " + Twine(stage.data));
  if (stage.zero > 0 && stage.data < 2)
    return in.fail(node, where + ".zero",
                   "shards the optimizer state over the stage's data-parallel "
                   "replicas, and the stage has data 1");
  if (!stage.zeroShares.empty() && stage.zero == 0)
    return in.fail(node, where + ".zero_shares",
                   "is given but the stage's 'zero' is 0");
  for (auto &entry : stage.shardings)
    if (static_cast<int>(entry.second.parts.size()) != stage.tensor)
      return in.fail(node, where + ".shardings['" + entry.getKey() + "']",
                     "has " + Twine(entry.second.parts.size()) +
                         " parts for tensor " + Twine(stage.tensor));
  return true;
}

} // namespace

Expected<Plan> parsePlan(StringRef text, StringRef path) {
  YAMLReader in(text, path);
  Plan plan;
  auto error = [&]() {
    return createStringError(inconvertibleErrorCode(), in.error());
  };
  yaml::Node *root = in.root("plan");
  if (!root)
    return error();
  std::vector<StringRef> allowed = {"stages", "microbatches", "schedule",
                                    "mode", "origin"};
  allowed.insert(allowed.end(), std::begin(kOutputFields),
                 std::end(kOutputFields));
  bool haveStages = false;
  bool ok = in.forEachField(
      root, "plan", allowed, [&](StringRef key, yaml::Node *value) {
        if (key == "stages") {
          haveStages = true;
          return in.forEachItem(
              value, "stages", [&](unsigned i, yaml::Node *item) {
                Stage stage;
                if (!parseStage(in, item, "stages[" + std::to_string(i) + "]",
                                stage))
                  return false;
                plan.stages.push_back(std::move(stage));
                return true;
              });
        }
        if (key == "microbatches") {
          auto v = in.integer(value, "microbatches");
          if (v && (*v < 1 || *v > (1 << 20)))
            return in.fail(value, "microbatches", "must be at least 1");
          plan.microbatches = v.value_or(1);
          return v.has_value();
        }
        if (key == "schedule" || key == "mode" || key == "origin") {
          auto s = in.scalar(value, key);
          if (!s)
            return false;
          if (key == "origin") {
            plan.origin = *s;
          } else if (key == "schedule") {
            auto schedule = dist::symbolizePipelineSchedule(*s);
            if (!schedule)
              return in.fail(value, "schedule",
                             "must be gpipe or 1f1b, got '" + *s + "'");
            plan.schedule = *schedule;
          } else {
            plan.modeGiven = true;
            auto mode = dist::symbolizePlanMode(*s);
            if (!mode)
              return in.fail(value, "mode",
                             "must be inference or training, got '" + *s + "'");
            plan.mode = *mode;
          }
          return true;
        }
        value->skip(); // an output field
        return true;
      });
  if (!ok || !in.error().empty())
    return error();
  if (!haveStages || plan.stages.empty())
    return createStringError(
        inconvertibleErrorCode(),
        (in.locate(nullptr) + ": stages: a plan needs at least one stage")
            .c_str());
  return plan;
}

Expected<Plan> loadPlan(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(buffer.getError(), "cannot read plan '%s': %s",
                             path.str().c_str(),
                             buffer.getError().message().c_str());
  return parsePlan((*buffer)->getBuffer(), path);
}

std::string zeroOriginTag(const Plan &plan) {
  int zero = 0;
  for (const Stage &s : plan.stages)
    zero = std::max(zero, s.zero);
  return zero ? ", ZeRO-" + std::to_string(zero) : "";
}

json::Object planToJSON(const Plan &plan) {
  json::Array stages;
  for (const Stage &s : plan.stages) {
    json::Object o;
    o["ops"] = json::Array(s.ops);
    o["devices"] = json::Array(s.devices);
    o["data"] = s.data;
    o["tensor"] = s.tensor;
    if (!s.batchShares.empty())
      o["batch_shares"] = json::Array(s.batchShares);
    if (s.recompute)
      o["recompute"] = true;
    if (s.zero)
      o["zero"] = s.zero;
    if (!s.zeroShares.empty())
      o["zero_shares"] = json::Array(s.zeroShares);
    if (!s.shardings.empty()) {
      json::Object sh;
      for (auto &e : s.shardings)
        sh[e.getKey()] =
            json::Object{{"dim", e.second.dim},
                         {"parts", json::Array(e.second.parts)},
                         {"collective", collectiveName(e.second.collective)}};
      o["shardings"] = std::move(sh);
    }
    stages.push_back(std::move(o));
  }
  json::Object out;
  out["stages"] = std::move(stages);
  out["microbatches"] = plan.microbatches;
  out["schedule"] = getScheduleName(plan.schedule);
  out["mode"] = getModeName(plan.mode);
  if (!plan.origin.empty())
    out["origin"] = plan.origin;
  return out;
}

} // namespace hetpar
