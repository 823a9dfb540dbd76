#include "oom_advice.h"

#include "bytes_text.h"
#include "format.h"

namespace gmp::tool {
namespace {

std::string hb(uint64_t bytes) { return bytes_text(bytes); }

}  // namespace

std::vector<OomExplanation::Advice> oom_advice(const OomExplanation& x) {
  std::vector<OomExplanation::Advice> advice;
  auto add = [&](const char* id, std::string text) { advice.push_back({id, std::move(text)}); };
  const uint64_t req = x.request.size;
  if (x.host_pinned) {
    add("pinned_host",
        "Pinned host memory is page-locked RAM: check the host's free memory and the locked-memory limit (ulimit -l), "
        "or pin less (smaller prefetch buffers, pin_memory=False). This process held " +
            hb(x.host_pinned_bytes) + " of pinned memory.");
    if (x.recovered)
      add("recovered", "A later pinned allocation of at least the requested size succeeded, so the program went on.");
    return advice;
  }
  const uint64_t total = x.total_bytes.value_or(0);
  if (total > 0 && req > total) {
    add("cannot_fit", "The request (" + hb(req) + ") is larger than the device's total memory (" + hb(total) +
                          "): it cannot fit on this device at all. Split the work (smaller batch, sharding, "
                          "activation checkpointing) or use a device with more memory.");
    return advice;
  }
  if (x.recovered) {
    add("recovered",
        "A later allocation of at least the requested size succeeded (the caller freed memory and retried), "
        "so the program went on; act only if this repeats, each episode costs a failed call and a retry.");
  }
  const uint64_t slack = sat_add(x.pool_unused, x.vmm_unmapped);
  const uint64_t reserved = x.held.reserved.current;
  bool explained = false;
  if (slack > 0 && ((x.shortfall && slack >= *x.shortfall) || slack >= reserved / 4)) {
    std::string what;
    if (x.pool_unused > 0) what = hb(x.pool_unused) + " pool memory reserved but not allocated";
    if (x.vmm_unmapped > 0)
      what += std::string(what.empty() ? "" : ", ") + hb(x.vmm_unmapped) + " VMM memory created but not mapped";
    const bool enough = x.shortfall && slack >= *x.shortfall;
    add("fragmentation",
        "This process reserved " + hb(slack) + " more than it had allocated (" + what +
            "): memory held by caching or fragmentation" +
            (enough ? ", enough to have made room for the request" : "") +
            ". Trim the pools (cudaMemPoolTrimTo, a lower release threshold, torch.cuda.empty_cache()), "
            "and with PyTorch set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.");
    explained = enough;
  }
  // What this process had in use (its reservation less what trimming would release): with the
  // request, more than the device has means no trimming or other process can make room.
  const uint64_t in_use = sat_sub(reserved, slack);
  const bool too_big_alone = total > 0 && sat_add(in_use, req) > total;
  if (x.others_bytes && *x.others_bytes > 0) {
    const uint64_t others = *x.others_bytes;
    const bool would_fit = !too_big_alone && x.free_bytes && sat_add(*x.free_bytes, others) >= req;
    if (would_fit || (total > 0 && others >= total / 10)) {
      const bool estimate = x.others_source == OomExplanation::OthersSource::Estimate;
      add("other_processes",
          std::string(
              estimate
                  ? "Other processes (or memory this process allocated outside the calls gpumemprof sees) held about "
                  : "Other processes held ") +
              hb(others) + " on this device" + (would_fit ? "; without them the request would have fit" : "") +
              ". Check what else runs on the GPU (nvidia-smi), or give this job a GPU of its own "
              "(CUDA_VISIBLE_DEVICES).");
      explained = explained || would_fit;
    }
  }
  if (too_big_alone) {
    add("own_footprint", "This process itself had " + hb(in_use) + " in use of the device's " + hb(total) +
                             ", so with the request it needs more than the device has: free what is no longer needed "
                             "before this point, lower the batch size, or use smaller data types.");
    explained = true;
  }
  if (x.free_bytes && *x.free_bytes >= req) {
    add("enough_free", "The driver reported " + hb(*x.free_bytes) +
                           " free, at least the request: the failure came from a limit (a pool's maximum size), from "
                           "fragmentation of the device's memory, or from memory that was freed only after the check.");
    explained = true;
  }
  if (!explained && !x.recovered) {
    if (x.shortfall) {
      add("shortfall",
          "The device had " + hb(x.free_bytes.value_or(0)) + " free, " + hb(*x.shortfall) +
              " less than the request: free that much before this allocation or make the request smaller.");
    } else if (!x.free_bytes) {
      add("unknown_free",
          "The bundle does not say how much memory was free (the driver was not asked); compare the "
          "request with what this process held above.");
    }
  }
  return advice;
}

}  // namespace gmp::tool
