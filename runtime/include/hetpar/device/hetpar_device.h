//===- hetpar_device.h - single-source device library for generated code ===//
//
// Included by every generated device_<i>.cu. The same file compiles with nvcc
// (CUDA backend: kernels launch on a stream, GEMM goes to cuBLAS) and with the
// host C++ compiler (CPU backend: kernels are loops, parallel with OpenMP where
// the work is large enough, GEMM goes to OpenBLAS). Generated code only uses
// the macros and templates below, so backend differences live here.
//
// Tensors are dense row-major. Element counts, strides and offsets are in
// elements (int64), never bytes. float16 and bfloat16 are stored as 16-bit
// values and computed in float32 (accumulation in float32 too).
//
// The kernels live in its parts (hetpar/device/hetpar_*.h, one concern each),
// which it includes in order below. hetpar/device/ is copied into every
// output folder (OUT/include) so that a generated source rebuilds without
// the HetPar source tree:
//   c++ -std=c++14 -O2 -fopenmp -fPIC -shared -x c++ -IOUT/include device_0.cu
//       -lopenblas
//   nvcc -std=c++17 -O2 -shared -Xcompiler -fPIC -IOUT/include device_0.cu
//       -lcublas -lcublasLt -lcudnn
// The host (CPU) build needs only C++14, and must stay so: C++17's <cmath>
// would add 0.17 s to the build of every program.
//===----------------------------------------------------------------------===//
#ifndef HETPAR_DEVICE_H
#define HETPAR_DEVICE_H

#include "hetpar/device/hetpar_packed.h"
#include "hetpar/runtime/ProgramABI.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#if defined(__CUDACC__)
#define HP_CUDA 1
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <mma.h>
#include <type_traits>
#define HP_HD __host__ __device__ __forceinline__
#define HP_DEV __device__ __forceinline__
#else
#define HP_CUDA 0
#include <cblas.h>
#include <limits>
#include <type_traits>
#ifdef _OPENMP
// OpenMP's own declaration (not omp.h, which Clang's packages may lack).
extern "C" int omp_get_max_threads(void);
#endif
#define HP_HD inline
#define HP_DEV inline
#endif

#define HP_MAX_RANK 8

// The parts, in order (each may use what the ones before it define): not
// sorted.
// clang-format off
#include "hetpar/device/hetpar_half.h"
#include "hetpar/device/hetpar_math.h"
#include "hetpar/device/hetpar_launch.h"
#include "hetpar/device/hetpar_layout.h"
#include "hetpar/device/hetpar_gather_scatter.h"
#include "hetpar/device/hetpar_resize.h"
#include "hetpar/device/hetpar_optimizers.h"
#include "hetpar/device/hetpar_reductions.h"
#include "hetpar/device/hetpar_norm_grad.h"
#include "hetpar/device/hetpar_losses.h"
#include "hetpar/device/hetpar_batch_norm.h"
#include "hetpar/device/hetpar_random.h"
#include "hetpar/device/hetpar_cumsum.h"
#include "hetpar/device/hetpar_gemm.h"
#include "hetpar/device/hetpar_im2col.h"
// The cuBLASLt and cuDNN paths of the GPU kernels, with their plans.
#include "hetpar/device/hetpar_gpu_libraries.h"
#include "hetpar/device/hetpar_pooling.h"
#include "hetpar/device/hetpar_window_grad.h"
#include "hetpar/device/hetpar_attention.h"
#include "hetpar/device/hetpar_gemm_panels.h"
#include "hetpar/device/hetpar_conv.h"
#include "hetpar/device/hetpar_collectives.h"
// clang-format on

#endif // HETPAR_DEVICE_H

// The ABI functions, defined by the second include of this header
// (HETPAR_DEFINE_ABI).
#include "hetpar/device/hetpar_abi.h"
