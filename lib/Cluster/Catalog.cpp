//===- Catalog.cpp - GPU and link kinds with datasheet numbers
//-------------===//
//
// Units: FLOP/s, bytes, bytes/s, seconds. The last number of a GPU is its
// CUDA compute capability times 10, from NVIDIA's list of CUDA GPUs
// (developer.nvidia.com/cuda-gpus): H100/H200 9.0, A100 8.0, V100 7.0, T4
// 7.5, L4 and L40S 8.9, A10 8.6. Memory sizes are the datasheets'
// decimal gigabytes (10^9 bytes), slightly below what the devices report
// (80 GB A100s show 81920 MiB), so memory checks err on the safe side.
// FLOP/s are dense (no structured sparsity). Link bandwidths are per direction:
// NVLink per GPU (all of its links), PCIe per x16 slot, networks per NIC.
//
// Latencies are the per-hop latencies of NCCL's tuning model for its Ring
// algorithm with the Simple protocol (src/graph/tuning.cc, `hwLat`, NCCL
// 2.18-2.21): NVLink 3.4 us, PCIe 5.7 us, network 14 us.
//
//===----------------------------------------------------------------------===//

#include "hetpar/Cluster/Cluster.h"

#include "llvm/ADT/StringExtras.h"

namespace hetpar {

namespace {
constexpr double TFLOPS = 1e12, GB = 1e9, TBps = 1e12, GBps = 1e9;
constexpr double us = 1e-6;

const DeviceKind kDevices[] = {
    // name, FP32, FP16/BF16 tensor, memory, memory bandwidth, link, source
    {"H200-SXM", 67 * TFLOPS, 989.5 * TFLOPS, 141 * GB, 4.8 * TBps, "NVLink4",
     "NVIDIA H200 Tensor Core GPU datasheet (2024): 67 TFLOPS FP32, 1979 "
     "TFLOPS "
     "BF16 with sparsity (989.5 dense), 141 GB HBM3e at 4.8 TB/s",
     90},
    {"H100-SXM5-80GB", 67 * TFLOPS, 989.5 * TFLOPS, 80 * GB, 3.35 * TBps,
     "NVLink4",
     "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM5: 67 TFLOPS FP32, 1979 "
     "TFLOPS BF16 with sparsity (989.5 dense), 80 GB HBM3 at 3.35 TB/s",
     90},
    {"H100-PCIe-80GB", 51 * TFLOPS, 756 * TFLOPS, 80 * GB, 2.0 * TBps, "PCIe5",
     "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe: 51 TFLOPS FP32, 1513 "
     "TFLOPS BF16 with sparsity (756 dense), 80 GB HBM2e at 2.0 TB/s",
     90},
    {"A100-SXM4-40GB", 19.5 * TFLOPS, 312 * TFLOPS, 40 * GB, 1.555 * TBps,
     "NVLink3",
     "NVIDIA A100 Tensor Core GPU datasheet (2021): 19.5 TFLOPS FP32, 312 "
     "TFLOPS "
     "BF16/FP16 dense, 40 GB HBM2 at 1555 GB/s",
     80},
    {"A100-SXM4-80GB", 19.5 * TFLOPS, 312 * TFLOPS, 80 * GB, 2.039 * TBps,
     "NVLink3",
     "NVIDIA A100 Tensor Core GPU datasheet (2021): 19.5 TFLOPS FP32, 312 "
     "TFLOPS "
     "BF16/FP16 dense, 80 GB HBM2e at 2039 GB/s",
     80},
    {"A100-PCIe-40GB", 19.5 * TFLOPS, 312 * TFLOPS, 40 * GB, 1.555 * TBps,
     "PCIe4",
     "NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 40 GB: 1555 GB/s", 80},
    {"A100-PCIe-80GB", 19.5 * TFLOPS, 312 * TFLOPS, 80 * GB, 1.935 * TBps,
     "PCIe4",
     "NVIDIA A100 Tensor Core GPU datasheet (2021), PCIe 80 GB: 1935 GB/s", 80},
    {"V100-SXM2-16GB", 15.7 * TFLOPS, 125 * TFLOPS, 16 * GB, 900 * GBps,
     "NVLink2",
     "NVIDIA Tesla V100 datasheet (2020), SXM2: 15.7 TFLOPS FP32, 125 TFLOPS "
     "tensor, 16 GB HBM2 at 900 GB/s",
     70},
    {"V100-SXM2-32GB", 15.7 * TFLOPS, 125 * TFLOPS, 32 * GB, 900 * GBps,
     "NVLink2", "NVIDIA Tesla V100 datasheet (2020), SXM2 32 GB", 70},
    {"T4", 8.1 * TFLOPS, 65 * TFLOPS, 16 * GB, 320 * GBps, "PCIe3",
     "NVIDIA T4 Tensor Core GPU datasheet (2019): 8.1 TFLOPS FP32, 65 TFLOPS "
     "FP16 mixed precision, 16 GB GDDR6 at 320 GB/s",
     75},
    {"L4", 30.3 * TFLOPS, 121 * TFLOPS, 24 * GB, 300 * GBps, "PCIe4",
     "NVIDIA L4 Tensor Core GPU datasheet (2023): 30.3 TFLOPS FP32, 242 TFLOPS "
     "BF16 with sparsity (121 dense), 24 GB GDDR6 at 300 GB/s",
     89},
    {"L40S", 91.6 * TFLOPS, 362.05 * TFLOPS, 48 * GB, 864 * GBps, "PCIe4",
     "NVIDIA L40S datasheet (2023): 91.6 TFLOPS FP32, 733 TFLOPS BF16 with "
     "sparsity (362.05 dense), 48 GB GDDR6 at 864 GB/s",
     89},
    {"A10", 31.2 * TFLOPS, 125 * TFLOPS, 24 * GB, 600 * GBps, "PCIe4",
     "NVIDIA A10 Tensor Core GPU datasheet (2021): 31.2 TFLOPS FP32, 250 "
     "TFLOPS "
     "BF16 with sparsity (125 dense), 24 GB GDDR6 at 600 GB/s",
     86},
    // The CPU backend: placeholders of the order of a 2-core server slice; run
    // hetpar-profile to measure the machine at hand.
    {"CPU", 50e9, 50e9, 16 * GB, 20 * GBps, "PCIe3",
     "placeholder for the CPU backend (not a datasheet): calibrate with "
     "hetpar-profile"},
};

const LinkKind kLinks[] = {
    {"NVLink2", LinkClass::NVLink, 150 * GBps, 3.4 * us,
     "NVIDIA V100 datasheet: NVLink 300 GB/s per GPU, both directions (6 links "
     "x "
     "25 GB/s each way)"},
    {"NVLink3", LinkClass::NVLink, 300 * GBps, 3.4 * us,
     "NVIDIA A100 datasheet: NVLink 600 GB/s per GPU, both directions (12 "
     "links "
     "x 25 GB/s each way)"},
    {"NVLink4", LinkClass::NVLink, 450 * GBps, 3.4 * us,
     "NVIDIA H100 datasheet: NVLink 900 GB/s per GPU, both directions (18 "
     "links "
     "x 25 GB/s each way)"},
    {"PCIe3", LinkClass::PCIe, 15.75 * GBps, 5.7 * us,
     "PCI Express 3.0 x16: 8 GT/s x 16 lanes, 128b/130b encoding"},
    {"PCIe4", LinkClass::PCIe, 31.5 * GBps, 5.7 * us,
     "PCI Express 4.0 x16: 16 GT/s x 16 lanes, 128b/130b encoding"},
    {"PCIe5", LinkClass::PCIe, 63 * GBps, 5.7 * us,
     "PCI Express 5.0 x16: 32 GT/s x 16 lanes, 128b/130b encoding"},
    {"IB-EDR", LinkClass::Network, 12.5 * GBps, 14 * us,
     "InfiniBand EDR 4x: 100 Gb/s (InfiniBand Trade Association roadmap)"},
    {"IB-HDR", LinkClass::Network, 25 * GBps, 14 * us,
     "InfiniBand HDR 4x: 200 Gb/s (InfiniBand Trade Association roadmap)"},
    {"IB-NDR", LinkClass::Network, 50 * GBps, 14 * us,
     "InfiniBand NDR 4x: 400 Gb/s (InfiniBand Trade Association roadmap)"},
    {"25GbE", LinkClass::Network, 3.125 * GBps, 14 * us,
     "IEEE 802.3by: 25 Gb/s"},
    {"100GbE", LinkClass::Network, 12.5 * GBps, 14 * us,
     "IEEE 802.3bj/cd: 100 Gb/s"},
    {"400GbE", LinkClass::Network, 50 * GBps, 14 * us,
     "IEEE 802.3bs: 400 Gb/s"},
};
} // namespace

llvm::ArrayRef<DeviceKind> getDeviceCatalog() { return kDevices; }
llvm::ArrayRef<LinkKind> getLinkCatalog() { return kLinks; }

const DeviceKind *lookupDeviceKind(llvm::StringRef name) {
  for (const DeviceKind &k : kDevices)
    if (name.equals_insensitive(k.name))
      return &k;
  return nullptr;
}

const LinkKind *lookupLinkKind(llvm::StringRef name) {
  for (const LinkKind &k : kLinks)
    if (name.equals_insensitive(k.name))
      return &k;
  return nullptr;
}

} // namespace hetpar
