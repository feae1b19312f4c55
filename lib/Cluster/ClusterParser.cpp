//===- ClusterParser.cpp - cluster YAML to hetpar::Cluster
//------------------===//
//
// docs/cluster-format.md describes the format. Errors come from YAMLReader:
// "FILE:LINE:COL: FIELD: what is wrong".
//
//===----------------------------------------------------------------------===//

#include "hetpar/Cluster/Cluster.h"
#include "hetpar/Support/YAMLReader.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace hetpar {

namespace {

/// The most devices a cluster may have: far above any cluster built (the
/// largest have tens of thousands of GPUs), low enough that a typo in a count
/// cannot exhaust memory.
constexpr int64_t kMaxDevices = 1 << 17;

/// Everything about the cluster that is resolved once the whole file is read.
struct PendingGroup {
  Group group;
  std::vector<std::pair<std::string, std::string>> members; // name, location
};

class ClusterParser {
public:
  ClusterParser(StringRef text, StringRef path)
      : in(text, path), path(path.str()) {}
  Expected<Cluster> run();

private:
  YAMLReader in;
  std::string path;
  Cluster c;
  struct ExplicitId {
    int id;
    std::string where, field; // location, field path
  };
  std::vector<ExplicitId> explicitIds;
  std::vector<std::string> nodeWhere;
  std::vector<PendingGroup> groups;
  std::string groupsWhere;

  std::optional<Link> link(yaml::Node *node, const Twine &field);
  bool device(yaml::Node *node, const std::string &field, int nodeIndex,
              std::vector<std::string> &defaultLinks);
  bool nodes(yaml::Node *node);
  bool group(yaml::Node *node, const std::string &where);
};

/// A link: a catalog kind ("NVLink3", or {kind: NVLink3}) or custom numbers
/// ({bandwidth_gb_per_s: 12.5, latency_us: 14, class: network}); numbers given
/// next to a kind override it.
std::optional<Link> ClusterParser::link(yaml::Node *node,
                                        const Twine &fieldTwine) {
  std::string field = fieldTwine.str();
  Link out;
  auto setKind = [&](yaml::Node *n, StringRef name) -> bool {
    const LinkKind *k = lookupLinkKind(name);
    if (!k) {
      std::string known;
      for (const LinkKind &lk : getLinkCatalog())
        known += (known.empty() ? "" : ", ") + lk.name;
      return in.fail(n, field,
                     "unknown link kind '" + name + "' (known: " + known + ")");
    }
    out = Link{k->name, k->cls, k->bandwidth, k->latency};
    return true;
  };
  if (isa_and_nonnull<yaml::ScalarNode>(node)) {
    auto name = in.scalar(node, field);
    if (!name || !setKind(node, *name))
      return std::nullopt;
    return out;
  }
  bool haveKind = false, haveBandwidth = false;
  std::optional<double> bandwidth, latency;
  std::optional<LinkClass> cls;
  bool ok = in.forEachField(
      node, field, {"kind", "bandwidth_gb_per_s", "latency_us", "class"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = field + "." + key.str();
        if (key == "kind") {
          auto name = in.scalar(value, f);
          haveKind = true;
          return name && setKind(value, *name);
        }
        if (key == "bandwidth_gb_per_s") {
          haveBandwidth = true;
          bandwidth = in.positive(value, f);
          return bandwidth.has_value();
        }
        if (key == "latency_us") {
          latency = in.nonNegative(value, f);
          return latency.has_value();
        }
        auto name = in.scalar(value, f);
        if (!name)
          return false;
        if (*name == "nvlink")
          cls = LinkClass::NVLink;
        else if (*name == "pcie")
          cls = LinkClass::PCIe;
        else if (*name == "network")
          cls = LinkClass::Network;
        else
          return in.fail(value, f, "must be nvlink, pcie or network");
        return true;
      });
  if (!ok)
    return std::nullopt;
  if (!haveKind && !haveBandwidth) {
    in.fail(node, field, "needs a 'kind' or a 'bandwidth_gb_per_s'");
    return std::nullopt;
  }
  if (!haveKind) {
    if (!cls) {
      in.fail(
          node, field,
          "a link without a 'kind' needs a 'class' (nvlink, pcie or network): "
          "it decides the default latency and how collectives use the link");
      return std::nullopt;
    }
    out.kind = "custom";
    out.cls = *cls;
    // The catalog's per-hop latency of the class (NCCL's hwLat, Catalog.cpp).
    for (const LinkKind &k : getLinkCatalog())
      if (k.cls == *cls) {
        out.latency = k.latency;
        break;
      }
  }
  if (bandwidth)
    out.bandwidth = *bandwidth * 1e9;
  if (latency)
    out.latency = *latency * 1e-6;
  if (cls)
    out.cls = *cls;
  return out;
}

bool ClusterParser::device(yaml::Node *node, const std::string &field,
                           int nodeIndex,
                           std::vector<std::string> &defaultLinks) {
  const DeviceKind *kind = nullptr;
  int64_t count = 1;
  std::optional<std::vector<int64_t>> ids;
  std::string idsWhere, idsField;
  std::optional<double> fp32, tensor, memory, bandwidth, slowdown;
  bool ok = in.forEachField(
      node, field,
      {"kind", "count", "ids", "fp32_tflops", "tensor_tflops", "memory_gb",
       "memory_bandwidth_gb_per_s", "slowdown"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = field + "." + key.str();
        if (key == "kind") {
          auto name = in.scalar(value, f);
          if (!name)
            return false;
          kind = lookupDeviceKind(*name);
          if (!kind) {
            std::string known;
            for (const DeviceKind &k : getDeviceCatalog())
              known += (known.empty() ? "" : ", ") + k.name;
            return in.fail(value, f,
                           "unknown device kind '" + *name +
                               "' (known: " + known + ")");
          }
          return true;
        }
        if (key == "count") {
          auto v = in.integer(value, f);
          if (v && *v < 1)
            return in.fail(value, f, "must be at least 1");
          if (v && *v > kMaxDevices)
            return in.fail(value, f,
                           "must be at most " + Twine(kMaxDevices) +
                               " (the most devices a cluster may have)");
          count = v.value_or(1);
          return v.has_value();
        }
        if (key == "ids") {
          idsWhere = in.locate(value);
          idsField = f;
          ids = in.integers(value, f);
          if (ids && llvm::any_of(*ids, [](int64_t v) {
                return v < 0 || v > (1 << 30);
              }))
            return in.fail(value, f, "device ids must be between 0 and 2^30");
          return ids.has_value();
        }
        std::optional<double> v = in.positive(value, f);
        if (key == "fp32_tflops")
          fp32 = v ? std::optional<double>(*v * 1e12) : std::nullopt;
        else if (key == "tensor_tflops")
          tensor = v ? std::optional<double>(*v * 1e12) : std::nullopt;
        else if (key == "memory_gb")
          memory = v ? std::optional<double>(*v * 1e9) : std::nullopt;
        else if (key == "memory_bandwidth_gb_per_s")
          bandwidth = v ? std::optional<double>(*v * 1e9) : std::nullopt;
        else if (v && *v < 1)
          return in.fail(
              value, f,
              "must be at least 1 (a straggler's factor on every "
              "compute time; give faster devices their own numbers)");
        else
          slowdown = v;
        return v.has_value();
      });
  if (!ok)
    return false;
  if (!kind)
    return in.fail(node, field, "needs a 'kind'");
  if (ids && static_cast<int64_t>(ids->size()) != count)
    return in.fail(node, field + ".ids",
                   "has " + Twine(ids->size()) + " ids for count " +
                       Twine(count));
  if (static_cast<int64_t>(c.devices.size()) + count > kMaxDevices)
    return in.fail(node, field + ".count",
                   "the cluster would have more than " + Twine(kMaxDevices) +
                       " devices");
  for (int64_t i = 0; i < count; ++i) {
    Device d;
    d.id = ids ? static_cast<int>((*ids)[i]) : -1;
    if (ids)
      explicitIds.push_back({d.id, idsWhere, idsField});
    d.kind = kind->name;
    d.node = nodeIndex;
    d.fp32Flops = fp32.value_or(kind->fp32Flops);
    d.tensorFlops = tensor.value_or(kind->tensorFlops);
    d.memoryBytes = memory.value_or(kind->memoryBytes);
    d.memoryBandwidth = bandwidth.value_or(kind->memoryBandwidth);
    d.slowdown = slowdown.value_or(1.0);
    c.devices.push_back(d);
  }
  defaultLinks.push_back(kind->defaultLink);
  return true;
}

bool ClusterParser::nodes(yaml::Node *list) {
  bool ok =
      in.forEachItem(list, "nodes", [&](unsigned index, yaml::Node *item) {
        std::string where = "nodes[" + std::to_string(index) + "]";
        Node n;
        n.name = "node" + std::to_string(index);
        std::vector<std::string> defaultLinks;
        bool haveLink = false;
        size_t firstDevice = c.devices.size();
        nodeWhere.push_back(in.locate(item));
        bool fieldsOk = in.forEachField(
            item, where,
            {"name", "devices", "interconnect", "nics", "nvswitch"},
            [&](StringRef key, yaml::Node *value) {
              std::string f = where + "." + key.str();
              if (key == "name") {
                auto s = in.scalar(value, f);
                n.name = s.value_or("");
                return s.has_value();
              }
              if (key == "devices")
                return in.forEachItem(value, f, [&](unsigned k, yaml::Node *d) {
                  return device(d, f + "[" + std::to_string(k) + "]", index,
                                defaultLinks);
                });
              if (key == "interconnect") {
                haveLink = true;
                auto l = link(value, f);
                if (l)
                  n.intra = *l;
                return l.has_value();
              }
              if (key == "nvswitch")
                return in.boolean(value, f).has_value();
              auto v = in.integer(value, f);
              if (v && *v < 1)
                return in.fail(value, f, "must be at least 1");
              n.nics = v.value_or(1);
              return v.has_value();
            });
        if (!fieldsOk)
          return false;
        if (c.devices.size() == firstDevice)
          return in.fail(item, where, "node '" + n.name + "' has no devices");
        if (!haveLink) {
          // The devices' own link; with mixed form factors, the slowest.
          for (const std::string &name : defaultLinks) {
            const LinkKind *k = lookupLinkKind(name);
            if (k &&
                (n.intra.bandwidth == 0 || k->bandwidth < n.intra.bandwidth))
              n.intra = Link{k->name, k->cls, k->bandwidth, k->latency};
          }
        }
        for (size_t d = firstDevice; d < c.devices.size(); ++d)
          n.devices.push_back(d); // indices for now; ids are assigned later
        c.nodes.push_back(n);
        return true;
      });
  if (ok && c.nodes.empty())
    return in.fail(list, "nodes", "the cluster has no nodes");
  return ok;
}

bool ClusterParser::group(yaml::Node *item, const std::string &where) {
  PendingGroup g;
  g.group.name = "group" + std::to_string(groups.size());
  bool ok = in.forEachField(
      item, where, {"name", "nodes", "network"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = where + "." + key.str();
        if (key == "name") {
          auto s = in.scalar(value, f);
          g.group.name = s.value_or("");
          return s.has_value();
        }
        if (key == "network") {
          auto l = link(value, f);
          if (l)
            g.group.network = *l;
          return l.has_value();
        }
        return in.forEachItem(value, f, [&](unsigned, yaml::Node *n) {
          auto name = in.scalar(n, f);
          if (name)
            g.members.push_back({*name, in.locate(n)});
          return name.has_value();
        });
      });
  if (!ok)
    return false;
  if (g.members.empty())
    return in.fail(item, where, "group '" + g.group.name + "' has no nodes");
  groups.push_back(std::move(g));
  return true;
}

Expected<Cluster> ClusterParser::run() {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  c.file = path;
  yaml::Node *root = in.root("cluster file");
  if (!root)
    return error(in.error());
  std::string rootWhere = in.locate(root);
  bool haveNodes = false, haveNetwork = false, haveTop = false;
  bool ok = in.forEachField(
      root, "cluster", {"name", "nodes", "network", "groups", "top_network"},
      [&](StringRef key, yaml::Node *value) {
        if (key == "name") {
          auto n = in.scalar(value, "name");
          c.name = n.value_or("");
          return n.has_value();
        }
        if (key == "nodes") {
          haveNodes = true;
          return nodes(value);
        }
        if (key == "groups") {
          groupsWhere = in.locate(value);
          return in.forEachItem(
              value, "groups", [&](unsigned i, yaml::Node *g) {
                return group(g, "groups[" + std::to_string(i) + "]");
              });
        }
        auto l = link(value, key);
        if (!l)
          return false;
        if (key == "network") {
          haveNetwork = true;
          c.network = *l;
        } else {
          haveTop = true;
          c.topNetwork = *l;
        }
        return true;
      });
  if (!ok || !in.error().empty())
    return error(in.error());
  // From here on only text locations are used: the document is gone.
  auto failAt = [&](const std::string &where, const Twine &field,
                    const Twine &msg) {
    return error(where + ": " + field + ": " + msg);
  };
  if (!haveNodes)
    return failAt(rootWhere, "nodes", "is required (a list of nodes)");

  // Device ids: explicit ones as given, the others numbered 0, 1, 2, ... in
  // file order, skipping ids given explicitly.
  DenseSet<int> used;
  for (auto &[id, where, field] : explicitIds)
    if (!used.insert(id).second)
      return failAt(where, field, "device id " + Twine(id) + " is used twice");
  int next = 0;
  for (Device &d : c.devices) {
    if (d.id >= 0)
      continue;
    while (used.count(next))
      ++next;
    d.id = next;
    used.insert(next);
  }
  for (Node &n : c.nodes)
    for (int &d : n.devices)
      d = c.devices[d].id;

  StringMap<int> names;
  for (auto [i, n] : enumerate(c.nodes))
    if (!names.try_emplace(n.name, i).second)
      return failAt(nodeWhere[i], "nodes[" + Twine(i) + "].name",
                    "node name '" + n.name + "' is used twice");

  if (!haveNetwork) {
    if (c.nodes.size() > 1)
      return failAt(rootWhere, "network",
                    "is required when the cluster has more than one node");
    c.network = Link{"none", LinkClass::Network, 1e30, 0};
  }

  for (auto [gi, pending] : enumerate(groups)) {
    Group g = pending.group;
    if (g.network.bandwidth == 0)
      g.network = c.network;
    for (auto &[name, where] : pending.members) {
      auto it = names.find(name);
      if (it == names.end())
        return failAt(where, "groups[" + Twine(gi) + "].nodes",
                      "no node is named '" + name + "'");
      Node &n = c.nodes[it->second];
      if (n.group >= 0)
        return failAt(where, "groups[" + Twine(gi) + "].nodes",
                      "node '" + name + "' is in two groups");
      n.group = gi;
      g.nodes.push_back(it->second);
    }
    c.groups.push_back(g);
  }
  if (!c.groups.empty()) {
    for (auto [i, n] : enumerate(c.nodes))
      if (n.group < 0)
        return failAt(
            nodeWhere[i], "groups",
            "node '" + n.name +
                "' is in no group (with groups, every node is in one)");
    if (c.groups.size() > 1 && !haveTop)
      return failAt(groupsWhere, "top_network",
                    "is required when there is more than one group");
  } else if (haveTop) {
    return failAt(rootWhere, "top_network", "is only meaningful with groups");
  }
  return c;
}

} // namespace

Expected<Cluster> parseCluster(StringRef text, StringRef path) {
  ClusterParser parser(text, path);
  return parser.run();
}

Expected<Cluster> loadCluster(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return createStringError(
        buffer.getError(), "cannot read cluster file '%s': %s",
        path.str().c_str(), buffer.getError().message().c_str());
  return parseCluster((*buffer)->getBuffer(), path);
}

} // namespace hetpar
