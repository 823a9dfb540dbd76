#include "event_fields.h"

namespace gmp {

std::string_view event_field_name(EventField f) {
  switch (f) {
    case EventField::TimeNs: return "t_ns";
    case EventField::Op: return "op";
    case EventField::Kind: return "kind";
    case EventField::Api: return "api";
    case EventField::Device: return "device";
    case EventField::Address: return "address";
    case EventField::Size: return "size";
    case EventField::Stream: return "stream";
    case EventField::Object: return "object";
    case EventField::Value: return "value";
    case EventField::Result: return "result";
    case EventField::Thread: return "thread";
    case EventField::StackId: return "stack_id";
  }
  return "";
}

EventFieldValue event_field_value(const Event& e, EventField f, uint64_t t_ns) {
  switch (f) {
    case EventField::TimeNs: return t_ns;
    case EventField::Op: return op_name(e.op);
    case EventField::Kind: return kind_name(e.kind);
    case EventField::Api: return api_name(e.api);
    case EventField::Device: return int64_t{e.device};
    case EventField::Address: return e.address;
    case EventField::Size: return e.size;
    case EventField::Stream: return e.stream;
    case EventField::Object: return e.object;
    case EventField::Value: return e.value;
    case EventField::Result: return int64_t{e.result};
    case EventField::Thread: return uint64_t{e.thread_id};
    case EventField::StackId: return uint64_t{e.stack_id};
  }
  return uint64_t{0};
}

}  // namespace gmp
