//===- ClusterParser.cpp - cluster YAML to hetpar::Cluster
//------------------===//
//
// The YAML document tree (llvm::yaml::Stream) is walked by hand so that every
// error can name the file, line, column and field, and unknown fields (typos)
// are errors rather than silently ignored. docs/cluster-format.md describes the
// format.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Cluster/Cluster.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <cmath>

using namespace llvm;

namespace hetpar {

namespace {

class ClusterParser {
public:
  ClusterParser(StringRef text, StringRef path) : path(path.str()) {
    sm.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(text, path), SMLoc());
  }

  Expected<Cluster> run();

private:
  SourceMgr sm;
  std::string path;
  std::string error;

  /// Records the first error, at `node`, as "file:line:col: field: message".
  bool fail(yaml::Node *node, const Twine &field, const Twine &message) {
    if (!error.empty())
      return false;
    unsigned line = 0, col = 0;
    if (node) {
      auto lc = sm.getLineAndColumn(node->getSourceRange().Start);
      line = lc.first;
      col = lc.second;
    }
    error = (path + ":" + Twine(line) + ":" + Twine(col) + ": " + field + ": " +
             message)
                .str();
    return false;
  }

  std::optional<std::string> scalar(yaml::Node *node, const Twine &field) {
    auto *s = dyn_cast_or_null<yaml::ScalarNode>(node);
    if (!s) {
      fail(node, field, "must be a scalar");
      return std::nullopt;
    }
    SmallString<32> storage;
    return s->getValue(storage).str();
  }

  std::optional<double> number(yaml::Node *node, const Twine &field) {
    auto text = scalar(node, field);
    if (!text)
      return std::nullopt;
    double v;
    if (StringRef(*text).trim().getAsDouble(v) || !std::isfinite(v)) {
      fail(node, field, "must be a number, got '" + *text + "'");
      return std::nullopt;
    }
    return v;
  }

  std::optional<double> positive(yaml::Node *node, const Twine &field) {
    auto v = number(node, field);
    if (v && *v <= 0) {
      fail(node, field, "must be positive, got " + *scalar(node, field));
      return std::nullopt;
    }
    return v;
  }

  std::optional<int64_t> integer(yaml::Node *node, const Twine &field) {
    auto text = scalar(node, field);
    if (!text)
      return std::nullopt;
    int64_t v;
    if (StringRef(*text).trim().getAsInteger(10, v)) {
      fail(node, field, "must be an integer, got '" + *text + "'");
      return std::nullopt;
    }
    return v;
  }

  /// Iterates a mapping, calling `fn(key, value)`; keys outside `allowed` are
  /// errors (a misspelt field would otherwise be ignored).
  bool forEachField(yaml::Node *node, const Twine &where,
                    ArrayRef<StringRef> allowed,
                    function_ref<bool(StringRef, yaml::Node *)> fn) {
    auto *map = dyn_cast_or_null<yaml::MappingNode>(node);
    if (!map)
      return fail(node, where, "must be a mapping");
    StringSet<> seen;
    for (auto &kv : *map) {
      auto key = scalar(kv.getKey(), where + " key");
      if (!key)
        return false;
      if (!is_contained(allowed, *key)) {
        std::string list;
        for (StringRef a : allowed)
          list += (list.empty() ? "" : ", ") + a.str();
        return fail(kv.getKey(), where,
                    "unknown field '" + *key + "' (fields: " + list + ")");
      }
      if (!seen.insert(*key).second)
        return fail(kv.getKey(), where, "field '" + *key + "' is given twice");
      if (!fn(*key, kv.getValue()))
        return false;
    }
    return true;
  }

  std::optional<Link> link(yaml::Node *node, const Twine &field);
  bool device(yaml::Node *node, const Twine &field, Cluster &c, int nodeIndex,
              std::vector<std::pair<int, std::string>> &explicitIds,
              std::vector<std::string> &kinds);
};

/// A link: a catalog kind ("NVLink3", or {kind: NVLink3}) or custom numbers
/// ({bandwidth_gb_per_s: 12.5, latency_us: 14, class: network}); numbers given
/// next to a kind override it.
std::optional<Link> ClusterParser::link(yaml::Node *node, const Twine &field) {
  Link out;
  auto setKind = [&](yaml::Node *n, StringRef name) -> bool {
    const LinkKind *k = lookupLinkKind(name);
    if (!k) {
      std::string known;
      for (const LinkKind &lk : getLinkCatalog())
        known += (known.empty() ? "" : ", ") + lk.name;
      return fail(n, field,
                  "unknown link kind '" + name + "' (known: " + known + ")");
    }
    out.kind = k->name;
    out.cls = k->cls;
    out.bandwidth = k->bandwidth;
    out.latency = k->latency;
    return true;
  };
  if (isa_and_nonnull<yaml::ScalarNode>(node)) {
    auto name = scalar(node, field);
    if (!name || !setKind(node, *name))
      return std::nullopt;
    return out;
  }
  bool haveKind = false, haveBandwidth = false;
  bool ok = forEachField(
      node, field, {"kind", "bandwidth_gb_per_s", "latency_us", "class"},
      [&](StringRef key, yaml::Node *value) {
        if (key == "kind") {
          auto name = scalar(value, field + ".kind");
          haveKind = true;
          return name && setKind(value, *name);
        }
        if (key == "bandwidth_gb_per_s") {
          auto v = positive(value, field + ".bandwidth_gb_per_s");
          haveBandwidth = true;
          out.bandwidth = v.value_or(0) * 1e9;
          return v.has_value();
        }
        if (key == "latency_us") {
          auto v = number(value, field + ".latency_us");
          if (v && *v < 0)
            return fail(value, field + ".latency_us", "must not be negative");
          out.latency = v.value_or(0) * 1e-6;
          return v.has_value();
        }
        auto cls = scalar(value, field + ".class");
        if (!cls)
          return false;
        if (*cls == "nvlink")
          out.cls = LinkClass::NVLink;
        else if (*cls == "pcie")
          out.cls = LinkClass::PCIe;
        else if (*cls == "network")
          out.cls = LinkClass::Network;
        else
          return fail(value, field + ".class",
                      "must be nvlink, pcie or network");
        return true;
      });
  if (!ok)
    return std::nullopt;
  if (!haveKind && !haveBandwidth) {
    fail(node, field, "needs a 'kind' or a 'bandwidth_gb_per_s'");
    return std::nullopt;
  }
  if (out.kind.empty())
    out.kind = "custom";
  return out;
}

bool ClusterParser::device(
    yaml::Node *node, const Twine &field, Cluster &c, int nodeIndex,
    std::vector<std::pair<int, std::string>> &explicitIds,
    std::vector<std::string> &kinds) {
  const DeviceKind *kind = nullptr;
  int64_t count = 1;
  std::vector<int64_t> ids;
  yaml::Node *idsNode = nullptr;
  std::optional<double> fp32, tensor, memory, bandwidth, slowdown;
  bool ok = forEachField(
      node, field,
      {"kind", "count", "ids", "fp32_tflops", "tensor_tflops", "memory_gb",
       "memory_bandwidth_gb_per_s", "slowdown"},
      [&](StringRef key, yaml::Node *value) {
        std::string f = (field + "." + key).str();
        if (key == "kind") {
          auto name = scalar(value, f);
          if (!name)
            return false;
          kind = lookupDeviceKind(*name);
          if (!kind) {
            std::string known;
            for (const DeviceKind &k : getDeviceCatalog())
              known += (known.empty() ? "" : ", ") + k.name;
            return fail(value, f,
                        "unknown device kind '" + *name + "' (known: " + known +
                            ")");
          }
          return true;
        }
        if (key == "count") {
          auto v = integer(value, f);
          if (v && *v < 1)
            return fail(value, f, "must be at least 1");
          count = v.value_or(1);
          return v.has_value();
        }
        if (key == "ids") {
          idsNode = value;
          auto *seq = dyn_cast<yaml::SequenceNode>(value);
          if (!seq)
            return fail(value, f, "must be a list of integers");
          for (yaml::Node &item : *seq) {
            auto v = integer(&item, f);
            if (!v)
              return false;
            if (*v < 0)
              return fail(&item, f, "device ids must not be negative");
            ids.push_back(*v);
          }
          return true;
        }
        std::optional<double> v = positive(value, f);
        if (!v)
          return false;
        if (key == "fp32_tflops")
          fp32 = *v * 1e12;
        else if (key == "tensor_tflops")
          tensor = *v * 1e12;
        else if (key == "memory_gb")
          memory = *v * 1e9;
        else if (key == "memory_bandwidth_gb_per_s")
          bandwidth = *v * 1e9;
        else
          slowdown = *v;
        return true;
      });
  if (!ok)
    return false;
  if (!kind)
    return fail(node, field, "needs a 'kind'");
  if (idsNode && static_cast<int64_t>(ids.size()) != count)
    return fail(idsNode, field + ".ids",
                "has " + Twine(ids.size()) + " ids for count " + Twine(count));
  for (int64_t i = 0; i < count; ++i) {
    Device d;
    d.id = idsNode ? static_cast<int>(ids[i]) : -1;
    if (idsNode) {
      auto lc = sm.getLineAndColumn(idsNode->getSourceRange().Start);
      explicitIds.push_back({d.id, path + ":" + std::to_string(lc.first) + ":" +
                                       std::to_string(lc.second)});
    }
    d.kind = kind->name;
    d.node = nodeIndex;
    d.fp32Flops = fp32.value_or(kind->fp32Flops);
    d.tensorFlops = tensor.value_or(kind->tensorFlops);
    d.memoryBytes = memory.value_or(kind->memoryBytes);
    d.memoryBandwidth = bandwidth.value_or(kind->memoryBandwidth);
    d.slowdown = slowdown.value_or(1.0);
    c.devices.push_back(d);
  }
  kinds.push_back(kind->defaultLink);
  return true;
}

Expected<Cluster> ClusterParser::run() {
  // The YAML parser reports syntax errors through the SourceMgr.
  std::string syntax;
  sm.setDiagHandler(
      [](const SMDiagnostic &d, void *ctx) {
        auto *out = static_cast<std::string *>(ctx);
        if (out->empty())
          *out = (d.getFilename() + ":" + Twine(d.getLineNo()) + ":" +
                  Twine(d.getColumnNo() + 1) + ": " + d.getMessage())
                     .str();
      },
      &syntax);
  yaml::Stream stream(sm.getMemoryBuffer(sm.getMainFileID())->getBuffer(), sm,
                      /*ShowColors=*/false);
  Cluster c;
  c.file = path;
  auto doc = stream.begin();
  yaml::Node *root = doc != stream.end() ? doc->getRoot() : nullptr;
  if (!root || isa<yaml::NullNode>(root)) {
    if (!syntax.empty())
      return createStringError(inconvertibleErrorCode(), syntax);
    return createStringError(inconvertibleErrorCode(),
                             path + ": the cluster file is empty");
  }

  // llvm::yaml parses lazily: every value is consumed while its key is visited.
  struct PendingGroup {
    Group group;
    std::vector<std::pair<std::string, std::string>> members; // name, location
  };
  std::vector<PendingGroup> groups;
  std::vector<std::pair<int, std::string>> explicitIds;
  std::vector<std::string> nodeWhere; // "file:line:col" of each node entry
  bool haveNodes = false, haveNetwork = false, haveTop = false;
  std::string groupsWhere;

  auto locate = [&](yaml::Node *n) {
    auto lc = sm.getLineAndColumn(n->getSourceRange().Start);
    return path + ":" + std::to_string(lc.first) + ":" +
           std::to_string(lc.second);
  };
  std::string rootWhere = locate(root);

  auto parseNodes = [&](yaml::Node *nodesNode) -> bool {
    haveNodes = true;
    auto *seq = dyn_cast<yaml::SequenceNode>(nodesNode);
    if (!seq)
      return fail(nodesNode, "nodes", "must be a list");
    for (yaml::Node &item : *seq) {
      int index = c.nodes.size();
      std::string where = "nodes[" + std::to_string(index) + "]";
      Node n;
      n.name = "node" + std::to_string(index);
      std::vector<std::string> defaultLinks;
      bool haveDevices = false, haveLink = false;
      size_t firstDevice = c.devices.size();
      nodeWhere.push_back(locate(&item));
      bool ok = forEachField(
          &item, where, {"name", "devices", "interconnect", "nics", "nvswitch"},
          [&](StringRef key, yaml::Node *value) {
            if (key == "name") {
              auto s = scalar(value, where + ".name");
              n.name = s.value_or("");
              return s.has_value();
            }
            if (key == "devices") {
              haveDevices = true;
              auto *devs = dyn_cast<yaml::SequenceNode>(value);
              if (!devs)
                return fail(value, where + ".devices", "must be a list");
              int k = 0;
              for (yaml::Node &d : *devs)
                if (!device(&d, where + ".devices[" + Twine(k++) + "]", c,
                            index, explicitIds, defaultLinks))
                  return false;
              return true;
            }
            if (key == "interconnect") {
              haveLink = true;
              auto l = link(value, where + ".interconnect");
              if (l)
                n.intra = *l;
              return l.has_value();
            }
            if (key == "nvswitch") {
              auto s = scalar(value, where + ".nvswitch");
              if (s && *s != "true" && *s != "false")
                return fail(value, where + ".nvswitch",
                            "must be true or false");
              return s.has_value();
            }
            auto v = integer(value, where + ".nics");
            if (v && *v < 1)
              return fail(value, where + ".nics", "must be at least 1");
            n.nics = v.value_or(1);
            return v.has_value();
          });
      if (!ok)
        return false;
      if (!haveDevices || c.devices.size() == firstDevice)
        return fail(&item, where, "node '" + n.name + "' has no devices");
      if (!haveLink) {
        // The devices' own link; with mixed form factors, the slowest.
        for (const std::string &name : defaultLinks) {
          const LinkKind *k = lookupLinkKind(name);
          if (k && (n.intra.bandwidth == 0 || k->bandwidth < n.intra.bandwidth))
            n.intra = Link{k->name, k->cls, k->bandwidth, k->latency};
        }
      }
      for (size_t d = firstDevice; d < c.devices.size(); ++d)
        n.devices.push_back(d); // indices for now; ids are assigned below
      c.nodes.push_back(n);
    }
    if (c.nodes.empty())
      return fail(nodesNode, "nodes", "the cluster has no nodes");
    return true;
  };

  auto parseGroups = [&](yaml::Node *groupsNode) -> bool {
    groupsWhere = locate(groupsNode);
    auto *seq = dyn_cast<yaml::SequenceNode>(groupsNode);
    if (!seq)
      return fail(groupsNode, "groups", "must be a list");
    for (yaml::Node &item : *seq) {
      int index = groups.size();
      std::string where = "groups[" + std::to_string(index) + "]";
      PendingGroup g;
      g.group.name = "group" + std::to_string(index);
      bool ok = forEachField(
          &item, where, {"name", "nodes", "network"},
          [&](StringRef key, yaml::Node *value) {
            if (key == "name") {
              auto s = scalar(value, where + ".name");
              g.group.name = s.value_or("");
              return s.has_value();
            }
            if (key == "network") {
              auto l = link(value, where + ".network");
              if (l)
                g.group.network = *l;
              return l.has_value();
            }
            auto *names = dyn_cast<yaml::SequenceNode>(value);
            if (!names)
              return fail(value, where + ".nodes", "must be a list");
            for (yaml::Node &nameNode : *names) {
              auto name = scalar(&nameNode, where + ".nodes");
              if (!name)
                return false;
              g.members.push_back({*name, locate(&nameNode)});
            }
            return true;
          });
      if (!ok)
        return false;
      if (g.members.empty())
        return fail(&item, where, "group '" + g.group.name + "' has no nodes");
      groups.push_back(std::move(g));
    }
    return true;
  };

  bool ok = forEachField(root, "cluster",
                         {"name", "nodes", "network", "groups", "top_network"},
                         [&](StringRef key, yaml::Node *value) {
                           if (key == "name") {
                             auto n = scalar(value, "name");
                             c.name = n.value_or("");
                             return n.has_value();
                           }
                           if (key == "nodes")
                             return parseNodes(value);
                           if (key == "groups")
                             return parseGroups(value);
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
  // Only the first document is read; the yaml nodes are not used after this
  // point (locations were taken as text).
  if (!syntax.empty())
    return createStringError(inconvertibleErrorCode(), syntax);
  if (!ok)
    return createStringError(inconvertibleErrorCode(), error);

  auto failAt = [&](const std::string &where, const Twine &field,
                    const Twine &message) {
    return createStringError(inconvertibleErrorCode(),
                             (where + ": " + field + ": " + message).str());
  };
  if (!haveNodes)
    return failAt(rootWhere, "nodes", "is required (a list of nodes)");

  // Device ids: explicit ones as given, the others numbered 0, 1, 2, ... in
  // file order, skipping ids given explicitly.
  DenseSet<int> used;
  for (auto [id, where] : explicitIds)
    if (!used.insert(id).second)
      return failAt(where, "ids", "device id " + Twine(id) + " is used twice");
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
