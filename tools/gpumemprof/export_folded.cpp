// folded: the stacks of the memory live at each device's allocated peak, one line per stack,
// weighted by its bytes and rooted at "GPU N", for flamegraph.pl, inferno-flamegraph and
// speedscope. Unlike the other formats it is not a per-event stream: it runs the report's
// analysis (two streaming passes, over the window: the peaks inside it) and writes the folded
// flame graphs of docs/attribution.md.
#include "command_args.h"
#include "export_formats.h"
#include "folded.h"
#include "run_analysis.h"

namespace gmp::tool::exporter {

void write_folded(Context& ctx) {
  std::string error;
  analysis::Options options;
  options.window = ctx.replay.window();
  options.progress = ctx.progress;
  auto run = analysis::analyze_run(ctx.run.path, options, error);
  if (!run) {
    ctx.error = error;
    return;
  }
  if (auto past = window_past_end(run->window, run->duration_ns)) {
    ctx.error = *past;
    return;
  }
  if (run->stack_events == 0) {
    ctx.notes.push_back("no allocation carried a call stack (profile with GPUMEMPROF_STACKS=N, e.g. 32); every stack "
                        "is \"(no stack captured)\"");
  }
  ctx.out.buffer() += analysis::folded_stacks(*run);
  ctx.out.written();
  ctx.written = std::to_string(run->stacks.size()) + " symbolised stacks";
}

}  // namespace gmp::tool::exporter
