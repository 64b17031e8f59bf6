#include "app/diff_command.h"

#include "analysis/trace_analysis.h"
#include "base/input_error.h"
#include "report/diff/diff_report.h"

namespace ferret {

TraceModel load_diff_input(const std::string& label, const std::string& path, const DiffInputOptions& options) {
  LoadOptions load;
  load.threads = options.threads;
  load.max_memory_bytes = options.max_memory != 0 ? options.max_memory : default_max_memory_bytes() / 2;
  if (options.max_memory == 0) load.max_memory_origin = "half the default, for the two traces compared";
  if (options.start_progress) load.progress = options.start_progress(path, input_file_size(path));
  auto finish = [&] {
    if (options.finish_progress) options.finish_progress();
  };
  try {
    TraceModel model = load_trace(path, load);
    finish();
    if (const std::string empty = nothing_to_analyse(model); !empty.empty()) {
      std::string why = model.info.source + ": " + empty;
      for (const std::string& note : model.report.notes) why += "; " + note;
      throw InputError(why);
    }
    return model;
  } catch (const InputError& e) {
    finish();
    throw InputError(label + ": " + e.what());
  }
}

DiffRenderings render_diff(const TraceDiff& diff, const Style& style) {
  DiffRenderings r;
  r.json = diff_json(diff).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + '\n';
  r.markdown = diff_markdown(diff);
  r.text = diff_text(diff, style);
  r.headline = diff_headline(diff);
  r.exit_code = diff.exit_code();
  return r;
}

}  // namespace ferret
