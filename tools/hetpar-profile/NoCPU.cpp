//===- NoCPU.cpp - hetpar-profile built without OpenBLAS
//-------------------===//
#include "Backend.h"

namespace hetpar::profile {
std::unique_ptr<Backend> createCPUBackend() { return nullptr; }
} // namespace hetpar::profile
