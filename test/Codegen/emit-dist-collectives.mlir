// Code generation of the dist local form: device 1's program of a two-device
// module calls the MPI collectives of hetpar_device.h over the ops' groups,
// with gather/scatter counts in elements, and posts consecutive sends and
// receives as one exchange step. The source builds with Open MPI's mpicxx.
// RUN: hetpar-translate --emit-device-source %s --device 1 -o %t.cu
// RUN: FileCheck %s --input-file=%t.cu
// RUN: mpicxx -std=c++17 -fopenmp -fPIC -shared -w -x c++ -I%srcroot/runtime/include %t.cu -o %t.so -lopenblas
// RUN: %expect-exit 1 hetpar-translate --emit-device-source %s --device 7 2>&1 | FileCheck %s --check-prefix=NODEV
// NODEV: has no function with dist.device = 7
// A gather behind a non-unit dimension would need packing: one error.
// RUN: %expect-exit 1 hetpar-translate --emit-device-source %s --device 2 2>&1 | FileCheck %s --check-prefix=PACK
// PACK: error: code generation of a gather or scatter along dimension 1 behind a non-unit dimension needs packing, which is not implemented yet

// CHECK: #define HETPAR_MULTI_DEVICE
// The rank of each device id: its place among the meshes' devices.
// CHECK-NEXT: #define HETPAR_MESH_DEVICES 0, 1, 2, 3
// CHECK-NEXT: #include "hetpar/device/hetpar_device.h"

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]

func.func @device_0(%x: tensor<2x4xf32>) -> tensor<2x4xf32> attributes {dist.device = 0 : i64} {
  return %x : tensor<2x4xf32>
}

func.func @device_1(%x: tensor<2x4xf32>, %s: tensor<1x3xf32>) -> (tensor<2x4xf32>, tensor<1x8xf32>)
    attributes {dist.device = 1 : i64} {
  // CHECK: static const int64_t group[] = {0, 1};
  // What a timeout or a signature mismatch names:
  // CHECK-NEXT: ctx->what = "all_reduce on devices {0, 1}";
  // CHECK-NEXT: if (hp_all_reduce<float>(ctx, group, 2, ((const float *)inputs[0]), ((float *)(arena + [[A:[0-9]+]])), 8, HP_SUM))
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<2x4xf32> -> tensor<2x4xf32>
  // Uneven gather along dimension 1 behind a unit dimension: 5 and 3 elements.
  // CHECK: static const int64_t counts[] = {5, 3};
  // CHECK-NEXT: if (hp_all_gather<float>(ctx, group, 2, ((const float *)inputs[1]), ((float *)outputs[1]), counts))
  %g = dist.all_gather %s on @m [0, 1] dim 1 sizes [5, 3] : tensor<1x3xf32> -> tensor<1x8xf32>
  // reduce_scatter along the leading dimension: one row of 4 each.
  // CHECK: static const int64_t counts[] = {4, 4};
  // CHECK-NEXT: if (hp_reduce_scatter<float>(ctx, group, 2, {{.*}}, counts, HP_MAX))
  %rs = dist.reduce_scatter %x on @m [0, 1] reduction max dim 0 sizes [1, 1] : tensor<2x4xf32> -> tensor<1x4xf32>
  // broadcast copies its operand into its result, then broadcasts in place.
  // CHECK: hp_copy_launch<float>
  // CHECK-NEXT: if (hp_broadcast<float>(ctx, group, 2, {{.*}}, 8, 0))
  %b = dist.broadcast %x on @m [0, 1] root 0 : tensor<2x4xf32> -> tensor<2x4xf32>
  // all_to_all from columns split 1:3 to rows split 5:2. The operand's pieces
  // lie behind its 2 rows, so they are packed in the op's arena scratch
  // (8 elements); the received pieces are contiguous rows, so they land in
  // the result directly.
  // CHECK: static const int64_t splitSizes[] = {1, 3};
  // CHECK-NEXT: static const int64_t concatSizes[] = {5, 2};
  // CHECK-NEXT: if (hp_all_to_all_along<float>(ctx, group, 2, ((const float *)inputs[0]), 2, 4, 1, splitSizes, {{.*}}, 1, 7, 3, concatSizes, ((float *)(arena + {{[0-9]+}})), (float *)0))
  %a = dist.all_to_all %x on @m [0, 1] split 1 [1, 3] concat 0 [5, 2] : tensor<2x4xf32> -> tensor<7x3xf32>
  // A send and a receive in one step.
  // CHECK: hp_exchange step{};
  // CHECK-NEXT: if (hp_exchange_send(ctx, &step, ((float *)(arena + [[A]])), 8, 0, 7))
  // CHECK: if (hp_exchange_recv(ctx, &step, ((float *)outputs[0]), 8, 0, 8))
  // CHECK: ctx->what = "exchange step: send to device 0 (tag 7) recv from device 0 (tag 8)";
  // CHECK-NEXT: if (hp_exchange_end(ctx, &step))
  dist.send %r on @m to 0 tag 7 : tensor<2x4xf32>
  %y = dist.recv on @m from 0 tag 8 : tensor<2x4xf32>
  // Sending on what the step receives (here through a Reshape, a view of
  // the same buffer) begins a new step: posted together, the send would read
  // the buffer before the receive fills it.
  // CHECK: hp_exchange step{};
  // CHECK-NEXT: if (hp_exchange_send(ctx, &step, ((float *)outputs[0]), 8, 0, 9))
  // A view between two sends emits no code where it stands: it does not
  // end the step (dist::exchangeSteps; hetpar-dist-verify-exchanges, not
  // knowing views, checks the two sends as two steps, which is stricter).
  // CHECK: if (hp_exchange_send(ctx, &step, ((float *)(arena + [[A]])), 8, 0, 10))
  // CHECK: ctx->what = "exchange step: send to device 0 (tag 9) send to device 0 (tag 10)";
  // CHECK-NEXT: if (hp_exchange_end(ctx, &step))
  %shape = onnx.Constant dense<[4, 2]> : tensor<2xi64>
  %v = onnx.Reshape(%y, %shape) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  dist.send %v on @m to 0 tag 9 : tensor<4x2xf32>
  %rv = onnx.Reshape(%r, %shape) : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<4x2xf32>
  dist.send %rv on @m to 0 tag 10 : tensor<4x2xf32>
  return %y, %g : tensor<2x4xf32>, tensor<1x8xf32>
}

dist.mesh @n devices [#dist.device<2, "A100">, #dist.device<3, "V100">]
func.func @device_2(%x: tensor<2x3xf32>) -> tensor<2x8xf32> attributes {dist.device = 2 : i64} {
  %g = dist.all_gather %x on @n [2, 3] dim 1 sizes [3, 5] : tensor<2x3xf32> -> tensor<2x8xf32>
  return %g : tensor<2x8xf32>
}
