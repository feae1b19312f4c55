//===- DistVerifyExchanges.cpp - hetpar-dist-verify-exchanges -------------===//
//
// Matches the sends, receives and collectives of the per-device functions
// against each other (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Dialect/Dist/ExchangeSteps.h"
#include "hetpar/Dialect/ONNX/Views.h"
#include "hetpar/Transforms/Passes.h"

#include <map>
#include <set>

namespace hetpar {
#define GEN_PASS_DEF_DISTVERIFYEXCHANGESPASS
#include "hetpar/Transforms/Passes.h.inc"
} // namespace hetpar

using namespace mlir;
using namespace hetpar;
using namespace hetpar::dist;

namespace {

/// What every rank of a collective must agree on: the op, its attributes
/// (group, reduction, dims, sizes, root), the element type, and the element
/// count where each rank passes the same one.
std::string signature(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " " << op->getAttrDictionary() << " ";
  auto in = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  os << in.getElementType();
  if (isa<AllReduceOp, BroadcastOp, ReduceScatterOp>(op))
    os << " in " << in;
  if (isa<AllGatherOp>(op))
    os << " out " << out;
  return s;
}

/// One blocking point of a device's program, as the runtime runs it: an
/// exchange step (a run of consecutive sends and receives, posted together
/// and waited for together; constants between them emit no code) or a
/// collective.
struct Event {
  Operation *first = nullptr;
  /// Exchange step: its messages, each (from, to, index of the message in
  /// that pair's order), and whether this device sends it.
  SmallVector<std::tuple<int64_t, int64_t, size_t, bool>> messages;
  /// Collective: its group (mesh and devices) and its index in the group's
  /// sequence.
  std::optional<std::pair<std::string, size_t>> collective;
};

using Message = std::tuple<int64_t, int64_t, size_t>;

/// The events of `f` on device `me`, in program order. Its exchange steps
/// are dist::exchangeSteps' with every op but a constant or a view running
/// in place and a view's buffer its root's (onnx::isView, as the code
/// generator has them): the code generator's steps or finer, finer where
/// it fuses an op into a later one (ExchangeSteps.h), so a deadlock-free
/// verdict holds for the generated program.
SmallVector<Event> eventsOf(func::FuncOp f, int64_t me) {
  SmallVector<Operation *> ops;
  f.walk([&](Operation *op) {
    if (op != f.getOperation())
      ops.push_back(op);
  });
  llvm::DenseMap<Operation *, Operation *> stepFirst;
  auto runsInPlace = [](Operation *op) {
    return !op->hasTrait<OpTrait::ConstantLike>() && !onnx::isView(op);
  };
  for (auto &step : exchangeSteps(ops, runsInPlace, onnx::viewRoot))
    for (Operation *op : step)
      stepFirst[op] = step.front();

  SmallVector<Event> events;
  std::map<std::pair<int64_t, int64_t>, size_t> sent, received;
  std::map<std::string, size_t> collectives;
  for (Operation *op : ops) {
    if (isa<SendOp, RecvOp>(op)) {
      if (stepFirst.lookup(op) == op)
        events.push_back({op, {}, std::nullopt});
      if (auto send = dyn_cast<SendOp>(op)) {
        int64_t to = send.getPeerAttr().getInt();
        events.back().messages.push_back({me, to, sent[{me, to}]++, true});
      } else {
        int64_t from = cast<RecvOp>(op).getPeerAttr().getInt();
        events.back().messages.push_back(
            {from, me, received[{from, me}]++, false});
      }
      continue;
    }
    if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
             BroadcastOp>(op))
      continue;
    std::string key;
    llvm::raw_string_ostream os(key);
    os << op->getAttrOfType<FlatSymbolRefAttr>("mesh").getValue() << " "
       << op->getAttrOfType<DenseI64ArrayAttr>("devices");
    events.push_back({op, {}, std::make_pair(key, collectives[key]++)});
  }
  return events;
}

/// Runs the programs' events as the runtime would, a send completing only
/// once its receive is posted (no eager buffering assumed): fails, naming
/// what each stuck device waits for, when no device can move on before all
/// are done (a deadlock).
LogicalResult
checkDeadlockFree(const std::map<int64_t, func::FuncOp> &programs) {
  std::map<int64_t, SmallVector<Event>> events;
  std::map<int64_t, size_t> at;
  for (auto &[id, f] : programs) {
    events[id] = eventsOf(f, id);
    at[id] = 0;
  }
  std::set<std::pair<Message, bool>> posted; // (message, by its sender)
  std::map<std::pair<std::string, size_t>, size_t> arrived;
  std::map<std::string, size_t> groupSize;
  for (auto &[id, evs] : events)
    for (Event &e : evs)
      if (e.collective)
        groupSize[e.collective->first] =
            e.first->getAttrOfType<DenseI64ArrayAttr>("devices").size();
  // Each device posts its current event once.
  std::map<int64_t, size_t> postedUpTo;
  for (bool progress = true; progress;) {
    progress = false;
    for (auto &[id, evs] : events) {
      size_t &pos = at[id];
      if (pos >= evs.size())
        continue;
      Event &e = evs[pos];
      // Posting is progress too: a device evaluated earlier in this round
      // may now complete.
      if (!postedUpTo.count(id) || postedUpTo[id] <= pos) {
        postedUpTo[id] = pos + 1;
        progress = true;
        for (auto &[from, to, k, mine] : e.messages)
          posted.insert({Message{from, to, k}, mine});
        if (e.collective)
          ++arrived[*e.collective];
      }
      bool done = true;
      for (auto &[from, to, k, mine] : e.messages)
        done &= posted.count({Message{from, to, k}, !mine}) > 0;
      if (e.collective)
        done = arrived[*e.collective] >= groupSize[e.collective->first];
      if (done) {
        ++pos;
        progress = true;
      }
    }
  }
  bool stuck = false;
  for (auto &[id, evs] : events) {
    if (at[id] >= evs.size())
      continue;
    stuck = true;
    Event &e = evs[at[id]];
    InFlightDiagnostic d = e.first->emitError()
                           << "deadlock (the programs run in order, no device "
                              "can go on): device "
                           << id << " waits here for ";
    if (e.collective) {
      d << "the other devices of its group to reach this collective";
      continue;
    }
    bool firstWait = true;
    for (auto &[from, to, k, mine] : e.messages)
      if (!posted.count({Message{from, to, k}, !mine})) {
        d << (firstWait ? "" : ", ")
          << (mine ? "device " + std::to_string(to) + " to receive message #" +
                         std::to_string(k) + " from it"
                   : "device " + std::to_string(from) + " to send message #" +
                         std::to_string(k));
        firstWait = false;
      }
  }
  return failure(stuck);
}

struct DistVerifyExchangesPass
    : hetpar::impl::DistVerifyExchangesPassBase<DistVerifyExchangesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::map<int64_t, func::FuncOp> programs;
    bool ok = true;
    for (auto f : module.getOps<func::FuncOp>()) {
      auto id = f->getAttrOfType<IntegerAttr>(kDeviceAttrName);
      if (!id)
        continue;
      auto [it, inserted] = programs.insert({id.getInt(), f});
      if (!inserted) {
        f.emitError() << "device " << id.getInt() << " already runs @"
                      << it->second.getSymName();
        ok = false;
      }
    }
    // Point-to-point: per (from, to), the sends of `from` and the receives
    // of `to`, in program order. Collectives: per (mesh, group), each
    // member's sequence.
    std::map<std::pair<int64_t, int64_t>, SmallVector<SendOp>> sends;
    std::map<std::pair<int64_t, int64_t>, SmallVector<RecvOp>> recvs;
    using GroupKey = std::pair<std::string, std::vector<int64_t>>;
    std::map<GroupKey, std::map<int64_t, SmallVector<Operation *>>> groups;
    for (auto &[device, f] : programs) {
      int64_t me = device;
      f.walk([&](Operation *op) {
        if (auto send = dyn_cast<SendOp>(op))
          sends[{me, int64_t(send.getPeerAttr().getInt())}].push_back(send);
        else if (auto recv = dyn_cast<RecvOp>(op))
          recvs[{int64_t(recv.getPeerAttr().getInt()), me}].push_back(recv);
        else if (isa<AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp,
                     BroadcastOp>(op)) {
          auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
          auto group = op->getAttrOfType<DenseI64ArrayAttr>("devices");
          GroupKey key{mesh.getValue().str(),
                       std::vector<int64_t>(group.asArrayRef().begin(),
                                            group.asArrayRef().end())};
          groups[key][me].push_back(op);
        }
      });
    }

    std::set<std::pair<int64_t, int64_t>> pairs;
    for (auto &[k, v] : sends)
      pairs.insert(k);
    for (auto &[k, v] : recvs)
      pairs.insert(k);
    for (auto [from, to] : pairs) {
      auto &s = sends[{from, to}];
      auto &r = recvs[{from, to}];
      for (size_t i = 0; i < std::max(s.size(), r.size()); ++i) {
        if (i >= r.size()) {
          s[i].emitOpError()
              << "send #" << i << " from device " << from << " to device " << to
              << " has no matching recv on device " << to
              << (programs.count(to) ? "" : " (no program)");
          ok = false;
          break;
        }
        if (i >= s.size()) {
          r[i].emitOpError()
              << "recv #" << i << " on device " << to << " from device " << from
              << " has no matching send on device " << from
              << (programs.count(from) ? "" : " (no program)");
          ok = false;
          break;
        }
        if (s[i].getTagAttr().getInt() != r[i].getTagAttr().getInt() ||
            s[i].getInput().getType() != r[i].getResult().getType()) {
          InFlightDiagnostic d = r[i].emitOpError()
                                 << "recv #" << i << " from device " << from
                                 << " expects tag "
                                 << r[i].getTagAttr().getInt() << " and "
                                 << r[i].getResult().getType() << ", but send #"
                                 << i << " of device " << from << " has tag "
                                 << s[i].getTagAttr().getInt() << " and "
                                 << s[i].getInput().getType();
          d.attachNote(s[i].getLoc()) << "the send";
          ok = false;
          break;
        }
      }
    }

    for (auto &[key, members] : groups) {
      const std::vector<int64_t> &group = key.second;
      // The first member with a program is the reference.
      std::optional<int64_t> ref;
      for (int64_t d : group) {
        if (!programs.count(d)) {
          Operation *any = members.begin()->second.front();
          any->emitOpError()
              << "device " << d << " of its group has no "
              << "program (no function with dist.device = " << d << ")";
          ok = false;
          continue;
        }
        if (!ref) {
          ref = d;
          continue;
        }
        auto &a = members[*ref];
        auto &b = members[d];
        for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
          if (i >= b.size() || i >= a.size()) {
            Operation *extra = i >= b.size() ? a[i] : b[i];
            int64_t missing = i >= b.size() ? d : *ref;
            extra->emitOpError()
                << "is collective #" << i << " of its group, but device "
                << missing << " of the group runs only "
                << std::min(a.size(), b.size()) << " on it";
            ok = false;
            break;
          }
          if (signature(a[i]) != signature(b[i])) {
            InFlightDiagnostic diag =
                b[i]->emitOpError()
                << "is collective #" << i << " of its group on device " << d
                << ", but device " << *ref << " runs a different one there";
            diag.attachNote(a[i]->getLoc()) << "device " << *ref << "'s";
            ok = false;
            break;
          }
        }
      }
    }
    if (ok && failed(checkDeadlockFree(programs)))
      ok = false;
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
