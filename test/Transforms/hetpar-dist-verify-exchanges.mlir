// RUN: hetpar-opt %s -split-input-file -hetpar-dist-verify-exchanges -verify-diagnostics | FileCheck %s

// Matching programs pass unchanged: a two-stage pipeline (device 0 sends its
// activation to device 1 with tag 0 and gets a gradient back with tag 1) and
// a tensor-parallel pair that all-reduce in the same order.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
// CHECK-LABEL: func.func @device_0
func.func @device_0(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {dist.device = 0 : i64} {
  dist.send %x on @m to 1 tag 0 : tensor<4x8xf32>
  %g = dist.recv on @m from 1 tag 1 : tensor<4x8xf32>
  %r = dist.all_reduce %g on @m [0, 1] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = dist.all_gather %r on @m [0, 1] dim 1 sizes [8, 6] : tensor<4x8xf32> -> tensor<4x14xf32>
  return %r : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @device_1
func.func @device_1(%y: tensor<4x8xf32>, %z: tensor<4x6xf32>) -> tensor<4x8xf32> attributes {dist.device = 1 : i64} {
  %x = dist.recv on @m from 0 tag 0 : tensor<4x8xf32>
  dist.send %x on @m to 0 tag 1 : tensor<4x8xf32>
  %r = dist.all_reduce %y on @m [0, 1] reduction sum : tensor<4x8xf32> -> tensor<4x8xf32>
  // Uneven all_gather: different local operands, the same result.
  %a = dist.all_gather %z on @m [0, 1] dim 1 sizes [8, 6] : tensor<4x6xf32> -> tensor<4x14xf32>
  return %r : tensor<4x8xf32>
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @a() attributes {dist.device = 0 : i64} {
  return
}
// expected-error @+1 {{device 0 already runs @a}}
func.func @b() attributes {dist.device = 0 : i64} {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{send #0 from device 0 to device 1 has no matching recv on device 1}}
  dist.send %x on @m to 1 tag 0 : tensor<4xf32>
  return
}
func.func @device_1() attributes {dist.device = 1 : i64} {
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0() attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{recv #0 on device 0 from device 1 has no matching send on device 1 (no program)}}
  %x = dist.recv on @m from 1 tag 0 : tensor<4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  // expected-note @+1 {{the send}}
  dist.send %x on @m to 1 tag 3 : tensor<4xf32>
  return
}
func.func @device_1() attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{recv #0 from device 0 expects tag 4 and 'tensor<4xf32>', but send #0 of device 0 has tag 3 and 'tensor<4xf32>'}}
  %x = dist.recv on @m from 0 tag 4 : tensor<4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<3x8xf32>) attributes {dist.device = 0 : i64} {
  // expected-note @+1 {{the send}}
  dist.send %x on @m to 1 tag 0 : tensor<3x8xf32>
  return
}
func.func @device_1() attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{expects tag 0 and 'tensor<5x8xf16>', but send #0 of device 0 has tag 0 and 'tensor<3x8xf32>'}}
  %x = dist.recv on @m from 0 tag 0 : tensor<5x8xf16>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  // expected-note @+1 {{device 0's}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  return
}
func.func @device_1(%x: tensor<4xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{is collective #0 of its group on device 1, but device 0 runs a different one there}}
  %r = dist.all_reduce %x on @m [0, 1] reduction max : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  // Every rank of an all_reduce passes the same count: 4 against 6.
  // expected-note @+1 {{device 0's}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  return
}
func.func @device_1(%x: tensor<6xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{is collective #0 of its group on device 1, but device 0 runs a different one there}}
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<6xf32> -> tensor<6xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  // expected-error @+1 {{is collective #1 of its group, but device 1 of the group runs only 1 on it}}
  %s = dist.all_reduce %r on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  return
}
func.func @device_1(%x: tensor<4xf32>) attributes {dist.device = 1 : i64} {
  %r = dist.all_reduce %x on @m [0, 1] reduction sum : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">, #dist.device<2, "V100">]
func.func @device_0(%x: tensor<4xf32>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{device 2 of its group has no program (no function with dist.device = 2)}}
  %r = dist.broadcast %x on @m [0, 2] root 0 : tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

// A deadlock that matches message for message: each device first waits to
// receive (its own exchange step: the Neg ends it) what the other sends only
// afterwards.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @a(%x: tensor<2xf32>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{deadlock (the programs run in order, no device can go on): device 0 waits here for device 1 to send message #0}}
  %r = dist.recv on @m from 1 tag 0 : tensor<2xf32>
  %n = onnx.Neg(%r) : (tensor<2xf32>) -> tensor<2xf32>
  dist.send %n on @m to 1 tag 1 : tensor<2xf32>
  return
}
func.func @b(%x: tensor<2xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 1 waits here for device 0 to send message #0}}
  %r = dist.recv on @m from 0 tag 1 : tensor<2xf32>
  %n = onnx.Neg(%r) : (tensor<2xf32>) -> tensor<2xf32>
  dist.send %n on @m to 0 tag 0 : tensor<2xf32>
  return
}

// -----

// Device 1 forwards what it receives: its send cannot be posted with the
// receive that fills its buffer (a step of its own, as the code generator
// makes it), so device 0, which waits for the forwarded value before it
// sends, deadlocks with it. Modelled as one step, the send would have matched
// device 0's receive with a buffer not yet filled.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @a(%x: tensor<2xf32>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{deadlock (the programs run in order, no device can go on): device 0 waits here for device 1 to send message #0}}
  %r = dist.recv on @m from 1 tag 1 : tensor<2xf32>
  %n = onnx.Neg(%r) : (tensor<2xf32>) -> tensor<2xf32>
  dist.send %x on @m to 1 tag 0 : tensor<2xf32>
  return
}
func.func @b() attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 1 waits here for device 0 to send message #0}}
  %r = dist.recv on @m from 0 tag 0 : tensor<2xf32>
  dist.send %r on @m to 0 tag 1 : tensor<2xf32>
  return
}

// -----

// A view (Flatten) between a receive and a send of another buffer ends no
// step, as in the generated code (onnx::isView): each device posts its
// receive and its send together, so the crossed pair does not deadlock.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
// CHECK-LABEL: func.func @view_a
func.func @view_a(%x: tensor<1x2x2xf32>) attributes {dist.device = 0 : i64} {
  %r = dist.recv on @m from 1 tag 0 : tensor<1x4xf32>
  %v = onnx.Flatten(%x) : (tensor<1x2x2xf32>) -> tensor<1x4xf32>
  dist.send %v on @m to 1 tag 1 : tensor<1x4xf32>
  return
}
// CHECK-LABEL: func.func @view_b
func.func @view_b(%x: tensor<1x2x2xf32>) attributes {dist.device = 1 : i64} {
  %r = dist.recv on @m from 0 tag 1 : tensor<1x4xf32>
  %v = onnx.Flatten(%x) : (tensor<1x2x2xf32>) -> tensor<1x4xf32>
  dist.send %v on @m to 0 tag 0 : tensor<1x4xf32>
  return
}

// -----

// A send of a view of what the step receives still begins a new step (the
// view shares the received buffer): forwarded through an Identity, the
// crossed pair deadlocks.
dist.mesh @m devices [#dist.device<0, "A100">, #dist.device<1, "V100">]
func.func @a(%x: tensor<2xf32>) attributes {dist.device = 0 : i64} {
  // expected-error @+1 {{deadlock (the programs run in order, no device can go on): device 0 waits here for device 1 to send message #0}}
  %r = dist.recv on @m from 1 tag 0 : tensor<1x4xf32>
  %v = onnx.Identity(%r) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  dist.send %v on @m to 1 tag 1 : tensor<1x4xf32>
  return
}
func.func @b(%x: tensor<2xf32>) attributes {dist.device = 1 : i64} {
  // expected-error @+1 {{device 1 waits here for device 0 to send message #0}}
  %r = dist.recv on @m from 0 tag 1 : tensor<1x4xf32>
  %v = onnx.Identity(%r) : (tensor<1x4xf32>) -> tensor<1x4xf32>
  dist.send %v on @m to 0 tag 0 : tensor<1x4xf32>
  return
}
