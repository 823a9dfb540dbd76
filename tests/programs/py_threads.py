"""Eight Python threads allocate at once with the GIL released (ctypes.CDLL), each from its own
function and with its own allocation size, so tests/integration/python_stacks_test.cpp can check
that every event carries the frames of the thread that made it, never another thread's."""
import ctypes
import sys
import threading

THREADS, ROUNDS = 8, 200
cuda = ctypes.CDLL("libcuda.so.1")


def check(result):
    if result != 0:
        sys.exit(f"driver call failed: {result}")


WORKER = """
def worker_{index}(context, start):
    check(cuda.cuCtxSetCurrent(context))
    start.wait()
    ptr = ctypes.c_uint64()
    for _ in range(ROUNDS):
        check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t({index} + 1 << 20)))
        check(cuda.cuMemFree_v2(ptr))
"""


def make_worker(index):
    # One code object per thread (a closure would share one), so each has its own name.
    exec(WORKER.format(index=index), globals())
    return globals()[f"worker_{index}"]


def main():
    check(cuda.cuInit(0))
    device, context = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0))
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    start = threading.Barrier(THREADS)
    threads = [threading.Thread(target=make_worker(i), args=(context, start)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("ok")


main()
