// Byte counts as people read them, the project's one formatter of sizes: "512 B", "1.50 GiB", and
// PyTorch's own style where our text stands beside its messages. Tests pin the styles in command
// output and in the collector's messages.
#pragma once

#include <cstdint>
#include <string>

namespace gmp {

// How bytes_text() picks the unit (powers of 1024).
enum class ByteUnits {
  Any,       // B, KiB, MiB, GiB or TiB: the largest the figure reaches. The tools' output.
  MiBOrGiB,  // MiB below 1 GiB, GiB from there on. The collector's log lines, alerts and OOM reasons.
};

// A whole number of bytes ("512 B"), or the figure in its unit with two decimals ("1.50 GiB").
std::string bytes_text(uint64_t bytes, ByteUnits units = ByteUnits::Any);

// A size as PyTorch's format_size() prints it in its messages, so that ours compare character for
// character: up to 1024 bytes "N bytes", then "%.2f KiB" up to 1 MiB, "%.2f MiB" up to 1 GiB, else
// "%.2f GiB" (its bounds are inclusive).
std::string pytorch_size_text(uint64_t bytes);

}  // namespace gmp
