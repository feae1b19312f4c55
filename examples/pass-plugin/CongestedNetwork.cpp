//===- CongestedNetwork.cpp - an example of a user's own cost model -------===//
//
// `--cost-model example-congested` scores plans as the default model does,
// except that every collective and transfer takes `kCongestion` times as long:
// a user whose network is shared with other jobs and who measured that factor.
// Registered from the plugin's entry point (AnnotateFlops.cpp).
//
//===----------------------------------------------------------------------===//

#include "hetpar/CostModel/CostModel.h"

namespace {

/// Measured by the (hypothetical) user: their shared network delivers half of
/// what an idle one does.
constexpr double kCongestion = 2.0;

class CongestedNetworkModel : public hetpar::DefaultCostModel {
public:
  using DefaultCostModel::DefaultCostModel;
  llvm::StringRef name() const override { return "example-congested"; }
  double collectiveTime(hetpar::Collective kind, double bytes,
                        llvm::ArrayRef<int> devices,
                        const hetpar::Cluster &cluster) const override {
    return kCongestion *
           DefaultCostModel::collectiveTime(kind, bytes, devices, cluster);
  }
};

} // namespace

void registerExampleCostModel() {
  hetpar::registerCostModel("example-congested", [](hetpar::CostParams params) {
    return std::make_unique<CongestedNetworkModel>(std::move(params));
  });
}
