#include "device_limit_spec.h"

#include "value_text.h"

namespace gmp {

std::optional<uint64_t> known_gpu_bytes(std::string_view name) {
  const std::string wanted = lower(name);
  for (const KnownGpu& g : kKnownGpus) {
    if (wanted == lower(g.name)) return g.bytes;
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_size_or_gpu(std::string_view text) {
  if (auto gpu = known_gpu_bytes(text)) return gpu;
  auto v = parse_size(text);
  if (!v || *v == 0) return std::nullopt;
  return v;
}

std::string known_gpu_names() {
  std::string out;
  for (const KnownGpu& g : kKnownGpus) out += (out.empty() ? "" : ", ") + std::string(g.name);
  return out;
}

std::optional<DeviceLimitSpec> parse_device_limit(std::string_view text) {
  DeviceLimitSpec spec;
  if (text.find(':') == std::string_view::npos) {
    spec.every = parse_size_or_gpu(text);
    if (!spec.every) return std::nullopt;
    return spec;
  }
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view entry = text.substr(0, comma);
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    const auto device = parse_uint(entry.substr(0, colon));
    const auto bytes = parse_size_or_gpu(entry.substr(colon + 1));
    if (!device || *device >= kMaxLimitDevices || !bytes || spec.per_device[*device] != 0) return std::nullopt;
    spec.per_device[*device] = *bytes;
    if (comma == std::string_view::npos) return spec;
    text.remove_prefix(comma + 1);
  }
}

std::string device_limit_form() {
  return "a size (24GiB), a GPU name (" + known_gpu_names() + ") or per device (0:24GiB,1:L4)";
}

}  // namespace gmp
