#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "address_map.h"

namespace gmp {
namespace {

TEST(AddressMap, BasicOperations) {
  AddressMap<int> m;
  EXPECT_EQ(m.find(5), nullptr);
  m.insert_or_assign(5, 50);
  m.insert_or_assign(0, 7);  // key 0 is an ordinary key
  ASSERT_NE(m.find(5), nullptr);
  EXPECT_EQ(*m.find(5), 50);
  EXPECT_EQ(*m.find(0), 7);
  m.insert_or_assign(5, 51);
  EXPECT_EQ(*m.find(5), 51);
  EXPECT_EQ(m.size(), 2u);
  int out = 0;
  EXPECT_TRUE(m.erase(5, &out));
  EXPECT_EQ(out, 51);
  EXPECT_FALSE(m.erase(5));
  EXPECT_EQ(m.find(5), nullptr);
  EXPECT_EQ(m.size(), 1u);
}

TEST(AddressMap, MatchesUnorderedMapUnderChurn) {
  // Allocation-like churn: reused addresses, growth, tombstones, erase_if.
  AddressMap<uint64_t> m;
  std::unordered_map<uint64_t, uint64_t> ref;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200000; ++step) {
    const uint64_t key = 0x7f0000000000ull + (rng() % 5000) * 256;
    switch (rng() % 3) {
      case 0:
      case 1:
        m.insert_or_assign(key, step);
        ref[key] = step;
        break;
      case 2: {
        uint64_t got = 0;
        const bool erased = m.erase(key, &got);
        ASSERT_EQ(erased, ref.count(key) == 1);
        if (erased) {
          EXPECT_EQ(got, ref[key]);
        }
        ref.erase(key);
        break;
      }
    }
    if (step % 50000 == 49999) {
      m.erase_if([](uint64_t k, uint64_t) { return (k / 256) % 7 == 0; }, [](uint64_t) {});
      std::erase_if(ref, [](const auto& kv) { return (kv.first / 256) % 7 == 0; });
    }
  }
  ASSERT_EQ(m.size(), ref.size());
  size_t seen = 0;
  m.for_each([&](uint64_t k, uint64_t v) {
    ++seen;
    ASSERT_EQ(ref.at(k), v);
  });
  EXPECT_EQ(seen, ref.size());
}

}  // namespace
}  // namespace gmp
