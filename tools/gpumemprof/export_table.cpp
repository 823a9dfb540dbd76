// csv and jsonl: one record per trace event, every field of the 64-byte record plus the
// allocated and reserved bytes of the event's device after it. The jsonl fields are spelled as in
// format/json_views.cpp event_json(), which summary.json and the OOM bundles use.
#include "export_formats.h"

namespace gmp::tool::exporter {
namespace {

constexpr const char* kCsvHeader =
    "t_ns,op,kind,api,device,address,size,stream,object,value,thread,stack_id,result,"
    "accounted_device,allocated,reserved\n";

}  // namespace

void write_csv(Context& ctx) {
  std::string& b = ctx.out.buffer();
  b += kCsvHeader;
  while (ctx.replay.next()) {
    const Event& e = ctx.replay.event();
    append_u64(b, ctx.replay.since_start(e.timestamp_ns));
    b += ',';
    append_csv_field(b, op_name(e.op));
    b += ',';
    append_csv_field(b, kind_name(e.kind));
    b += ',';
    append_csv_field(b, api_name(e.api));
    b += ',';
    append_i64(b, e.device);
    b += ',';
    append_hex(b, e.address);
    for (const uint64_t v : {e.size, e.stream, e.object, e.value, uint64_t{e.thread_id}, uint64_t{e.stack_id}}) {
      b += ',';
      append_u64(b, v);
    }
    b += ',';
    append_i64(b, e.result);
    b += ',';
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
    o.u64("t_ns", ctx.replay.since_start(e.timestamp_ns))
        .str("op", op_name(e.op))
        .str("kind", kind_name(e.kind))
        .str("api", api_name(e.api))
        .i64("device", e.device)
        .u64("address", e.address)
        .u64("size", e.size)
        .u64("stream", e.stream)
        .u64("object", e.object)
        .u64("value", e.value)
        .i64("result", e.result)
        .u64("thread", e.thread_id)
        .u64("stack_id", e.stack_id);
    const int dev = ctx.replay.accounted_device();
    o.i64("accounted_device", dev);
    if (dev >= 0) {
      const Figures f = ctx.replay.figures(dev);
      o.u64("allocated", f.allocated).u64("reserved", f.reserved);
    } else {
      o.null("allocated").null("reserved");
    }
    o.close();
    b += '\n';
    ctx.out.written();
  }
}

}  // namespace gmp::tool::exporter
