#include "oom_advice.h"

#include <cctype>
#include <optional>

#include "bytes_text.h"

namespace gmp::analysis {
namespace {

std::string hb(uint64_t bytes) { return bytes_text(bytes); }
std::string pb(uint64_t bytes) { return pytorch_size_text(bytes); }  // as PyTorch's message has them

// PyTorch's "reserved by PyTorch but unallocated" is large when it is at least a tenth of the
// capacity, or at least the request: then the cache held, in total, enough free bytes for it, in
// blocks too small or in segments the request could not use.
bool large_unallocated(const OomExplanation::Framework& f) {
  return f.unallocated > 0 && (f.unallocated >= f.figures.capacity / 10 || f.unallocated >= f.figures.requested);
}

// What to cut, in the terms of the category that held most of the tensors (tensor_categories.h).
std::optional<std::string> category_advice(const OomExplanation& x) {
  if (!x.categories || !x.categories->decided || x.categories->total.bytes == 0) return std::nullopt;
  const CategorySplit& s = *x.categories;
  size_t top = 0;
  for (size_t c = 1; c < s.by_category.size(); ++c) {
    if (s.by_category[c].total.bytes > s.by_category[top].total.bytes) top = c;
  }
  const auto category = static_cast<TensorCategory>(top);
  const char* what = nullptr;
  switch (category) {
    case TensorCategory::Activations:
      what = "halve the micro-batch (with gradient accumulation to keep the batch), checkpoint activations "
             "(torch.utils.checkpoint, gradient_checkpointing_enable()), or shorten the sequences";
      break;
    case TensorCategory::Parameters:
      what = "load the model in bf16 or fp16, quantize it, or shard it across GPUs (FSDP, tensor parallelism)";
      break;
    case TensorCategory::OptimizerState:
      what = "shard the optimizer state (ZeRO, FSDP), use a lighter optimizer (8-bit Adam, Adafactor, SGD), or "
             "offload it to the CPU";
      break;
    case TensorCategory::Gradients:
      what = "shard the gradients (ZeRO-2, FSDP), or free them between steps (zero_grad(set_to_none=True))";
      break;
    case TensorCategory::KvCache:
      what = "generate fewer sequences at once, shorten the context, or use a quantized or offloaded KV cache";
      break;
    case TensorCategory::Temporaries:
      what = "chunk or fuse the operation that allocates the largest temporaries (its line is in the report)";
      break;
    default: return std::nullopt;  // other, unknown: nothing specific to say
  }
  const CategoryFigures& f = s.by_category[top];
  const uint64_t percent = f.total.bytes * 100 / s.total.bytes;
  std::string text = category_label(category) + " held " + pb(f.total.bytes) + " of the " +
                     pb(s.total.bytes) + " in tensors (" + std::to_string(percent) + "%)";
  if (s.phase) text += ", in the " + phase_text(*s.phase);
  text += ": " + std::string(what) + ".";
  if (!f.largest.empty()) text += " The largest: " + f.largest.front().name + " (" + pb(f.largest.front().bytes.bytes) + ").";
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

std::vector<OomExplanation::Advice> framework_advice(const OomExplanation& x) {
  std::vector<OomExplanation::Advice> advice;
  auto add = [&](const char* id, std::string text) { advice.push_back({id, std::move(text)}); };
  const OomExplanation::Framework& f = *x.framework;
  const OomFramework& p = f.figures;
  if (p.requested > p.capacity) {
    add("cannot_fit", "The request (" + pb(p.requested) + ") is larger than the capacity PyTorch may use (" +
                          pb(p.capacity) +
                          "): it cannot fit at all. Split the work (smaller batch, sharding, "
                          "activation checkpointing) or use a device with more memory.");
    if (auto c = category_advice(x)) add("categories", std::move(*c));
    return advice;
  }
  if (x.recovered) {
    add("recovered",
        "A later tensor of at least the requested size was allocated: the program caught the error and "
        "went on with smaller work.");
  }
  if (large_unallocated(f)) {
    add("expandable_segments",
        "PyTorch held " + pb(f.unallocated) +
            " reserved but unallocated: free blocks of its cache that the request "
            "did not fit in (it had already released the unused segments and retried). Set "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so segments grow instead of fragmenting; "
            "torch.cuda.empty_cache() between phases returns whole free segments, not these blocks.");
  }
  if (p.non_pytorch >= p.capacity / 10 && p.non_pytorch > 0) {
    add("non_pytorch", "This process had " + pb(p.non_pytorch) +
                           " in use outside PyTorch's reserved memory (the CUDA context, "
                           "cuBLAS/cuDNN workspaces, other libraries; gpumemprof counted " +
                           pb(p.accounting.outside.current) + " of it in allocations outside PyTorch's segments).");
  }
  if (p.process_used_from_nvml) {
    const uint64_t others = sat_sub(sat_sub(p.capacity, p.free), p.process_used);
    if (others > 0 && (others >= p.capacity / 10 || sat_add(p.free, others) >= p.requested)) {
      add("other_processes", "Other processes held about " + pb(others) +
                                 " of the capacity (in use less this process's, per NVML). Check what else runs on "
                                 "the GPU (nvidia-smi), or give this job a GPU of its own (CUDA_VISIBLE_DEVICES).");
    }
  }
  std::string text = "Tensors held " + pb(p.allocated) +
                     " when the request came: lower the batch size, use activation checkpointing or smaller data "
                     "types, and drop references to tensors no longer needed (del, torch.no_grad() for inference)";
  std::string sites;
  for (const auto& site : f.sites) {
    if (site.stack_id == 0) continue;
    auto label = x.sites.find(site.stack_id);
    sites += std::string(sites.empty() ? "" : "; ") +
             (label != x.sites.end() ? label->second : "stack " + std::to_string(site.stack_id)) + ": " +
             pb(site.bytes) + " in " + std::to_string(site.count) + (site.count == 1 ? " tensor" : " tensors");
  }
  add("tensors", text + (sites.empty() ? "." : ". The largest holders by call site: " + sites + "."));
  if (auto c = category_advice(x)) add("categories", std::move(*c));
  return advice;
}

}  // namespace

std::vector<OomExplanation::Advice> oom_advice(const OomExplanation& x) {
  std::vector<OomExplanation::Advice> advice;
  auto add = [&](const char* id, std::string text) { advice.push_back({id, std::move(text)}); };
  if (x.framework) return framework_advice(x);
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

}  // namespace gmp::analysis
