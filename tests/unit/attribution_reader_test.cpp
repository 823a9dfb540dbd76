// attribution.jsonl parsing: every record type, partial last lines, garbage, and which module
// held an address when a stack was written (dlopen/dlclose reusing an address range).
#include <gtest/gtest.h>

#include <sstream>

#include "attribution_reader.h"

namespace gmp::reader {
namespace {

Attribution parse(const std::string& text) {
  std::istringstream in(text);
  return parse_attribution(in);
}

TEST(AttributionReader, ReadsEveryRecordType) {
  const Attribution a = parse(
      R"({"type":"module","path":"/lib/libcuda.so.1","base":"0x7f0000000000","start":"0x7f0000000000","end":"0x7f0000100000","build_id":"8a1f","loaded_ns":12})"
      "\n"
      R"({"type":"pyframe","id":7,"file":"/work/train.py","function":"forward","line":42})"
      "\n"
      R"({"type":"stack","id":9,"frames":["0x7f0000001234","0x55d0c0001234","py:7"]})"
      "\n"
      R"({"type":"name","id":4,"name":"forward pass"})"
      "\n");
  EXPECT_TRUE(a.present);
  EXPECT_EQ(a.records, 4u);
  EXPECT_EQ(a.skipped_lines, 0u);
  EXPECT_FALSE(a.partial_last_line);
  ASSERT_EQ(a.modules.size(), 1u);
  EXPECT_EQ(a.modules[0].path, "/lib/libcuda.so.1");
  EXPECT_EQ(a.modules[0].base, 0x7f0000000000u);
  EXPECT_EQ(a.modules[0].end, 0x7f0000100000u);
  EXPECT_EQ(a.modules[0].build_id, "8a1f");
  EXPECT_EQ(a.modules[0].loaded_ns, 12u);
  const PyFrameRecord* py = a.pyframe(7);
  ASSERT_NE(py, nullptr);
  EXPECT_EQ(py->function, "forward");
  EXPECT_EQ(py->line, 42);
  const StackRecord* s = a.stack(9);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->frames.size(), 3u);
  EXPECT_EQ(s->frames[0].value, 0x7f0000001234u);
  EXPECT_FALSE(s->frames[0].python);
  EXPECT_TRUE(s->frames[2].python);
  EXPECT_EQ(s->frames[2].value, 7u);
  ASSERT_NE(a.name(4), nullptr);
  EXPECT_EQ(*a.name(4), "forward pass");
  EXPECT_EQ(a.name(5), nullptr);
  EXPECT_EQ(a.stack(10), nullptr);
}

TEST(AttributionReader, SkipsAPartialLastLine) {
  const Attribution a = parse(R"({"type":"name","id":1,"name":"a"})"
                              "\n"
                              R"({"type":"stack","id":2,"frames":["0x1)");
  EXPECT_EQ(a.records, 1u);
  EXPECT_EQ(a.skipped_lines, 0u);
  EXPECT_TRUE(a.partial_last_line);
  EXPECT_EQ(a.stack(2), nullptr);
  // A whole record that only lost its newline is still a record.
  const Attribution b = parse(R"({"type":"name","id":1,"name":"a"})");
  EXPECT_EQ(b.records, 1u);
  EXPECT_FALSE(b.partial_last_line);
}

TEST(AttributionReader, CountsAndSkipsGarbage) {
  const Attribution a = parse(
      "not json at all\n"
      "\n"
      "[1,2,3]\n"
      R"({"type":"stack","id":0,"frames":[]})"  // id 0 means none
      "\n"
      R"({"type":"stack","id":3,"frames":["0xzz"]})"
      "\n"
      R"({"type":"stack","id":4,"frames":"0x1"})"
      "\n"
      R"({"type":"name","id":5,"name":7})"
      "\n"
      R"({"type":"module","path":"/x","base":"0x10","start":"0x20","end":"0x20"})"  // empty span
      "\n"
      R"({"type":"pyframe","id":6,"file":"f.py","function":"g","line":"12"})"
      "\n"
      R"({"type":"future_record","id":8})"
      "\n"
      R"({"type":"stack","id":9,"frames":["py:0"]})"
      "\n"
      "\x01\x02\xff\n"
      R"({"type":"name","id":10,"name":"ok"})"
      "\n");
  EXPECT_EQ(a.records, 1u);
  EXPECT_EQ(a.skipped_lines, 11u);
  EXPECT_FALSE(a.partial_last_line);
  ASSERT_NE(a.name(10), nullptr);
  EXPECT_TRUE(a.stacks.empty());
}

TEST(AttributionReader, MissingFileIsEmptyNotAnError) {
  const Attribution a = read_attribution("/nonexistent/attribution.jsonl");
  EXPECT_FALSE(a.present);
  EXPECT_EQ(a.records, 0u);
}

// A plugin at one address, a stack in it, the plugin unloaded and another library loaded at the
// same address, then a stack in that: each stack resolves through the object loaded when it was
// written.
TEST(AttributionReader, ModuleAtFollowsLoadsAndUnloads) {
  const Attribution a = parse(
      R"({"type":"module","path":"/exe","base":"0x0","start":"0x400000","end":"0x500000","build_id":""})"
      "\n"
      R"({"type":"module","path":"/p/libplugin.so","base":"0x7f0000000000","start":"0x7f0000000000","end":"0x7f0000010000","build_id":""})"
      "\n"
      R"({"type":"stack","id":1,"frames":["0x7f0000000100","0x400100"]})"
      "\n"
      R"({"type":"unloaded","path":"/p/libplugin.so","base":"0x7f0000000000","unloaded_ns":99})"
      "\n"
      R"({"type":"module","path":"/p/libother.so","base":"0x7f0000000000","start":"0x7f0000000000","end":"0x7f0000020000","build_id":""})"
      "\n"
      R"({"type":"stack","id":2,"frames":["0x7f0000000100"]})"
      "\n");
  ASSERT_EQ(a.modules.size(), 3u);
  EXPECT_EQ(a.modules[1].unloaded_ns, 99u);
  const StackRecord* s1 = a.stack(1);
  const StackRecord* s2 = a.stack(2);
  ASSERT_TRUE(s1 && s2);
  EXPECT_EQ(a.module_at(0x7f0000000100, s1->seq)->path, "/p/libplugin.so");
  EXPECT_EQ(a.module_at(0x400100, s1->seq)->path, "/exe");
  EXPECT_EQ(a.module_at(0x7f0000000100, s2->seq)->path, "/p/libother.so");
  EXPECT_EQ(a.module_at(0x7f0000015000, s2->seq)->path, "/p/libother.so");
  EXPECT_EQ(a.module_at(0x1000, s2->seq), nullptr);
  // A stack written before its library's record (never, but a damaged file may say so) still
  // finds the only object that spans the address.
  EXPECT_EQ(a.module_at(0x400100, 0)->path, "/exe");
}

}  // namespace
}  // namespace gmp::reader
