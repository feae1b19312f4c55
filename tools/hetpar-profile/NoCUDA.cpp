//===- NoCUDA.cpp - hetpar-profile built without the CUDA toolkit
//----------===//
#include "Backend.h"

namespace hetpar::profile {
std::unique_ptr<Backend> createCUDABackend(int, std::string &why) {
  why = "this hetpar-profile was built without the CUDA toolkit";
  return nullptr;
}
} // namespace hetpar::profile
