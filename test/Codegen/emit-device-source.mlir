// The generated source for hand-written IR: fusion, broadcasting, literals,
// GEMM calls, arena reuse and outputs written in place.
// RUN: hetpar-translate --emit-device-source %s | FileCheck %s
// RUN: hetpar-translate --emit-device-source %s --dtype=float16 | FileCheck %s --check-prefix=F16

func.func @main(%x: tensor<2x4xf32> {onnx.name = "x"}, %w: tensor<4x3xf32> {onnx.name = "w"}) -> (tensor<2x3xf32> {onnx.name = "y"}) {
  %bias = onnx.Constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %half = onnx.Constant dense<0.5> : tensor<f32>
  // Add (broadcast bias) -> Mul (scalar literal) -> Tanh: one kernel.
  %0 = onnx.Add(%x, %bias) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("add")
  %1 = onnx.Mul(%0, %half) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> loc("mul")
  %2 = onnx.Tanh(%1) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("tanh")
  %3 = onnx.MatMul(%2, %w) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32> loc("matmul")
  %4 = onnx.Softmax(%3) {axis = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("softmax")
  return %4 : tensor<2x3xf32>
}

// CHECK: #define HP_NUM_INPUTS 2
// CHECK: #define HP_NUM_OUTPUTS 1
// The fused kernel names its ONNX nodes; the bias is read through the
// column coordinate (stride 1 along dim 1, 0 along dim 0); 0.5 is a literal.
// CHECK: // k0_Add_Mul_Tanh: Add 'add' Mul 'mul' Tanh 'tanh'
// CHECK-NEXT: HP_KERNEL(k0_Add_Mul_Tanh, const float *__restrict__ in0, const float *__restrict__ in1, float *__restrict__ out) {
// CHECK: const int64_t c1 = r % 4;
// CHECK: const float v0 = (float)in0[i];
// CHECK: const float v1 = (float)in1[c1 * 1];
// CHECK: const float t0 = (float)(v0 + v1);
// CHECK: const float t1 = (float)(t0 * 5.00000000e-01f);
// CHECK: const float t2 = hp_tanh(t1);
// CHECK: static int hp_program_run(
// CHECK: hp_launch(ctx, k0_Add_Mul_Tanh, 8, ((const float *)inputs[0]), ((const float *)(weights + 0)), ((float *)(arena + [[T:[0-9]+]])));
// MatMul: M=2, N=3, K=4, one batch, into the arena.
// CHECK: // MatMul matmul
// CHECK: hp_gemm<float, float>(ctx, 0, 0, 2, 3, 4, 1.0f, ((float *)(arena + [[T]])), 4, 0, ((const float *)inputs[1]), 3, 0, 0.0f, ((float *)(arena + [[M:[0-9]+]])), 3, 6, 1)
// Softmax writes the graph output in place: 2 rows of 3.
// CHECK: hp_softmax_launch<float, float, false>(ctx, 2, 3, 1, ((float *)(arena + [[M]])), ((float *)outputs[0]));

// Under --dtype=float16 the input converts on entry, the weight is 16-bit,
// and the output converts on exit.
// F16: HP_KERNEL(k0_Add_Mul_Tanh, const hp_half *__restrict__ in0, const hp_half *__restrict__ in1, hp_half *__restrict__ out)
// F16: hp_launch(ctx, hp_convert<hp_half, float>, 8, (const float *)inputs[0],
// F16: hp_gemm<hp_half, float>
// F16: hp_launch(ctx, hp_convert<float, hp_half>, 6,

// A constant whose bytes are missing is one error naming its node, and no
// output is written.
// RUN: %expect-exit 1 hetpar-translate --emit-device-source %S/Inputs/missing-constant-data.mlir -o %t.cu 2>&1 | FileCheck %s --check-prefix=NODATA
// NODATA: error: node 'w': constant data is missing
// RUN: test ! -e %t.cu

// A Gemm's bias row C [N] goes to hp_gemm_b with the GEMM, packed B or not
// (cuBLASLt's bias epilogue on the GPU, the packed kernel's stores or a fill
// of C's rows on the CPU), scaled by beta; not first copied into Y.
// An elementwise chain that reads a Gemm's product alone (GELU, Relu) is
// the GEMM's epilogue: a functor hp_gemm_b applies as it stores the sums,
// into the chain's result (here the graph outputs); the product is never
// stored and the chain has no kernel. A chain that reads another tensor, or
// a product also used elsewhere, keeps its kernel.
// RUN: hetpar-translate --emit-device-source %S/Inputs/gemm-epilogue.mlir | FileCheck %s --check-prefix=EPI
// EPI: // hp_epi_0: the epilogue of node 'gemm_gelu' (Gemm): Div Erf Add Mul Mul
// EPI-NEXT: struct hp_epi_0 {
// EPI-NEXT: static const int lt_act = HP_LT_ACT_NONE;
// EPI-NEXT: HP_HD float operator()(float v) const {
// EPI-NEXT: const float t0 = (float)(v / 1.41421354e+00f);
// EPI-NEXT: const float t1 = hp_erf(t0);
// EPI-NEXT: const float t2 = (float)(t1 + 1.00000000e+00f);
// EPI-NEXT: const float t3 = (float)(v * t2);
// EPI-NEXT: const float t4 = (float)(t3 * 5.00000000e-01f);
// EPI-NEXT: return t4;
// EPI: // hp_epi_1: the epilogue of node 'gemm_relu' (Gemm): Relu
// EPI-NEXT: struct hp_epi_1 {
// EPI-NEXT: static const int lt_act = HP_LT_ACT_RELU;
// EPI: HP_KERNEL(k2_Add_Relu,
// EPI: HP_KERNEL(k3_Relu,
// EPI-NOT: HP_KERNEL
// EPI: hp_gemm_b<float, float, hp_epi_0>({{.*}}, ((float *)outputs[0]), 3, 0, 1, nullptr, ((const float *)inputs[2]), hp_epi_0()))
// EPI: hp_gemm_b<float, float, hp_epi_1>({{.*}}, ((float *)outputs[1]), 3, 0, 1, nullptr, nullptr, hp_epi_1()))
// EPI: hp_gemm_b<float, float>({{.*}}, ((float *)(arena + 0)), 3, 0, 1, nullptr, ((const float *)inputs[2])))
// EPI-NEXT: return 1;
// EPI-NEXT: // k2_Add_Relu
// EPI-NEXT: hp_launch(ctx, k2_Add_Relu, 6, ((float *)(arena + 0)), ((const float *)inputs[3]), ((float *)outputs[2]));
// EPI: hp_gemm<float, float>({{.*}}, ((float *)outputs[4]), 3, 0, 1))
// EPI-NEXT: return 1;
// EPI-NEXT: // k3_Relu
// EPI-NEXT: hp_launch(ctx, k3_Relu, 6, ((float *)outputs[4]), ((float *)outputs[3]));
// RUN: hetpar-translate --emit-device-source %S/Inputs/gemm-bias.mlir | FileCheck %s --check-prefix=BIAS
// BIAS-NOT: HP_KERNEL
// BIAS: hp_gemm_b<float, float>(ctx, 0, 0, 2, 3, 4, 1.00000000e+00f, ((const float *)inputs[0]), 4, 0, ((const float *)inputs[2]), 3, 0, 1.00000000e+00f, ((float *)outputs[0]), 3, 0, 1, nullptr, ((const float *)inputs[3]))
// BIAS: hp_gemm_b<float, float>(ctx, 1, 0, 2, 3, 4, 1.00000000e+00f, ((const float *)inputs[1]), 2, 0, ((const float *)inputs[2]), 3, 0, 5.00000000e-01f, ((float *)outputs[1]), 3, 0, 1, nullptr, ((const float *)inputs[3]))

// An elementwise group that computes a LayerNormalization's X runs in the
// LayerNorm's kernel (its prologue: hp_layer_norm_launch's last argument),
// reading each operand at X's index (i), its row's (k) or one element, and
// stores X for its later reader; a group whose X is read before the
// LayerNorm, or whose operand broadcasts otherwise, keeps its kernel.
// RUN: hetpar-translate --emit-device-source %S/Inputs/layer-norm-prologue.mlir | FileCheck %s --check-prefix=PRO
// PRO: // hp_pro_0: the prologue of node 'ln' (LayerNormalization): Add Add
// PRO-NEXT: struct hp_pro_0 {
// PRO-NEXT: static const bool any = true;
// PRO: const float v0 = (float)in0[i];
// PRO-NEXT: const float v1 = (float)in1[k];
// PRO-NEXT: const float v2 = (float)in2[i];
// PRO-NEXT: const float t0 = (float)(v0 + v1);
// PRO-NEXT: const float t1 = (float)(v2 + t0);
// PRO-NEXT: return t1;
// PRO: HP_KERNEL(k1_Add,
// PRO: HP_KERNEL(k2_Add,
// PRO: HP_KERNEL(k3_Relu_Add,
// PRO: HP_KERNEL(k4_Add,
// PRO-NOT: HP_KERNEL
// PRO: hp_layer_norm_launch<float, float, float>(ctx, 6, 4, {{[^,]*}}, ((float *)(arena + [[X:[0-9]+]])), {{.*}}, hp_pro_0{((const float *)inputs[1]), ((const float *)(weights + {{[0-9]+}})), ((const float *)inputs[0])});
// PRO-NEXT: // k1_Add
// PRO-NEXT: hp_launch(ctx, k1_Add, 24, {{.*}}, ((float *)(arena + [[X]])), ((float *)outputs[0]));
// PRO: hp_launch(ctx, k2_Add,
// PRO: hp_pro_none());
// PRO: hp_launch(ctx, k4_Add,
// PRO: hp_pro_none());

