// The pickle writer of `export --format memory-viz`, byte by byte: every opcode it writes, at the
// boundaries where it switches from one to the next (what CPython's pickle.dumps(v, 4) writes for
// the same values, framing aside).
#include "pickle_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace gmp::analysis {
namespace {

using namespace std::string_literals;

std::string pickled(void (*write)(PickleWriter&)) {
  std::string out;
  PickleWriter w(out);
  write(w);
  return out;
}

std::string integer(uint64_t v) {
  std::string out;
  PickleWriter(out).integer(v);
  return out;
}

TEST(PickleWriter, ProtocolFourThenStop) {
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin();
              w.boolean(true);
              w.end();
            }),
            "\x80\x04\x88."s);
}

TEST(PickleWriter, IntegersTakeTheSmallestOpcode) {
  EXPECT_EQ(integer(0), "K\x00"s);
  EXPECT_EQ(integer(255), "K\xff"s);
  EXPECT_EQ(integer(256), "M\x00\x01"s);
  EXPECT_EQ(integer(65535), "M\xff\xff"s);
  EXPECT_EQ(integer(65536), "J\x00\x00\x01\x00"s);
  EXPECT_EQ(integer(0x7fffffff), "J\xff\xff\xff\x7f"s);
  // LONG1: two's complement, so a set top bit needs one more (zero) byte.
  EXPECT_EQ(integer(0x80000000), "\x8a\x05\x00\x00\x00\x80\x00"s);
  EXPECT_EQ(integer(0x7f0012345678), "\x8a\x06\x78\x56\x34\x12\x00\x7f"s);
  EXPECT_EQ(integer(0x800012345678), "\x8a\x07\x78\x56\x34\x12\x00\x80\x00"s);
  EXPECT_EQ(integer(0x7fffffffffffffff), "\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f"s);
  EXPECT_EQ(integer(0x8000000000000000), "\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00"s);
  EXPECT_EQ(integer(UINT64_MAX), "\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"s);
}

TEST(PickleWriter, Booleans) {
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.boolean(true);
              w.boolean(false);
            }),
            "\x88\x89"s);
}

TEST(PickleWriter, StringsAreUtf8WithTheirLength) {
  EXPECT_EQ(pickled([](PickleWriter& w) { w.string(""); }), "\x8c\x00"s);
  EXPECT_EQ(pickled([](PickleWriter& w) { w.string("alloc"); }),
            "\x8c\x05"
            "alloc"s);
  EXPECT_EQ(pickled([](PickleWriter& w) { w.string("caf\xc3\xa9"); }),
            "\x8c\x05"
            "caf\xc3\xa9"s);
  // A byte that is not UTF-8 (a path, say) becomes U+FFFD: Python refuses to unpickle it.
  EXPECT_EQ(pickled([](PickleWriter& w) { w.string("a\xff"); }),
            "\x8c\x04"
            "a\xef\xbf\xbd"s);
  const std::string s255(255, 'x'), s256(256, 'y');
  std::string out;
  PickleWriter(out).string(s255);
  EXPECT_EQ(out, "\x8c\xff"s + s255);
  out.clear();
  PickleWriter(out).string(s256);
  EXPECT_EQ(out, "X\x00\x01\x00\x00"s + s256);
}

TEST(PickleWriter, ContainersOpenWithAMarkAndCloseWithTheirOpcode) {
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin_list();
              w.integer(1);
              w.integer(2);
              w.end_list();
            }),
            "](K\x01K\x02"
            "e"s);
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin_dict();
              w.string("a");
              w.begin_tuple();
              w.integer(0);
              w.integer(0);
              w.end_tuple();
              w.end_dict();
            }),
            "}(\x8c\x01"
            "a(K\x00K\x00tu"s);
  EXPECT_EQ(pickled([](PickleWriter& w) {
              w.begin_dict();
              w.end_dict();
              w.begin_list();
              w.end_list();
            }),
            "}(u](e"s);
}

TEST(PickleWriter, LongListsAndDictsAreBatchedByAThousand) {
  std::string out;
  PickleWriter w(out);
  w.begin_list();
  for (int i = 0; i < 2001; ++i) w.boolean(true);
  w.end_list();
  const std::string thousand(1000, '\x88');
  EXPECT_EQ(out, "](" + thousand + "e(" + thousand +
                     "e(\x88"
                     "e"s);

  out.clear();
  w.begin_dict();
  for (int i = 0; i < 1001; ++i) {
    w.boolean(true);  // key
    w.begin_list();   // a value that is a container counts once, when it closes
    w.end_list();
  }
  w.end_dict();
  std::string pairs;
  for (int i = 0; i < 1000; ++i) pairs += "\x88](e";
  EXPECT_EQ(out, "}(" + pairs + "u(\x88](eu"s);
}

TEST(PickleWriter, MemoStoresInOrderAndFetchesByIndex) {
  std::string out;
  PickleWriter w(out);
  w.memo_string("action");  // slot 0
  w.memo_string("addr");    // slot 1
  w.memo_string("action");  // fetched
  w.begin_list();
  w.end_list();
  EXPECT_EQ(w.memoize(), 2u);
  w.get(2);
  EXPECT_EQ(out,
            "\x8c\x06"
            "action\x94\x8c\x04"
            "addr\x94h\x00](e\x94h\x02"s);

  for (uint32_t slot = 3; slot < 256; ++slot) {
    w.boolean(true);
    EXPECT_EQ(w.memoize(), slot);
  }
  out.clear();
  w.get(255);
  w.get(256);
  EXPECT_EQ(out, "h\xffj\x00\x01\x00\x00"s);
}

}  // namespace
}  // namespace gmp::analysis
