// Stream capture, as the shim must live with it (docs/design.md §Stream capture). While a stream
// captures, an allocation on it is a node of a graph, not memory; and a driver call the driver
// deems "potentially unsafe" made by any thread can invalidate a capture (measured on an H200 by
// tests/gpu/capture_rules.cu): cuMemPoolGetAttribute and cuMemPoolTrimTo from a thread in global
// mode during any global capture, or from the capturing thread itself; and cuStreamGetDevice on a
// capturing stream, in every mode. So our own unsafe calls run in relaxed mode (Relaxed), and we
// never ask a capturing stream its device.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace gmp::shim::capture {

// Captures open in the process, counted by our cuStreamBeginCapture* wrappers before the real call
// and by cuStreamEndCapture* after it. While none is open no stream captures, so the allocation
// wrappers need not ask the driver (one relaxed load).
bool any_open();
void opening();  // before a begin-capture call
void closed();   // after a capture ended, or a begin failed

struct Info {
  bool capturing = false;  // ACTIVE or INVALIDATED: what the stream does is not memory now
  uint64_t id = 0;         // the capture sequence's id, unique in the process
  CUgraph graph = nullptr; // the graph being captured (nullptr if the driver cannot say)
};
// What `stream` is doing: cuStreamGetCaptureInfo (safe in every mode) when a capture is open.
Info of(CUstream stream);

// Our own driver calls in relaxed mode, restored after: a call the driver deems unsafe then never
// invalidates a capture of the program's (PyTorch guards its own unsafe calls the same way).
class Relaxed {
 public:
  Relaxed();
  ~Relaxed();
  Relaxed(const Relaxed&) = delete;
  Relaxed& operator=(const Relaxed&) = delete;

 private:
  CUstreamCaptureMode saved_;
  bool exchanged_;
};

// A forked child has no capture open.
void reset();

}  // namespace gmp::shim::capture
