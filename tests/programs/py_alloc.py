"""Allocates through the driver from Python frames, for the Python-stack tests.

The shim reads Python frames whether or not the allocating thread holds the GIL: ctypes.PyDLL
keeps it held during the call, ctypes.CDLL releases it, as PyTorch does around its operators.
Each allocation has its own size so the test can tell them apart; the functions, qualified
names and line numbers are asserted by tests/integration/python_stacks_test.cpp."""
import ctypes
import sys
import threading

held = ctypes.PyDLL("libcuda.so.1")
released = ctypes.CDLL("libcuda.so.1")


def check(result):
    if result != 0:
        sys.exit(f"driver call failed: {result}")


def allocate_weights(size):
    ptr = ctypes.c_uint64()
    check(held.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))  # ALLOC_LINE
    return ptr


def allocate_released(size):
    ptr = ctypes.c_uint64()
    check(released.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)))  # RELEASED_LINE
    return ptr


class Model:
    def build(self):
        return allocate_weights(1 << 20)  # CALL_LINE


def größe():
    return allocate_released(2 << 20)  # LATIN1_LINE


def 数据():
    return allocate_released(3 << 20)  # UCS2_LINE


def worker(context):
    check(held.cuCtxSetCurrent(context))  # the driver's current context is per thread
    allocate_released(4 << 20)  # THREAD_LINE


def batches():
    yield allocate_released(5 << 20)  # GENERATOR_LINE


def main():
    check(held.cuInit(0))
    device = ctypes.c_int()
    check(held.cuDeviceGet(ctypes.byref(device), 0))
    context = ctypes.c_void_p()
    check(held.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    check(held.cuCtxSetCurrent(context))
    Model().build()
    größe()
    数据()
    thread = threading.Thread(target=worker, args=(context,))
    thread.start()
    thread.join()
    for _ in batches():
        pass
    print("ok")


main()
