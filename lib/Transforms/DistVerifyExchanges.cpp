//===- DistVerifyExchanges.cpp - hetpar-dist-verify-exchanges -------------===//
//
// Matches the sends, receives and collectives of the per-device functions
// against each other (Passes.td has the rules).
//
//===----------------------------------------------------------------------===//

#include "hetpar/Dialect/Dist/DistOps.h"
#include "hetpar/Transforms/Passes.h"

#include <map>

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
    if (!ok)
      signalPassFailure();
  }
};
} // namespace
