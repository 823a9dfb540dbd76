// Checks the fake driver's stream-capture and graph-memory rules (README.md, "Stream capture and
// graphs"). Part of fake_driver_test (main() and the environment are in fake_driver_test.cpp:
// 2 devices of 1 GiB). Each test leaves no capture, no live graph allocation and no graph
// reservation behind (it trims), so charges are measured against the state at its start.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fakecuda_hooks.h"

// Exports that cuda.h declares under other names or only with CUDA_API_PER_THREAD_DEFAULT_STREAM.
extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamGetDevice_ptsz(CUstream, CUdevice*);
CUresult cuStreamBeginCapture_v2_ptsz(CUstream, CUstreamCaptureMode);
CUresult cuStreamBeginCapture_ptsz(CUstream);
CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream, CUgraph, const CUgraphNode*,
                                          const CUgraphEdgeData*, size_t, CUstreamCaptureMode);
CUresult cuStreamEndCapture_ptsz(CUstream, CUgraph*);
CUresult cuStreamIsCapturing_ptsz(CUstream, CUstreamCaptureStatus*);
CUresult cuStreamGetCaptureInfo_ptsz(CUstream, CUstreamCaptureStatus*, cuuint64_t*);
CUresult cuStreamGetCaptureInfo_v2(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                   const CUgraphNode**, size_t*);
CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                        const CUgraphNode**, size_t*);
CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream, CUstreamCaptureStatus*, cuuint64_t*, CUgraph*,
                                        const CUgraphNode**, const CUgraphEdgeData**, size_t*);
CUresult cuGraphInstantiate_v2(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec*, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS*);
CUresult cuGraphLaunch_ptsz(CUgraphExec, CUstream);
CUresult cuGraphUpload_ptsz(CUgraphExec, CUstream);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr, unsigned char, size_t, CUstream);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr, unsigned int, size_t, CUstream);
CUresult cuStreamWaitEvent_ptsz(CUstream, CUevent, unsigned int);
CUresult cuStreamQuery_ptsz(CUstream);
CUresult cuEventRecord_ptsz(CUevent, CUstream);
}

namespace {

constexpr size_t MiB = size_t{1} << 20;
constexpr size_t GiB = size_t{1} << 30;
constexpr size_t G = 2 * MiB;
constexpr CUdeviceptr kGraphVaBase = 0x600000000000ULL;

constexpr CUstreamCaptureMode kGlobal = CU_STREAM_CAPTURE_MODE_GLOBAL;
constexpr CUstreamCaptureMode kThreadLocal = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
constexpr CUstreamCaptureMode kRelaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
constexpr CUstreamCaptureMode kModes[] = {kGlobal, kThreadLocal, kRelaxed};

enum class Where { kSameThread, kOtherThread };
constexpr Where kWheres[] = {Where::kSameThread, Where::kOtherThread};

const char* mode_name(CUstreamCaptureMode m) {
  return m == kGlobal ? "global" : m == kThreadLocal ? "thread_local" : "relaxed";
}
const char* where_name(Where w) { return w == Where::kSameThread ? "same thread" : "other thread"; }

void* sym(const char* name) {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return dlsym(h, name);
}

size_t charged(int dev = 0) { return fakecuda_charged_bytes(dev); }

// The documented rule: is a potentially unsafe call prohibited?
bool prohibited(CUstreamCaptureMode capture, Where where, CUstreamCaptureMode caller) {
  const bool global_rule = caller == kGlobal && capture == kGlobal;
  const bool own_rule = where == Where::kSameThread && caller != kRelaxed && capture != kRelaxed;
  return global_rule || own_rule;
}

// Runs f in capture-interaction mode m on the calling thread.
CUresult in_mode(CUstreamCaptureMode m, const std::function<CUresult()>& f) {
  CUstreamCaptureMode old = m;
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&old), CUDA_SUCCESS);
  const CUresult r = f();
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&old), CUDA_SUCCESS);
  return r;
}

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx0_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1_, 1), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&cap_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamCreate(&other_, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&ev_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGetMemPool(&pool0_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    ASSERT_EQ(fakecuda_graph_reserved_bytes(0), 0u);
    ASSERT_EQ(fakecuda_graph_reserved_bytes(1), 0u);
    reset_highs(0);
    reset_highs(1);
    base0_ = charged(0);
    base1_ = charged(1);
  }
  void TearDown() override {
    EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_NONE) << "test left a capture open";
    EXPECT_EQ(cuStreamDestroy(cap_), CUDA_SUCCESS);
    EXPECT_EQ(cuStreamDestroy(other_), CUDA_SUCCESS);
    EXPECT_EQ(cuEventDestroy(ev_), CUDA_SUCCESS);
    EXPECT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    EXPECT_EQ(cuDeviceGraphMemTrim(1), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_graph_reserved_bytes(0), 0u) << "test left a live graph allocation";
    EXPECT_EQ(fakecuda_graph_reserved_bytes(1), 0u) << "test left a live graph allocation";
    EXPECT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(charged(0), base0_) << "test leaked charged bytes on device 0";
    EXPECT_EQ(charged(1), base1_) << "test leaked charged bytes on device 1";
    EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  }

  static void reset_highs(int dev) {
    cuuint64_t zero = 0;
    ASSERT_EQ(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &zero),
              CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceSetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero),
              CUDA_SUCCESS);
  }

  static cuuint64_t gattr(int dev, CUgraphMem_attribute a) {
    cuuint64_t v = ~0ULL;
    EXPECT_EQ(cuDeviceGetGraphMemAttribute(dev, a, &v), CUDA_SUCCESS);
    return v;
  }

  // Expects the four graph memory attributes of `dev`: used == reserved == cur, both highs == high.
  static void expect_graph_mem(int dev, size_t cur, size_t high, const char* when) {
    SCOPED_TRACE(when);
    EXPECT_EQ(gattr(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), cur);
    EXPECT_EQ(gattr(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), cur);
    EXPECT_EQ(gattr(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH), high);
    EXPECT_EQ(gattr(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), high);
    EXPECT_EQ(fakecuda_graph_reserved_bytes(dev), cur);
  }

  static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a) {
    cuuint64_t v = ~0ULL;
    EXPECT_EQ(cuMemPoolGetAttribute(p, a, &v), CUDA_SUCCESS);
    return v;
  }

  static CUstreamCaptureStatus status(CUstream s) {
    CUstreamCaptureStatus st = static_cast<CUstreamCaptureStatus>(77);
    EXPECT_EQ(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
    return st;
  }

  static cuuint64_t capture_id(CUstream s) {
    CUstreamCaptureStatus st{};
    cuuint64_t id = 0;
    EXPECT_EQ(cuStreamGetCaptureInfo(s, &st, &id, nullptr, nullptr, nullptr, nullptr),
              CUDA_SUCCESS);
    return id;
  }

  // Runs f on this thread or on a new one (current context ctx0), in caller mode m.
  CUresult call_on(Where where, CUstreamCaptureMode m, const std::function<CUresult()>& f) {
    if (where == Where::kSameThread) return in_mode(m, f);
    CUresult r = CUDA_ERROR_UNKNOWN;
    std::thread t([&] {
      EXPECT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
      r = in_mode(m, f);
    });
    t.join();
    return r;
  }

  // Captures a memset on cap_ in `mode`, runs `call` there (this thread or another, in
  // caller_mode), captures another memset, ends. Returns {call's result, end's result}.
  std::pair<CUresult, CUresult> under_capture(CUstreamCaptureMode mode, Where where,
                                              CUstreamCaptureMode caller_mode,
                                              const std::function<CUresult()>& call) {
    EXPECT_EQ(cuStreamBeginCapture(cap_, mode), CUDA_SUCCESS);
    EXPECT_EQ(cuMemsetD8Async(0x1000, 1, 4096, cap_), CUDA_SUCCESS);
    const CUresult called = call_on(where, caller_mode, call);
    const CUresult memset2 = cuMemsetD8Async(0x1000, 2, 4096, cap_);
    CUgraph g = reinterpret_cast<CUgraph>(1);
    const CUresult end = cuStreamEndCapture(cap_, &g);
    if (end == CUDA_SUCCESS) {
      EXPECT_EQ(memset2, CUDA_SUCCESS);
      EXPECT_NE(g, nullptr);
      EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
    } else {
      EXPECT_EQ(memset2, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);  // work into an invalid capture
      EXPECT_EQ(g, nullptr);
    }
    return {called, end};
  }

  // Captures cap_ into a new graph with `body` run between begin and end.
  CUgraph capture(const std::function<void()>& body, CUstreamCaptureMode mode = kGlobal) {
    EXPECT_EQ(cuStreamBeginCapture(cap_, mode), CUDA_SUCCESS);
    body();
    CUgraph g = nullptr;
    EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_SUCCESS);
    return g;
  }

  static CUmemPoolProps device_props(int dev) {
    CUmemPoolProps p{};
    p.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
  }

  static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(int dev, size_t bytes) {
    CUDA_MEM_ALLOC_NODE_PARAMS ap{};
    ap.poolProps = device_props(dev);
    ap.bytesize = bytes;
    return ap;
  }

  CUcontext ctx0_ = nullptr;
  CUcontext ctx1_ = nullptr;
  CUstream cap_ = nullptr;
  CUstream other_ = nullptr;
  CUevent ev_ = nullptr;
  CUmemoryPool pool0_ = nullptr;
  size_t base0_ = 0;
  size_t base1_ = 0;
};

// ---------------------------------------------------------------- capture basics

TEST_F(Graphs, ThreadCaptureModeIsPerThreadAndExchanged) {
  CUstreamCaptureMode m = kRelaxed;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  EXPECT_EQ(m, kGlobal);  // the default
  std::thread t([] {
    CUstreamCaptureMode mm = kThreadLocal;
    EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mm), CUDA_SUCCESS);
    EXPECT_EQ(mm, kGlobal);  // another thread still has its own default
    EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&mm), CUDA_SUCCESS);
  });
  t.join();
  m = kGlobal;
  ASSERT_EQ(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  EXPECT_EQ(m, kRelaxed);
  auto bad = static_cast<CUstreamCaptureMode>(7);
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(&bad), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuThreadExchangeStreamCaptureMode(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Graphs, CaptureStatusIdsAndInfo) {
  // Never captured: NONE; info leaves the id alone and reports no graph or dependencies.
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(status(CU_STREAM_LEGACY), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(status(nullptr), CU_STREAM_CAPTURE_STATUS_NONE);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 77;
  CUgraph g = reinterpret_cast<CUgraph>(1);
  const CUgraphNode* deps = reinterpret_cast<const CUgraphNode*>(1);
  const CUgraphEdgeData* edges = reinterpret_cast<const CUgraphEdgeData*>(1);
  size_t n = 5;
  ASSERT_EQ(cuStreamGetCaptureInfo(cap_, &st, &id, &g, &deps, &edges, &n), CUDA_SUCCESS);
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(id, 77u);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(deps, nullptr);
  EXPECT_EQ(edges, nullptr);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(cuStreamIsCapturing(reinterpret_cast<CUstream>(&st), &st), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamIsCapturing(cap_, nullptr), CUDA_ERROR_INVALID_VALUE);

  // Capture ids are unique and increase by one per capture.
  ASSERT_EQ(cuStreamBeginCapture(cap_, kGlobal), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture_v2_ptsz(other_, kRelaxed), CUDA_SUCCESS);
  const cuuint64_t id1 = capture_id(cap_);
  const cuuint64_t id2 = capture_id(other_);
  EXPECT_GE(id1, 1u);
  EXPECT_EQ(id2, id1 + 1);
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUstreamCaptureStatus st2{};
  EXPECT_EQ(cuStreamIsCapturing_ptsz(other_, &st2), CUDA_SUCCESS);
  EXPECT_EQ(st2, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  // Every ABI of the info call.
  using InfoV1 = CUresult (*)(CUstream, CUstreamCaptureStatus*, cuuint64_t*);
  auto v1 = reinterpret_cast<InfoV1>(sym("cuStreamGetCaptureInfo"));
  ASSERT_NE(v1, nullptr);
  id = 0;
  EXPECT_EQ(v1(cap_, &st, &id), CUDA_SUCCESS);
  EXPECT_EQ(id, id1);
  id = 0;
  EXPECT_EQ(cuStreamGetCaptureInfo_ptsz(other_, &st, &id), CUDA_SUCCESS);
  EXPECT_EQ(id, id2);
  CUgraph g1 = nullptr;
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &g1, &deps, &n), CUDA_SUCCESS);
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  EXPECT_NE(g1, nullptr);
  EXPECT_EQ(n, 0u);  // nothing captured yet
  CUgraph g2 = nullptr;
  ASSERT_EQ(cuStreamGetCaptureInfo_v2_ptsz(other_, &st, &id, &g2, &deps, &n), CUDA_SUCCESS);
  EXPECT_NE(g2, g1);
  ASSERT_EQ(cuMemsetD32Async(0x1000, 0, 4, cap_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetCaptureInfo_v3_ptsz(cap_, &st, &id, &g, &deps, &edges, &n), CUDA_SUCCESS);
  ASSERT_EQ(n, 1u);
  CUgraphNodeType type{};
  ASSERT_EQ(cuGraphNodeGetType(deps[0], &type), CUDA_SUCCESS);
  EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEMSET);
  ASSERT_NE(edges, nullptr);
  EXPECT_EQ(edges[0].type, CU_GRAPH_DEPENDENCY_TYPE_DEFAULT);

  // Begin twice, end elsewhere, capture the legacy stream.
  EXPECT_EQ(cuStreamBeginCapture(cap_, kGlobal), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(cuStreamBeginCapture(CU_STREAM_LEGACY, kGlobal),
            CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamBeginCapture(cap_, static_cast<CUstreamCaptureMode>(9)),
            CUDA_ERROR_INVALID_VALUE);

  CUgraph out = nullptr;
  ASSERT_EQ(cuStreamEndCapture(cap_, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, g1);
  ASSERT_EQ(cuStreamEndCapture_ptsz(other_, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, g2);
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(cuStreamEndCapture(cap_, &out), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(cuGraphDestroy(g1), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(g2), CUDA_SUCCESS);
  // The next capture gets the next id.
  ASSERT_EQ(cuStreamBeginCapture(cap_, kRelaxed), CUDA_SUCCESS);
  EXPECT_EQ(capture_id(cap_), id2 + 1);
  ASSERT_EQ(cuStreamEndCapture(cap_, &out), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(out), CUDA_SUCCESS);
}

// The CUDA 10.0 ABIs (no mode argument) capture in GLOBAL mode.
TEST_F(Graphs, OldBeginCaptureAbiIsGlobalMode) {
  using Begin1 = CUresult (*)(CUstream);
  auto begin1 = reinterpret_cast<Begin1>(sym("cuStreamBeginCapture"));
  ASSERT_NE(begin1, nullptr);
  for (Begin1 begin : {begin1, &cuStreamBeginCapture_ptsz}) {
    ASSERT_EQ(begin(cap_), CUDA_SUCCESS);
    // GLOBAL: another thread in GLOBAL mode is refused an unsafe call.
    EXPECT_EQ(call_on(Where::kOtherThread, kGlobal, [] { return cuCtxSynchronize(); }),
              CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CUgraph g = reinterpret_cast<CUgraph>(1);
    EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(g, nullptr);
  }
}

// ---------------------------------------------------------------- the unsafe-call rule

// Every capture mode x caller thread x caller mode, with cuMemAlloc_v2 + cuMemFree_v2.
TEST_F(Graphs, UnsafeCallRuleMatrix) {
  for (CUstreamCaptureMode capture_mode : kModes) {
    for (Where where : kWheres) {
      for (CUstreamCaptureMode caller_mode : kModes) {
        SCOPED_TRACE(std::string("capture ") + mode_name(capture_mode) + ", " + where_name(where) +
                     ", caller " + mode_name(caller_mode));
        const size_t before = charged();
        auto [called, end] = under_capture(capture_mode, where, caller_mode, [] {
          CUdeviceptr p = 7;
          CUresult r = cuMemAlloc(&p, MiB);
          if (r == CUDA_SUCCESS) {
            EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
          } else {
            EXPECT_EQ(p, 0u);
          }
          return r;
        });
        if (prohibited(capture_mode, where, caller_mode)) {
          EXPECT_EQ(called, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
          EXPECT_EQ(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        } else {
          EXPECT_EQ(called, CUDA_SUCCESS);
          EXPECT_EQ(end, CUDA_SUCCESS);
        }
        EXPECT_EQ(charged(), before);
      }
    }
  }
}

// Each measured potentially unsafe call: prohibited (GLOBAL capture, same thread, GLOBAL caller:
// 900, nothing done, capture invalidated) and allowed from RELAXED mode.
TEST_F(Graphs, EveryUnsafeCallIsProhibited) {
  struct Objects {
    CUdeviceptr dev = 0;
    void* host = nullptr;
    CUarray arr = nullptr;
    CUmipmappedArray mip = nullptr;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    bool mapped = false;
    bool pool_ptr = false;
  } o;
  CUDA_ARRAY_DESCRIPTOR ad{};
  ad.Width = 64;
  ad.Height = 64;
  ad.Format = CU_AD_FORMAT_FLOAT;
  ad.NumChannels = 1;
  CUDA_ARRAY3D_DESCRIPTOR ad3{};
  ad3.Width = 64;
  ad3.Height = 64;
  ad3.Format = CU_AD_FORMAT_FLOAT;
  ad3.NumChannels = 1;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUstream other = other_;
  CUmemoryPool pool = pool0_;
  CUevent ev = ev_;
  const auto none = [] {};
  const auto alloc_dev = [&o] { ASSERT_EQ(cuMemAlloc(&o.dev, MiB), CUDA_SUCCESS); };
  const auto alloc_async = [&o, other] {
    ASSERT_EQ(cuMemAllocAsync(&o.dev, MiB, other), CUDA_SUCCESS);
    o.pool_ptr = true;
  };
  const auto alloc_host = [&o] { ASSERT_EQ(cuMemAllocHost(&o.host, 4096), CUDA_SUCCESS); };
  const auto make_handle = [&o, &prop] { ASSERT_EQ(cuMemCreate(&o.h, G, &prop, 0), CUDA_SUCCESS); };
  const auto make_va = [&o, make_handle] {
    make_handle();
    ASSERT_EQ(cuMemAddressReserve(&o.va, G, 0, 0, 0), CUDA_SUCCESS);
  };
  const auto make_mapping = [&o, make_va] {
    make_va();
    ASSERT_EQ(cuMemMap(o.va, G, 0, o.h, 0), CUDA_SUCCESS);
    o.mapped = true;
  };
  const auto make_array = [&o, &ad] { ASSERT_EQ(cuArrayCreate(&o.arr, &ad), CUDA_SUCCESS); };
  const auto make_mip = [&o, &ad3] {
    ASSERT_EQ(cuMipmappedArrayCreate(&o.mip, &ad3, 2), CUDA_SUCCESS);
  };
  // Returns r and forgets the object the call consumed when it succeeded.
  const auto consumed = [](CUresult r, auto& obj, auto empty) {
    if (r == CUDA_SUCCESS) obj = empty;
    return r;
  };
  const auto cleanup = [&o, other] {
    if (o.dev != 0) {
      EXPECT_EQ(o.pool_ptr ? cuMemFreeAsync(o.dev, other) : cuMemFree(o.dev), CUDA_SUCCESS);
    }
    if (o.host != nullptr) {
      EXPECT_EQ(cuMemFreeHost(o.host), CUDA_SUCCESS);
    }
    if (o.arr != nullptr) {
      EXPECT_EQ(cuArrayDestroy(o.arr), CUDA_SUCCESS);
    }
    if (o.mip != nullptr) {
      EXPECT_EQ(cuMipmappedArrayDestroy(o.mip), CUDA_SUCCESS);
    }
    if (o.mapped) {
      EXPECT_EQ(cuMemUnmap(o.va, G), CUDA_SUCCESS);
    }
    if (o.h != 0) {
      EXPECT_EQ(cuMemRelease(o.h), CUDA_SUCCESS);
    }
    if (o.va != 0) {
      EXPECT_EQ(cuMemAddressFree(o.va, G), CUDA_SUCCESS);
    }
    o = Objects{};
  };
  struct Case {
    const char* name;
    std::function<void()> setup;
    std::function<CUresult()> call;
  };
  const std::vector<Case> cases = {
      {"cuMemAlloc_v2", none, [&] { return cuMemAlloc(&o.dev, MiB); }},
      {"cuMemAllocPitch_v2", none,
       [&] {
         size_t pitch = 0;
         return cuMemAllocPitch(&o.dev, &pitch, 1000, 10, 4);
       }},
      {"cuMemFree_v2", alloc_dev, [&] { return consumed(cuMemFree(o.dev), o.dev, 0); }},
      {"cuMemAllocManaged", none,
       [&] { return cuMemAllocManaged(&o.dev, MiB, CU_MEM_ATTACH_GLOBAL); }},
      {"cuMemAllocHost_v2", none, [&] { return cuMemAllocHost(&o.host, 4096); }},
      {"cuMemHostAlloc", none, [&] { return cuMemHostAlloc(&o.host, 4096, 0); }},
      {"cuMemFreeHost", alloc_host,
       [&] { return consumed(cuMemFreeHost(o.host), o.host, nullptr); }},
      {"cuMemPoolGetAttribute", none,
       [&] {
         cuuint64_t v = 0;
         return cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
       }},
      {"cuMemPoolSetAttribute", none,
       [&] {
         cuuint64_t v = 0;
         return cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v);
       }},
      {"cuMemPoolTrimTo", none, [&] { return cuMemPoolTrimTo(pool, 0); }},
      {"cuMemAllocAsync(idle stream)", none,
       [&] {
         o.pool_ptr = true;
         return cuMemAllocAsync(&o.dev, MiB, other);
       }},
      {"cuMemAllocAsync_ptsz(idle stream)", none,
       [&] {
         o.pool_ptr = true;
         return cuMemAllocAsync_ptsz(&o.dev, MiB, other);
       }},
      {"cuMemAllocFromPoolAsync(idle stream)", none,
       [&] {
         o.pool_ptr = true;
         return cuMemAllocFromPoolAsync(&o.dev, MiB, pool, other);
       }},
      {"cuMemAllocFromPoolAsync_ptsz(idle stream)", none,
       [&] {
         o.pool_ptr = true;
         return cuMemAllocFromPoolAsync_ptsz(&o.dev, MiB, pool, other);
       }},
      {"cuMemFreeAsync(idle stream)", alloc_async,
       [&] { return consumed(cuMemFreeAsync(o.dev, other), o.dev, 0); }},
      {"cuMemFreeAsync_ptsz(idle stream)", alloc_async,
       [&] { return consumed(cuMemFreeAsync_ptsz(o.dev, other), o.dev, 0); }},
      {"cuStreamSynchronize(idle stream)", none, [&] { return cuStreamSynchronize(other); }},
      {"cuStreamSynchronize_ptsz(idle stream)", none,
       [&] { return cuStreamSynchronize_ptsz(other); }},
      {"cuCtxSynchronize", none, [] { return cuCtxSynchronize(); }},
      {"cuCtxSynchronize_v2", none, [] { return cuCtxSynchronize_v2(nullptr); }},
      {"cuEventSynchronize", none, [&] { return cuEventSynchronize(ev); }},
      {"cuStreamQuery(idle stream)", none, [&] { return cuStreamQuery(other); }},
      {"cuStreamQuery_ptsz(idle stream)", none, [&] { return cuStreamQuery_ptsz(other); }},
      {"cuEventQuery", none, [&] { return cuEventQuery(ev); }},
      {"cuMemCreate", none, [&] { return cuMemCreate(&o.h, G, &prop, 0); }},
      {"cuMemRelease", make_handle,
       [&] { return consumed(cuMemRelease(o.h), o.h, CUmemGenericAllocationHandle{0}); }},
      {"cuMemMap", make_va,
       [&] {
         const CUresult r = cuMemMap(o.va, G, 0, o.h, 0);
         o.mapped = r == CUDA_SUCCESS;
         return r;
       }},
      {"cuMemUnmap", make_mapping,
       [&] {
         const CUresult r = cuMemUnmap(o.va, G);
         o.mapped = r != CUDA_SUCCESS;
         return r;
       }},
      {"cuArrayCreate_v2", none, [&] { return cuArrayCreate(&o.arr, &ad); }},
      {"cuArray3DCreate_v2", none, [&] { return cuArray3DCreate(&o.arr, &ad3); }},
      {"cuArrayDestroy", make_array,
       [&] { return consumed(cuArrayDestroy(o.arr), o.arr, nullptr); }},
      {"cuMipmappedArrayCreate", none, [&] { return cuMipmappedArrayCreate(&o.mip, &ad3, 2); }},
      {"cuMipmappedArrayDestroy", make_mip,
       [&] { return consumed(cuMipmappedArrayDestroy(o.mip), o.mip, nullptr); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Prohibited: 900, nothing done, the capture invalidated.
    c.setup();
    const size_t before = charged();
    auto [called, end] = under_capture(kGlobal, Where::kSameThread, kGlobal, c.call);
    EXPECT_EQ(called, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_EQ(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT_EQ(charged(), before);
    cleanup();
    // Relaxed: the call works and the capture survives.
    c.setup();
    std::tie(called, end) = under_capture(kGlobal, Where::kSameThread, kRelaxed, c.call);
    EXPECT_EQ(called, CUDA_SUCCESS);
    EXPECT_EQ(end, CUDA_SUCCESS);
    cleanup();
  }
}

// Calls measured safe: never prohibited, in any capture mode, from either thread, in GLOBAL
// caller mode (the strictest).
TEST_F(Graphs, SafeCallsNeverInvalidate) {
  CUdeviceptr buf = 0;
  ASSERT_EQ(cuMemAlloc(&buf, MiB), CUDA_SUCCESS);
  CUstream cap = cap_;
  CUstream other = other_;
  const std::vector<std::pair<const char*, std::function<CUresult()>>> cases = {
      {"cuCtxGetDevice", [] { CUdevice d; return cuCtxGetDevice(&d); }},
      {"cuCtxGetCurrent", [] { CUcontext c; return cuCtxGetCurrent(&c); }},
      {"cuStreamIsCapturing(capturing)",
       [cap] { CUstreamCaptureStatus s; return cuStreamIsCapturing(cap, &s); }},
      {"cuStreamIsCapturing(other)",
       [other] { CUstreamCaptureStatus s; return cuStreamIsCapturing(other, &s); }},
      {"cuStreamIsCapturing(legacy)",
       [] { CUstreamCaptureStatus s; return cuStreamIsCapturing(CU_STREAM_LEGACY, &s); }},
      {"cuStreamGetCaptureInfo(capturing)",
       [cap] {
         CUstreamCaptureStatus s;
         cuuint64_t id;
         return cuStreamGetCaptureInfo(cap, &s, &id, nullptr, nullptr, nullptr, nullptr);
       }},
      {"cuDeviceGetMemPool", [] { CUmemoryPool p; return cuDeviceGetMemPool(&p, 0); }},
      {"cuDeviceGetGraphMemAttribute",
       [] {
         cuuint64_t v;
         return cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v);
       }},
      {"cuDeviceGraphMemTrim", [] { return cuDeviceGraphMemTrim(0); }},
      {"cuMemGetInfo_v2", [] { size_t f, t; return cuMemGetInfo(&f, &t); }},
      {"cuDeviceTotalMem_v2", [] { size_t t; return cuDeviceTotalMem(&t, 0); }},
      {"cuDeviceGetName", [] { char n[64]; return cuDeviceGetName(n, 64, 0); }},
      {"cuDeviceGetCount", [] { int n; return cuDeviceGetCount(&n); }},
      {"cuDriverGetVersion", [] { int v; return cuDriverGetVersion(&v); }},
      {"cuDeviceGetPCIBusId", [] { char n[32]; return cuDeviceGetPCIBusId(n, 32, 0); }},
      {"cuPointerGetAttribute",
       [buf] { CUcontext c; return cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, buf); }},
      {"cuStreamGetDevice(other)", [other] { CUdevice d; return cuStreamGetDevice(other, &d); }},
      {"cuThreadExchangeStreamCaptureMode",
       [] {
         CUstreamCaptureMode m = kGlobal;
         return cuThreadExchangeStreamCaptureMode(&m);
       }},
      {"graph building",
       [] {
         CUgraph g = nullptr;
         CUgraphNode n = nullptr;
         CUresult r = cuGraphCreate(&g, 0);
         if (r == CUDA_SUCCESS) r = cuGraphAddEmptyNode(&n, g, nullptr, 0);
         if (g != nullptr) {
           EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
         }
         return r;
       }},
  };
  for (const auto& [name, call] : cases) {
    for (CUstreamCaptureMode capture_mode : kModes) {
      for (Where where : kWheres) {
        SCOPED_TRACE(std::string(name) + ", capture " + mode_name(capture_mode) + ", " +
                     where_name(where));
        auto [called, end] = under_capture(capture_mode, where, kGlobal, call);
        EXPECT_EQ(called, CUDA_SUCCESS);
        EXPECT_EQ(end, CUDA_SUCCESS);
      }
    }
  }
  EXPECT_EQ(cuMemFree(buf), CUDA_SUCCESS);
}

// cuStreamGetDevice on the capturing stream fails and invalidates in every mode, relaxed too;
// synchronising or querying the capturing stream itself likewise.
TEST_F(Graphs, GetDeviceSyncOrQueryOfTheCapturingStreamInvalidates) {
  CUstream cap = cap_;
  const std::vector<std::pair<const char*, std::function<CUresult()>>> cases = {
      {"cuStreamGetDevice", [cap] { CUdevice d; return cuStreamGetDevice(cap, &d); }},
      {"cuStreamGetDevice_ptsz", [cap] { CUdevice d; return cuStreamGetDevice_ptsz(cap, &d); }},
      {"cuStreamSynchronize", [cap] { return cuStreamSynchronize(cap); }},
      {"cuStreamSynchronize_ptsz", [cap] { return cuStreamSynchronize_ptsz(cap); }},
      {"cuStreamQuery", [cap] { return cuStreamQuery(cap); }},
  };
  for (const auto& [name, call] : cases) {
    for (CUstreamCaptureMode capture_mode : kModes) {
      for (Where where : kWheres) {
        for (CUstreamCaptureMode caller_mode : kModes) {
          SCOPED_TRACE(std::string(name) + ", capture " + mode_name(capture_mode) + ", " +
                       where_name(where) + ", caller " + mode_name(caller_mode));
          auto [called, end] = under_capture(capture_mode, where, caller_mode, call);
          EXPECT_EQ(called, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
          EXPECT_EQ(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
      }
    }
  }
}

// Once invalidated: status INVALIDATED, work into it is refused with 901, and it forbids no
// further unsafe call.
TEST_F(Graphs, InvalidatedCapture) {
  ASSERT_EQ(cuStreamBeginCapture(cap_, kGlobal), CUDA_SUCCESS);
  const cuuint64_t id = capture_id(cap_);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUstreamCaptureStatus st{};
  cuuint64_t id2 = 0;
  CUgraph g = reinterpret_cast<CUgraph>(1);
  ASSERT_EQ(cuStreamGetCaptureInfo(cap_, &st, &id2, &g, nullptr, nullptr, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  EXPECT_EQ(id2, id);
  EXPECT_EQ(g, nullptr);
  CUdeviceptr p = 5;
  EXPECT_EQ(cuMemAllocAsync(&p, MiB, cap_), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(p, 0u);
  EXPECT_EQ(cuMemsetD8Async(0x1000, 0, 1, cap_), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuEventRecord(ev_, cap_), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // nothing active forbids it any more
  EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_NONE);
}

// Ending a GLOBAL / THREAD_LOCAL capture from another thread is refused; RELAXED may.
TEST_F(Graphs, EndCaptureFromAnotherThread) {
  for (CUstreamCaptureMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    ASSERT_EQ(cuStreamBeginCapture(cap_, mode), CUDA_SUCCESS);
    CUgraph g = nullptr;
    const CUresult r = call_on(Where::kOtherThread, kRelaxed,
                               [&] { return cuStreamEndCapture(cap_, &g); });
    if (mode == kRelaxed) {
      EXPECT_EQ(r, CUDA_SUCCESS);
    } else {
      EXPECT_EQ(r, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
      EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
      ASSERT_EQ(cuStreamEndCapture(cap_, &g), CUDA_SUCCESS);
    }
    EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
  }
}

// A stream waiting on an event recorded in a capture joins it (same id and graph); its
// allocations land in that graph; it leaves at the end. Ending from it is UNMATCHED.
TEST_F(Graphs, JoinedStreams) {
  for (CUstreamCaptureMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    ASSERT_EQ(cuStreamBeginCapture(cap_, mode), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD8Async(0x1000, 0, 1, cap_), CUDA_SUCCESS);
    ASSERT_EQ(cuEventRecord(ev_, cap_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamWaitEvent(other_, ev_, 0), CUDA_SUCCESS);
    EXPECT_EQ(status(other_), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_EQ(capture_id(other_), capture_id(cap_));
    CUstreamCaptureStatus st{};
    cuuint64_t id = 0;
    CUgraph g_cap = nullptr, g_other = nullptr;
    const CUgraphNode* deps = nullptr;
    size_t n = 0;
    ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &g_cap, &deps, &n), CUDA_SUCCESS);
    ASSERT_EQ(n, 1u);
    const CUgraphNode memset_node = deps[0];
    ASSERT_EQ(cuStreamGetCaptureInfo_v2(other_, &st, &id, &g_other, &deps, &n), CUDA_SUCCESS);
    EXPECT_EQ(g_other, g_cap);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(deps[0], memset_node);  // the joined stream continues from the event's point
    // An allocation on the joined stream is a node of the same graph.
    CUdeviceptr p = 0;
    ASSERT_EQ(cuMemAllocAsync(&p, MiB, other_), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeAsync(p, other_), CUDA_SUCCESS);
    ASSERT_EQ(cuEventRecord_ptsz(ev_, other_), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamWaitEvent_ptsz(cap_, ev_, 0), CUDA_SUCCESS);  // rejoin
    ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &g_cap, &deps, &n), CUDA_SUCCESS);
    EXPECT_EQ(n, 2u);  // its own memset and the joined stream's free
    CUgraph g = nullptr;
    EXPECT_EQ(cuStreamEndCapture(other_, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    ASSERT_EQ(cuStreamEndCapture(cap_, &g), CUDA_SUCCESS);
    EXPECT_EQ(g, g_cap);
    EXPECT_EQ(status(other_), CU_STREAM_CAPTURE_STATUS_NONE);
    // The graph holds the joined stream's allocation and free: launching changes nothing live.
    CUgraphExec e = nullptr;
    ASSERT_EQ(cuGraphInstantiate(&e, g, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphLaunch(e, other_), CUDA_SUCCESS);
    EXPECT_EQ(fakecuda_graph_reserved_bytes(0), G);
    EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // freed in its graph: never live
    EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
    EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
    EXPECT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
  }
  // An unsafe call on a joined stream invalidates the whole capture.
  ASSERT_EQ(cuStreamBeginCapture(cap_, kRelaxed), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(ev_, cap_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(other_, ev_, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(other_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(status(cap_), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CUgraph g = reinterpret_cast<CUgraph>(1);
  EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(status(other_), CU_STREAM_CAPTURE_STATUS_NONE);
  // A capturing stream waiting on an event recorded outside any capture: ISOLATION.
  ASSERT_EQ(cuEventRecord(ev_, other_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(cap_, kRelaxed), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(cap_, ev_, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

// Destroying the origin stream discards its capture (joined streams leave it).
TEST_F(Graphs, DestroyingTheCapturingStreamDiscardsTheCapture) {
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(s, kGlobal), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(ev_, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamWaitEvent(other_, ev_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(status(other_), CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // no capture forbids it any more
}

// ---------------------------------------------------------------- allocations in a capture

TEST_F(Graphs, CapturedAllocationsGetGraphAddressesAndChargeNothing) {
  CUmemoryPool pool1 = nullptr;
  ASSERT_EQ(cuDeviceGetMemPool(&pool1, 1), CUDA_SUCCESS);
  CUdeviceptr lin = 0;
  ASSERT_EQ(cuMemAlloc(&lin, MiB), CUDA_SUCCESS);
  const size_t before0 = charged(0);
  const size_t before1 = charged(1);
  const cuuint64_t pool_reserved = pool_attr(pool0_, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  const cuuint64_t pool_used = pool_attr(pool0_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  for (CUstreamCaptureMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    std::vector<std::pair<CUdeviceptr, size_t>> ranges;
    std::vector<CUgraphNode> alloc_nodes;
    CUgraph g = capture(
        [&] {
          const size_t sizes[] = {3 * MiB + 1, MiB, 5 * MiB, 100};
          for (int i = 0; i < 4; ++i) {
            CUdeviceptr p = 0;
            const size_t s = sizes[i];
            CUresult r = i == 0   ? cuMemAllocAsync(&p, s, cap_)
                         : i == 1 ? cuMemAllocAsync_ptsz(&p, s, cap_)
                         : i == 2 ? cuMemAllocFromPoolAsync(&p, s, pool1, cap_)
                                  : cuMemAllocFromPoolAsync_ptsz(&p, s, pool0_, cap_);
            ASSERT_EQ(r, CUDA_SUCCESS);
            // The capture's frontier is the new allocation node, whose address this is.
            CUstreamCaptureStatus st{};
            cuuint64_t id = 0;
            CUgraph cg = nullptr;
            const CUgraphNode* deps = nullptr;
            size_t n = 0;
            ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &cg, &deps, &n), CUDA_SUCCESS);
            ASSERT_EQ(n, 1u);
            CUgraphNodeType type{};
            ASSERT_EQ(cuGraphNodeGetType(deps[0], &type), CUDA_SUCCESS);
            EXPECT_EQ(type, CU_GRAPH_NODE_TYPE_MEM_ALLOC);
            CUDA_MEM_ALLOC_NODE_PARAMS ap{};
            ASSERT_EQ(cuGraphMemAllocNodeGetParams(deps[0], &ap), CUDA_SUCCESS);
            EXPECT_EQ(ap.dptr, p);
            EXPECT_EQ(ap.bytesize, s);
            EXPECT_EQ(ap.poolProps.location.id, i == 2 ? 1 : 0);  // FromPool: the pool's device
            alloc_nodes.push_back(deps[0]);
            ranges.emplace_back(p, s);
          }
          ASSERT_EQ(cuMemFreeAsync(ranges[0].first, cap_), CUDA_SUCCESS);
          ASSERT_EQ(cuMemFreeAsync_ptsz(ranges[1].first, cap_), CUDA_SUCCESS);
          ASSERT_EQ(cuMemFreeAsync(ranges[2].first, cap_), CUDA_SUCCESS);
          ASSERT_EQ(cuMemFreeAsync(ranges[3].first, cap_), CUDA_SUCCESS);
          EXPECT_EQ(cuMemFreeAsync(ranges[3].first, cap_), CUDA_ERROR_INVALID_VALUE);  // twice
          EXPECT_EQ(cuMemFreeAsync(lin + 7, cap_), CUDA_ERROR_INVALID_VALUE);  // not a graph's
        },
        mode);
    // The addresses: in the graph VA range, 2 MiB aligned, disjoint, away from real memory.
    for (size_t i = 0; i < ranges.size(); ++i) {
      const auto [p, s] = ranges[i];
      EXPECT_GE(p, kGraphVaBase);
      EXPECT_EQ(p % G, 0u);
      EXPECT_FALSE(lin >= p && lin < p + s);
      for (size_t j = 0; j < i; ++j) {
        EXPECT_TRUE(p >= ranges[j].first + ranges[j].second || p + s <= ranges[j].first);
      }
    }
    // Nothing allocated, charged, or taken from a pool.
    EXPECT_EQ(charged(0), before0);
    EXPECT_EQ(charged(1), before1);
    EXPECT_EQ(pool_attr(pool0_, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), pool_reserved);
    EXPECT_EQ(pool_attr(pool0_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), pool_used);
    expect_graph_mem(0, 0, 0, "captured");
    CUdeviceptr freed = 0;
    EXPECT_EQ(cuGraphMemFreeNodeGetParams(alloc_nodes[0], &freed), CUDA_ERROR_INVALID_VALUE);
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    int ord = -1;
    EXPECT_EQ(cuPointerGetAttribute(&ord, a, ranges[0].first), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuMemFree(lin), CUDA_SUCCESS);
}

// Another thread allocating and freeing on the capturing stream records nodes too (in GLOBAL
// caller mode, whatever the capture's mode): stream-ordered work on a capturing stream is never
// an unsafe call.
TEST_F(Graphs, CapturedAllocationFromAnotherThread) {
  for (CUstreamCaptureMode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const size_t before = charged();
    CUdeviceptr p = 0;
    CUgraph g = capture(
        [&] {
          EXPECT_EQ(call_on(Where::kOtherThread, kGlobal,
                            [&] {
                              CUresult r = cuMemAllocAsync(&p, 3 * MiB, cap_);
                              if (r == CUDA_SUCCESS) r = cuMemsetD8Async_ptsz(p, 0, 1, cap_);
                              if (r == CUDA_SUCCESS) r = cuMemFreeAsync(p, cap_);
                              return r;
                            }),
                    CUDA_SUCCESS);
        },
        mode);
    EXPECT_GE(p, kGraphVaBase);
    EXPECT_EQ(charged(), before);
    CUgraphExec e = nullptr;
    ASSERT_EQ(cuGraphInstantiate(&e, g, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphLaunch(e, other_), CUDA_SUCCESS);
    expect_graph_mem(0, 4 * MiB, 4 * MiB, "launched");
    EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
    EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    reset_highs(0);
  }
}

// ---------------------------------------------------------------- graph memory

// The measured sequence (tests/gpu/capture_rules.cu), with exact figures.
TEST_F(Graphs, GraphMemoryFigures) {
  const size_t big = 100 * MiB + 5;  // rounds to 102 MiB
  const size_t mid = 31 * MiB;       // rounds to 32 MiB
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free0, &total), CUDA_SUCCESS);
  expect_graph_mem(0, 0, 0, "start");

  // G1: alloc, memset, free inside the graph.
  CUdeviceptr p1 = 0;
  CUgraph g1 = capture([&] {
    ASSERT_EQ(cuMemAllocAsync(&p1, big, cap_), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD8Async(p1, 3, big, cap_), CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeAsync(p1, cap_), CUDA_SUCCESS);
  });
  expect_graph_mem(0, 0, 0, "g1 captured");
  CUgraphExec e1 = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e1, g1, 0), CUDA_SUCCESS);
  expect_graph_mem(0, 0, 0, "g1 instantiated");
  ASSERT_EQ(cuGraphUpload(e1, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g1 uploaded");
  EXPECT_EQ(charged(), base0_ + 102 * MiB);
  size_t free1 = 0;
  ASSERT_EQ(cuMemGetInfo(&free1, &total), CUDA_SUCCESS);
  EXPECT_EQ(free1, free0 - 102 * MiB);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cuGraphLaunch(e1, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g1 launched x3");

  // G2: an allocation that outlives its launch, freed outside the graph.
  CUdeviceptr p2 = 0;
  CUgraph g2 = capture([&] { ASSERT_EQ(cuMemAllocAsync(&p2, mid, cap_), CUDA_SUCCESS); });
  CUgraphExec e2 = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e2, g2, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e2, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g2 launched, allocation live");
  int ord = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p2 + 10),
            CUDA_SUCCESS);
  EXPECT_EQ(ord, 0);
  size_t range = 0;
  ASSERT_EQ(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p2), CUDA_SUCCESS);
  EXPECT_EQ(range, mid);
  EXPECT_EQ(cuGraphLaunch(e2, cap_), CUDA_ERROR_INVALID_VALUE);  // relaunch while live
  ASSERT_EQ(cuMemFreeAsync(p2, other_), CUDA_SUCCESS);             // free outside
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g2 allocation freed outside");
  ASSERT_EQ(cuGraphLaunch_ptsz(e2, cap_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(p2), CUDA_SUCCESS);  // cuMemFree_v2 frees a live graph allocation too
  EXPECT_EQ(cuMemFree(p2), CUDA_ERROR_INVALID_VALUE);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g2 allocation freed by cuMemFree");

  // G3: one executable at a time; auto free on launch.
  CUgraphExec e3 = nullptr;
  EXPECT_EQ(cuGraphInstantiate(&e3, g2, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
            CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(cuGraphExecDestroy(e2), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphInstantiate(&e3, g2, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
            CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e3, cap_), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e3, cap_), CUDA_SUCCESS);  // frees the live one first
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g3 launched twice");

  // G4: explicit memory nodes.
  CUgraph g4 = nullptr;
  ASSERT_EQ(cuGraphCreate(&g4, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(0, 32 * MiB);
  CUgraphNode an = nullptr, fn = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, g4, nullptr, 0, &ap), CUDA_SUCCESS);
  EXPECT_GE(ap.dptr, kGraphVaBase);
  ASSERT_EQ(cuGraphAddMemFreeNode(&fn, g4, &an, 1, ap.dptr), CUDA_SUCCESS);
  CUgraphExec e4 = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e4, g4, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e4, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "g4 launched");

  // Trim keeps only the live allocation (e3's, 32 MiB rounded); destroying an exec frees
  // nothing.
  ASSERT_EQ(cuGraphExecDestroy(e1), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphExecDestroy(e4), CUDA_SUCCESS);
  expect_graph_mem(0, 102 * MiB, 102 * MiB, "e1, e4 destroyed");
  ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
  expect_graph_mem(0, 32 * MiB, 102 * MiB, "trimmed, e3's allocation live");
  EXPECT_EQ(charged(), base0_ + 32 * MiB);
  ASSERT_EQ(cuGraphExecDestroy(e3), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
  expect_graph_mem(0, 32 * MiB, 102 * MiB, "e3 destroyed, trimmed: still live");

  // need = live (32) + the exec's nodes (40): grows to 72 at upload.
  CUgraph g5 = nullptr;
  ASSERT_EQ(cuGraphCreate(&g5, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap5 = alloc_params(0, 40 * MiB);
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, g5, nullptr, 0, &ap5), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddMemFreeNode(&fn, g5, &an, 1, ap5.dptr), CUDA_SUCCESS);
  CUgraphExec e5 = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e5, g5, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphUpload_ptsz(e5, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 72 * MiB, 102 * MiB, "g5 uploaded with 32 MiB live");
  EXPECT_EQ(charged(), base0_ + 72 * MiB);
  ASSERT_EQ(cuMemFreeAsync(p2, other_), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
  expect_graph_mem(0, 0, 102 * MiB, "all freed, trimmed");
  EXPECT_EQ(charged(), base0_);
  // After a trim an exec reserves again at its next launch.
  ASSERT_EQ(cuGraphLaunch(e5, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 40 * MiB, 102 * MiB, "g5 relaunched after trim");
  ASSERT_EQ(cuGraphExecDestroy(e5), CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);

  // Highs reset to the current value; other attributes or values are refused.
  reset_highs(0);
  expect_graph_mem(0, 0, 0, "highs reset");
  cuuint64_t one = 1;
  EXPECT_EQ(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &one),
            CUDA_ERROR_INVALID_VALUE);
  cuuint64_t zero = 0;
  EXPECT_EQ(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &zero),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuDeviceGetGraphMemAttribute(5, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero),
            CUDA_ERROR_INVALID_DEVICE);
  EXPECT_EQ(cuDeviceGraphMemTrim(5), CUDA_ERROR_INVALID_DEVICE);
  for (CUgraph g : {g1, g2, g4, g5}) EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
}

TEST_F(Graphs, GraphMemoryOutOfMemoryChangesNothing) {
  CUgraph g = nullptr;
  ASSERT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(0, GiB);  // the whole device, plus what is charged
  CUgraphNode an = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, g, nullptr, 0, &ap), CUDA_SUCCESS);
  CUgraphExec e = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e, g, 0), CUDA_SUCCESS);
  if (base0_ > 0) {
    EXPECT_EQ(cuGraphLaunch(e, cap_), CUDA_ERROR_OUT_OF_MEMORY);
  }
  CUdeviceptr hog = 0;
  ASSERT_EQ(cuMemAlloc(&hog, MiB), CUDA_SUCCESS);  // make sure it cannot fit
  EXPECT_EQ(cuGraphUpload(e, cap_), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuGraphLaunch(e, cap_), CUDA_ERROR_OUT_OF_MEMORY);
  expect_graph_mem(0, 0, 0, "refused");
  EXPECT_EQ(cuMemFree(ap.dptr), CUDA_ERROR_INVALID_VALUE);  // never became live
  EXPECT_EQ(cuMemFree(hog), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
}

// Allocation nodes on device 1 reserve on device 1 only.
TEST_F(Graphs, GraphMemoryIsPerDevice) {
  CUgraph g = nullptr;
  ASSERT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS a0 = alloc_params(0, 3 * MiB);
  CUDA_MEM_ALLOC_NODE_PARAMS a1 = alloc_params(1, 5 * MiB);
  CUgraphNode n0 = nullptr, n1 = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&n0, g, nullptr, 0, &a0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddMemAllocNode(&n1, g, &n0, 1, &a1), CUDA_SUCCESS);
  CUgraphExec e = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e, g, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
            CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 4 * MiB, 4 * MiB, "device 0");
  expect_graph_mem(1, 6 * MiB, 6 * MiB, "device 1");
  EXPECT_EQ(charged(1), base1_ + 6 * MiB);
  int ord = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a1.dptr),
            CUDA_SUCCESS);
  EXPECT_EQ(ord, 1);
  ASSERT_EQ(cuGraphLaunch(e, cap_), CUDA_SUCCESS);  // auto free
  EXPECT_EQ(cuMemFree(a0.dptr), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(a1.dptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
}

// A free node of an address not allocated in its graph frees, at launch, a live allocation of
// another graph or an ordinary pool allocation.
TEST_F(Graphs, FreeNodesOfOtherAllocations) {
  CUgraph ga = nullptr;
  ASSERT_EQ(cuGraphCreate(&ga, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(0, MiB);
  CUgraphNode an = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, ga, nullptr, 0, &ap), CUDA_SUCCESS);
  CUdeviceptr pool_ptr = 0;
  ASSERT_EQ(cuMemAllocAsync(&pool_ptr, 3 * MiB, other_), CUDA_SUCCESS);
  const cuuint64_t used = pool_attr(pool0_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
  CUgraph gb = nullptr;
  ASSERT_EQ(cuGraphCreate(&gb, 0), CUDA_SUCCESS);
  CUgraphNode f1 = nullptr, f2 = nullptr;
  ASSERT_EQ(cuGraphAddMemFreeNode(&f1, gb, nullptr, 0, ap.dptr), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddMemFreeNode(&f2, gb, &f1, 1, pool_ptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphAddMemFreeNode(&f2, gb, nullptr, 0, pool_ptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphAddMemFreeNode(&f2, gb, nullptr, 0, 0x1234), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr got = 0;
  ASSERT_EQ(cuGraphMemFreeNodeGetParams(f2, &got), CUDA_SUCCESS);
  EXPECT_EQ(got, pool_ptr);
  CUgraphExec ea = nullptr, eb = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&ea, ga, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphInstantiate(&eb, gb, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(ea, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, G, G, "a launched");
  ASSERT_EQ(cuGraphLaunch(eb, cap_), CUDA_SUCCESS);
  EXPECT_EQ(pool_attr(pool0_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), used - 3 * MiB);
  EXPECT_EQ(cuMemFree(ap.dptr), CUDA_ERROR_INVALID_VALUE);  // already freed by b
  ASSERT_EQ(cuGraphLaunch(ea, cap_), CUDA_SUCCESS);          // so a may run again
  EXPECT_EQ(cuMemFree(ap.dptr), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(ea), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(eb), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(ga), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(gb), CUDA_SUCCESS);
}

// ---------------------------------------------------------------- graph building

TEST_F(Graphs, ChildGraphsAndGenericNodes) {
  CUgraph child = nullptr, parent = nullptr;
  ASSERT_EQ(cuGraphCreate(&child, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphCreate(&parent, 0), CUDA_SUCCESS);
  CUgraphNodeParams np{};
  np.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  np.alloc.poolProps = device_props(0);
  np.alloc.bytesize = 7 * MiB;
  CUgraphNode an = nullptr;
  ASSERT_EQ(cuGraphAddNode(&an, child, nullptr, nullptr, 0, &np), CUDA_SUCCESS);  // _v2
  const CUdeviceptr child_va = np.alloc.dptr;
  EXPECT_GE(child_va, kGraphVaBase);
  // The 12.2 ABI (no edge data).
  using AddNodeV1 = CUresult (*)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t,
                                 CUgraphNodeParams*);
  auto add_v1 = reinterpret_cast<AddNodeV1>(sym("cuGraphAddNode"));
  ASSERT_NE(add_v1, nullptr);
  CUgraphNodeParams ep{};
  ep.type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUgraphNode en = nullptr;
  ASSERT_EQ(add_v1(&en, child, &an, 1, &ep), CUDA_SUCCESS);
  CUgraphNodeParams kp{};
  kp.type = CU_GRAPH_NODE_TYPE_KERNEL;  // accepted as a plain node
  CUgraphNode kn = nullptr;
  ASSERT_EQ(add_v1(&kn, child, &en, 1, &kp), CUDA_SUCCESS);
  CUgraphNodeType t{};
  ASSERT_EQ(cuGraphNodeGetType(kn, &t), CUDA_SUCCESS);
  EXPECT_EQ(t, CU_GRAPH_NODE_TYPE_KERNEL);
  kp.type = static_cast<CUgraphNodeType>(99);
  EXPECT_EQ(add_v1(&kn, child, nullptr, 0, &kp), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(add_v1(&kn, parent, &en, 1, &ep), CUDA_ERROR_INVALID_VALUE);  // dep of another graph

  // A child with memory nodes: refused by clone, moved by MOVE.
  CUgraphNode cn = nullptr;
  EXPECT_EQ(cuGraphAddChildGraphNode(&cn, parent, nullptr, 0, child), CUDA_ERROR_NOT_SUPPORTED);
  CUgraphNodeParams gp{};
  gp.type = CU_GRAPH_NODE_TYPE_GRAPH;
  gp.graph.graph = child;
  gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE;
  EXPECT_EQ(cuGraphAddNode(&cn, parent, nullptr, nullptr, 0, &gp), CUDA_ERROR_NOT_SUPPORTED);
  gp.graph.ownership = CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE;
  ASSERT_EQ(cuGraphAddNode(&cn, parent, nullptr, nullptr, 0, &gp), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphNodeGetType(cn, &t), CUDA_SUCCESS);
  EXPECT_EQ(t, CU_GRAPH_NODE_TYPE_GRAPH);
  EXPECT_EQ(cuGraphDestroy(child), CUDA_ERROR_INVALID_VALUE);  // the parent owns it now
  // A child without memory nodes may be cloned.
  CUgraph plain = nullptr;
  ASSERT_EQ(cuGraphCreate(&plain, 0), CUDA_SUCCESS);
  CUgraphNode pn = nullptr;
  ASSERT_EQ(cuGraphAddEmptyNode(&pn, plain, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddChildGraphNode(&cn, parent, &cn, 1, plain), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(plain), CUDA_SUCCESS);
  // The moved child's allocation is the parent's: live after a launch of the parent.
  CUgraphExec e = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&e, parent, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e, cap_), CUDA_SUCCESS);
  expect_graph_mem(0, 8 * MiB, 8 * MiB, "parent launched");
  EXPECT_EQ(cuGraphLaunch(e, cap_), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(child_va), CUDA_SUCCESS);
  // Graph destroy with a live exec is fine; the exec still launches.
  EXPECT_EQ(cuGraphDestroy(parent), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphLaunch(e, cap_), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(child_va), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphNodeGetType(kn, &t), CUDA_ERROR_INVALID_VALUE);  // destroyed with the graph
}

TEST_F(Graphs, InstantiateAbis) {
  CUgraph g = nullptr;
  ASSERT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(0, MiB);
  CUgraphNode an = nullptr, fn = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, g, nullptr, 0, &ap), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddMemFreeNode(&fn, g, &an, 1, ap.dptr), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS back{};
  ASSERT_EQ(cuGraphMemAllocNodeGetParams(an, &back), CUDA_SUCCESS);
  EXPECT_EQ(back.dptr, ap.dptr);
  EXPECT_EQ(back.bytesize, MiB);
  // The old 5-argument ABIs.
  using Inst5 = CUresult (*)(CUgraphExec*, CUgraph, CUgraphNode*, char*, size_t);
  auto inst1 = reinterpret_cast<Inst5>(sym("cuGraphInstantiate"));
  ASSERT_NE(inst1, nullptr);
  for (Inst5 inst : {inst1, &cuGraphInstantiate_v2}) {
    CUgraphExec e = nullptr;
    CUgraphNode err = an;
    char log[8] = "xxxxxxx";
    ASSERT_EQ(inst(&e, g, &err, log, sizeof log), CUDA_SUCCESS);
    EXPECT_EQ(err, an);  // untouched on success
    EXPECT_EQ(log[0], 'x');
    CUgraphExec e2 = nullptr;
    EXPECT_EQ(inst(&e2, g, &err, log, sizeof log), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(err, nullptr);
    EXPECT_EQ(log[0], '\0');
    EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
  }
  // WithParams: result_out, and the UPLOAD flag reserves at once.
  for (auto inst : {&cuGraphInstantiateWithParams, &cuGraphInstantiateWithParams_ptsz}) {
    CUDA_GRAPH_INSTANTIATE_PARAMS ip{};
    ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    ip.hUploadStream = cap_;
    ip.result_out = static_cast<CUgraphInstantiateResult>(9);
    CUgraphExec e = nullptr;
    ASSERT_EQ(inst(&e, g, &ip), CUDA_SUCCESS);
    EXPECT_EQ(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    expect_graph_mem(0, G, G, "instantiated with upload");
    CUgraphExec e2 = nullptr;
    ip.flags = 0;
    EXPECT_EQ(inst(&e2, g, &ip), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(ip.result_out, CUDA_GRAPH_INSTANTIATE_ERROR);
    EXPECT_EQ(cuGraphExecDestroy(e), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
  }
  CUgraphExec e = nullptr;
  EXPECT_EQ(cuGraphInstantiateWithFlags(&e, g, CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphInstantiateWithFlags(&e, reinterpret_cast<CUgraph>(&e), 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(&e)), CUDA_ERROR_INVALID_VALUE);
  // A graph without memory nodes may have several executables.
  CUgraph plain = nullptr;
  ASSERT_EQ(cuGraphCreate(&plain, 0), CUDA_SUCCESS);
  CUgraphExec p1 = nullptr, p2 = nullptr;
  ASSERT_EQ(cuGraphInstantiateWithFlags(&p1, plain, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphInstantiateWithFlags(&p2, plain, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(p1), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(p2), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(plain), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
}

// Launching a graph with memory nodes into a capture is refused (and invalidates it); other
// graphs become a child-graph node. Uploading into a capture does nothing.
TEST_F(Graphs, LaunchIntoACapture) {
  CUgraph gm = nullptr, gp = nullptr;
  ASSERT_EQ(cuGraphCreate(&gm, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphCreate(&gp, 0), CUDA_SUCCESS);
  CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(0, MiB);
  CUgraphNode an = nullptr, fn = nullptr;
  ASSERT_EQ(cuGraphAddMemAllocNode(&an, gm, nullptr, 0, &ap), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphAddMemFreeNode(&fn, gm, &an, 1, ap.dptr), CUDA_SUCCESS);
  CUgraphExec em = nullptr, ep = nullptr;
  ASSERT_EQ(cuGraphInstantiate(&em, gm, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuGraphInstantiate(&ep, gp, 0), CUDA_SUCCESS);
  CUgraph g = capture([&] {
    ASSERT_EQ(cuGraphLaunch(ep, cap_), CUDA_SUCCESS);
    ASSERT_EQ(cuGraphUpload(ep, cap_), CUDA_SUCCESS);
    CUstreamCaptureStatus st{};
    cuuint64_t id = 0;
    CUgraph cg = nullptr;
    const CUgraphNode* deps = nullptr;
    size_t n = 0;
    ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &cg, &deps, &n), CUDA_SUCCESS);
    ASSERT_EQ(n, 1u);
    CUgraphNodeType t{};
    ASSERT_EQ(cuGraphNodeGetType(deps[0], &t), CUDA_SUCCESS);
    EXPECT_EQ(t, CU_GRAPH_NODE_TYPE_GRAPH);
  });
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCapture(cap_, kRelaxed), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphLaunch(em, cap_), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(cap_, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  expect_graph_mem(0, 0, 0, "nothing reserved");
  EXPECT_EQ(cuGraphExecDestroy(em), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphExecDestroy(ep), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(gm), CUDA_SUCCESS);
  EXPECT_EQ(cuGraphDestroy(gp), CUDA_SUCCESS);
}

// cuStreamBeginCaptureToGraph records into the caller's graph after the given nodes.
TEST_F(Graphs, CaptureToGraph) {
  CUgraph g = nullptr;
  ASSERT_EQ(cuGraphCreate(&g, 0), CUDA_SUCCESS);
  CUgraphNode root = nullptr;
  ASSERT_EQ(cuGraphAddEmptyNode(&root, g, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamBeginCaptureToGraph(cap_, g, &root, nullptr, 1, kThreadLocal), CUDA_SUCCESS);
  CUstreamCaptureStatus st{};
  cuuint64_t id = 0;
  CUgraph cg = nullptr;
  const CUgraphNode* deps = nullptr;
  size_t n = 0;
  ASSERT_EQ(cuStreamGetCaptureInfo_v2(cap_, &st, &id, &cg, &deps, &n), CUDA_SUCCESS);
  EXPECT_EQ(cg, g);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(deps[0], root);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);  // being captured into
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocAsync(&p, MiB, cap_), CUDA_SUCCESS);
  CUgraph out = nullptr;
  ASSERT_EQ(cuStreamEndCapture(cap_, &out), CUDA_SUCCESS);
  EXPECT_EQ(out, g);
  // Invalidated: NULL comes back, the caller's graph survives.
  ASSERT_EQ(cuStreamBeginCaptureToGraph_ptsz(cap_, g, nullptr, nullptr, 0, kGlobal),
            CUDA_SUCCESS);
  EXPECT_EQ(cuMemAlloc(&p, MiB), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(cuStreamEndCapture(cap_, &out), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(cuGraphDestroy(g), CUDA_SUCCESS);
}

TEST_F(Graphs, CaptureErrorNames) {
  const char* s = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, &s), CUDA_SUCCESS);
}

}  // namespace
