//===- Cluster.h - heterogeneous cluster description -------------*- C++
//-*-===//
//
// A cluster: nodes holding devices (GPU kinds from a catalog, with optional
// per-device overrides), the link inside each node, the network between nodes,
// and optionally groups of nodes (racks, sites) joined by a slower network: up
// to three communication tiers. Loaded from YAML (llvm::yaml); every error
// names the file, line and field.
//
// Units everywhere: FLOP/s, bytes, bytes/s, seconds.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_CLUSTER_CLUSTER_H
#define HETPAR_CLUSTER_CLUSTER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace hetpar {

/// A GPU kind's datasheet numbers.
struct DeviceKind {
  std::string name;        ///< catalog key, e.g. "A100-SXM4-80GB"
  double fp32Flops;        ///< peak dense FP32 (non-tensor) FLOP/s
  double tensorFlops;      ///< peak dense FP16/BF16 tensor-core FLOP/s
  double memoryBytes;      ///< device memory, bytes
  double memoryBandwidth;  ///< device memory bandwidth, bytes/s
  std::string defaultLink; ///< the link this form factor uses inside a node
  std::string source;      ///< datasheet the numbers come from
  /// CUDA compute capability times 10 (90: sm_90), the architecture the
  /// kind's CUDA programs are built for (NVIDIA's list of CUDA GPUs,
  /// developer.nvidia.com/cuda-gpus); 0 for a kind that is not a CUDA GPU.
  int computeCapability = 0;
};

/// What a link is in the communication model.
enum class LinkClass { NVLink, PCIe, Network };

/// A link kind's datasheet numbers (per direction, per GPU or per NIC).
struct LinkKind {
  std::string name; ///< catalog key, e.g. "NVLink3", "PCIe4", "100GbE"
  LinkClass cls;
  double bandwidth; ///< bytes/s per direction
  double latency;   ///< seconds per hop (alpha)
  std::string source;
};

/// The built-in catalog (Catalog.cpp). Lookups are case-insensitive.
llvm::ArrayRef<DeviceKind> getDeviceCatalog();
llvm::ArrayRef<LinkKind> getLinkCatalog();
const DeviceKind *lookupDeviceKind(llvm::StringRef name);
const LinkKind *lookupLinkKind(llvm::StringRef name);

/// One device of the cluster, with overrides applied.
struct Device {
  int id;           ///< cluster-wide id (plan.json refers to it)
  std::string kind; ///< catalog key
  int node;         ///< index into Cluster::nodes
  double fp32Flops, tensorFlops, memoryBytes, memoryBandwidth;
  /// >= 1: every compute time on this device is multiplied by it (a straggler).
  double slowdown = 1.0;
};

/// A link as used: bandwidth (bytes/s per direction) and per-hop latency (s).
struct Link {
  std::string kind;
  LinkClass cls = LinkClass::Network;
  double bandwidth = 0;
  double latency = 0;
};

struct Node {
  std::string name;
  std::vector<int> devices; ///< device ids
  Link intra;               ///< between devices of this node
  int nics = 1;             ///< NICs to the network above the node
  int group = -1;           ///< index into Cluster::groups, -1 when none
};

/// A rack or site: nodes joined by `network`; groups are joined by the
/// cluster's top network.
struct Group {
  std::string name;
  std::vector<int> nodes;
  Link network;
};

struct Cluster {
  std::string name;
  std::string file; ///< where it was loaded from
  std::vector<Device> devices;
  std::vector<Node> nodes;
  std::vector<Group> groups;
  /// Between nodes (of one group when groups are given, else of the cluster).
  Link network;
  /// Between groups (only with groups).
  std::optional<Link> topNetwork;

  const Device *findDevice(int id) const;
  /// The lowest tier that joins all `deviceIds`: 0 inside one node, 1 across
  /// nodes of one group (or of the cluster), 2 across groups.
  int tierOf(llvm::ArrayRef<int> deviceIds) const;
  /// The slowest link a collective over `deviceIds` crosses, and its tier.
  Link slowestLink(llvm::ArrayRef<int> deviceIds) const;

  /// A one-device cluster of `kind` (hetpar-compile without --cluster).
  static Cluster singleDevice(llvm::StringRef kind);
};

/// Loads and validates a cluster file. Errors read "FILE:LINE:COL: FIELD: what
/// is wrong" (unknown kinds, non-positive bandwidth, duplicate device ids, a
/// node without devices, ...).
llvm::Expected<Cluster> loadCluster(llvm::StringRef path);
/// The same from text (`path` names it in errors).
llvm::Expected<Cluster> parseCluster(llvm::StringRef text,
                                     llvm::StringRef path);

/// Human-readable summary: devices per node with their numbers, links per tier.
void printCluster(const Cluster &cluster, llvm::raw_ostream &os);

} // namespace hetpar

#endif // HETPAR_CLUSTER_CLUSTER_H
