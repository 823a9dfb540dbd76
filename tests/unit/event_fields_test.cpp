// format/event_fields.h: the event's fields, their names and values, as event_json() writes them.
#include <gtest/gtest.h>

#include <string>

#include "event_fields.h"
#include "json_text.h"
#include "json_views.h"

namespace gmp {
namespace {

Event sample_event() {
  Event e{};
  e.timestamp_ns = 1'500;
  e.address = 0x7f0000001000;
  e.size = 4096;
  e.stream = 3;
  e.object = 4;
  e.value = UINT64_MAX;
  e.thread_id = 77;
  e.stack_id = 9;
  e.device = -1;
  e.kind = Kind::Pool;
  e.op = Op::Alloc;
  e.api = Api::cuMemAllocAsync;
  e.result = kOutOfMemory;
  return e;
}

TEST(EventFields, NamesInOrder) {
  std::string names;
  for (const EventField f : kEventFields) names.append(event_field_name(f)).append(",");
  EXPECT_EQ(names, "t_ns,op,kind,api,device,address,size,stream,object,value,result,thread,stack_id,");
}

TEST(EventFields, Values) {
  const Event e = sample_event();
  EXPECT_EQ(event_field_value(e, EventField::TimeNs, 500), EventFieldValue(uint64_t{500}));
  EXPECT_EQ(event_field_value(e, EventField::Op, 0), EventFieldValue(std::string_view("alloc")));
  EXPECT_EQ(event_field_value(e, EventField::Kind, 0), EventFieldValue(std::string_view("pool")));
  EXPECT_EQ(event_field_value(e, EventField::Api, 0), EventFieldValue(std::string_view("cuMemAllocAsync")));
  EXPECT_EQ(event_field_value(e, EventField::Device, 0), EventFieldValue(int64_t{-1}));
  EXPECT_EQ(event_field_value(e, EventField::Address, 0), EventFieldValue(uint64_t{0x7f0000001000}));
  EXPECT_EQ(event_field_value(e, EventField::Value, 0), EventFieldValue(uint64_t{UINT64_MAX}));
  EXPECT_EQ(event_field_value(e, EventField::Result, 0), EventFieldValue(int64_t{2}));
  EXPECT_EQ(event_field_value(e, EventField::Thread, 0), EventFieldValue(uint64_t{77}));
  EXPECT_EQ(event_field_value(e, EventField::StackId, 0), EventFieldValue(uint64_t{9}));
}

// summary.json and the OOM bundles hold this text; times are relative to the start, never negative.
TEST(EventFields, EventJsonText) {
  const Event e = sample_event();
  EXPECT_EQ(json_text(event_json(e, 1'000)),
            R"({"address":139637976731648,"api":"cuMemAllocAsync","device":-1,"kind":"pool","object":4,"op":"alloc",)"
            R"("result":2,"size":4096,"stack_id":9,"stream":3,"t_ns":500,"thread":77,"value":18446744073709551615})");
  EXPECT_EQ(event_json(e, 2'000)["t_ns"], 0);
}

}  // namespace
}  // namespace gmp
