// A HIP program on a HIP runtime without HSA (tests/fake_hip/fake_hip_only.cpp): 12345 bytes
// allocated and freed, 100 left live.
#include "../../shim/hip/hip_api.h"

int main() {
  void *a = nullptr, *b = nullptr;
  if (hipMalloc(&a, 12345) != hipSuccess || hipMalloc(&b, 100) != hipSuccess || hipFree(a) != hipSuccess) return 1;
  return 0;
}
