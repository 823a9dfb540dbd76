// csv and jsonl: one record per trace event, every field of the 64-byte record (named as
// format/event_fields.h names them for summary.json and the OOM bundles too) plus the allocated
// and reserved bytes of the event's device after it, and, where the framework bridge reported
// (summary.json's "framework"), the framework's allocated (tensors) and reserved bytes too: csv
// has the two columns in such runs only (empty on devices without the framework), jsonl the two
// keys on the records of a device with it.
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
constexpr std::string_view kFrameworkAllocated = "framework_allocated", kFrameworkReserved = "framework_reserved";

std::string csv_header(bool framework) {
  std::string h;
  for (const EventField f : kCsvFields) h.append(event_field_name(f)).append(",");
  h.append(kAccountedDevice).append(",").append(kAllocated).append(",").append(kReserved);
  if (framework) h.append(",").append(kFrameworkAllocated).append(",").append(kFrameworkReserved);
  return h.append("\n");
}

// Names as text, numbers in decimal, except an address, in hex (a framework OOM's "address" is
// the framework's reserved bytes: decimal).
void append_csv_value(std::string& b, const Event& e, EventField f, const EventFieldValue& v) {
  if (const auto* name = std::get_if<std::string_view>(&v)) append_csv_field(b, *name);
  else if (const auto* i = std::get_if<int64_t>(&v)) append_i64(b, *i);
  else if (f == EventField::Address && e.op != Op::FrameworkOomFigures) append_hex(b, std::get<uint64_t>(v));
  else append_u64(b, std::get<uint64_t>(v));
}

// The next event that makes a row: with --min-size, events of smaller allocations make none.
bool next_row(Context& ctx) {
  while (ctx.replay.next()) {
    if (!ctx.min_size) return true;
    const auto bytes = ctx.replay.allocation_size();
    if (!bytes || *bytes >= *ctx.min_size) return true;
  }
  return false;
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
  const bool framework_columns = ctx.run.figures.framework.has_value();
  b += csv_header(framework_columns);
  while (next_row(ctx)) {
    const Event& e = ctx.replay.event();
    const uint64_t t_ns = ctx.replay.since_start(e.timestamp_ns);
    for (const EventField f : kCsvFields) {
      append_csv_value(b, e, f, event_field_value(e, f, t_ns));
      b += ',';
    }
    const int dev = ctx.replay.accounted_device();
    append_i64(b, dev);
    // Empty cells where no device figures describe this event, or the device has no framework.
    const Figures f = dev >= 0 ? ctx.replay.figures(dev) : Figures{};
    auto cell = [&b](bool shown, uint64_t value) {
      b += ',';
      if (shown) append_u64(b, value);
    };
    cell(dev >= 0, f.allocated);
    cell(dev >= 0, f.reserved);
    if (framework_columns) {
      cell(f.framework, f.framework_allocated);
      cell(f.framework, f.framework_reserved);
    }
    b += '\n';
    ctx.out.written();
  }
}

void write_jsonl(Context& ctx) {
  std::string& b = ctx.out.buffer();
  while (next_row(ctx)) {
    const Event& e = ctx.replay.event();
    JsonObject o(b);
    write_event_fields(o, e, ctx.replay.since_start(e.timestamp_ns), kEventFields);
    const int dev = ctx.replay.accounted_device();
    o.i64(kAccountedDevice, dev);
    if (dev >= 0) {
      const Figures f = ctx.replay.figures(dev);
      o.u64(kAllocated, f.allocated).u64(kReserved, f.reserved);
      if (f.framework) o.u64(kFrameworkAllocated, f.framework_allocated).u64(kFrameworkReserved, f.framework_reserved);
    } else {
      o.null(kAllocated).null(kReserved);
    }
    o.close();
    b += '\n';
    ctx.out.written();
  }
}

}  // namespace gmp::tool::exporter
