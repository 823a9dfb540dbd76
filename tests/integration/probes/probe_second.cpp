// Second definition of gmp_probe_value, plus a symbol that merely looks like a driver entry
// point: the shim must hand out neither as one of its wrappers.
extern "C" int gmp_probe_value() { return 2; }
extern "C" int cuMemAlloc_v2(unsigned long long*, unsigned long) { return 4242; }
extern "C" int cublasProbe() { return 7; }
