//===- hetpar-cluster.cpp - load, check and show a cluster description
//-----===//
//
// Usage: hetpar-cluster CLUSTER.yaml        print the cluster as HetPar sees it
//        hetpar-cluster --catalog           list the built-in device and link
//        kinds
//
// Exit status 1 with one diagnostic (file:line:col: field: problem) on a bad
// file.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Cluster/Cluster.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

static cl::OptionCategory category("hetpar-cluster options");
static cl::opt<std::string> path(cl::Positional, cl::desc("<cluster.yaml>"),
                                 cl::cat(category));
static cl::opt<bool>
    catalog("catalog", cl::desc("List the built-in device and link kinds"),
            cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "HetPar cluster description checker\n");
  if (catalog) {
    llvm::outs() << "device kinds (dense FLOP/s, memory, bandwidth, source):\n";
    for (const hetpar::DeviceKind &k : hetpar::getDeviceCatalog())
      llvm::outs() << llvm::format(
          "  %-16s %7.1f TFLOP/s fp32 %7.1f TFLOP/s tensor "
          "%4.0f GB %6.0f GB/s  %s\n",
          k.name.c_str(), k.fp32Flops / 1e12, k.tensorFlops / 1e12,
          k.memoryBytes / 1e9, k.memoryBandwidth / 1e9, k.source.c_str());
    llvm::outs() << "link kinds (per direction):\n";
    for (const hetpar::LinkKind &k : hetpar::getLinkCatalog())
      llvm::outs() << llvm::format("  %-8s %7.2f GB/s %5.1f us  %s\n",
                                   k.name.c_str(), k.bandwidth / 1e9,
                                   k.latency * 1e6, k.source.c_str());
    return 0;
  }
  if (path.empty()) {
    llvm::errs() << "hetpar-cluster: error: give a cluster file or --catalog\n";
    return 1;
  }
  auto cluster = hetpar::loadCluster(path);
  if (!cluster) {
    llvm::errs() << "hetpar-cluster: error: "
                 << llvm::toString(cluster.takeError()) << "\n";
    return 1;
  }
  hetpar::printCluster(*cluster, llvm::outs());
  return 0;
}
