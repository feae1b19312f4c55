// RUN: hetpar-opt %s --split-input-file --hetpar-onnx-decompose-rnn --verify-diagnostics | FileCheck %s
// The numbers (LSTM, GRU, RNN against ONNX's reference outputs) are checked
// by the ONNX node tests (test/Codegen/onnx-node-tests.test, test_lstm_*,
// test_gru_*, test_simple_rnn_*); here, the structure.

// A forward RNN over 3 steps: X times W once, then per step H times R, the
// activation (Tanh), and Y joined from the steps.
// CHECK-LABEL: func.func @rnn
// CHECK-NOT: onnx.Generic
// CHECK: onnx.MatMul({{.*}}) : (tensor<3x2x4xf32>, tensor<4x5xf32>) -> tensor<3x2x5xf32>
// CHECK-COUNT-3: onnx.Tanh
// CHECK: onnx.Concat({{.*}}) {axis = 0 : i64} : (tensor<1x2x5xf32>, tensor<1x2x5xf32>, tensor<1x2x5xf32>) -> tensor<3x2x5xf32>
// CHECK: return {{.*}} : tensor<3x1x2x5xf32>, tensor<1x2x5xf32>
func.func @rnn(%x: tensor<3x2x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<1x5x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>) {
  %y:2 = onnx.Generic "RNN"(%x, %w, %r) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<3x2x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>) -> (tensor<3x1x2x5xf32>, tensor<1x2x5xf32>)
  return %y#0, %y#1 : tensor<3x1x2x5xf32>, tensor<1x2x5xf32>
}

// -----

// A bidirectional LSTM in the batch-first layout: two directions of 2 steps,
// each step with three Sigmoid gates and two Tanh; the result is transposed
// back to [B, T, D, H].
// CHECK-LABEL: func.func @lstm_bidirectional_batch_first
// CHECK-NOT: onnx.Generic
// CHECK-COUNT-12: onnx.Sigmoid
// CHECK: onnx.Transpose({{.*}}) {perm = array<i64: 2, 0, 1, 3>} : (tensor<2x2x3x4xf32>) -> tensor<3x2x2x4xf32>
func.func @lstm_bidirectional_batch_first(%x: tensor<3x2x6xf32>, %w: tensor<2x16x6xf32>, %r: tensor<2x16x4xf32>) -> tensor<3x2x2x4xf32> {
  %none = onnx.NoValue
  %y:3 = onnx.Generic "LSTM"(%x, %w, %r, %none, %none, %none, %none, %none) attributes {attrs = {hidden_size = 4 : i64, direction = "bidirectional", layout = 1 : i64}, domain = "", version = 14 : i64} : (tensor<3x2x6xf32>, tensor<2x16x6xf32>, tensor<2x16x4xf32>, none, none, none, none, none) -> (tensor<3x2x2x4xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>)
  return %y#0 : tensor<3x2x2x4xf32>
}

// -----

// GRU with sequence_lens from data: each step keeps an ended sample's state
// (Where on lengths > t) and gives 0 in Y after its end.
// CHECK-LABEL: func.func @gru_lengths
// CHECK-NOT: onnx.Generic
// CHECK: onnx.Less
// CHECK: onnx.Where
func.func @gru_lengths(%x: tensor<2x3x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf32>, %len: tensor<3xi32>) -> tensor<1x3x5xf32> {
  %none = onnx.NoValue
  %y:2 = onnx.Generic "GRU"(%x, %w, %r, %none, %len) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf32>, none, tensor<3xi32>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

func.func @reverse_with_lengths(%x: tensor<2x3x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<1x5x5xf32>, %len: tensor<3xi32>) -> tensor<1x3x5xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{RNN runs backwards with sequence_lens that may be shorter than the sequence, which is not supported (pad every sample to the full length)}}
  %y:2 = onnx.Generic "RNN"(%x, %w, %r, %none, %len) attributes {attrs = {hidden_size = 5 : i64, direction = "reverse"}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>, none, tensor<3xi32>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

func.func @bad_activation(%x: tensor<2x3x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<1x5x5xf32>) -> tensor<1x3x5xf32> {
  // expected-error @+1 {{RNN with activation Softsign is not supported (Sigmoid, Tanh and Relu are)}}
  %y:2 = onnx.Generic "RNN"(%x, %w, %r) attributes {attrs = {hidden_size = 5 : i64, activations = ["Softsign"]}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

// An operand whose shape is not ONNX's is one error naming it (found by the
// `onnx` fuzzer: an initial_c with a batch of 0 made the unrolled Mul fail
// and the pass dereference its missing result).
func.func @lstm_bad_initial_c(%x: tensor<1x2x4xf32>, %w: tensor<1x12x4xf32>, %r: tensor<1x12x3xf32>, %h: tensor<1x2x3xf32>, %c: tensor<1x0x3xf32>) -> tensor<1x2x3xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{LSTM input 6 ('initial_c') needs the type 'tensor<1x2x3xf32>', not 'tensor<1x0x3xf32>'}}
  %y:2 = onnx.Generic "LSTM"(%x, %w, %r, %none, %none, %h, %c) attributes {attrs = {hidden_size = 3 : i64}, domain = "", version = 14 : i64} : (tensor<1x2x4xf32>, tensor<1x12x4xf32>, tensor<1x12x3xf32>, none, none, tensor<1x2x3xf32>, tensor<1x0x3xf32>) -> (tensor<1x1x2x3xf32>, tensor<1x2x3xf32>)
  return %y#1 : tensor<1x2x3xf32>
}

// -----

// The same for a GRU's weights given for 4 gates.
func.func @gru_bad_w(%x: tensor<2x3x4xf32>, %w: tensor<1x20x4xf32>, %r: tensor<1x15x5xf32>) -> tensor<1x3x5xf32> {
  // expected-error @+1 {{GRU input 1 ('W') needs the type 'tensor<1x15x4xf32>', not 'tensor<1x20x4xf32>'}}
  %y:2 = onnx.Generic "GRU"(%x, %w, %r) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x20x4xf32>, tensor<1x15x5xf32>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

// Element types: ONNX's T is a float type shared by every input but
// sequence_lens, an int32 (found by the `onnx` fuzzer: a boolean X was
// unrolled into ops that failed their type checks).
func.func @lstm_bool_x(%x: tensor<5x2x4xi1>, %w: tensor<1x12x4xf32>, %r: tensor<1x12x3xf32>) -> tensor<1x2x3xf32> {
  // expected-error @+1 {{LSTM needs a floating-point X, not 'tensor<5x2x4xi1>'}}
  %y:2 = onnx.Generic "LSTM"(%x, %w, %r) attributes {attrs = {hidden_size = 3 : i64}, domain = "", version = 14 : i64} : (tensor<5x2x4xi1>, tensor<1x12x4xf32>, tensor<1x12x3xf32>) -> (tensor<5x1x2x3xf32>, tensor<1x2x3xf32>)
  return %y#1 : tensor<1x2x3xf32>
}

// -----

func.func @gru_f64_r(%x: tensor<2x3x4xf32>, %w: tensor<1x15x4xf32>, %r: tensor<1x15x5xf64>) -> tensor<1x3x5xf32> {
  // expected-error @+1 {{GRU input 2 ('R') needs the type 'tensor<1x15x5xf32>', not 'tensor<1x15x5xf64>'}}
  %y:2 = onnx.Generic "GRU"(%x, %w, %r) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x15x4xf32>, tensor<1x15x5xf64>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

func.func @rnn_i64_lengths(%x: tensor<2x3x4xf32>, %w: tensor<1x5x4xf32>, %r: tensor<1x5x5xf32>, %l: tensor<3xi64>) -> tensor<1x3x5xf32> {
  %none = onnx.NoValue
  // expected-error @+1 {{RNN input 4 ('sequence_lens') needs the type 'tensor<3xi32>', not 'tensor<3xi64>'}}
  %y:2 = onnx.Generic "RNN"(%x, %w, %r, %none, %l) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x5x4xf32>, tensor<1x5x5xf32>, none, tensor<3xi64>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}

// -----

// A sequence of no steps is refused by name (found by the `onnx` fuzzer: the
// unrolled GRU concatenated an empty list of steps and crashed).
func.func @gru_zero_steps(%x: tensor<0x3x3xf32>, %w: tensor<1x9x3xf32>, %r: tensor<1x9x3xf32>) -> tensor<1x3x3xf32> {
  // expected-error @+1 {{GRU needs a sequence of at least one step, not X of type 'tensor<0x3x3xf32>'}}
  %y:2 = onnx.Generic "GRU"(%x, %w, %r) attributes {attrs = {hidden_size = 3 : i64}, domain = "", version = 14 : i64} : (tensor<0x3x3xf32>, tensor<1x9x3xf32>, tensor<1x9x3xf32>) -> (tensor<0x1x3x3xf32>, tensor<1x3x3xf32>)
  return %y#1 : tensor<1x3x3xf32>
}

// -----

// W and R are required: a GRU without R (which ONNX's schema check refuses
// at import, but IR written by hand is not imported) is refused by name,
// not unrolled with a null weight.
func.func @gru_without_r(%x: tensor<2x3x4xf32>, %w: tensor<1x15x4xf32>) -> tensor<1x3x5xf32> {
  // expected-error @+1 {{GRU needs input 2 ('R'), which the node does not give}}
  %y:2 = onnx.Generic "GRU"(%x, %w) attributes {attrs = {hidden_size = 5 : i64}, domain = "", version = 14 : i64} : (tensor<2x3x4xf32>, tensor<1x15x4xf32>) -> (tensor<2x1x3x5xf32>, tensor<1x3x5xf32>)
  return %y#1 : tensor<1x3x5xf32>
}
