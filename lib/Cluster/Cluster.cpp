//===- Cluster.cpp - queries and printing
//-----------------------------------===//
#include "hetpar/Cluster/Cluster.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"

namespace hetpar {

const Device *Cluster::findDevice(int id) const {
  // Ids are usually the positions (the parser numbers devices in order).
  if (id >= 0 && static_cast<size_t>(id) < devices.size() &&
      devices[id].id == id)
    return &devices[id];
  for (const Device &d : devices)
    if (d.id == id)
      return &d;
  return nullptr;
}

int Cluster::tierOf(llvm::ArrayRef<int> deviceIds) const {
  int firstNode = -1, firstGroup = -1, tier = 0;
  for (int id : deviceIds) {
    const Device *d = findDevice(id);
    if (!d)
      continue;
    int group = nodes[d->node].group;
    if (firstNode < 0) {
      firstNode = d->node;
      firstGroup = group;
      continue;
    }
    if (d->node != firstNode)
      tier = std::max(tier, 1);
    if (group != firstGroup)
      tier = 2;
  }
  return tier;
}

Link Cluster::slowestLink(llvm::ArrayRef<int> deviceIds) const {
  int tier = tierOf(deviceIds);
  if (tier == 2 && topNetwork)
    return *topNetwork;
  if (tier >= 1) {
    // Across nodes: the group's network (all nodes of one group) or the
    // cluster's.
    const Device *d =
        deviceIds.empty() ? nullptr : findDevice(deviceIds.front());
    if (d && nodes[d->node].group >= 0)
      return groups[nodes[d->node].group].network;
    return network;
  }
  Link slowest;
  for (int id : deviceIds) {
    const Device *d = findDevice(id);
    if (!d)
      continue;
    const Link &l = nodes[d->node].intra;
    if (slowest.bandwidth == 0 || l.bandwidth < slowest.bandwidth)
      slowest = l;
  }
  return slowest;
}

Cluster Cluster::singleDevice(llvm::StringRef kind) {
  Cluster c;
  c.name = "local-" + kind.str();
  c.file = "<single device>";
  const DeviceKind *k = lookupDeviceKind(kind);
  Device d{0,
           k ? k->name : kind.str(),
           0,
           k ? k->fp32Flops : 0,
           k ? k->tensorFlops : 0,
           k ? k->memoryBytes : 0,
           k ? k->memoryBandwidth : 0};
  c.devices.push_back(d);
  Node n;
  n.name = "local";
  n.devices = {0};
  if (const LinkKind *l = lookupLinkKind(k ? k->defaultLink : "PCIe4"))
    n.intra = Link{l->name, l->cls, l->bandwidth, l->latency};
  c.nodes.push_back(n);
  c.network = Link{"none", LinkClass::Network, 1e30, 0};
  return c;
}

static std::string describeLink(const Link &l) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << l.kind << " (" << llvm::format("%.2f", l.bandwidth / 1e9) << " GB/s, "
     << llvm::format("%.1f", l.latency * 1e6) << " us)";
  return out;
}

void printCluster(const Cluster &c, llvm::raw_ostream &os) {
  os << "cluster " << (c.name.empty() ? std::string("(unnamed)") : c.name)
     << ": " << c.devices.size()
     << (c.devices.size() == 1 ? " device" : " devices") << " in "
     << c.nodes.size() << (c.nodes.size() == 1 ? " node" : " nodes");
  if (!c.groups.empty())
    os << " and " << c.groups.size() << " groups";
  os << "\n";
  double flops = 0, tensor = 0, memory = 0;
  for (const Device &d : c.devices) {
    flops += d.fp32Flops / d.slowdown;
    tensor += d.tensorFlops / d.slowdown;
    memory += d.memoryBytes;
  }
  for (const Node &n : c.nodes) {
    os << "  node " << n.name << ": " << n.devices.size() << " devices, "
       << describeLink(n.intra) << ", " << n.nics << " NIC(s)";
    if (n.group >= 0)
      os << ", group " << c.groups[n.group].name;
    os << "\n";
    for (int id : n.devices) {
      const Device *d = c.findDevice(id);
      os << llvm::format("    device %d: %s, %.1f TFLOP/s fp32, %.1f TFLOP/s "
                         "tensor, %.0f GB at %.0f GB/s",
                         id, d->kind.c_str(), d->fp32Flops / 1e12,
                         d->tensorFlops / 1e12, d->memoryBytes / 1e9,
                         d->memoryBandwidth / 1e9);
      if (d->slowdown != 1.0)
        os << llvm::format(", slowdown %.2f", d->slowdown);
      os << "\n";
    }
  }
  if (c.nodes.size() > 1)
    os << "  network between nodes: " << describeLink(c.network) << "\n";
  for (const Group &g : c.groups)
    os << "  group " << g.name << ": " << g.nodes.size() << " nodes, "
       << describeLink(g.network) << "\n";
  if (c.topNetwork)
    os << "  network between groups: " << describeLink(*c.topNetwork) << "\n";
  os << llvm::format(
      "  total: %.1f TFLOP/s fp32, %.1f TFLOP/s tensor, %.0f GB\n",
      flops / 1e12, tensor / 1e12, memory / 1e9);
}

} // namespace hetpar
