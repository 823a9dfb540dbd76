// The lock-free intern table: equal records get equal ids from any thread, different records
// different ids, and entries read back byte for byte (also run under TSan by scripts/test.sh).
#include "intern_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace gmp {
namespace {

std::string text(const InternEntry& e) { return std::string(reinterpret_cast<const char*>(e.data), e.length); }

TEST(InternTable, EqualRecordsShareAnIdAndReadBack) {
  InternTable& t = intern_table();
  const uint32_t a = t.intern(InternType::Name, "forward", 7);
  const uint32_t b = t.intern(InternType::Name, "backward", 8);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.intern(InternType::Name, "forward", 7), a);
  // The same bytes as another type are another record.
  EXPECT_NE(t.intern(InternType::Stack, "forward", 7), a);
  InternEntry e;
  ASSERT_TRUE(t.get(b, &e));
  EXPECT_EQ(e.type, InternType::Name);
  EXPECT_EQ(text(e), "backward");
  EXPECT_FALSE(t.get(0, &e));
  EXPECT_FALSE(t.get(InternTable::kMaxEntries, &e));  // not (yet) created
  EXPECT_EQ(t.intern(InternType::Name, "", 0), t.intern(InternType::Name, "", 0));
}

// A hint (a thread's last id) is the answer only when its record is the one asked for.
TEST(InternTable, HintIsTheAnswerOnlyForAnEqualRecord) {
  InternTable& t = intern_table();
  const uint32_t a = t.intern(InternType::Name, "hinted", 6);
  const uint32_t b = t.intern(InternType::Name, "other", 5);
  EXPECT_EQ(t.intern(InternType::Name, "hinted", 6, a), a);
  EXPECT_EQ(t.intern(InternType::Name, "hinted", 6, b), a);
  EXPECT_EQ(t.intern(InternType::Name, "hinted", 6, 0), a);
  EXPECT_EQ(t.intern(InternType::Name, "hinted", 6, InternTable::kMaxEntries), a);  // not (yet) created
  EXPECT_EQ(t.intern(InternType::Name, "hinte", 5, a), t.intern(InternType::Name, "hinte", 5));  // a prefix
  EXPECT_NE(t.intern(InternType::Stack, "hinted", 6, a), a);  // the same bytes as another type
}

TEST(InternTable, ThreadsRacingOnTheSameStacksAgree) {
  constexpr int kThreads = 8, kStacks = 500;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStacks));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &ids] {
      for (int i = 0; i < kStacks; ++i) {
        const int s = (i * 7 + t) % kStacks;  // each thread in its own order
        uint64_t frames[4] = {0x1000u + static_cast<uint64_t>(s), 0x2000, 0x3000, static_cast<uint64_t>(s) * 31};
        ids[t][s] = intern_table().intern(InternType::Stack, frames, sizeof frames);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int s = 0; s < kStacks; ++s) {
    ASSERT_NE(ids[0][s], 0u);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(ids[t][s], ids[0][s]) << "stack " << s;
    InternEntry e;
    ASSERT_TRUE(intern_table().get(ids[0][s], &e));
    uint64_t first;
    std::memcpy(&first, e.data, sizeof first);
    EXPECT_EQ(first, 0x1000u + static_cast<uint64_t>(s));
  }
  for (int s = 1; s < kStacks; ++s) EXPECT_NE(ids[0][s], ids[0][s - 1]);
}

}  // namespace
}  // namespace gmp
