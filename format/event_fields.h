// The fields of an event (event.h) as every textual form names them: event_json() (the OOM
// bundles' events.json and recovered_by), and `gpumemprof export`'s csv, jsonl and telemetry-v2
// metadata. Each form picks its fields and their order from here and encodes the values its own
// way, so a field's name and value are spelled once.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <variant>

#include "event.h"

namespace gmp {

enum class EventField : uint8_t { TimeNs, Op, Kind, Api, Device, Address, Size, Stream, Object, Value, Result,
                                  Thread, StackId };

// Every field, in the order event_json() and the jsonl export write them.
inline constexpr std::array<EventField, 13> kEventFields = {
    EventField::TimeNs, EventField::Op,     EventField::Kind,   EventField::Api,    EventField::Device,
    EventField::Address, EventField::Size,  EventField::Stream, EventField::Object, EventField::Value,
    EventField::Result, EventField::Thread, EventField::StackId};

// "t_ns", "op", "kind", "api", "device", "address", "size", "stream", "object", "value", "result",
// "thread", "stack_id".
std::string_view event_field_name(EventField f);

// A name (op, kind, api: event.h's op_name() and the like), a signed number (device, result) or
// an unsigned one (the rest).
using EventFieldValue = std::variant<std::string_view, int64_t, uint64_t>;

// `t_ns` is the event's time as the form reports it (relative to the profiler's start); it is the
// value of EventField::TimeNs, which the record alone does not give.
EventFieldValue event_field_value(const Event& e, EventField f, uint64_t t_ns);

}  // namespace gmp
