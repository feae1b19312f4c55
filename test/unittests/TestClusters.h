//===- TestClusters.h - cluster files the unit tests share -----*- C++ -*-===//
//
// Cluster YAML (docs/cluster-format.md) used by more than one unit test.
//
//===----------------------------------------------------------------------===//
#ifndef HETPAR_TEST_UNITTESTS_TESTCLUSTERS_H
#define HETPAR_TEST_UNITTESTS_TESTCLUSTERS_H

namespace hetpar::test {

/// Four A100s in one node (NVLink, the catalog's A100-SXM4-80GB).
inline constexpr const char *kFourA100 = R"(
name: four
nodes:
  - name: n0
    devices: [{kind: A100-SXM4-80GB, count: 4}]
)";

} // namespace hetpar::test

#endif // HETPAR_TEST_UNITTESTS_TESTCLUSTERS_H
