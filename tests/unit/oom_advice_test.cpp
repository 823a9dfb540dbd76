// The advice rules of `gpumemprof oom` (tools/analysis/oom_advice.h) on crafted facts: which
// advice each situation gets, in which order, and its exact words.
#include "oom_advice.h"

#include <gtest/gtest.h>

namespace gmp::analysis {
namespace {

constexpr uint64_t MiB = 1 << 20;

// A device OOM: `request` asked, the driver saying `free` of `total`, the process holding `reserved`.
OomExplanation device_oom(uint64_t request, std::optional<uint64_t> free, uint64_t total, uint64_t reserved) {
  OomExplanation x;
  x.request.size = request;
  x.request.device = 0;
  x.device_figures_known = true;
  x.held.reserved.current = reserved;
  x.free_bytes = free;
  if (total > 0) x.total_bytes = total;
  x.total_from_driver = free.has_value();
  if (free && *free < request) x.shortfall = request - *free;
  return x;
}

std::vector<std::string> ids(const std::vector<OomExplanation::Advice>& advice) {
  std::vector<std::string> out;
  for (const auto& a : advice) out.push_back(a.id);
  return out;
}

using Ids = std::vector<std::string>;

TEST(OomAdvice, PinnedHostMemory) {
  OomExplanation x;
  x.host_pinned = true;
  x.host_pinned_bytes = 4096;
  x.recovered = true;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"pinned_host", "recovered"}));
  EXPECT_EQ(advice[0].text,
            "Pinned host memory is page-locked RAM: check the host's free memory and the locked-memory "
            "limit (ulimit -l), or pin less (smaller prefetch buffers, pin_memory=False). This process "
            "held 4.00 KiB of pinned memory.");
  EXPECT_EQ(advice[1].text,
            "A later pinned allocation of at least the requested size succeeded, so the program went on.");
}

TEST(OomAdvice, LargerThanTheDeviceCannotFitAndNothingElseIsSaid) {
  OomExplanation x = device_oom(2048 * MiB, 900 * MiB, 1024 * MiB, 0);
  x.recovered = true;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"cannot_fit"}));
  EXPECT_EQ(advice[0].text,
            "The request (2.00 GiB) is larger than the device's total memory (1.00 GiB): it cannot fit on "
            "this device at all. Split the work (smaller batch, sharding, activation checkpointing) or use "
            "a device with more memory.");
}

TEST(OomAdvice, FragmentationThatWouldHaveMadeRoom) {
  OomExplanation x = device_oom(512 * MiB, 404 * MiB, 1024 * MiB, 700 * MiB);
  x.pool_unused = 300 * MiB;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"fragmentation"}));
  EXPECT_EQ(advice[0].text,
            "This process reserved 300.00 MiB more than it had allocated (300.00 MiB pool memory reserved "
            "but not allocated): memory held by caching or fragmentation, enough to have made room for "
            "the request. Trim the pools (cudaMemPoolTrimTo, a lower release threshold, "
            "torch.cuda.empty_cache()), and with PyTorch set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.");
}

// A quarter of the reservation unused is worth saying even when it would not have been enough;
// the shortfall is then said too.
TEST(OomAdvice, FragmentationNotEnoughLeavesTheShortfall) {
  OomExplanation x = device_oom(300 * MiB, 100 * MiB, 1024 * MiB, 400 * MiB);
  x.pool_unused = 50 * MiB;
  x.vmm_unmapped = 60 * MiB;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"fragmentation", "shortfall"}));
  EXPECT_EQ(advice[0].text,
            "This process reserved 110.00 MiB more than it had allocated (50.00 MiB pool memory reserved "
            "but not allocated, 60.00 MiB VMM memory created but not mapped): memory held by caching or "
            "fragmentation. Trim the pools (cudaMemPoolTrimTo, a lower release threshold, "
            "torch.cuda.empty_cache()), and with PyTorch set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.");
  EXPECT_EQ(advice[1].text,
            "The device had 100.00 MiB free, 200.00 MiB less than the request: free that much before "
            "this allocation or make the request smaller.");
}

TEST(OomAdvice, OtherProcessesByEstimate) {
  OomExplanation x = device_oom(200 * MiB, 100 * MiB, 1024 * MiB, 300 * MiB);
  x.others_source = OomExplanation::OthersSource::Estimate;
  x.others_bytes = 624 * MiB;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"other_processes"}));
  EXPECT_EQ(advice[0].text,
            "Other processes (or memory this process allocated outside the calls gpumemprof sees) held "
            "about 624.00 MiB on this device; without them the request would have fit. Check what else "
            "runs on the GPU (nvidia-smi), or give this job a GPU of its own (CUDA_VISIBLE_DEVICES).");
}

// NVML's figure, and too small to have made room: said only because it is a tenth of the device.
TEST(OomAdvice, OtherProcessesPerNvmlThatWouldNotHaveMadeRoom) {
  OomExplanation x = device_oom(800 * MiB, 10 * MiB, 1024 * MiB, 100 * MiB);
  x.others_source = OomExplanation::OthersSource::NvmlSample;
  x.others_bytes = 110 * MiB;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"other_processes", "shortfall"}));
  EXPECT_EQ(advice[0].text,
            "Other processes held 110.00 MiB on this device. Check what else runs on the GPU "
            "(nvidia-smi), or give this job a GPU of its own (CUDA_VISIBLE_DEVICES).");
  // Less than a tenth of the device and no room made: not worth a word.
  x.others_bytes = 100 * MiB;
  EXPECT_EQ(ids(oom_advice(x)), (Ids{"shortfall"}));
}

TEST(OomAdvice, OwnFootprintTooBigForTheDevice) {
  OomExplanation x = device_oom(200 * MiB, 50 * MiB, 1024 * MiB, 900 * MiB);
  x.others_source = OomExplanation::OthersSource::NvmlSample;
  x.others_bytes = 0;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"own_footprint"}));
  EXPECT_EQ(advice[0].text,
            "This process itself had 900.00 MiB in use of the device's 1.00 GiB, so with the request it "
            "needs more than the device has: free what is no longer needed before this point, lower the "
            "batch size, or use smaller data types.");
}

TEST(OomAdvice, EnoughFreeAfterARecovery) {
  OomExplanation x = device_oom(512 * MiB, 600 * MiB, 1024 * MiB, 100 * MiB);
  x.recovered = true;
  const auto advice = oom_advice(x);
  ASSERT_EQ(ids(advice), (Ids{"recovered", "enough_free"}));
  EXPECT_EQ(advice[0].text,
            "A later allocation of at least the requested size succeeded (the caller freed memory and "
            "retried), so the program went on; act only if this repeats, each episode costs a failed call "
            "and a retry.");
  EXPECT_EQ(advice[1].text,
            "The driver reported 600.00 MiB free, at least the request: the failure came from a limit (a "
            "pool's maximum size), from fragmentation of the device's memory, or from memory that was "
            "freed only after the check.");
}

TEST(OomAdvice, UnknownFree) {
  const auto advice = oom_advice(device_oom(512 * MiB, std::nullopt, 0, 100 * MiB));
  ASSERT_EQ(ids(advice), (Ids{"unknown_free"}));
  EXPECT_EQ(advice[0].text,
            "The bundle does not say how much memory was free (the driver was not asked); compare the "
            "request with what this process held above.");
  // Recovered: nothing left to say.
  OomExplanation x = device_oom(512 * MiB, std::nullopt, 0, 100 * MiB);
  x.recovered = true;
  EXPECT_EQ(ids(oom_advice(x)), (Ids{"recovered"}));
}

}  // namespace
}  // namespace gmp::analysis
