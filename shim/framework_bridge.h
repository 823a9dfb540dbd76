// What the framework bridge (framework_bridge.cpp) tells the rest of the shim.
#pragma once

namespace gmp::shim {

// True while the tracker records PyTorch's allocator events (attached, self-check not failed).
bool framework_recording();

}  // namespace gmp::shim
