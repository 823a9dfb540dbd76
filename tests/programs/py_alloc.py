"""Allocates through the driver from Python frames, for the Python-stack tests.

ctypes.PyDLL keeps the GIL held during each call, as a C extension such as PyTorch does when it
allocates, so the shim sees a thread that runs CPython and holds the GIL. The functions and
their line numbers are asserted by tests/integration/python_stacks_test.cpp."""
import ctypes
import sys

cuda = ctypes.PyDLL("libcuda.so.1")


def check(result):
    if result != 0:
        sys.exit(f"driver call failed: {result}")


def allocate_weights(size):
    ptr = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))  # ALLOC_LINE
    return ptr


def build_model():
    return allocate_weights(1 << 20)  # CALL_LINE


def main():
    check(cuda.cuInit(0))
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0))
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    check(cuda.cuCtxSetCurrent(context))
    build_model()
    # Released GIL (ctypes.CDLL): no Python frames can be read, native ones still are.
    plain = ctypes.CDLL("libcuda.so.1")
    ptr = ctypes.c_uint64()
    check(plain.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(2 << 20)))
    print("ok")


main()
