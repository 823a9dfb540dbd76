// csv and jsonl: one record per trace event, every field of the 64-byte record (named as
// format/event_fields.h names them for summary.json and the OOM bundles too) plus the allocated
// and reserved bytes of the event's device after it.
#include <string_view>
#include <variant>

#include "export_formats.h"

namespace gmp::tool::exporter {
namespace {

// csv's columns put the result after the ids.
constexpr std::array<EventField, 13> kCsvFields = {
    EventField::TimeNs, EventField::Op,     EventField::Kind,   EventField::Api,    EventField::Device,
    EventField::Address, EventField::Size,  EventField::Stream, EventField::Object, EventField::Value,
    EventField::Thread, EventField::StackId, EventField::Result};

// What both formats add after the event's own fields.
constexpr std::string_view kAccountedDevice = "accounted_device", kAllocated = "allocated", kReserved = "reserved";

std::string csv_header() {
  std::string h;
  for (const EventField f : kCsvFields) h.append(event_field_name(f)).append(",");
  return h.append(kAccountedDevice).append(",").append(kAllocated).append(",").append(kReserved).append("\n");
}

// Names as text, numbers in decimal, except the address, in hex.
void append_csv_value(std::string& b, EventField f, const EventFieldValue& v) {
  if (const auto* name = std::get_if<std::string_view>(&v)) append_csv_field(b, *name);
  else if (const auto* i = std::get_if<int64_t>(&v)) append_i64(b, *i);
  else if (f == EventField::Address) append_hex(b, std::get<uint64_t>(v));
  else append_u64(b, std::get<uint64_t>(v));
}

}  // namespace

void write_event_fields(JsonObject& o, const Event& e, uint64_t t_ns, std::span<const EventField> fields) {
  for (const EventField f : fields) {
    const std::string_view key = event_field_name(f);
    const EventFieldValue v = event_field_value(e, f, t_ns);
    if (const auto* name = std::get_if<std::string_view>(&v)) o.str(key, *name);
    else if (const auto* i = std::get_if<int64_t>(&v)) o.i64(key, *i);
    else o.u64(key, std::get<uint64_t>(v));
  }
}

void write_csv(Context& ctx) {
  std::string& b = ctx.out.buffer();
  b += csv_header();
  while (ctx.replay.next()) {
    const Event& e = ctx.replay.event();
    const uint64_t t_ns = ctx.replay.since_start(e.timestamp_ns);
    for (const EventField f : kCsvFields) {
      append_csv_value(b, f, event_field_value(e, f, t_ns));
      b += ',';
    }
    const int dev = ctx.replay.accounted_device();
    append_i64(b, dev);
    if (dev >= 0) {  // empty cells otherwise: no device figures describe this event
      const Figures f = ctx.replay.figures(dev);
      b += ',';
      append_u64(b, f.allocated);
      b += ',';
      append_u64(b, f.reserved);
      b += '\n';
    } else {
      b += ",,\n";
    }
    ctx.out.written();
  }
}

void write_jsonl(Context& ctx) {
  std::string& b = ctx.out.buffer();
  while (ctx.replay.next()) {
    const Event& e = ctx.replay.event();
    JsonObject o(b);
    write_event_fields(o, e, ctx.replay.since_start(e.timestamp_ns), kEventFields);
    const int dev = ctx.replay.accounted_device();
    o.i64(kAccountedDevice, dev);
    if (dev >= 0) {
      const Figures f = ctx.replay.figures(dev);
      o.u64(kAllocated, f.allocated).u64(kReserved, f.reserved);
    } else {
      o.null(kAllocated).null(kReserved);
    }
    o.close();
    b += '\n';
    ctx.out.written();
  }
}

}  // namespace gmp::tool::exporter
