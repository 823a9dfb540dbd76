// The one byte formatter (settings/bytes_text.h), in both styles: the tools' (any unit) and the
// collector's messages (MiB or GiB only).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bytes_text.h"

namespace gmp {
namespace {

constexpr uint64_t KiB = 1ull << 10, MiB = 1ull << 20, GiB = 1ull << 30, TiB = 1ull << 40;

TEST(BytesText, AnyUnitIsTheLargestTheFigureReaches) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, "0 B"},
      {1, "1 B"},
      {1023, "1023 B"},
      {KiB, "1.00 KiB"},
      {1536, "1.50 KiB"},
      {MiB - 1, "1024.00 KiB"},  // rounds up in its unit, which it does not leave
      {550 * MiB, "550.00 MiB"},
      {GiB + GiB / 2, "1.50 GiB"},
      {3 * TiB, "3.00 TiB"},
      {2048 * TiB, "2048.00 TiB"},  // nothing above TiB
      {UINT64_MAX, "16777216.00 TiB"},
  };
  for (const auto& [bytes, text] : cases) EXPECT_EQ(bytes_text(bytes), text) << bytes;
  EXPECT_EQ(bytes_text(512, ByteUnits::Any), "512 B");
}

TEST(BytesText, MiBOrGiBForTheCollectorsMessages) {
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {0, "0.00 MiB"},
      {512, "0.00 MiB"},
      {MiB / 2, "0.50 MiB"},
      {100 * MiB, "100.00 MiB"},
      {GiB - 1, "1024.00 MiB"},
      {GiB, "1.00 GiB"},
      {2 * GiB, "2.00 GiB"},
      {TiB, "1024.00 GiB"},  // nothing above GiB
  };
  for (const auto& [bytes, text] : cases) EXPECT_EQ(bytes_text(bytes, ByteUnits::MiBOrGiB), text) << bytes;
}

}  // namespace
}  // namespace gmp
