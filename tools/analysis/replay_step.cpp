#include "replay_step.h"

namespace gmp::analysis {

bool changes_memory(Op op) {
  switch (op) {
    case Op::Alloc: case Op::Free: case Op::ReleaseFailed: case Op::PoolCreate: case Op::PoolDestroy:
    case Op::PoolReserved: case Op::VmmCreate: case Op::VmmRelease: case Op::VmmMap: case Op::VmmUnmap:
      return true;
    default:
      return false;
  }
}

bool changes_framework_memory(Op op) {
  switch (op) {
    case Op::TensorAlloc: case Op::TensorFreeCompleted: case Op::SegmentAlloc: case Op::SegmentFree:
    case Op::SegmentMap: case Op::SegmentUnmap: case Op::FrameworkAttach:
      return true;
    default:
      return false;
  }
}

}  // namespace gmp::analysis
