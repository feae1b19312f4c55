//===- EmitGemmOps.cpp - GEMMs, convolutions, windows ---------------------===//
//
// MatMul, Gemm and Einsum as hp_gemm calls; Conv (direct, blocked or
// im2col), its gradient and the pooling gradients over their sliding
// Window.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "hetpar/Dialect/ONNX/Window.h"

namespace hetpar::codegen::emitter {

//===----------------------------------------------------------------------===//
// GEMM-based ops
//===----------------------------------------------------------------------===//

LogicalResult Emitter::emitMatMul(Operation *op) {
  Value A = op->getOperand(0), B = op->getOperand(1), Y = op->getResult(0);
  llvm::SmallVector<int64_t> a(shapeOf(A)), b(shapeOf(B));
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  llvm::ArrayRef<int64_t> batchA = llvm::ArrayRef(a).drop_back(2);
  llvm::ArrayRef<int64_t> batchB = llvm::ArrayRef(b).drop_back(2);
  auto batch = broadcastShapes(batchA, batchB);
  if (!batch)
    return op->emitError("MatMul batch dimensions do not broadcast");
  int64_t nb = numel(*batch);
  Type elt = eltOf(Y);
  std::string st = storageType(elt), acc = accType(elt);
  std::string fn = "hp_gemm<" + st + ", " + acc + ">";
  auto uniform = [&](llvm::ArrayRef<int64_t> bd, int64_t matrix) -> int64_t {
    if (numel(bd) == 1)
      return 0;
    llvm::SmallVector<int64_t> padded(batch->size() - bd.size(), 1);
    padded.append(bd.begin(), bd.end());
    return llvm::ArrayRef<int64_t>(padded) == llvm::ArrayRef(*batch) ? matrix
                                                                     : -1;
  };
  int64_t sA = uniform(batchA, M * K), sB = uniform(batchB, K * N);
  if (sA >= 0 && sB >= 0) {
    // A 2-D constant B shared by batches that lie row after row in A: one
    // GEMM of nb x M rows, on B packed where hp_gemm_panels takes it.
    std::string packed = shapeOf(B).size() == 2 && (nb == 1 || sA == M * K)
                             ? packedGemmOperand(B, nb * M, N, K, false)
                             : "nullptr";
    std::string args = llvm::formatv(
        "ctx, 0, 0, {0}, {1}, {2}, 1.0f, {3}, {2}, {4}, {5}, {1}, {6}, 0.0f, "
        "{7}, {1}, {8}, {9}",
        M, N, K, ptr(A), sA,
        unpackedOperand(
            B, packed,
            llvm::formatv("hp_gemm_packs_b({0}, {1}, {2})", nb * M, N, K)),
        sB, ptr(Y), M * N, nb);
    if (packed == "nullptr")
      call(fn + "(" + args + ")");
    else
      call("hp_gemm_b<" + st + ", " + acc + ">(" + args + ", " + packed +
           ", nullptr)");
    ++program.libraryCalls;
    return success();
  }
  // General broadcasting: one GEMM per output batch with offset tables.
  auto offsets = [&](llvm::ArrayRef<int64_t> bd, int64_t matrix) {
    llvm::SmallVector<int64_t> offs;
    int off0 = static_cast<int>(batch->size() - bd.size());
    llvm::SmallVector<int64_t> st = stridesOf(bd);
    for (int64_t i = 0; i < nb; ++i) {
      int64_t rem = i, off = 0;
      for (int d = static_cast<int>(batch->size()) - 1; d >= 0; --d) {
        int64_t c = rem % (*batch)[d];
        rem /= (*batch)[d];
        int dd = d - off0;
        if (dd >= 0 && bd[dd] != 1)
          off += c * st[dd];
      }
      offs.push_back(off * matrix);
    }
    return offs;
  };
  auto join = [](llvm::ArrayRef<int64_t> v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? ", " : "") + std::to_string(v[i]);
    return s;
  };
  line("{");
  line("  static const int64_t offA[] = {" + join(offsets(batchA, M * K)) +
       "};");
  line("  static const int64_t offB[] = {" + join(offsets(batchB, K * N)) +
       "};");
  line(llvm::formatv("  for (int64_t b = 0; b < {0}; ++b)", nb));
  line(llvm::formatv(
      "    if ({0}(ctx, 0, 0, {1}, {2}, {3}, 1.0f, {4} + offA[b], "
      "{3}, 0, {5} + offB[b], {2}, 0, 0.0f, {6} + b * {7}, {2}, "
      "0, 1))",
      fn, M, N, K, ptr(A), ptr(B), ptr(Y), M * N));
  line("      return 1;");
  line("}");
  ++program.libraryCalls;
  return success();
}

/// Gemm: hp_gemm, or hp_gemm_b, which takes B packed where it is a constant
/// the CPU kernel packs, and a C of one row ([N] or [1, N]:
/// hetpar-onnx-fuse-gemm-bias's biases) that it adds as it stores the product
/// (the CPU's packed kernel, cuBLASLt's bias epilogue on the GPU); another C
/// is first broadcast into Y. An elementwise group that reads the product
/// alone is hp_gemm_b's epilogue functor (EmitGemmEpilogue.cpp).
LogicalResult Emitter::emitGemm(onnx::GemmOp op) {
  Value A = op->getOperand(0), B = op->getOperand(1), Y = op->getResult(0);
  // Where the GEMM writes: its product, or the result (of the same
  // elements) of the elementwise group that finishes it as its epilogue
  // (EmitGemmEpilogue.cpp).
  Value out;
  std::string epilogue = emitGemmEpilogue(op, out);
  if (epilogue.empty())
    return failure();
  int ta = intAttr(op, "transA", 0) != 0, tb = intAttr(op, "transB", 0) != 0;
  llvm::ArrayRef<int64_t> a = shapeOf(A), b = shapeOf(B), y = shapeOf(Y);
  int64_t M = y[0], N = y[1], K = ta ? a[0] : a[1];
  double alpha = floatAttr(op, "alpha", 1.0), beta = floatAttr(op, "beta", 1.0);
  Value C = op.getC();
  Type elt = eltOf(Y);
  std::string types = "<" + storageType(elt) + ", " + accType(elt) + ">";
  std::string packed = ta ? "nullptr" : packedGemmOperand(B, M, N, K, tb != 0);
  std::string bias = "nullptr";
  // A scalar C (rank 0, even where N is 1) is broadcast below: it has no
  // last extent to compare (back() of its empty shape was undefined; found
  // by the onnx-mutate fuzzer).
  if (C && beta != 0.0 && numel(shapeOf(C)) == N && !shapeOf(C).empty() &&
      shapeOf(C).back() == N) {
    bias = ptr(C);
  } else if (C && beta != 0.0) {
    // Y = broadcast(C), then Y = alpha*A*B + beta*Y.
    llvm::ArrayRef<int64_t> c = shapeOf(C);
    llvm::SmallVector<int64_t> cs = stridesOf(c), in(2, 0);
    int off = 2 - static_cast<int>(c.size());
    for (int d = 0; d < static_cast<int>(c.size()); ++d)
      if (c[d] != 1)
        in[off + d] = cs[d];
    emitStridedCopy(C, y, in, y, 0, ptr(out), stridesOf(y), 0, elt);
  } else {
    beta = 0.0;
  }
  std::string args = llvm::formatv(
      "ctx, {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, 0, {8}, {9}, 0, {10}, "
      "{11}, {3}, 0, 1",
      ta, tb, M, N, K, floatLiteral(alpha, false), ptr(A), a[1],
      unpackedOperand(B, packed,
                      llvm::formatv("hp_gemm_packs_b({0}, {1}, {2})", M, N, K)),
      b[1], floatLiteral(beta, false), ptr(out));
  if (packed == "nullptr" && bias == "nullptr" && epilogue == "hp_epi_none")
    call("hp_gemm" + types + "(" + args + ")");
  else if (epilogue == "hp_epi_none")
    call("hp_gemm_b" + types + "(" + args + ", " + packed + ", " + bias + ")");
  else
    call("hp_gemm_b<" + storageType(elt) + ", " + accType(elt) + ", " +
         epilogue + ">(" + args + ", " + packed + ", " + bias + ", " +
         epilogue + "())");
  ++program.libraryCalls;
  return success();
}

/// The window of an op whose input has shape `in` and result shape `out`
/// (both with the N and C axes): the gradients' forward shapes. Shape
/// inference checked the attributes (onnx::Window::check).
Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel,
                llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out) {
  Window w;
  w.in = in.drop_front(2);
  w.out = out.drop_front(2);
  size_t n = w.in.size();
  onnx::Window attrs = onnx::Window::read(op, kernel, n);
  w.kernel = attrs.kernel;
  w.stride = attrs.strides;
  w.dilation = attrs.dilations;
  for (size_t d = 0; d < n; ++d) {
    w.padBegin.push_back(attrs.padBegin(d, w.in[d], w.out[d]));
    w.padEnd.push_back(attrs.padEnd(d, w.in[d], w.out[d]));
  }
  return w;
}

Window windowOf(Operation *op, llvm::ArrayRef<int64_t> kernel) {
  return windowOf(op, kernel, shapeOf(op->getOperand(0)),
                  shapeOf(op->getResult(0)));
}

/// The hp_conv_epilogue of a Conv (its bias) or FusedConv (its bias,
/// residual Z and activation), as a C++ expression.
std::string Emitter::convEpilogue(Operation *op) {
  std::string st = storageType(eltOf(op->getResult(0)));
  Value bias, z;
  std::string act = "HP_ACT_NONE";
  double lo = 0, hi = 0;
  if (auto conv = dyn_cast<onnx::ConvOp>(op))
    bias = conv.getB();
  if (auto fused = dyn_cast<onnx::FusedConvOp>(op)) {
    bias = fused.getB();
    z = fused.getZ();
    if (fused.getActivation() == "Relu")
      act = "HP_ACT_RELU";
    if (fused.getActivation() == "Clip") {
      act = "HP_ACT_CLIP";
      lo = (*fused.getActivationParams())[0];
      hi = (*fused.getActivationParams())[1];
    }
  }
  return "hp_conv_epilogue<" + st + ">{" + (bias ? ptr(bias) : "nullptr") +
         ", " + (z ? ptr(z) : "nullptr") + ", " + act + ", " +
         floatLiteral(lo, false) + ", " + floatLiteral(hi, false) + "}";
}

/// Conv and FusedConv: 2-D and 1-D (as 2-D of height 1) through
/// hp_conv2d_launch; other ranks through hp_conv_nd_launch (cuDNN on the GPU,
/// else per image and group im2col plus one GEMM), then one pass of the
/// epilogue (bias, residual, activation) over the result.
LogicalResult Emitter::emitConv(Operation *op) {
  Value X = op->getOperand(0), W = op->getOperand(1), Y = op->getResult(0);
  llvm::ArrayRef<int64_t> x = shapeOf(X), w = shapeOf(W), y = shapeOf(Y);
  size_t nsp = x.size() - 2;
  int64_t N = x[0], C = x[1], M = y[1];
  int64_t G = intAttr(op, "group", 1);
  int64_t Cg = C / G, Mg = M / G;
  Window win = windowOf(op, w.drop_front(2));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  Type elt = eltOf(Y);
  std::string st = storageType(elt);
  bool pointwise = win.pointwise();
  if (numel(y) == 0)
    return success();
  std::string epilogue = convEpilogue(op);
  if (nsp == 2)
    return emitConv2d(op,
                      hp_conv2d_shape{N, G, Cg, Mg, inSp[0], inSp[1], outSp[0],
                                      outSp[1], k[0], k[1], win.stride[0],
                                      win.stride[1], win.padBegin[0],
                                      win.padBegin[1], win.dilation[0],
                                      win.dilation[1]},
                      epilogue);
  // A 1-D convolution is a 2-D one of height 1 (the same memory layout, the
  // weight [M, Cg, k] as [M, Cg, 1, k]): the 2-D kernels, and cuDNN on the
  // GPU, instead of im2col per image and group.
  if (nsp == 1)
    return emitConv2d(op,
                      hp_conv2d_shape{N, G, Cg, Mg, 1, inSp[0], 1, outSp[0], 1,
                                      k[0], 1, win.stride[0], 0,
                                      win.padBegin[0], 1, win.dilation[0]},
                      epilogue);
  // Other ranks (3-D): cuDNN on the GPU where it takes the convolution,
  // else im2col per image and group and a GEMM (hp_conv_nd_launch).
  std::string cols =
      pointwise ? "(" + st + " *)0" : "((" + st + " *)" + scratch(op) + ")";
  call(llvm::formatv(
      "hp_conv_nd_launch<{0}, {1}>(ctx, hp_conv_nd{{{2}, {3}, {4}, {5}, {6}, "
      "{7}, {8}, {9}, {10}, {11}, {12}}, {13}, {14}, {15}, {16}, {17}, {18})",
      st, accType(elt), N, G, Cg, Mg, nsp, hpDims(inSp), hpDims(outSp),
      hpDims(k), hpDims(win.stride), hpDims(win.padBegin), hpDims(win.dilation),
      pointwise ? "true" : "false", epilogue, ptr(X), ptr(W), ptr(Y), cols));
  program.libraryCalls += 2;
  return success();
}

/// The bytes of `w` when a CPU kernel may read a packed copy of it
/// (hetpar_packed.h): the CPU build is on and `w` is a float32 constant in
/// storage (not a trained parameter, not --dtype float16/bfloat16). None
/// otherwise, and when its data is missing (ptr(w) reports that).
std::optional<std::vector<char>> Emitter::packableConstant(Value w) {
  Value r = root(w);
  if (!opts.buildCPU || !eltOf(r).isF32() || converted(eltOf(r)))
    return std::nullopt;
  ElementsAttr attr = getConstantElements(r);
  if (!attr)
    return std::nullopt;
  FailureOr<std::vector<char>> bytes = getElementsBytes(attr);
  if (failed(bytes))
    return std::nullopt;
  return std::move(*bytes);
}

/// The pointer expression of the `layout` copy of constant `w` (shape
/// `shape`, made by `pack`), appended to weights.bin once per constant and
/// `variant` (the layout and every parameter its bytes depend on, so that
/// one constant read as B and as B transposed gets two copies), named
/// "<w's name>.packed" (".packed.<k>" for its k-th other variant).
std::string Emitter::addPacked(Value w, llvm::StringRef layout,
                               const std::string &variant,
                               llvm::ArrayRef<int64_t> shape,
                               llvm::function_ref<std::vector<char>()> pack) {
  Value r = root(w);
  auto key = std::make_pair(r.getAsOpaquePointer(), variant);
  auto it = packedWeightOffset.find(key);
  if (it == packedWeightOffset.end()) {
    std::string name = onnx::getNodeName(r.getLoc());
    if (auto res =
            dyn_cast_or_null<DenseResourceElementsAttr>(getConstantElements(r)))
      name = res.getRawHandle().getKey().str();
    if (name.empty())
      name = "constant_" + std::to_string(weightEntries.size());
    int64_t others = packedVariants[r.getAsOpaquePointer()]++;
    name += others ? ".packed." + std::to_string(others) : ".packed";
    llvm::json::Object extra{{"packed", layout.str()}};
    int64_t offset =
        appendWeight(name, eltOf(r), shape, pack(), std::move(extra));
    it = packedWeightOffset.emplace(key, offset).first;
  }
  return "((const float *)(weights + " + std::to_string(it->second) + "))";
}

/// The pointer expression of `w`, an operand whose kernel was given its
/// packed copy `packed` ("nullptr": none) because `rule` (a call of a
/// hetpar_packed.h rule) holds: "nullptr" when the CUDA build is off
/// (--targets=cpu), so that a constant read only by packed kernels is not
/// written to weights.bin twice (GPT-2 small's 497 MB would be 946 MB); the
/// kernels (hp_gemm_b, hp_conv2d_launch) then never read it, the rule
/// deciding for both. The source then checks `rule` at its build
/// (static_assert), so that a hetpar_packed.h that disagrees (another
/// HETPAR_RUNTIME_INCLUDE) fails to compile instead of reading null.
std::string Emitter::unpackedOperand(Value w, const std::string &packed,
                                     const std::string &rule) {
  if (packed == "nullptr" || opts.buildCUDA)
    return ptr(w);
  packedOnly = true;
  line("static_assert(" + rule +
       ", \"hetpar_packed.h disagrees with the one this program was "
       "generated with\");");
  return "nullptr";
}

/// The pointer expression of a 2-D Conv's weight `w` packed as
/// hp_conv2d_channels reads it (hetpar_packed.h: [G][Cg x kH x kW][Mp],
/// zero past Mg), or "nullptr" where that kernel does not run on it (see
/// packableConstant; a shape hp_conv2d_channels_runs refuses). The
/// constant's own copy stays: the GPU build and the other CPU kernels read
/// [M][Cg][kH][kW].
std::string Emitter::packedConvWeight(Value w, const hp_conv2d_shape &s) {
  if (!hp_conv2d_channels_runs(s))
    return "nullptr";
  std::optional<std::vector<char>> bytes = packableConstant(w);
  if (!bytes)
    return "nullptr";
  const int64_t K = s.Cg * s.kH * s.kW, Mp = hp_conv2d_packed_channels(s.Mg);
  std::string variant =
      llvm::formatv("conv2d_channels G={0} Mg={1} K={2}", s.G, s.Mg, K);
  return addPacked(w, "conv2d_channels", variant, {s.G, K, Mp}, [&] {
    std::vector<char> packed(sizeof(float) * s.G * K * Mp, 0);
    const float *src = reinterpret_cast<const float *>(bytes->data());
    float *dst = reinterpret_cast<float *>(packed.data());
    for (int64_t g = 0; g < s.G; ++g)
      for (int64_t m = 0; m < s.Mg; ++m)
        for (int64_t k = 0; k < K; ++k)
          dst[(g * K + k) * Mp + m] = src[(g * s.Mg + m) * K + k];
    return packed;
  });
}

/// The pointer expression of a GEMM's constant right-hand matrix `b` ([K, N],
/// or [N, K] when `tb`) packed as hp_gemm_panels reads it (hetpar_packed.h:
/// panels [ceil(N / 64)][K][64] of op(b), zero past N), or "nullptr" where
/// it does not run on it (see packableConstant; `rows`, the rows of every
/// batch sharing b, with N and K refused by hp_gemm_packs_b).
std::string Emitter::packedGemmOperand(Value b, int64_t rows, int64_t N,
                                       int64_t K, bool tb) {
  if (!hp_gemm_packs_b(rows, N, K))
    return "nullptr";
  std::optional<std::vector<char>> bytes = packableConstant(b);
  if (!bytes)
    return "nullptr";
  const int64_t panels = (N + HP_GEMM_PANEL - 1) / HP_GEMM_PANEL;
  std::string variant =
      llvm::formatv("gemm_panels K={0} N={1} tb={2}", K, N, int(tb));
  return addPacked(b, "gemm_panels", variant, {panels, K, HP_GEMM_PANEL}, [&] {
    std::vector<char> packed(sizeof(float) * panels * K * HP_GEMM_PANEL, 0);
    const float *src = reinterpret_cast<const float *>(bytes->data());
    float *dst = reinterpret_cast<float *>(packed.data());
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n)
        dst[(n / HP_GEMM_PANEL * K + k) * HP_GEMM_PANEL + n % HP_GEMM_PANEL] =
            tb ? src[n * K + k] : src[k * N + n];
    return packed;
  });
}

/// A 2-D Conv or FusedConv: one hp_conv2d_launch, which picks the direct
/// kernel, the register-blocked kernel, the channel-vectorized one (on the
/// packed weight, where packedConvWeight makes one), the tiles or im2col
/// plus a GEMM per image and group for the backend it is built for
/// (hetpar_device.h), and finishes each output through `epilogue` (an
/// hp_conv_epilogue).
LogicalResult Emitter::emitConv2d(Operation *op, const hp_conv2d_shape &shape,
                                  const std::string &epilogue) {
  Value X = op->getOperand(0), W = op->getOperand(1), Y = op->getResult(0);
  Type elt = eltOf(Y);
  std::string st = storageType(elt);
  const hp_conv2d_shape &s = shape;
  std::string dims = braced({s.N, s.G, s.Cg, s.Mg, s.H, s.W, s.OH, s.OW, s.kH,
                             s.kW, s.sH, s.sW, s.pH, s.pW, s.dH, s.dW});
  std::string packed = packedConvWeight(W, shape);
  line(llvm::formatv(
      "if (hp_conv2d_launch<{0}, {1}>(ctx, hp_conv2d_shape{2}, "
      "{3}, {4}, {5}, {6}, {7}, (({0} *){8})))",
      st, accType(elt), dims, epilogue, ptr(X),
      unpackedOperand(W, packed,
                      "hp_conv2d_channels_runs(hp_conv2d_shape" + dims + ")"),
      packed, ptr(Y), scratch(op)));
  line("  return 1;");
  ++program.libraryCalls;
  return success();
}

/// ConvGrad: dB by a sum over N and the spatial axes; dW per image and group
/// as dY x im2col(X)^T, accumulated over the batch by the GEMM (beta 1 after
/// the first image); dX per image and group as col2im(W^T x dY), col2im
/// gathering for each input element the columns that touch it. The im2col
/// scratch (as Conv's) holds the columns of one image and group. A result
/// without uses is not computed.
LogicalResult Emitter::emitConvGrad(onnx::ConvGradOp op) {
  Value dY = op.getDY(), X = op.getX(), W = op.getW();
  Value dX = op.getDX(), dW = op.getDW(), dB = op.getDB();
  llvm::ArrayRef<int64_t> x = shapeOf(X), w = shapeOf(W), y = shapeOf(dY);
  size_t nsp = x.size() - 2;
  int64_t N = x[0], C = x[1], M = w[0];
  int64_t G = intAttr(op, "group", 1);
  int64_t Cg = C / G, Mg = M / G;
  Window win = windowOf(op, w.drop_front(2), x, y);
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  int64_t kc = numel(k), inPlane = numel(inSp), outPlane = numel(outSp);
  int64_t rows = Cg * kc; // rows of the columns matrix of one group
  Type elt = eltOf(dY);
  std::string st = storageType(elt), acc = accType(elt);
  bool pointwise = win.pointwise();
  std::string cols = "((" + st + " *)" + scratch(op) + ")";
  bool empty = numel(y) == 0; // no window: every gradient is 0
  auto zero = [&](Value v) {
    line(llvm::formatv("hp_launch(ctx, hp_fill<{0}>, {1}, ({0})0, {2});", st,
                       numelOf(v), ptr(v)));
    ++program.libraryCalls;
  };
  std::string dyg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}", ptr(dY), M,
                                  Mg, outPlane);
  if (!dB.use_empty()) {
    llvm::SmallVector<int64_t> axes{0};
    for (size_t d = 2; d < y.size(); ++d)
      axes.push_back(d);
    if (empty)
      zero(dB);
    else if (failed(emitReduce(op, dY, dB, axes, "SUM")))
      return failure();
  }
  if (!dW.use_empty()) {
    if (empty) {
      zero(dW);
    } else {
      std::string xg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}", ptr(X),
                                     C, Cg, inPlane);
      line(llvm::formatv("for (int64_t n = 0; n < {0}; ++n)", N));
      line(llvm::formatv("  for (int64_t g = 0; g < {0}; ++g) {{", G));
      if (!pointwise)
        line(llvm::formatv(
            "    hp_im2col_launch<{0}>(ctx, {1}, {2}, {3}, {4}, {5}, {6}, {7}, "
            "{8}, {9}, {10}, {11}, {12}, {13});",
            st, nsp, hpDims(inSp), hpDims(outSp), hpDims(k), hpDims(win.stride),
            hpDims(win.padBegin), hpDims(win.dilation), Cg, kc, inPlane,
            outPlane, xg, cols));
      line(llvm::formatv(
          "    if (hp_gemm<{0}, {1}>(ctx, 0, 1, {2}, {3}, {4}, 1.0f, {5}, {4}, "
          "0, {6}, {4}, 0, n ? 1.0f : 0.0f, {7} + g * {8}, {3}, 0, 1))",
          st, acc, Mg, rows, outPlane, dyg, pointwise ? xg : cols, ptr(dW),
          Mg * rows));
      line("      return 1;");
      line("  }");
      program.libraryCalls += 2;
    }
  }
  if (!dX.use_empty()) {
    if (empty) {
      zero(dX);
    } else {
      std::string dxg = llvm::formatv("{0} + (n * {1} + g * {2}) * {3}",
                                      ptr(dX), C, Cg, inPlane);
      line(llvm::formatv("for (int64_t n = 0; n < {0}; ++n)", N));
      line(llvm::formatv("  for (int64_t g = 0; g < {0}; ++g) {{", G));
      line(llvm::formatv(
          "    if (hp_gemm<{0}, {1}>(ctx, 1, 0, {2}, {3}, {4}, 1.0f, {5} + g * "
          "{6}, {2}, 0, {7}, {3}, 0, 0.0f, {8}, {3}, 0, 1))",
          st, acc, rows, outPlane, Mg, ptr(W), Mg * rows, dyg,
          pointwise ? dxg : cols));
      line("      return 1;");
      if (!pointwise)
        line(llvm::formatv(
            "    hp_launch(ctx, hp_col2im<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
            "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14});",
            st, acc, Cg * inPlane, nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
            hpDims(win.stride), hpDims(win.padBegin), hpDims(win.dilation), kc,
            inPlane, outPlane, cols, dxg));
      line("  }");
      program.libraryCalls += 2;
    }
  }
  return success();
}

/// MaxPoolGrad and AveragePoolGrad: one thread per element of dX gathers dY
/// over the windows that hold it (MaxPoolGrad: whose first maximum it is).
LogicalResult Emitter::emitPoolGrad(Operation *op) {
  bool isMax = isa<onnx::MaxPoolGradOp>(op);
  Value dY = op->getOperand(0), dX = op->getResult(0);
  llvm::ArrayRef<int64_t> x = shapeOf(dX);
  size_t nsp = x.size() - 2;
  Window win = windowOf(op, intsAttr(op, "kernel_shape"), x, shapeOf(dY));
  llvm::ArrayRef<int64_t> k = win.kernel, inSp = win.in, outSp = win.out;
  Type elt = eltOf(dX);
  std::string st = storageType(elt), acc = accType(elt);
  if (isMax)
    line(llvm::formatv(
        "hp_launch(ctx, hp_maxpool_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
        "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15});",
        st, acc, numel(x), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
        hpDims(win.stride), hpDims(win.padBegin), hpDims(win.dilation),
        numel(k), numel(inSp), numel(outSp), ptr(op->getOperand(1)), ptr(dY),
        ptr(dX)));
  else
    line(llvm::formatv(
        "hp_launch(ctx, hp_avgpool_grad<{0}, {1}>, {2}, {3}, {4}, {5}, {6}, "
        "{7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}, {16});",
        st, acc, numel(x), nsp, hpDims(inSp), hpDims(outSp), hpDims(k),
        hpDims(win.stride), hpDims(win.padBegin), hpDims(win.padEnd),
        hpDims(win.dilation), intAttr(op, "count_include_pad", 0), numel(k),
        numel(inSp), numel(outSp), ptr(dY), ptr(dX)));
  ++program.libraryCalls;
  return success();
}

/// Einsum as one generated kernel: a thread per output element sums, over
/// every combination of the contracted axes, the product of the operands'
/// elements. Axes are letters, "..." expands to right-aligned broadcast axes;
/// a letter repeated in one term (a diagonal) adds its strides. The implicit
/// output is "..." then the letters used once, in alphabetical order.
/// Resize: the axes' geometry from the op (ResizeOp::getAxes, one answer for
/// shape inference, the support check and this) as an hp_resize_axes
/// literal. With scales or roi from data, the output extents come from the
/// static result type and the kernel reads the values (sizes need none: a
/// scale is then output over input extent). An axis is resized unless it
/// keeps its extent under a constant scale of 1 and a transform that then
/// maps every coordinate to itself (all but tf_crop_and_resize).
LogicalResult Emitter::emitResize(onnx::ResizeOp op, Value out) {
  Value x = op.getX();
  llvm::ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = static_cast<int64_t>(in.size());
  llvm::SmallVector<int64_t> axes, listPos(rank, 0);
  if (auto given = op.getAxes())
    for (int64_t a : *given)
      axes.push_back(a < 0 ? a + rank : a);
  else
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  for (auto [k, a] : llvm::enumerate(axes))
    listPos[a] = static_cast<int64_t>(k);
  llvm::SmallVector<int64_t> extents;
  llvm::SmallVector<double> scales;
  std::string reason;
  std::string scalesPtr = "(const float *)0", roiPtr = "(const float *)0";
  bool constant = succeeded(op.getAxes(extents, scales, reason));
  if (!constant) {
    extents.assign(shapeOf(out).begin(), shapeOf(out).end());
    scales.assign(rank, 1.0);
    bool fromScales =
        op.getScales() &&
        llvm::cast<ShapedType>(op.getScales().getType()).getNumElements();
    for (int64_t a : axes)
      scales[a] = static_cast<double>(extents[a]) / in[a];
    if (fromScales)
      scalesPtr = "(const float *)" + ptr(op.getScales());
  }
  StringRef transform = op.getCoordinateTransformationMode();
  bool crop = transform == "tf_crop_and_resize";
  llvm::SmallVector<double> roiStart(rank, 0.0), roiEnd(rank, 1.0);
  if (crop) {
    auto roi = readFloatElements(getConstantElements(op.getRoi()));
    if (!roi) {
      roiPtr = "(const float *)" + ptr(op.getRoi());
    } else if (roi->size() != 2 * axes.size()) {
      return op.emitError("Resize: roi needs 2 entries per resized axis");
    } else {
      for (auto [i, a] : llvm::enumerate(axes)) {
        roiStart[a] = (*roi)[i];
        roiEnd[a] = (*roi)[i + axes.size()];
      }
    }
  }
  llvm::SmallVector<int64_t> active(rank, 0);
  for (int64_t a : axes)
    active[a] = !constant || crop || extents[a] != in[a] || scales[a] != 1.0;
  auto list = [](llvm::ArrayRef<double> v) {
    std::string s;
    for (double e : v)
      s += (s.empty() ? "" : ", ") + floatLiteral(e, true);
    return "{" + (s.empty() ? std::string("0") : s) + "}";
  };
  std::string axesLiteral = "hp_resize_axes{" + braced(in) + ", " +
                            braced(extents) + ", " + braced(stridesOf(in)) +
                            ", " + braced(active) + ", " + list(scales) + ", " +
                            list(roiStart) + ", " + list(roiEnd) + "}";
  int mode = llvm::StringSwitch<int>(op.getMode())
                 .Case("linear", 1)
                 .Case("cubic", 2)
                 .Default(0);
  int nearest = llvm::StringSwitch<int>(op.getNearestMode())
                    .Case("round_prefer_ceil", 1)
                    .Case("floor", 2)
                    .Case("ceil", 3)
                    .Default(0);
  int coord = llvm::StringSwitch<int>(transform)
                  .Case("half_pixel_symmetric", 1)
                  .Case("pytorch_half_pixel", 2)
                  .Case("align_corners", 3)
                  .Case("asymmetric", 4)
                  .Case("tf_crop_and_resize", 5)
                  .Case("tf_half_pixel_for_nn", 6)
                  .Default(0);
  line(llvm::formatv(
      "hp_launch(ctx, hp_resize<{0}>, {1}, {2}, {3}, {4}, "
      "{5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, "
      "{15});",
      storageType(eltOf(x)), numelOf(out), rank, axesLiteral, mode, coord,
      nearest, floatLiteral(op.getCubicCoeffA(), true), op.getExcludeOutside(),
      floatLiteral(op.getExtrapolationValue(), true), scalesPtr, roiPtr,
      hpDims(listPos), axes.size(), ptr(x), ptr(out)));
  ++program.libraryCalls;
  return success();
}

LogicalResult Emitter::emitEinsum(onnx::EinsumOp op) {
  std::string eq;
  for (char c : op.getEquation())
    if (c != ' ')
      eq += c;
  auto [lhs, rhs] = llvm::StringRef(eq).split("->");
  bool explicitOutput = llvm::StringRef(eq).contains("->");
  llvm::SmallVector<llvm::StringRef> terms;
  lhs.split(terms, ',');
  auto inputs = op->getOperands();
  if (terms.size() != inputs.size())
    return op->emitError("einsum terms do not match the inputs");
  // Axis ids: letters 'a'..'z', 'A'..'Z' -> 0..51; ellipsis axis k -> 52 + k.
  auto letterId = [](char c) {
    return llvm::isLower(c) ? c - 'a' : c - 'A' + 26;
  };
  size_t ellipsisRank = 0;
  for (auto [term, v] : llvm::zip(terms, inputs)) {
    size_t named = 0;
    for (char c : term)
      named += llvm::isAlpha(c);
    if (term.contains("..."))
      ellipsisRank = std::max(ellipsisRank, shapeOf(v).size() - named);
  }
  auto expand = [&](llvm::StringRef term, size_t rank) {
    llvm::SmallVector<int> axes;
    size_t named = 0;
    for (char c : term)
      named += llvm::isAlpha(c);
    for (size_t i = 0; i < term.size();) {
      if (term.substr(i).starts_with("...")) {
        size_t e = rank - named;
        for (size_t k = ellipsisRank - e; k < ellipsisRank; ++k)
          axes.push_back(52 + static_cast<int>(k));
        i += 3;
        continue;
      }
      axes.push_back(letterId(term[i++]));
    }
    return axes;
  };
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  llvm::SmallVector<llvm::SmallVector<int>> operandAxes;
  for (auto [term, v] : llvm::zip(terms, inputs)) {
    llvm::SmallVector<int> axes = expand(term, shapeOf(v).size());
    llvm::ArrayRef<int64_t> sh = shapeOf(v);
    for (auto [k, a] : llvm::enumerate(axes)) {
      int64_t &e = extent[a];
      e = std::max(e, sh[k]);
      if (sh[k] == 0)
        e = 0;
      ++uses[a];
    }
    operandAxes.push_back(axes);
  }
  llvm::SmallVector<int> outAxes;
  if (explicitOutput) {
    outAxes = expand(rhs, ellipsisRank + llvm::count_if(rhs, llvm::isAlpha));
  } else {
    for (size_t k = 0; k < ellipsisRank; ++k)
      outAxes.push_back(52 + static_cast<int>(k));
    for (int a = 0; a < 52; ++a)
      if (uses.count(a) && uses[a] == 1)
        outAxes.push_back(a);
  }
  llvm::SmallVector<int> contracted;
  for (auto &[a, e] : extent)
    if (!llvm::is_contained(outAxes, a))
      contracted.push_back(a);
  // Strides of each operand per axis (0 for broadcast extents of 1).
  auto strideOf = [&](size_t i, int axis) {
    llvm::ArrayRef<int64_t> sh = shapeOf(inputs[i]);
    llvm::SmallVector<int64_t> st = stridesOf(sh);
    int64_t s = 0;
    for (auto [k, a] : llvm::enumerate(operandAxes[i]))
      if (a == axis && !(sh[k] == 1 && extent[axis] != 1))
        s += st[k];
    return s;
  };
  Value out = op->getResult(0);
  Type elt = eltOf(out);
  std::string ct = computeType(elt), acc = accType(elt);
  int64_t outCount = numelOf(out), redCount = 1;
  for (int a : contracted)
    redCount *= extent[a];
  std::string name = "k" + std::to_string(kernelCount++) + "_Einsum";
  llvm::SmallVector<std::string> params, args;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    params.push_back("const " + storageType(eltOf(v)) + " *__restrict__ in" +
                     std::to_string(i));
    args.push_back(ptr(v));
  }
  params.push_back(storageType(elt) + " *__restrict__ out");
  args.push_back(ptr(out));
  // Axis variables: "ax_" and the letter (never the loop variables i, c).
  auto axisName = [](int a) {
    return a < 52 ? "ax_" + std::string(1, a < 26 ? 'a' + a : 'A' + a - 26)
                  : "ax_e" + std::to_string(a - 52);
  };
  kernels << "// " << name << ": Einsum '" << onnx::getNodeName(op.getLoc())
          << "' \"" << op.getEquation() << "\"\n";
  kernels << "HP_KERNEL(" << name << ", " << llvm::join(params, ", ")
          << ") {\n  HP_FOR_W(i, " << redCount << ") {\n    int64_t r = i;\n";
  for (int k = static_cast<int>(outAxes.size()) - 1; k >= 0; --k)
    kernels << "    const int64_t " << axisName(outAxes[k]) << " = r % "
            << extent[outAxes[k]] << ";\n    r /= " << extent[outAxes[k]]
            << ";\n";
  auto offset = [&](size_t i, llvm::ArrayRef<int> axes) {
    std::string off;
    for (int a : axes)
      if (int64_t st = strideOf(i, a))
        off += (off.empty() ? "" : " + ") + axisName(a) + " * " +
               std::to_string(st);
    return off.empty() ? std::string("0") : off;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    kernels << "    const int64_t base" << i << " = " << offset(i, outAxes)
            << ";\n";
  kernels << "    " << acc << " acc = 0;\n    for (int64_t c = 0; c < "
          << redCount << "; ++c) {\n      int64_t q = c;\n";
  for (int k = static_cast<int>(contracted.size()) - 1; k >= 0; --k)
    kernels << "      const int64_t " << axisName(contracted[k]) << " = q % "
            << extent[contracted[k]]
            << ";\n      q /= " << extent[contracted[k]] << ";\n";
  std::string product;
  for (size_t i = 0; i < inputs.size(); ++i)
    product += (i ? " * " : "") + std::string("(") + acc + ")(" + ct + ")in" +
               std::to_string(i) + "[base" + std::to_string(i) + " + " +
               offset(i, contracted) + "]";
  kernels << "      acc += " << product << ";\n    }\n    out[i] = ("
          << storageType(elt) << ")(" << ct << ")acc;\n  }\n}\n\n";
  line("hp_launch(ctx, " + name + ", " + std::to_string(outCount) + ", " +
       llvm::join(args, ", ") + ");");
  ++program.kernels;
  return success();
}

} // namespace hetpar::codegen::emitter
