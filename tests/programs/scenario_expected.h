// The shared scenario (scenario.cpp): its fixed sizes, and what an exact profiler must report for
// ONE run of it on device 0 of the fake driver, in the terms of docs/accounting.md and the
// summary.json of docs/run-directory.md. All four scenario programs (prog_cudart_style, prog_dlsym,
// prog_linked, prog_self_lookup) must produce exactly these numbers.
//
// Derivation (MiB = 1,048,576 bytes; fake driver rules in tests/fake_driver/README.md):
//
// Step                                         | dev allocated | dev reserved | pool reserved
// ---------------------------------------------+---------------+--------------+--------------
//  1 L1 = cuMemAlloc_v2 8 MiB                  |  8            |  8           |  0
//  2 L2 = cuMemAlloc_v2 4 MiB                  | 12            | 12           |  0
//  3 L3 = cuMemAllocPitch_v2 W=3000 H=512 e=4  | 13.5          | 13.5         |  0
//       pitch = round_up(3000,512) = 3072; size = 3072*512 = 1,572,864 = 1.5 MiB
//  4 cuMemFree_v2 L2                           |  9.5          |  9.5         |  0
//  5 cuMemFree_v2 L3                           |  8            |  8           |  0
//       linear: allocs 3, frees 2, peak 13.5 MiB (step 3), current 8 MiB (L1 leaks)
//  6 M = cuMemAllocManaged 3 MiB, 7 cuMemFree_v2 M   (managed bucket only: peak 3 MiB)
//  8 stream S = cuStreamCreate; DP = default pool of device 0 (release threshold 0)
//  9 P1 = cuMemAllocAsync 3 MiB on S: DP used 3, reserved round_up(3,2) = 4
//                                              | 11            | 12           |  4
// 10 P2 = cuMemAllocAsync 5 MiB: DP used 8, reserved 8
//                                              | 16            | 16           |  8
// 11 CP = cuMemPoolCreate(device 0); cuMemPoolSetAttribute(CP, RELEASE_THRESHOLD, 64 MiB)
// 12 Q1 = cuMemAllocFromPoolAsync(CP) 6 MiB: CP used 6, reserved 6
//                                              | 22            | 22           | 14
// 13 Q2 = cuMemAllocFromPoolAsync(CP) 1 MiB: CP used 7, reserved 8
//                                              | 23  <= PEAK   | 24  <= PEAK  | 16 <= PEAK
// 14 cuMemFreeAsync P1 (DP used 5)             | 20            | 24           | 16
// 15 cuMemFreeAsync Q1 (CP used 1)             | 14            | 24           | 16
// 16 cuStreamSynchronize S: DP = min(8, max(round_up(5)=6, 0)) = 6;
//                           CP = min(8, max(round_up(1)=2, round_up(64 MiB))) = 8
//                                              | 14            | 22           | 14
// 17 cuMemFreeAsync P2 (DP used 0)             |  9            | 22           | 14
// 18 cuMemPoolTrimTo(CP, 0): CP = min(8, max(2, 0)) = 2
//                                              |  9            | 16           |  8
// 19 cuEventRecord(E, S) + cuEventSynchronize(E): DP = min(6, max(0, 0)) = 0; CP stays 2
//                                              |  9            | 10           |  2
// 20 cuMemPoolDestroy(CP) with Q2 (1 MiB) live: Q2 released, CP's 2 MiB released
//                                              |  8            |  8           |  0
//       pool: allocs 4 (P1 P2 Q1 Q2), frees 4 (3 cuMemFreeAsync + Q2 released by the destroy),
//       peak 3+5+6+1 = 15 MiB (step 13), current 0; reserved peak 16 MiB (step 13), current 0.
//       Driver watermarks at step 19: DP RESERVED_MEM_HIGH 8 MiB, USED_MEM_HIGH 8 MiB;
//       CP RESERVED_MEM_HIGH 8 MiB, USED_MEM_HIGH 7 MiB. Both pools peak at the same moment
//       (step 13), so "max over time of the sum" = "sum of the HIGHs" = 16 MiB: no ambiguity.
// 21 H1 = cuMemCreate 4 MiB (physical 4)       |  8            | 12           |  0
// 22 VA1 = cuMemAddressReserve 4 MiB; cuMemMap(VA1, 4 MiB, 0, H1); cuMemSetAccess
//                                              | 12            | 12           |  0
// 23 cuMemRelease H1 while mapped: physical stays (mapping refers to it)
//                                              | 12            | 12           |  0
// 24 cuMemUnmap(VA1, 4 MiB): mapping gone, released handle's physical bytes go
//                                              |  8            |  8           |  0
// 25 cuMemAddressFree(VA1)
// 26 H2 = cuMemCreate 8 MiB                    |  8            | 16           |  0
// 27 VA2 = reserve 8 MiB; cuMemMap(VA2, 4 MiB, off 0, H2); cuMemMap(VA2+4 MiB, 4 MiB, off 4 MiB)
//                                              | 12, then 16   | 16           |  0
// 28 ONE cuMemUnmap(VA2, 8 MiB) removes both   |  8            | 16           |  0
// 29 cuMemRelease H2                           |  8            |  8           |  0
// 30 cuMemAddressFree(VA2); cuCtxSynchronize_v2(ctx) (no pool holds anything)
//       vmm: allocs 2, frees 2 (cuMemCreate / cuMemRelease); mapped peak 8 MiB (step 27),
//       current 0; physical peak 8 MiB (steps 26-28), current 0.
// 31 A1 = cuArrayCreate_v2 1000x300 FLOAT x4: raw 16*300,000 = 4,800,000 -> 74*64 KiB = 4,849,664
// 32 A2 = cuArray3DCreate_v2 64x64x64 UINT8 x1: raw 262,144 = 4*64 KiB -> 262,144
// 33 MA = cuMipmappedArrayCreate 256x256 (depth 0) HALF x2, 9 levels:
//       texels = sum_{l=0..8} (256>>l)^2 = (4^9-1)/3 = 87,381; raw = 4 * 87,381 = 349,524
//       -> 6*64 KiB = 393,216
//       all three live: 4,849,664 + 262,144 + 393,216 = 5,505,024 = array peak
//                                              | 8 MiB + 5,505,024 (13.25 MiB), both columns
// 34 destroy A1, A2, MA                        |  8            |  8           |  0
//       array: allocs 3, frees 3, peak 5,505,024, current 0.
// 35 cuMemHostAlloc 2 MiB (PORTABLE), cuMemAllocHost_v2 1 MiB, cuMemFreeHost(the 2 MiB one)
//       host_pinned: peak 3 MiB, current 1 MiB (the 1 MiB buffer stays live)
// 36 cuMemAlloc_v2 1 TiB -> CUDA_ERROR_OUT_OF_MEMORY on device 0: failed_alloc_count 1
// 37 fakecuda_alloc_untracked 1 MiB (invisible), then cuMemFree_v2 of it -> CUDA_SUCCESS:
//       unknown_frees 1 (not a linear free, not in free_count)
// 38 cuStreamDestroy_v2 S; exit without freeing L1 or releasing the primary context.
//
// Peaks: allocated 23 MiB is reached only at step 13 (next highest: 22 at step 12, 20 at step 14);
// reserved 24 MiB is reached at step 13 and stays until the sync at step 16 (frees do not shrink
// pools; next highest 22 MiB at steps 12 and 16). linear peaks at step 3, arrays at step 33, VMM
// at steps 26-28, all far below the pool-phase maximum.
//
// Counts: alloc_count = linear 3 + pool 4 + vmm 2 + array 3 + managed 1 = 13
//         free_count  = linear 2 + pool 4 + vmm 2 + array 3 + managed 1 = 12
//           (if pool-destroy releases were NOT counted as frees: pool frees 3, free_count 11;
//            see kPoolFreesByDestroy)
// live_at_exit: L1 only -> count 1, bytes 8 MiB. Driver check at exit: cuMemGetInfo shows
// exactly 8 MiB more in use than before the scenario.
//
// Address reuse (the fake hands out the most recently freed block of the same 256-byte-rounded
// size, whatever its kind): P1 (pool, step 9) receives M's address (managed, freed at step 7), and
// the pinned 1 MiB buffer (step 35) receives Q2's address (released by the pool destroy at step
// 20). A profiler that forgot either release would see one address live twice. The untracked
// 1 MiB block (step 37) is fresh memory the profiler has never seen.
#pragma once

#include <cstdint>

namespace gmp::scenario {

inline constexpr std::uint64_t MiB = 1ULL << 20;
inline constexpr std::uint64_t TiB = 1ULL << 40;
inline constexpr int kDevice = 0;

// ---- inputs ----
inline constexpr std::uint64_t kLinear1 = 8 * MiB;  // leaked
inline constexpr std::uint64_t kLinear2 = 4 * MiB;
inline constexpr std::uint64_t kPitchWidth = 3000;
inline constexpr std::uint64_t kPitchHeight = 512;
inline constexpr unsigned kPitchElement = 4;
inline constexpr std::uint64_t kPitch = 3072;                       // round_up(3000, 512)
inline constexpr std::uint64_t kPitchBytes = kPitch * kPitchHeight;  // 1,572,864
inline constexpr std::uint64_t kManaged = 3 * MiB;
inline constexpr std::uint64_t kPoolP1 = 3 * MiB;  // default pool
inline constexpr std::uint64_t kPoolP2 = 5 * MiB;  // default pool
inline constexpr std::uint64_t kPoolQ1 = 6 * MiB;  // custom pool
inline constexpr std::uint64_t kPoolQ2 = 1 * MiB;  // custom pool, live when it is destroyed
inline constexpr std::uint64_t kCustomPoolThreshold = 64 * MiB;
inline constexpr std::uint64_t kVmmH1 = 4 * MiB;
inline constexpr std::uint64_t kVmmH2 = 8 * MiB;  // mapped in two 4 MiB pieces
inline constexpr std::uint64_t kArray1Bytes = 4849664;   // 1000x300 FLOAT x4
inline constexpr std::uint64_t kArray2Bytes = 262144;    // 64x64x64 UINT8 x1
inline constexpr std::uint64_t kMipmapBytes = 393216;    // 256x256 HALF x2, 9 levels
inline constexpr std::uint64_t kPinnedA = 2 * MiB;       // cuMemHostAlloc, freed
inline constexpr std::uint64_t kPinnedB = 1 * MiB;       // cuMemAllocHost_v2, stays live
inline constexpr std::uint64_t kFailedRequest = 1 * TiB;  // cuMemAlloc_v2 -> OUT_OF_MEMORY
inline constexpr const char* kFailedApi = "cuMemAlloc_v2";
inline constexpr std::uint64_t kUntracked = 1 * MiB;      // freed with cuMemFree_v2

// ---- expected profiler results (device 0) ----
struct KindExpect {
  std::uint64_t current;
  std::uint64_t peak;
  std::uint64_t allocs;
  std::uint64_t frees;
};
struct Watermark {
  std::uint64_t current;
  std::uint64_t peak;
};

inline constexpr KindExpect kLinear{kLinear1, kLinear1 + kLinear2 + kPitchBytes, 3, 2};
inline constexpr KindExpect kPool{0, kPoolP1 + kPoolP2 + kPoolQ1 + kPoolQ2, 4, 4};
inline constexpr std::uint64_t kPoolFreesByDestroy = 1;  // included in kPool.frees
inline constexpr Watermark kPoolReserved{0, 16 * MiB};
inline constexpr KindExpect kVmm{0, kVmmH2, 2, 2};  // current/peak = mapped bytes
inline constexpr Watermark kVmmPhysical{0, kVmmH2};
inline constexpr KindExpect kArray{0, kArray1Bytes + kArray2Bytes + kMipmapBytes, 3, 3};
inline constexpr KindExpect kManagedKind{0, kManaged, 1, 1};

inline constexpr Watermark kDeviceAllocated{kLinear1, kLinear1 + kPool.peak};         // 8 / 23 MiB
inline constexpr Watermark kDeviceReserved{kLinear1, kLinear1 + kPoolReserved.peak};  // 8 / 24 MiB

inline constexpr std::uint64_t kAllocCount =
    kLinear.allocs + kPool.allocs + kVmm.allocs + kArray.allocs + kManagedKind.allocs;  // 13
inline constexpr std::uint64_t kFreeCount =
    kLinear.frees + kPool.frees + kVmm.frees + kArray.frees + kManagedKind.frees;  // 12
inline constexpr std::uint64_t kFailedAllocCount = 1;

inline constexpr Watermark kHostPinned{kPinnedB, kPinnedA + kPinnedB};  // 1 / 3 MiB
inline constexpr std::uint64_t kUnknownFrees = 1;
inline constexpr std::uint64_t kLiveAtExitCount = 1;
inline constexpr std::uint64_t kLiveAtExitBytes = kLinear1;

// Driver-side figures the scenario itself checks (fake driver).
inline constexpr std::uint64_t kDefaultPoolReservedHigh = 8 * MiB;
inline constexpr std::uint64_t kDefaultPoolUsedHigh = 8 * MiB;
inline constexpr std::uint64_t kCustomPoolReservedHigh = 8 * MiB;
inline constexpr std::uint64_t kCustomPoolUsedHigh = 7 * MiB;
inline constexpr std::uint64_t kDriverInUseAtExit = kLinear1;  // total - free grows by this

static_assert(kLinear.peak == 14155776);
static_assert(kPool.peak == 15 * MiB);
static_assert(kArray.peak == 5505024);
static_assert(kDeviceAllocated.peak == 24117248);
static_assert(kDeviceReserved.peak == 25165824);
static_assert(kAllocCount == 13 && kFreeCount == 12);
static_assert(kArray1Bytes == (4800000 + 65535) / 65536 * 65536);
static_assert(kMipmapBytes == (4 * 87381 + 65535) / 65536 * 65536);

}  // namespace gmp::scenario
