// hetpar-dist-lower-exchanges cuts and joins blocks with onnx.Slice and
// onnx.Concat, which take no index elements: an error at the op, not
// invalid IR (test/Transforms/hetpar-dist-lower-exchanges.mlir runs it).
dist.mesh @mesh devices [#dist.device<0, "unknown">, #dist.device<1, "unknown">]
func.func @device_0(%x: tensor<4xindex>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{exchanges 'tensor<4xindex>', whose elements onnx.Slice and onnx.Concat do not take}}
  dist.send_pieces %x on @mesh [#dist.piece<peer = 1, tag = 0, batch_dim = 0, batch_size = 2>] : tensor<4xindex>
  return
}
