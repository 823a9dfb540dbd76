// Prints what the dlsym hook answered, for the interposition tests.
#include <dlfcn.h>

#include <cstdio>

extern "C" int gmp_probe_next_value();

int main() {
  // Repeat lookups must keep working: no recursion guard may turn the second one into NULL.
  const int first = gmp_probe_next_value();
  const int second = gmp_probe_next_value();
  void* lib = dlopen("libprobe_second.so", RTLD_NOW | RTLD_LOCAL);
  auto look_alike = lib ? reinterpret_cast<int (*)(unsigned long long*, unsigned long)>(dlsym(lib, "cuMemAlloc_v2"))
                        : nullptr;
  auto blas = lib ? reinterpret_cast<int (*)()>(dlsym(lib, "cublasProbe")) : nullptr;
  void* missing = dlsym(RTLD_DEFAULT, "gmp_no_such_symbol");
  std::printf("{\"next\":[%d,%d],\"look_alike\":%d,\"blas\":%d,\"missing_is_null\":%s}\n", first, second,
              look_alike ? look_alike(nullptr, 0) : -1, blas ? blas() : -1, missing ? "false" : "true");
  return 0;
}
