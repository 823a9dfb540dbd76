// format/attribution_records.h: each line of attribution.jsonl written by to_json() reads back the
// same through from_json(), with the exact text the collector writes; what from_json() refuses.
#include <gtest/gtest.h>

#include "attribution_records.h"
#include "json_text.h"

namespace gmp {
namespace {

using nlohmann::json;

template <typename Line>
Line round_trip(const Line& line) {
  Line back;
  EXPECT_TRUE(from_json(json::parse(json_text(to_json(line))), back));
  auto any = attribution_line_from_json(to_json(line));
  EXPECT_TRUE(any.has_value() && std::holds_alternative<Line>(*any) && std::get<Line>(*any) == line);
  return back;
}

TEST(AttributionRecords, ModuleRoundTrips) {
  const ModuleLine m{"/lib/libcuda.so.1", 0x7f0000000000, 0x7f0000001000, 0x7f0000100000, "8a1f", 12};
  EXPECT_EQ(json_text(to_json(m)),
            R"({"base":"0x7f0000000000","build_id":"8a1f","end":"0x7f0000100000","path":"/lib/libcuda.so.1",)"
            R"("seen_ns":12,"start":"0x7f0000001000","type":"module"})");
  EXPECT_EQ(round_trip(m), m);
}

TEST(AttributionRecords, UnloadedRoundTrips) {
  const UnloadedLine u{"/p/libplugin.so", 0x7f0000000000, 99};
  EXPECT_EQ(json_text(to_json(u)),
            R"({"base":"0x7f0000000000","path":"/p/libplugin.so","type":"unloaded","unloaded_ns":99})");
  EXPECT_EQ(round_trip(u), u);
}

TEST(AttributionRecords, PyFrameRoundTrips) {
  const PyFrameLine p{7, "train.py", "step", -3};
  EXPECT_EQ(json_text(to_json(p)), R"({"file":"train.py","function":"step","id":7,"line":-3,"type":"pyframe"})");
  EXPECT_EQ(round_trip(p), p);
}

TEST(AttributionRecords, StackRoundTrips) {
  const StackLine s{9, {StackFrame::from_word(0x55d0c0001234), StackFrame::from_word(kPythonFrameTag | 7)}};
  EXPECT_EQ(s.frames[1], (StackFrame{7, true}));
  EXPECT_EQ(json_text(to_json(s)), R"({"frames":["0x55d0c0001234","py:7"],"id":9,"type":"stack"})");
  EXPECT_EQ(round_trip(s), s);
  EXPECT_EQ(round_trip(StackLine{1, {}}), (StackLine{1, {}}));
}

TEST(AttributionRecords, NameRoundTrips) {
  const NameLine n{4294967295u, "forward \xff"};
  EXPECT_EQ(json_text(to_json(n)), "{\"id\":4294967295,\"name\":\"forward \xEF\xBF\xBD\",\"type\":\"name\"}");
  const NameLine valid{3, "forward"};
  EXPECT_EQ(round_trip(valid), valid);
}

TEST(AttributionRecords, OptionalFieldsDefaultAndAlternativesAreTaken) {
  ModuleLine m;
  ASSERT_TRUE(from_json(json::parse(R"({"path":"/a","base":16,"start":"0X10","end":"0x20"})"), m));
  EXPECT_EQ(m, (ModuleLine{"/a", 16, 16, 32, "", 0}));
  ASSERT_TRUE(
      from_json(json::parse(R"({"path":"/a","base":"0x0","start":"0x1","end":"0x2","loaded_ns":5,"seen_ns":6})"), m));
  EXPECT_EQ(m.loaded_ns, 5u);
  UnloadedLine u;
  ASSERT_TRUE(from_json(json::parse(R"({"path":"/a","base":"0x10","unloaded_ns":"late"})"), u));
  EXPECT_EQ(u, (UnloadedLine{"/a", 16, 0}));
}

TEST(AttributionRecords, WrongFieldsAreRefused) {
  ModuleLine m;
  EXPECT_FALSE(from_json(json::parse(R"({"path":"/a","base":"0x0","start":"0x20","end":"0x20"})"), m));
  EXPECT_FALSE(from_json(json::parse(R"({"path":"/a","base":"16","start":"0x1","end":"0x2"})"), m));
  EXPECT_FALSE(from_json(json::parse(R"({"path":"/a","base":-1,"start":"0x1","end":"0x2"})"), m));
  EXPECT_FALSE(from_json(json::parse(R"({"path":null,"base":"0x0","start":"0x1","end":"0x2"})"), m));
  PyFrameLine p;
  EXPECT_FALSE(from_json(json::parse(R"({"id":0,"file":"a","function":"f","line":1})"), p));
  EXPECT_FALSE(from_json(json::parse(R"({"id":4294967296,"file":"a","function":"f","line":1})"), p));
  EXPECT_FALSE(from_json(json::parse(R"({"id":1,"file":"a","function":"f","line":1.5})"), p));
  StackLine s;
  EXPECT_FALSE(from_json(json::parse(R"({"id":1,"frames":["py:0"]})"), s));
  EXPECT_FALSE(from_json(json::parse(R"({"id":1,"frames":["py:4294967296"]})"), s));
  EXPECT_FALSE(from_json(json::parse(R"({"id":1,"frames":[4096]})"), s));
  EXPECT_FALSE(from_json(json::parse(R"({"id":1,"frames":"0x1"})"), s));
  NameLine n;
  EXPECT_FALSE(from_json(json::parse(R"({"id":"1","name":"x"})"), n));
  EXPECT_FALSE(from_json(json::parse(R"([1,2])"), n));
  EXPECT_FALSE(attribution_line_from_json(json::parse(R"({"type":"thread","id":1})")).has_value());
  EXPECT_FALSE(attribution_line_from_json(json::parse(R"({"type":7})")).has_value());
  EXPECT_FALSE(attribution_line_from_json(json::parse(R"("stack")")).has_value());
}

}  // namespace
}  // namespace gmp
